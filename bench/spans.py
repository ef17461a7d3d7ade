"""Chunk-level precision: does the code sent for a gold file hold the function the fix changed?

The shared/eval rows name only gold *files*; ``bench/spans/<set>.jsonl`` adds, per row, the
functions the upstream fixing commit changed in each gold file (derived from the public commits by
``bench/spans_gold.py``; functions only: changes to imports, module constants or class attributes
name nothing). This bench finds those functions' lines in the pinned sdist (Python ``ast``:
qualified ``Class.method`` names; a name the sdist no longer defines is dropped, and a row with
none left is not scored), asks every question without an LLM with the default settings, and reports:

* ``lead_hit``: over (row, gold file) pairs whose file is among the kept documents
  (``one_per_file``: ``max_files`` 8), the share whose *first* span (the file's best span) overlaps
  a gold function: chunk-level precision of the best span;
* ``any_hit``: the same share when any span sent for that file counts (after ``widen``, when on);
* ``files_kept``: share of scored (row, gold file) pairs whose file was kept at all;
* ``lines_sent``: mean lines of code over all sent spans per question (what the precision costs);
* ``mrr``: file MRR over every row of the set (distinct files of the retrieved documents), as
  ``bench/retrieval.py`` computes it.

Usage::

    python bench/spans.py [--sets requests flask pytest] [--label after]

Prints a table and writes ``bench/results/spans-<label>.json``. Indexes live under
``CODEASK_CACHE_DIR`` (default ``~/.cache/codeask-bench/spans-index``), so a "before" run of an
older checkout (``PYTHONPATH=<old>/server``) reuses the same index.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from codeask.eval.metrics import RetrievalScores, distinct_files  # noqa: E402
from codeask.query.pipeline import Query  # noqa: E402
from codeask.workspace import Workspace  # noqa: E402
from common import EVAL_DIR, SDISTS, fetch_sdist, peak_rss_mb, write_result  # noqa: E402


def function_ranges(source: str, classes: bool = False) -> dict[str, list[tuple[int, int]]]:
    """``{qualified name: [(first line, last line)]}`` (1-based, inclusive, decorators included) of
    every def in ``source``, and of every class with ``classes``; a name defined twice (a property's
    setter, an ``@overload``) keeps every range."""
    out: dict[str, list[tuple[int, int]]] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if classes or not isinstance(child, ast.ClassDef):
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    out.setdefault(name, []).append((first, child.end_lineno or child.lineno))
                walk(child, name + ".")

    walk(ast.parse(source), "")
    return out


def gold_ranges(root: Path, gold: dict[str, list[str]]) -> dict[str, list[tuple[int, int]]]:
    """Line ranges of each gold file's gold functions that the sdist still defines."""
    out: dict[str, list[tuple[int, int]]] = {}
    for path, names in gold.items():
        try:
            defined = function_ranges((root / path).read_text(encoding="utf-8"))
        except (OSError, SyntaxError):
            continue
        ranges = [r for n in names for r in defined.get(n, [])]
        if ranges:
            out[path] = ranges
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=["requests", "flask", "pytest"])
    parser.add_argument("--label", default="run")
    parser.add_argument("--eval-dir", type=Path, default=EVAL_DIR, help="shared/eval (the question sets)")
    args = parser.parse_args()

    results: dict[str, dict] = {}
    for name in args.sets:
        rows = [json.loads(x) for x in (args.eval_dir / f"{name}.jsonl").read_text().splitlines() if x.strip()]
        golds = {
            r["id"]: r["gold_functions"]
            for r in map(json.loads, (HERE / "spans" / f"{name}.jsonl").read_text().splitlines())
        }
        root = fetch_sdist(rows[0]["sdist"], SDISTS)
        ws = Workspace([root])
        ws.index()
        scores = RetrievalScores()
        pairs = kept = lead = anyhit = 0
        lines_sent: list[int] = []
        t0 = time.monotonic()
        for row in rows:
            query = ws.build_pipeline(llm=None).run(Query(row["query"]))
            scores.add(distinct_files(d.path for d in query.retrieved_documents), row["gold_files"])
            lines_sent.append(sum(d.end_line - d.start_line + 1 for d in query.documents))
            for path, ranges in gold_ranges(root, golds.get(row["id"], {})).items():
                pairs += 1
                spans = [d for d in query.documents if d.path == path]
                if not spans:
                    continue
                kept += 1
                hit = [any(s.start_line <= hi and lo <= s.end_line for lo, hi in ranges) for s in spans]
                lead += hit[0]
                anyhit += any(hit)
        entry = {
            "scored_pairs": pairs,
            "files_kept": round(kept / pairs, 3) if pairs else None,
            "lead_hit": round(lead / kept, 3) if kept else None,
            "any_hit": round(anyhit / kept, 3) if kept else None,
            "lines_sent": round(sum(lines_sent) / len(lines_sent), 1),
            "mrr": round(scores.mean()["mrr"], 3),
            "questions": len(rows),
            "seconds_per_question": round((time.monotonic() - t0) / len(rows), 2),
        }
        results[name] = entry
        print(name, json.dumps(entry), flush=True)
    load = os.getloadavg()
    out = write_result(
        f"spans-{args.label}", {"sets": results, "load_average": load, "peak_rss_mb": round(peak_rss_mb(), 1)}
    )
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; written to {out}")
    return 0


if __name__ == "__main__":
    from codeask.cli import limit_malloc_arenas

    limit_malloc_arenas()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("CODEASK_CACHE_DIR", str(Path.home() / ".cache" / "codeask-bench" / "spans-index"))
    raise SystemExit(main())
