"""Materialize the trees of bench/multifile/set.jsonl: ``OUT/<owner>+<name>/`` = ``git archive COMMIT``.

The git directories come from ``--git-dirs`` with ``--layout`` (default ``{owner}+{name}/repo``, the
layout of the agents' ``fetch`` tool; ``{owner}+{name}.git`` for bare clones made by hand). A tree
that is already there is left alone (``--force`` remakes it).

Usage::

    python bench/multifile/materialize.py --git-dirs MIRRORS --out TREES [--layout '{owner}+{name}.git']
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

SET = Path(__file__).resolve().parent / "set.jsonl"


def trees(set_path: Path) -> dict[str, str]:
    """``{owner/name: commit}`` of the set's rows."""
    rows = [json.loads(line) for line in set_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {row["repo"]: row["commit"] for row in rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--git-dirs", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--layout", default="{owner}+{name}/repo")
    parser.add_argument("--set", type=Path, default=SET)
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    for repo, commit in trees(args.set).items():
        owner, name = repo.split("/")
        git_dir = args.git_dirs / args.layout.format(owner=owner, name=name)
        dest = args.out / f"{owner}+{name}"
        if dest.is_dir() and not args.force:
            print(f"{repo}: {dest} exists, left alone")
            continue
        if not git_dir.is_dir():
            print(f"{repo}: no git directory at {git_dir}", file=sys.stderr)
            return 1
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        archive = subprocess.run(["git", f"--git-dir={git_dir}", "archive", commit], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
        print(f"{repo}: {commit} -> {dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
