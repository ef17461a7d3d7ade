"""Retrieval quality on the real question sets in shared/eval: file recall@1/@5/@10 and MRR.

For each set (requests, flask, pytest, sphinx) the pinned sdist is fetched and indexed whole
(tests, docs and all, as a user's checkout would be), every ``query`` is asked without an LLM, and
the ranked distinct files are scored against ``gold_files``. Three rankings are reported:

* ``codeask``: the product's hybrid retrieval (keyword + dense, file-level RRF, down-weighting on);
* ``codeask-no-downweight``: the same with ``retrieval.downweight_patterns = []`` (FINDINGS.md asks for both);
* ``codeask-answer``: the files of the answer's sources as ``ask --no-llm --max-files 10`` returns
  them, after the response transformers (the two above rank the documents as retrieved);
* ``bm25-file``: the baseline of shared/eval/README.md, computed in the same run: BM25 (LanceDB's
  full-text index) over one document per ``.py`` file of the sdist.

Usage::

    python bench/retrieval.py [--sets requests flask pytest sphinx] [--eval-dir DIR] [--sdist-dir DIR] [--label L]

Prints a table and writes ``bench/results/retrieval.json`` (``retrieval-<label>.json`` with
``--label``: run it with ``PYTHONPATH`` at one checkout's ``server`` folder, then at another's, for a
before/after on the same index, which lives in the user's cache and is only walked the second time).
Differences under ~0.08 MRR are noise on 57-80 questions (FINDINGS.md, point 4).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import EVAL_DIR, SDISTS, fetch_sdist, peak_rss_mb, write_result  # noqa: E402

from codeask.eval.metrics import RetrievalScores, distinct_files  # noqa: E402
from codeask.query.options import RetrievalOptions  # noqa: E402
from codeask.query.pipeline import Query  # noqa: E402
from codeask.workspace import Workspace  # noqa: E402

RANK_DEPTH = 10


def load_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def ranked_files(ws: Workspace, question: str) -> list[str]:
    """Distinct files of the retrieved documents, best first (no LLM, no one-per-file cap)."""
    pipeline = ws.build_pipeline(llm=None)
    query = Query(question, options=RetrievalOptions(top_k=200, max_files=200))
    query = pipeline.run(query)
    return distinct_files(d.path for d in query.retrieved_documents)


def answer_files(ws: Workspace, question: str) -> list[str]:
    """Distinct files of the answer's sources, as ``ask --no-llm --max-files 10`` gives them: after
    every response transformer (``neighbours``, ``one_per_file``, ``expand``)."""
    return distinct_files(s.path for s in ws.ask(question, no_llm=True, max_files=RANK_DEPTH).sources)


def retrieval_metrics(rankings: list[list[str]], gold: list[list[str]]) -> dict[str, float]:
    """Mean file recall@1/@5/@10 and MRR, rounded to 3 places."""
    scores = RetrievalScores()
    for ranked, expected in zip(rankings, gold):
        scores.add(ranked, expected)
    return {k: round(v, 3) for k, v in scores.mean().items()}


def bm25_file_baseline(root: Path, questions: list[str]) -> list[list[str]]:
    """BM25 over whole .py files (LanceDB native full-text index, default tokenizer)."""
    import lancedb
    from lancedb.index import FTS

    docs = []
    for path in sorted(root.rglob("*.py")):
        try:
            docs.append({"path": path.relative_to(root).as_posix(), "text": path.read_text("utf-8", "replace")})
        except OSError:
            continue
    with tempfile.TemporaryDirectory() as tmp:
        table = lancedb.connect(tmp).create_table("files", data=docs)
        table.create_index("text", config=FTS(with_position=False))
        ranked = []
        for q in questions:
            rows = table.search(q, query_type="fts").select(["path", "_score"]).limit(RANK_DEPTH * 3).to_list()
            ranked.append([r["path"] for r in rows])
    return ranked


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=["requests", "flask", "pytest", "sphinx"])
    parser.add_argument("--eval-dir", type=Path, default=EVAL_DIR)
    parser.add_argument("--sdist-dir", type=Path, default=SDISTS, help="where sdists are fetched and unpacked")
    parser.add_argument("--label", help="write bench/results/retrieval-<label>.json")
    args = parser.parse_args()

    results: dict[str, dict] = {}
    for name in args.sets:
        rows = load_rows(args.eval_dir / f"{name}.jsonl")
        root = fetch_sdist(rows[0]["sdist"], args.sdist_dir)
        questions = [r["query"] for r in rows]
        gold = [r["gold_files"] for r in rows]
        t0 = time.monotonic()
        ws = Workspace([root])
        stats = ws.index()
        index_seconds = time.monotonic() - t0
        entry: dict[str, dict] = {}
        for variant, flags in (("codeask", {}), ("codeask-no-downweight", {"retrieval.downweight_patterns": []})):
            ws_v = Workspace([root], flags=flags) if flags else ws
            t1 = time.monotonic()
            ranked = [ranked_files(ws_v, q) for q in questions]
            per_q_ms = (time.monotonic() - t1) / len(questions) * 1000
            entry[variant] = {**retrieval_metrics(ranked, gold), "ms_per_question": round(per_q_ms, 1)}
        entry["codeask-answer"] = retrieval_metrics([answer_files(ws, q) for q in questions], gold)
        entry["bm25-file"] = retrieval_metrics(bm25_file_baseline(root, questions), gold)
        entry["_index"] = {
            "files": stats.files_seen,
            "chunks": stats.chunks_total,
            "seconds": round(index_seconds, 1),
            "questions": len(questions),
        }
        results[name] = entry

    header = f"{'set':10} {'ranking':24} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6}"
    print(header)
    print("-" * len(header))
    for name, entry in results.items():
        for variant in ("codeask", "codeask-no-downweight", "codeask-answer", "bm25-file"):
            m = entry[variant]
            print(
                f"{name:10} {variant:24} {m['recall@1']:6.3f} {m['recall@5']:6.3f} {m['recall@10']:6.3f} {m['mrr']:6.3f}"
            )
    data = {
        "sets": results,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    out = write_result(f"retrieval-{args.label}" if args.label else "retrieval", data)
    print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    from codeask.cli import limit_malloc_arenas

    limit_malloc_arenas()  # as the CLI and the server do
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    raise SystemExit(main())
