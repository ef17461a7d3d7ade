"""Where the multi-file set's needed files are lost: the files after each step of the ask pipeline.

Each question of ``bench/multifile/set.jsonl`` (``--how``: the how subset; ``--ids FILE``: a JSON list
of row ids) is run through the pipeline ``ask --no-llm --max-files 10`` builds
(``Workspace.build_pipeline(llm=None)``), on each tree's index kept by ``bench/multifile.py
--keep-index DIR``. Every step's history event that carries documents gives the distinct files in
its order with each file's best score. Printed: all@10, recall@10 and MRR of the first needed
file after each step, and for the needed files missing from the answer's top 10, the step that
lost them (``retrieve``: never among the retrieved files; ``retrieve>10``: retrieved below the
top 10 and never moved in; otherwise the step after which it left the top 10). The per-question
record (``--out FILE``, JSON) holds every step's files and scores and the ``neighbours`` event's
data (each linked file's links: :meth:`codeask.query.steps.neighbours._Links.parts`); then where the needed files that were linked or retrieved but left out of
the top 10 sit after ``neighbours`` and what took the places above them (:func:`where`).

Usage::

    python bench/multifile_stages.py --trees TREES --keep-index DIR [--how | --ids FILE] [--repo NAME] \
        [--flag retrieval.expand_files=10] --out FILE

Where the numbers come from: the 97 how-questions at main 99760f1 gave all@10 .371 after
``retrieve``, ``neighbours`` and ``one_per_file``, .412 after ``expand``; of the 109 needed files
missing from the top 10, 64 were never among the 20 files retrieved (r31's issue-29 report).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # multifile
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.fake_llm

from tests.fake_llm import FakeLLMServer

from codeask.index.kinds import kind_of_path
from codeask.query.digest import QUESTION_DIGEST_CHARS, digest_question
from codeask.query.options import RetrievalOptions
from codeask.query.pipeline import Query
from codeask.query.report import parse_question
from codeask.workspace import Workspace
from multifile import SET, load_rows, workspace

FILES = 10
EVENT_DATA = ("neighbours",)


def stages(ws: Workspace, question: str) -> list[dict]:
    """``[{"step", "files", "scores", "data"}]``: each documents-carrying event of the pipeline's
    run of ``question`` (no LLM, ``max_files`` :data:`FILES`), files in order, each its best score."""
    query = Query(
        question,
        options=RetrievalOptions(max_files=FILES),
        parts=parse_question(question),
        digest=digest_question(question, QUESTION_DIGEST_CHARS),
    )
    query = ws.build_pipeline(llm=None).run(query)
    out = []
    for event in query.history:
        if event.documents is None:
            continue
        best: dict[str, float] = {}
        for d in event.documents:
            best.setdefault(d.path, d.score)
        data = event.data if event.step in EVENT_DATA else {}
        out.append({"step": event.step, "files": list(best), "scores": list(best.values()), "data": data})
    return out


def lost_at(steps: list[dict], path: str) -> str:
    """The step after which ``path`` left the top :data:`FILES` for good (see the module docstring)."""
    if path not in steps[0]["files"]:
        return "retrieve"
    last_in = None
    for s in steps:
        if path in s["files"][:FILES]:
            last_in = s["step"]
    if last_in is None:
        return "retrieve>10"
    after = [s["step"] for s in steps]
    return after[after.index(last_in) + 1] if after.index(last_in) + 1 < len(after) else last_in


def report(results: list[dict]) -> None:
    """Prints the per-step scores and where the missing needed files were lost."""
    per_step: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    lost: Counter[str] = Counter()
    for r in results:
        need = set(r["needed_files"])
        for s in r["steps"]:
            top = s["files"][:FILES]
            rr = next((1 / (i + 1) for i, f in enumerate(s["files"]) if f in need), 0.0)
            per_step[s["step"]].append((float(need <= set(top)), len(need & set(top)) / len(need), rr))
        for path in need - set(r["steps"][-1]["files"][:FILES]):
            lost[lost_at(r["steps"], path)] += 1
    print(f"{'step':14s} {'all@10':>7s} {'rec@10':>7s} {'mrr':>7s}")
    for step, rows in per_step.items():
        n = len(rows)
        print(
            f"{step:14s} {sum(r[0] for r in rows) / n:7.3f} {sum(r[1] for r in rows) / n:7.3f} {sum(r[2] for r in rows) / n:7.3f}"
        )
    print("needed files missing from the top 10, by the step that lost them:", dict(lost.most_common()))


def where(results: list[dict]) -> dict[str, object]:
    """Where the needed files that were linked or retrieved but left out of the top :data:`FILES`
    sit after ``neighbours`` (its ``boosted`` records: graph gain and the four links before their
    caps), and what took the places above them: ``{"missing", "median_rank", "in_first_20", "how",
    "outranked_by"}``, ``how`` per kind of candidate (``retrieved+linked``, ``retrieved``,
    ``linked``), ``outranked_by`` the other files of those questions' top 10 per kind of file
    (:func:`codeask.index.kinds.kind_of_path`) and whether a link or retrieval alone put them there."""
    ranks: list[int] = []
    how: Counter[str] = Counter()
    outranked: Counter[str] = Counter()
    for r in results:
        need = set(r["needed_files"])
        steps = {s["step"]: s for s in r["steps"]}
        if "neighbours" not in steps:
            continue
        order, retrieved = steps["neighbours"]["files"], set(steps["retrieve"]["files"])
        linked = {b["path"] for b in steps["neighbours"]["data"].get("boosted", []) if b["gain"] > 0}
        left = [p for p in need if p in order[FILES:]]
        for path in left:
            ranks.append(order.index(path) + 1)
            how["+".join(k for k, on in (("retrieved", path in retrieved), ("linked", path in linked)) if on)] += 1
        for path in order[:FILES] if left else []:
            if path not in need:
                outranked[f"{kind_of_path(path)} {'linked' if path in linked else 'retrieved only'}"] += 1
    ranks.sort()
    return {
        "missing": len(ranks),
        "median_rank": ranks[len(ranks) // 2] if ranks else None,
        "in_first_20": sum(1 for x in ranks if x <= 20),
        "how": dict(how.most_common()),
        "outranked_by": dict(outranked.most_common()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trees", type=Path, required=True, help="folder of materialized trees (owner+name)")
    parser.add_argument("--keep-index", type=Path, required=True, help="the indexes bench/multifile.py kept")
    parser.add_argument("--how", action="store_true", help="only the how subset")
    parser.add_argument("--ids", type=Path, help="a JSON list of the row ids to ask")
    parser.add_argument("--repo", help="only the trees whose owner+name contains this")
    parser.add_argument("--out", type=Path, required=True, help="per-question records (JSON)")
    parser.add_argument("--flag", action="append", default=[], help="a setting, NAME=JSON (repeatable)")
    args = parser.parse_args()
    rows = load_rows(SET, None, None, how=args.how)
    if args.ids is not None:
        wanted = set(json.loads(args.ids.read_text(encoding="utf-8")))
        rows = [r for r in rows if r["id"] in wanted]
    extra = {k: json.loads(v) for k, v in (f.split("=", 1) for f in args.flag)}
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_repo[row["repo"]].append(row)
    results = []
    with FakeLLMServer() as llm:
        for repo, repo_rows in by_repo.items():
            name = repo.replace("/", "+")
            if args.repo and args.repo not in name:
                continue
            ws = workspace(args.trees / name, args.keep_index / name, llm, 8000, extra)
            ws.index()
            for row in repo_rows:
                results.append({**row, "steps": stages(ws, row["question"])})
    args.out.write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
    report(results)
    print("needed files linked or retrieved but outside the top 10, after neighbours:", where(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
