"""Gold functions for chunk-level precision, derived from the upstream commits of shared/eval's rows.

The question sets in ``/work/shared/eval`` give each row's ``gold_files`` and the upstream ``commit``
that changed them, but no lines. This script reads each commit's diff (``git show -U0``) in a clone
of the project and names the functions it changed: for every added or removed line of a gold file,
the innermost enclosing ``def`` (found by indentation in the file as of that commit, qualified by
its enclosing classes: ``Session.send``). Lines outside any function (imports, module constants,
class attributes) name nothing. Rows whose changed files no longer match a gold path are left out.

Usage::

    python bench/spans_gold.py --repo CLONE --set /work/shared/eval/requests.jsonl > bench/spans/requests.jsonl

Output rows: ``{"id", "gold_functions": {gold_file: [qualified names]}}`` (only rows with at least
one function). :mod:`bench.spans` finds those functions' lines in the sdist at run time.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys

_DEF = re.compile(r"^(\s*)(?:async\s+)?(def|class)\s+([A-Za-z_][A-Za-z0-9_]*)")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=False).stdout


def enclosing_function(lines: list[str], index: int) -> str | None:
    """Qualified name of the innermost ``def`` holding 0-based line ``index``, or ``None``."""
    line = lines[index] if index < len(lines) else ""
    indent = len(line) - len(line.lstrip()) if line.strip() else 10**6
    chain: list[tuple[str, str]] = []
    m = _DEF.match(line)
    if m:
        chain.append((m.group(2), m.group(3)))
        indent = len(m.group(1))
    for i in range(index - 1, -1, -1):
        m = _DEF.match(lines[i])
        if m and len(m.group(1)) < indent:
            chain.append((m.group(2), m.group(3)))
            indent = len(m.group(1))
            if indent == 0:
                break
        elif (
            lines[i].strip()
            and not lines[i].startswith((" ", "\t"))
            and indent > 0
            and not m
            and not lines[i].lstrip().startswith(("#", "@", ")", "]", "}", '"', "'"))
        ):
            break  # module-level statement above: not inside a definition
    if not chain or chain[0][0] != "def":
        return None
    return ".".join(name for _, name in reversed(chain))


def changed_functions(repo: str, commit: str, path: str) -> set[str]:
    diff = git(repo, "show", "-U0", "--format=", commit, "--", path)
    new = git(repo, "show", f"{commit}:{path}").splitlines()
    old = git(repo, "show", f"{commit}^:{path}").splitlines()
    names: set[str] = set()
    for line in diff.splitlines():
        m = _HUNK.match(line)
        if not m:
            continue
        o_start, o_len = int(m.group(1)), int(m.group(2) or 1)
        n_start, n_len = int(m.group(3)), int(m.group(4) or 1)
        for k in range(n_len):
            if name := enclosing_function(new, n_start - 1 + k):
                names.add(name)
        for k in range(o_len):
            if name := enclosing_function(old, o_start - 1 + k):
                names.add(name)
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--set", required=True)
    args = parser.parse_args()
    with open(args.set, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for raw in lines:
        if not raw.strip():
            continue
        row = json.loads(raw)
        changed = git(args.repo, "show", "--name-only", "--format=", row["commit"]).split()
        gold: dict[str, list[str]] = {}
        for gold_file in row["gold_files"]:
            tail = gold_file.removeprefix("src/")
            match = [p for p in changed if p in (gold_file, tail) or p.endswith("/" + tail)]
            names: set[str] = set()
            for path in match:
                names |= changed_functions(args.repo, row["commit"], path)
            if names:
                gold[gold_file] = sorted(names)
        if gold:
            print(json.dumps({"id": row["id"], "gold_functions": gold}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
