"""``search_code`` latency through ``codeask mcp`` over stdio, as an agent sees it: p50/p95 of
round trips with the official MCP SDK client (JSON-RPC, tool-argument validation, retrieval,
structured result), questions from shared/eval.

Usage::

    python bench/mcp_search.py [--set requests] [--path DIR] [-n 20] [--eval-dir ../shared/eval]

Starts ``python -m codeask mcp ROOT`` (index in ``CODEASK_CACHE_DIR`` or the user cache dir, so
an index built by ``bench/index.py`` is reused), waits until both indexing phases are done, warms
up once, then times ``n`` ``search_code`` calls, and the same questions through
``Workspace.ask(no_llm=True)`` in this process for comparison. Prints a table and writes
``bench/results/mcp-<set>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import EVAL_DIR, fetch_sdist, write_result  # noqa: E402


async def measure(root: Path, questions: list[str]) -> dict:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "codeask", "mcp", str(root)], env=dict(os.environ))
    started = time.monotonic()
    async with Client(params) as client:
        connected = time.monotonic() - started
        while True:
            status = (await client.call_tool("index_status", {})).structured_content
            if status["state"] in ("ready", "read-only", "failed") and not status["vectors_pending"]:
                break
            await asyncio.sleep(0.5)
        ready = time.monotonic() - started
        await client.call_tool("search_code", {"query": "warm up the model and the tables"})
        latencies = []
        first_paths = []
        for q in questions:
            t = time.perf_counter()
            result = await client.call_tool("search_code", {"query": q})
            latencies.append((time.perf_counter() - t) * 1000)
            assert not result.is_error, result.content
            first_paths.append(result.structured_content["sources"][0]["path"])
    latencies.sort()
    # The same questions in-process (Workspace.ask without an LLM), in the same run: what the MCP
    # layer (JSON-RPC over stdio, argument validation, structured result) adds.
    from codeask.workspace import Workspace

    ws = Workspace([root])
    ws.ask("warm up the model and the tables", no_llm=True)
    direct = []
    for q in questions:
        t = time.perf_counter()
        ws.ask(q, no_llm=True)
        direct.append((time.perf_counter() - t) * 1000)
    return {
        "root": str(root),
        "files": status["files"],
        "chunks": status["chunks_total"],
        "state": status["state"],
        "calls": len(latencies),
        "connect_seconds": round(connected, 2),
        "ready_seconds": round(ready, 2),
        "search_code_ms_p50": round(statistics.median(latencies), 1),
        "search_code_ms_p95": round(latencies[max(0, int(0.95 * len(latencies)) - 1)], 1),
        "search_code_ms_max": round(latencies[-1], 1),
        "in_process_ask_ms_p50": round(statistics.median(direct), 1),
        "load_average_1m": round(os.getloadavg()[0], 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", default="requests", help="question set in shared/eval (its sdist is the root)")
    parser.add_argument("--path", type=Path, help="unpacked sdist (default: fetched from the set's pin)")
    parser.add_argument("-n", type=int, default=20, help="search_code calls timed")
    parser.add_argument("--eval-dir", type=Path, default=EVAL_DIR)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    rows = [json.loads(line) for line in (args.eval_dir / f"{args.set}.jsonl").read_text().splitlines() if line.strip()]
    root = args.path or fetch_sdist(rows[0]["sdist"])
    questions = [rows[i % len(rows)]["query"] for i in range(args.n)]
    result = {"set": args.set, **asyncio.run(measure(root, questions))}
    for key, value in result.items():
        print(f"{key:24} {value}")
    print(f"\nwritten to {write_result(f'mcp-{args.set}', result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
