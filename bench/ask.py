"""Ask latency without an LLM: p50/p95 over questions from shared/eval on an indexed sdist.

Usage::

    python bench/ask.py [--sdist sphinx==9.0.4] [--set sphinx] [-n 50]

Indexes the sdist first if needed (honours ``CODEASK_CACHE_DIR``; reuse the folder given to
``bench/index.py --cache-dir`` to skip the embedding), then times ``Workspace.ask(question,
no_llm=True)`` end to end: embed the question, keyword + dense search, fusion, one-per-file, the
markdown answer. Prints a table and writes ``bench/results/ask-<set>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import EVAL_DIR, fetch_sdist, peak_rss_mb, write_result  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", default="sphinx", help="question set in shared/eval")
    parser.add_argument("--path", type=Path, help="unpacked sdist (default: fetched from the set's pin)")
    parser.add_argument("-n", type=int, default=50, help="questions timed")
    parser.add_argument("--eval-dir", type=Path, default=EVAL_DIR)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from codeask.workspace import Workspace

    rows = [json.loads(line) for line in (args.eval_dir / f"{args.set}.jsonl").read_text().splitlines() if line.strip()]
    root = args.path or fetch_sdist(rows[0]["sdist"])
    ws = Workspace([root])
    t0 = time.monotonic()
    stats = ws.index()
    index_seconds = time.monotonic() - t0
    ws.ask("warm up the model and the tables", no_llm=True)
    latencies = []
    for row in rows[: args.n]:
        t = time.perf_counter()
        answer = ws.ask(row["query"], no_llm=True)
        latencies.append((time.perf_counter() - t) * 1000)
        assert answer.sources, row["id"]
    latencies.sort()
    result = {
        "set": args.set,
        "root": str(root),
        "chunks": stats.chunks_total,
        "questions": len(latencies),
        "index_catch_up_seconds": round(index_seconds, 2),
        "ask_ms_p50": round(statistics.median(latencies), 1),
        "ask_ms_p95": round(latencies[max(0, int(0.95 * len(latencies)) - 1)], 1),
        "ask_ms_max": round(latencies[-1], 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    for key, value in result.items():
        print(f"{key:24} {value}")
    print(f"\nwritten to {write_result(f'ask-{args.set}', result)}")
    return 0


if __name__ == "__main__":
    from codeask.cli import limit_malloc_arenas

    limit_malloc_arenas()  # as the CLI and the server do
    raise SystemExit(main())
