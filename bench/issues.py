"""Retrieval quality on questions shaped like bug reports (bench/issues/*.jsonl): file R@1/@5/@10, MRR.

Each row is a public bug report of requests, flask, pytest or sphinx (its text as the question) with
the source files its fixing commit changed as ``gold_files``, anchored to the sdist released just
before the fix (recipe and exclusions in ``bench/issues/README.md``). Rows are grouped by ``sdist``;
each sdist is fetched and indexed whole (tests, docs, changelogs and all), every question is asked
without an LLM, and the ranked distinct files are scored. Two rankings are reported, computed in the
same run on the same sdists:

* ``codeask``: the product's retrieval (parse_question -> hybrid retrieval, down-weighting on);
* ``codeask-no-report``: the same index and code with ``codeask.query.steps.evidence.REPORT_EVIDENCE = False`` (no
  question parsing, no frame, string-literal or named-file ranking): what reading the report adds;
* ``bm25-file``: BM25 over one document per ``.py`` file of the sdist (shared/eval/README.md baseline).

Usage::

    python bench/issues.py [--sets requests flask pytest sphinx] [--label NAME]

Prints a table (per project and all rows) and writes ``bench/results/<label>.json`` (default
``issues``). With 33 rows, differences under ~0.10 MRR are noise: read it as a regression signal.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import SDISTS, fetch_sdist, peak_rss_mb, write_result  # noqa: E402
from retrieval import bm25_file_baseline, load_rows, ranked_files, retrieval_metrics  # noqa: E402

from codeask.query.steps import evidence  # noqa: E402
from codeask.workspace import Workspace  # noqa: E402

ISSUES_DIR = Path(__file__).resolve().parent / "issues"


def _first_rank(files: list[str], gold: list[str]) -> int | None:
    """1-based rank of the first gold file among ``files``, or ``None``."""
    return next((i for i, f in enumerate(files, 1) if f in gold), None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=["requests", "flask", "pytest", "sphinx"])
    parser.add_argument("--issues-dir", type=Path, default=ISSUES_DIR)
    parser.add_argument("--sdist-dir", type=Path, default=SDISTS, help="where sdists are fetched and unpacked")
    parser.add_argument("--label", default="issues", help="name of the JSON written to bench/results/")
    args = parser.parse_args()

    rows = [r for name in args.sets for r in load_rows(args.issues_dir / f"{name}.jsonl")]
    ranked: dict[str, dict[str, list[str]]] = {"codeask": {}, "codeask-no-report": {}, "bm25-file": {}}
    seconds: dict[str, float] = {}
    for pin in sorted({r["sdist"] for r in rows}):
        group = [r for r in rows if r["sdist"] == pin]
        root = fetch_sdist(pin, args.sdist_dir)
        t0 = time.monotonic()
        ws = Workspace([root])
        ws.index()
        seconds[pin] = round(time.monotonic() - t0, 1)
        for r in group:
            ranked["codeask"][r["id"]] = ranked_files(ws, r["query"])
            evidence.REPORT_EVIDENCE = False
            ranked["codeask-no-report"][r["id"]] = ranked_files(ws, r["query"])
            evidence.REPORT_EVIDENCE = True
        for r, files in zip(group, bm25_file_baseline(root, [r["query"] for r in group])):
            ranked["bm25-file"][r["id"]] = files
            ranks = {v: _first_rank(ranked[v][r["id"]], r["gold_files"]) for v in ranked}
            print(f"{r['id']:16} {pin:18} first gold rank: {ranks}", flush=True)

    results: dict[str, dict] = {}
    for name in [*args.sets, "all"]:
        subset = [r for r in rows if name == "all" or r["project"] == name]
        if not subset:
            continue
        results[name] = {
            variant: {
                **retrieval_metrics([ranked[variant][r["id"]] for r in subset], [r["gold_files"] for r in subset]),
                "questions": len(subset),
            }
            for variant in ranked
        }
    per_question = {
        r["id"]: {variant: ranked[variant][r["id"]][:5] for variant in ranked} | {"gold": r["gold_files"]}
        for r in rows
    }

    header = f"{'set':10} {'ranking':17} {'n':>3} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6}"
    print(header)
    print("-" * len(header))
    for name, entry in results.items():
        for variant, m in entry.items():
            print(
                f"{name:10} {variant:17} {m['questions']:3d} {m['recall@1']:6.3f} {m['recall@5']:6.3f}"
                f" {m['recall@10']:6.3f} {m['mrr']:6.3f}"
            )
    out = write_result(
        args.label,
        {"sets": results, "per_question": per_question, "index_seconds": seconds, "peak_rss_mb": round(peak_rss_mb(), 1)},
    )
    print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    from codeask.cli import limit_malloc_arenas

    limit_malloc_arenas()  # as the CLI and the server do
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    raise SystemExit(main())
