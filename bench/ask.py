"""Whole-process CLI latency: ``codeask ask PATH Q --no-llm`` beside ``codeask --version``, and where the time goes.

Usage::

    python bench/ask.py [--sdist requests==2.34.2 | --path FOLDER] [-n 10] [--question Q]

Indexes the folder first (``codeask index``; honours ``CODEASK_CACHE_DIR``), then runs each
command ``-n`` times as a new process, as a user at a shell would, and reports wall time p50 /
p95 and CPU seconds (user + system, which a busy machine does not inflate) for:

* ``codeask --version`` (Python start-up plus the CLI module: the floor);
* ``codeask ask PATH Q --no-llm`` (catches up with the disk, embeds the question, searches);
* ``codeask ask PATH Q --no-llm --no-update`` (answers from the index as it is);
* ``codeask ask PATH Q --no-llm`` while ``codeask watch PATH`` runs (the watch answers it: no
  LanceDB or model import in the ask process, see ``codeask.resident``);

then the import time of each heavy module in one ``ask`` process (``python -X importtime``,
cumulative microseconds of the first import, as Python reports it), and the warm in-process
``Workspace.ask`` latency (the pipeline alone, with every module loaded). Needs no question set
and no network beyond fetching the sdist from PyPI once. Prints a table and writes
``bench/results/ask-cli.json``. The goal (issue 14): ask p50 < 1 s wall on an idle machine.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import fetch_sdist, write_result  # noqa: E402

GOAL_SECONDS = 1.0
HEAVY = (
    "lancedb", "pyarrow", "fastembed", "onnxruntime", "huggingface_hub", "tokenizers", "tree_sitter_language_pack",
    "openai", "anthropic", "httpx", "pydantic", "jinja2", "numpy", "rich", "pygls", "codeask.settings",
    "codeask.workspace", "codeask.index.store", "codeask.eval.cli",
)


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """Run ``argv``; returns (wall seconds, CPU seconds of the child, the completed process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()}")
    return wall, cpu, proc


def summarize(samples: list[tuple[float, float]]) -> dict[str, float]:
    walls = sorted(w for w, _ in samples)
    cpus = sorted(c for _, c in samples)
    return {
        "wall_p50": round(statistics.median(walls), 3),
        "wall_p95": round(walls[max(0, int(0.95 * len(walls)) - 1)], 3),
        "cpu_p50": round(statistics.median(cpus), 3),
    }


def import_times(argv: list[str], env: dict[str, str]) -> dict[str, float]:
    """Cumulative import seconds of each :data:`HEAVY` module in one run of ``argv`` (``-X importtime``)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", *argv], capture_output=True, text=True, env=env)
    out: dict[str, float] = {}
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|\s*(\S+)", line)
        if not m:
            continue
        # a package imported through one of its submodules has no line of its own: its largest subtree
        name = next((h for h in HEAVY if m.group(2) == h or m.group(2).startswith(h + ".")), None)
        if name is not None:
            out[name] = max(out.get(name, 0.0), round(int(m.group(1)) / 1e6, 3))
    return out


def measure_with_watch(codeask: list[str], root: Path, ask_argv: list[str], env: dict[str, str], n: int):
    """``n`` timed asks while a ``codeask watch`` of ``root`` runs (started and stopped here)."""
    import signal

    from codeask.resident import socket_path

    watch = subprocess.Popen([*codeask, "watch", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        while not socket_path(root).exists():
            if watch.poll() is not None:
                raise SystemExit("codeask watch exited before opening its socket")
            time.sleep(0.1)
        run(ask_argv, env)  # the watch's first ask loads the model
        return [run(ask_argv, env)[:2] for _ in range(n)]
    finally:
        watch.send_signal(signal.SIGTERM)
        watch.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdist", default="requests==2.34.2", help="PyPI sdist to index (default requests==2.34.2)")
    parser.add_argument("--path", type=Path, help="a folder instead of the sdist")
    parser.add_argument("-n", type=int, default=10, help="runs per command (default 10)")
    parser.add_argument("--question", default="How does a session decide whether to follow a redirect?")
    args = parser.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    root = (args.path or fetch_sdist(args.sdist)).resolve()
    codeask = [sys.executable, "-m", "codeask"]
    run([*codeask, "index", str(root)], env)

    version = [run([*codeask, "--version"], env)[:2] for _ in range(args.n)]
    ask_argv = [*codeask, "ask", str(root), args.question, "--no-llm"]
    asks, answer = [], None
    for _ in range(args.n):
        wall, cpu, proc = run(ask_argv, env)
        asks.append((wall, cpu))
        answer = proc.stdout
    no_update = [run([*ask_argv, "--no-update"], env)[:2] for _ in range(args.n)]
    resident = measure_with_watch(codeask, root, ask_argv, env, args.n)
    imports = import_times(["-m", "codeask", "ask", str(root), args.question, "--no-llm"], env)

    from codeask.workspace import Workspace

    ws = Workspace([root])
    ws.ask(args.question, no_llm=True)
    warm = []
    for _ in range(args.n):
        t = time.perf_counter()
        ws.ask(args.question, no_llm=True)
        warm.append(time.perf_counter() - t)

    result = {
        "root": str(root),
        "runs": args.n,
        "goal_ask_wall_p50_seconds": GOAL_SECONDS,
        "version": summarize(version),
        "ask": summarize(asks),
        "ask_no_update": summarize(no_update),
        "ask_with_watch_running": summarize(resident),
        "in_process_warm_ask_p50": round(statistics.median(warm), 3),
        "import_seconds": imports,
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "sources_found": answer.count("](file://") if answer else 0,
    }
    for name in ("version", "ask", "ask_no_update", "ask_with_watch_running"):
        r = result[name]
        print(f"{name:22} wall p50 {r['wall_p50']:.3f} s  p95 {r['wall_p95']:.3f} s  cpu p50 {r['cpu_p50']:.3f} s")
    print(f"{'warm in-process':22} p50 {result['in_process_warm_ask_p50']:.3f} s")
    for name in ("ask", "ask_with_watch_running"):
        met = "met" if result[name]["wall_p50"] < GOAL_SECONDS else "NOT met"
        print(f"goal {name} wall p50 < {GOAL_SECONDS} s: {met}")
    print(f"(1-minute load average {result['load_average']}; on a busy machine compare cpu p50)")
    print("import seconds (cumulative, first import, one ask process):")
    for name, seconds in sorted(imports.items(), key=lambda kv: -kv[1]):
        print(f"  {name:28} {seconds:.3f}")
    print(f"\nwritten to {write_result('ask-cli', result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
