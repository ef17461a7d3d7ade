"""Mine multi-file commits of a git repository into development-set rows (bench/multifile/*.jsonl).

A commit becomes a row when: it is not a merge; it changes 2-6 (``--min-files``/``--max-files``) *source* files of the language that are
not tests (``needed_files``) and every one of them still exists, same path, in the snapshot commit
the trees are made from; its message (subject + body, trailers removed) is 40-1500 characters; and
the message names none of those files (no path, no basename, no stem as a whole word: the question
must be answered by retrieval, not by a file name). Release, version-bump, formatting, typo, rename,
refactoring and revert commits (by their subject) are left out. Output: one JSON object a line on stdout, newest commit first.

Usage::

    python bench/multifile/mine_commits.py --git-dir GITDIR --repo owner/name --language go \
        [--snapshot HEAD] [--max 20] [--since-commits 1500] [--min-files 2 --max-files 6] [--hard]

``--hard`` tags the rows ``"hard": true`` (the hard subset of set.jsonl: 4-8 needed files).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess

SOURCE_EXT = {
    "go": (".go",),
    "rust": (".rs",),
    "typescript": (".ts", ".tsx"),
    "java": (".java",),
    "c": (".c", ".h"),
    "python": (".py",),
}
TEST_PATH = re.compile(
    r"(^|/)(tests?|testdata|test-d|__tests__|src/test)/|_test\.go$|\.test\.tsx?$|\.spec\.tsx?$|(^|/)test_[^/]*\.py$|(^|/)tests?\.c$"
)
SKIP_SUBJECT = re.compile(
    r"^(merge|bump|release|revert|v?\d+\.\d+|prepare|update (deps|dependencies)|chore|fmt|format|lint|typo|clippy|cargo fmt|gofmt)\b",
    re.I,
)
COSMETIC = re.compile(
    r"\b(typos?|spelling|fieldalignment|lint\w*|clippy|rustfmt|gofmt|prettier|refactor\w*|simplify|clean ?up|whitespace|comments?|rename\w*|memory align\w*|deprecat\w*|strings\.\w+|bump\w*|copyright|licen[cs]e|go ?vet|golint|godoc|docs?|code review)\b",
    re.I,
)
TRAILER = re.compile(r"^(signed-off-by|co-authored-by|reviewed-by|change-id|cc|fixes|closes):.*$", re.I | re.M)


def git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True, check=True).stdout


def message_names_file(message: str, path: str) -> bool:
    base = path.rsplit("/", 1)[-1]
    stem = base.split(".", 1)[0]
    low = message.lower()
    return path.lower() in low or base.lower() in low or re.search(rf"\b{re.escape(stem.lower())}\b", low) is not None


def candidate_rows(args: argparse.Namespace) -> list[dict]:
    snapshot = git(args.git_dir, "rev-parse", args.snapshot).strip()
    present = set(git(args.git_dir, "ls-tree", "-r", "--name-only", snapshot).splitlines())
    log = git(args.git_dir, "log", "--no-merges", f"-n{args.since_commits}", "--format=%x00%H", "--name-only", snapshot)
    rows = []
    for block in log.split("\x00")[1:]:
        lines = [x for x in block.strip().splitlines() if x]
        sha, files = lines[0], lines[1:]
        needed = sorted(
            f for f in files if f.endswith(SOURCE_EXT[args.language]) and not TEST_PATH.search(f) and f in present
        )
        changed_source = [f for f in files if f.endswith(SOURCE_EXT[args.language]) and not TEST_PATH.search(f)]
        if not args.min_files <= len(needed) <= args.max_files or len(needed) != len(changed_source):
            continue
        message = TRAILER.sub("", git(args.git_dir, "show", "-s", "--format=%B", sha)).strip()
        message = re.sub(r"\n{3,}", "\n\n", message)
        if SKIP_SUBJECT.search(message) or COSMETIC.search(message.splitlines()[0]) or not 40 <= len(message) <= 1500:
            continue
        if any(message_names_file(message, f) for f in needed):
            continue
        rows.append(
            {
                "id": f"{args.repo.split('/')[1]}-{sha[:10]}",
                "language": args.language,
                "repo": args.repo,
                "commit": snapshot,
                "question": message,
                "needed_files": needed,
                "source": "commit",
                "source_commit": sha,
                **({"hard": True} if args.hard else {}),
            }
        )
        if len(rows) >= args.max:
            break
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--git-dir", required=True)
    parser.add_argument("--repo", required=True, help="owner/name")
    parser.add_argument("--language", required=True, choices=sorted(SOURCE_EXT))
    parser.add_argument("--snapshot", default="HEAD")
    parser.add_argument("--max", type=int, default=20)
    parser.add_argument("--since-commits", type=int, default=1500)
    parser.add_argument("--min-files", type=int, default=2, help="needed (changed source) files at least")
    parser.add_argument("--max-files", type=int, default=6, help="needed files at most")
    parser.add_argument("--hard", action="store_true", help='tag the rows "hard": true')
    args = parser.parse_args()
    for row in candidate_rows(args):
        print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
