"""Turn SWE-QA-Bench question files into development-set rows (bench/multifile/*.jsonl).

SWE-QA-Bench (github.com/peng-weihan/SWE-QA-Bench, ``Benchmark/<project>.jsonl``: one
``{"question", "answer"}`` a line; ``repo_commit.txt`` pins each project's commit) gives questions
with reference answers. The needed files of a row are the ``.py`` files its reference answer names
that exist in the pinned tree: a name that is a full path is kept as is (a leading ``./`` removed);
a bare or partial name (``ctx.py``, ``sansio/app.py``) is kept when exactly one file of the tree ends
with it and dropped when none or several do. Rows with fewer than 2 (``--min-needed``) needed files are left
out (the set is about multi-file answers); ``--hard`` tags the rows ``"hard": true`` (the hard subset:
``--min-needed 4``). Output: one JSON object a line on stdout, in the file's order.

Usage::

    python bench/multifile/swe_qa_rows.py --questions FILE.jsonl --git-dir GITDIR --commit SHA \
        --repo owner/name [--max 20] [--min-needed 2] [--hard]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess

PY_NAME = re.compile(r"[\w./-]*\w\.py\b")


def tree_files(git_dir: str, commit: str) -> list[str]:
    out = subprocess.run(
        ["git", f"--git-dir={git_dir}", "ls-tree", "-r", "--name-only", commit],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.splitlines()


def resolve(name: str, files: list[str]) -> str | None:
    """The one tree file ``name`` refers to, or None (absent or ambiguous)."""
    name = name.removeprefix("./").lstrip("/")
    if name in files:
        return name
    matches = [f for f in files if f.endswith("/" + name)]
    return matches[0] if len(matches) == 1 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", required=True)
    parser.add_argument("--git-dir", required=True)
    parser.add_argument("--commit", required=True)
    parser.add_argument("--repo", required=True, help="owner/name")
    parser.add_argument("--max", type=int, default=20)
    parser.add_argument("--min-needed", type=int, default=2, help="needed files a row has at least")
    parser.add_argument("--hard", action="store_true", help='tag the rows "hard": true')
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", f"--git-dir={args.git_dir}", "rev-parse", args.commit], capture_output=True, text=True, check=True
    ).stdout.strip()
    files = [f for f in tree_files(args.git_dir, commit) if f.endswith(".py")]
    kept = 0
    with open(args.questions, encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            if not line.strip() or kept >= args.max:
                continue
            row = json.loads(line)
            needed = sorted({f for name in PY_NAME.findall(row["answer"]) if (f := resolve(name, files))})
            if len(needed) < args.min_needed:
                continue
            kept += 1
            print(
                json.dumps(
                    {
                        "id": f"{args.repo.split('/')[1]}-sweqa-{n}",
                        "language": "python",
                        "repo": args.repo,
                        "commit": commit,
                        "question": row["question"],
                        "needed_files": needed,
                        "source": "swe-qa-bench",
                        **({"hard": True} if args.hard else {}),
                    },
                    ensure_ascii=False,
                )
            )


if __name__ == "__main__":
    main()
