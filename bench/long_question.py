"""Time and memory of asking with a long pasted report: a 4 KB question against a 200 KB one.

Usage::

    python bench/long_question.py [--sizes 4000,200000] [--repeat 3]

Builds the shop project of ``tests/long_report.py`` in a temporary folder (its index in a temporary
cache dir), indexes it once, then for each size runs, in a fresh process each (so peak RSS is that
question's): one warm-up ``Workspace.ask(question, no_llm=True)``, then ``--repeat`` timed asks
(wall seconds and process CPU seconds, the median), the report reading alone
(:func:`codeask.query.report.parse_question` and :func:`codeask.query.digest.digest_question`,
seconds), the Python memory one ask allocates at its peak (``tracemalloc``, MiB) and the process's
peak RSS (MiB: the embedding model and LanceDB dominate it). The goal: a 200 KB paste within 2x of a
4 KB one in time and memory. The question is the real-shaped report (prose, a traceback, then a long
server log) cut to the size.

Prints one line per size and writes ``bench/results/long_question.json`` with the load average at
the start and the end (the machine may be shared).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import peak_rss_mb, write_result
from tests.long_report import report, write_shop


def measure(root: Path, size: int, repeat: int) -> dict:
    """The numbers of one size, in this process (see the module docstring)."""
    from codeask.query.digest import QUESTION_DIGEST_CHARS, digest_question
    from codeask.query.report import parse_question
    from codeask.workspace import Workspace

    question = report(size)
    ws = Workspace([root])
    ws.ask(question, no_llm=True)  # warm-up: model and tables loaded
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        answer = ws.ask(question, no_llm=True)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    start = time.perf_counter()
    digest = digest_question(question, QUESTION_DIGEST_CHARS)
    parse_question(question)
    reading = time.perf_counter() - start
    tracemalloc.start()
    ws.ask(question, no_llm=True)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "chars": len(question),
        "digest_chars": digest.chars_sent,
        "top_source": answer.sources[0].path if answer.sources else None,
        "ask_seconds": round(statistics.median(walls), 4),
        "ask_cpu_seconds": round(statistics.median(cpus), 4),
        "report_reading_seconds": round(reading, 4),
        "ask_python_peak_mib": round(peak / 2**20, 2),
        "peak_rss_mib": round(peak_rss_mb(), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4000,200000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: measure one size here
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(Path(args.root), args.one, args.repeat)))
        return
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "CODEASK_CACHE_DIR": str(Path(tmp) / "cache")}
        root = write_shop(Path(tmp) / "shop")
        subprocess.run([sys.executable, "-m", "codeask", "index", str(root)], env=env, check=True)
        rows = []
        for size in (int(s) for s in args.sizes.split(",")):
            one = [sys.executable, __file__, "--one", str(size), "--root", str(root), "--repeat", str(args.repeat)]
            row = json.loads(subprocess.run(one, env=env, check=True, capture_output=True, text=True).stdout)
            rows.append(row)
            print(
                f"{row['chars']:>8,} chars -> digest {row['digest_chars']:,}: ask {row['ask_seconds']:.3f} s "
                f"(cpu {row['ask_cpu_seconds']:.3f} s), reading {row['report_reading_seconds']:.4f} s, "
                f"python peak {row['ask_python_peak_mib']} MiB, rss {row['peak_rss_mib']} MiB, top {row['top_source']}"
            )
    first, last = rows[0], rows[-1]
    ratios = {
        key: round(last[key] / first[key], 2) if first[key] else None
        for key in ("ask_seconds", "ask_cpu_seconds", "ask_python_peak_mib", "peak_rss_mib")
    }
    print("ratios (largest / smallest):", ratios)
    path = write_result(
        "long_question",
        {"rows": rows, "ratios": ratios, "load_start": load_start, "load_end": os.getloadavg()},
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
