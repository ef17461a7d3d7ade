"""Span precision on how-questions: does the span sent for a needed file hold the code the reference
answer talks about?

bench/spans.py measures a file's best span on bug reports (the functions the fixing commit changed).
For the how-questions of bench/multifile/set.jsonl (the SWE-QA-Bench rows, Python) the gold lines come
from the reference answers: SWE-QA-Bench's answers name the code they explain in backticks
(```RequestContext.copy()``` , ```copy_current_request_context```). A needed file's *gold
definitions* are the classes, functions and methods of that file (Python ``ast``, qualified
``Class.method``) whose qualified name ends with a backticked name of the answer, compared by whole
dotted parts (```copy()``` names ``RequestContext.copy``; ```ctx.copy()``` names nothing). Every
row is asked without an LLM (``Workspace.ask(no_llm=True, max_files=10)``), and over the (row,
needed file) pairs whose file is among the sources and has gold definitions:

* ``lead_hit``: the share whose first span (the file's best span, what its source is labelled by and
  links to) overlaps a gold definition;
* ``any_hit``: the share where any span of the file does (``widen`` sends up to 3);
* ``pairs``: the pairs scored; ``files_kept``: their share among pairs with gold definitions at all.

Usage::

    python bench/multifile_spans.py --trees DIR --keep-index DIR --qa-git-dir GITDIR [--label L]

``--trees`` and ``--keep-index`` as for bench/multifile.py (the indexes are reused, built when
absent); ``--qa-git-dir`` a git directory of github.com/peng-weihan/SWE-QA-Bench holding commit
``d7bf283`` (bench/multifile/how_rows.sh). Writes ``bench/results/multifile-spans-<label>.json``
(with every pair's spans) and prints a table. Point ``PYTHONPATH`` at another checkout's ``server``
folder to measure that code on the same indexes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fake_llm import FakeLLMServer

from common import write_result
from multifile import SET, load_rows, workspace
from spans import function_ranges

#: The SWE-QA-Bench commit the how rows were made from (bench/multifile/how_rows.sh).
BENCH_COMMIT = "d7bf283d65f4bbdc86ead92fc130eee4986355f0"
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def answer_names(answer: str) -> set[tuple[str, ...]]:
    """Dotted names in the answer's backticks, as part tuples: ```RequestContext.copy()``` ->
    ``("RequestContext", "copy")``; a path (``src/flask/ctx.py``) names none."""
    names = set()
    for code in _BACKTICKED.findall(answer):
        if "/" in code or code.endswith(".py"):
            continue
        for match in _DOTTED.findall(code):
            names.add(tuple(match.split(".")))
    return names


def gold_ranges(tree: Path, path: str, names: set[tuple[str, ...]]) -> list[tuple[int, int]]:
    """Line ranges of the definitions (classes too) of ``path`` whose qualified name ends with one of
    ``names``, every range of a name defined twice (a property's getter and setter)."""
    try:
        defined = function_ranges((tree / path).read_text(encoding="utf-8"), classes=True)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return []
    return [
        r
        for qual, ranges in defined.items()
        for r in ranges
        if any(tuple(qual.split("."))[-len(n) :] == n for n in names)
    ]


def answers(qa_git_dir: str, project: str) -> list[str]:
    """The reference answers of SWE-QA-Bench's ``Benchmark/<project>.jsonl``, one per line ("" for blank ones)."""
    text = subprocess.run(
        ["git", f"--git-dir={qa_git_dir}", "show", f"{BENCH_COMMIT}:Benchmark/{project}.jsonl"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [json.loads(line)["answer"] if line.strip() else "" for line in text.splitlines()]


def score_row(ws, tree: Path, row: dict, answer: str) -> list[dict]:
    """One entry per needed file with gold definitions: whether it was kept, its spans and hits."""
    names = answer_names(answer)
    sources = ws.ask(row["question"], max_files=10, no_llm=True).sources
    out = []
    for path in row["needed_files"]:
        ranges = gold_ranges(tree, path, names)
        if not ranges:
            continue
        spans = [s for src in sources if src.path == path for s in src.spans]
        hits = [any(s["start_line"] <= hi and lo <= s["end_line"] for lo, hi in ranges) for s in spans]
        out.append(
            {
                "id": row["id"],
                "path": path,
                "kept": bool(spans),
                "lead": bool(hits and hits[0]),
                "any": any(hits),
                "spans": [(s["start_line"], s["end_line"], s["symbol"]) for s in spans],
                "gold": ranges,
            }
        )
    return out


def summary(pairs: list[dict]) -> dict:
    kept = [p for p in pairs if p["kept"]]
    return {
        "pairs": len(kept),
        "files_kept": round(len(kept) / len(pairs), 3) if pairs else None,
        "lead_hit": round(sum(p["lead"] for p in kept) / len(kept), 3) if kept else None,
        "any_hit": round(sum(p["any"] for p in kept) / len(kept), 3) if kept else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", type=Path, required=True)
    parser.add_argument("--keep-index", type=Path, required=True)
    parser.add_argument("--qa-git-dir", required=True)
    parser.add_argument("--label", default="run")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    rows = [r for r in load_rows(SET, None, None, how=True) if r.get("source") == "swe-qa-bench"]
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_repo[row["repo"]].append(row)
    pairs: dict[str, list[dict]] = {}
    with FakeLLMServer() as llm:
        for repo, repo_rows in by_repo.items():
            name = repo.replace("/", "+")
            (args.keep_index / name).mkdir(parents=True, exist_ok=True)
            ws = workspace(args.trees / name, args.keep_index / name, llm, 128000)
            ws.index()
            project = repo_rows[0]["id"].split("-sweqa-")[0]
            texts = answers(args.qa_git_dir, project)
            pairs[project] = [
                p
                for row in repo_rows
                for p in score_row(ws, args.trees / name, row, texts[int(row["id"].rsplit("-", 1)[1])])
            ]
            print(project, json.dumps(summary(pairs[project])), flush=True)
    every = [p for repo_pairs in pairs.values() for p in repo_pairs]
    result = {"overall": summary(every), "repos": {k: summary(v) for k, v in pairs.items()}, "pairs": every}
    result["load_average"] = os.getloadavg()
    print("overall", json.dumps(result["overall"]))
    print(f"written to {write_result(f'multifile-spans-{args.label}', result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
