"""What the symbol graph costs and how fast its edges follow an edit.

Usage::

    python bench/graph.py --sdist sphinx==9.0.4            # the codeask on PYTHONPATH
    PYTHONPATH=<checkout without the graph>/server python bench/graph.py --sdist sphinx==9.0.4 --label before

Measured in one run, on a fresh index folder (a temp ``CODEASK_CACHE_DIR``), ``--repeat`` times:

* the keyword phase of a cold index (:meth:`RootIndex.sync_keywords`: walk, chunk, rows, full-text
  and scalar indexes), wall seconds and the process's CPU seconds (all its threads, LanceDB's
  included: steadier than wall time on a shared machine), and the chunker's CPU seconds over the same files
  (``time.process_time`` around :func:`codeask.index.chunking.chunk_text`), of which the graph's
  name extraction (:func:`codeask.index.chunking.graph.chunk_names`, absent before the graph);
* with the graph: a 1-file update, a function calling a fresh name appended to a ~300-line file,
  then seconds until :meth:`Workspace.related` lists it among the name's callers (polled while
  :meth:`Workspace.update_paths` runs: its rows and edges commit before its vector), 5 times (the
  first one starts the embedding child);
* the load average (``os.getloadavg``) before and after: the machine is shared.

Prints the numbers and writes ``bench/results/graph-<name>-<label>.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import fetch_sdist, write_result


def _timed(module: object, name: str, spent: list[float]) -> None:
    """Wrap ``module.name`` so its CPU seconds add up in ``spent[0]``."""
    inner = getattr(module, name)

    def wrapper(*args, **kwargs):
        t0 = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - t0

    setattr(module, name, wrapper)


def keyword_phase(root: Path) -> dict:
    """One cold keyword phase of ``root``: wall seconds, chunks, chunker and graph CPU seconds."""
    import codeask.index.chunk as chunk_module
    import codeask.index.chunking as chunking
    from codeask.index.engine import RootIndex
    from codeask.settings import load_settings

    chunking_cpu, graph_cpu = [0.0], [0.0]
    _timed(chunk_module, "chunk_text", chunking_cpu)
    if hasattr(chunking, "chunk_names"):
        _timed(chunking, "chunk_names", graph_cpu)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["CODEASK_CACHE_DIR"] = cache
        index = RootIndex(root, load_settings(root))
        t0, c0 = time.perf_counter(), time.process_time()
        stats = index.sync_keywords()
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {
        "keyword_phase_seconds": round(seconds, 2),
        "keyword_phase_cpu_seconds": round(cpu, 2),
        "chunks": stats.chunks_total,
        "files": stats.files_changed,
        "chunking_cpu_seconds": round(chunking_cpu[0], 2),
        "graph_cpu_seconds": round(graph_cpu[0], 2),
    }


def update_latency(root: Path, runs: int = 5) -> list[float]:
    """Seconds from saving a new caller to :meth:`Workspace.related` listing it, ``runs`` times."""
    from codeask.workspace import Workspace

    with tempfile.TemporaryDirectory() as cache:
        os.environ["CODEASK_CACHE_DIR"] = cache
        ws = Workspace([root], background_indexing=True)
        ws.index(embed=False)
        target = max(
            (p for p in root.rglob("*.py") if 250 <= len(p.read_text(errors="replace").splitlines()) <= 400),
            key=lambda p: str(p),
        )
        original = target.read_text()
        out = []
        try:
            for i in range(runs):
                name = f"graph_bench_target_{i}"
                target.write_text(original + f"\n\ndef graph_bench_caller_{i}():\n    return {name}()\n")
                t0 = time.perf_counter()
                update = threading.Thread(target=ws.update_paths, args=([target],))
                update.start()  # its vector follows the rows: the edges are searchable before it
                while not ws.related(name).callers:
                    time.sleep(0.01)
                out.append(time.perf_counter() - t0)
                update.join()
        finally:
            target.write_text(original)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, help="folder to index")
    parser.add_argument("--sdist", help="a PyPI pin to fetch and index instead, e.g. sphinx==9.0.4")
    parser.add_argument("--label", default="after", help="names the result file (before / after)")
    parser.add_argument("--repeat", type=int, default=2, help="cold keyword phases measured")
    args = parser.parse_args()
    if args.sdist:
        root = fetch_sdist(args.sdist)
    elif args.path:
        root = args.path.resolve()
    else:
        parser.error("give PATH or --sdist")
    load_before = os.getloadavg()
    phases = [keyword_phase(root) for _ in range(args.repeat)]
    result: dict = {"root": root.name, "label": args.label, "keyword_phases": phases}
    result["keyword_phase_seconds_median"] = statistics.median(p["keyword_phase_seconds"] for p in phases)
    if importlib.util.find_spec("codeask.query.graph") is not None:
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / root.name
            shutil.copytree(root, copy)
            latencies = update_latency(copy)
        result["update_to_edges_seconds"] = [round(x, 3) for x in latencies]
        result["update_to_edges_seconds_median"] = round(statistics.median(latencies), 3)
    result["loadavg_before"] = [round(x, 2) for x in load_before]
    result["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    for key, value in result.items():
        print(f"{key}: {value}")
    print(f"wrote {write_result(f'graph-{root.name}-{args.label}', result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
