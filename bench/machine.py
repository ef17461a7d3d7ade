"""A second copy of an indexed repository on the same machine, and the cost of a one-shot ask.

Usage::

    python bench/machine.py                        # sphinx==9.0.4
    python bench/machine.py --sdist requests==2.34.2
    python bench/machine.py --skip-copy --runs 5   # only the one-shot ask / import lancedb ratio
    python bench/machine.py --keep /tmp/sphinx-run  # keep the cache; a later run reuses copy A's index

Steps, in one temp cache dir (never the user's):

1. ``codeask index`` of copy A (cold: every chunk embedded, the machine's vector store filled);
2. ``codeask index`` of copy B, a second copy of the same tree: wall seconds of the whole process
   (goal: every vector in under 15 s), ``chunks_embedded`` (goal: 0) and ``chunks_reused``;
3. the same questions asked on both copies (``--no-llm --json``): whether the ranked sources agree;
4. ``codeask ask A QUESTION --no-llm`` as a one-shot process (it brings the index up to date first:
   a walk finding nothing changed) against ``python -c "import lancedb"``, alternated, ``--runs``
   times each after a warm-up: median wall seconds and their ratio (goal: <= 1.5).

With ``--keep DIR`` the work dir is ``DIR`` and stays: a run that finds copy A indexed there (its
machine store filled) skips step 1 (``first_copy`` then says ``reused``) and indexes a new copy B
(``b<n>/``), so the second copy can be measured again without the minutes of the first.

Prints a table and writes ``bench/results/machine-<name>.json`` (``--out`` names it otherwise) with the
load average.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import fetch_sdist, write_result  # noqa: E402

QUESTIONS = [
    "How are configuration values read from conf.py?",
    "Where are cross-references between documents resolved?",
    "How does the builder decide which documents are outdated?",
]


def run(*args: str, env: dict) -> tuple[float, subprocess.CompletedProcess]:
    """``args`` as a process: ``(wall seconds, result)``; raises on a non-zero exit."""
    started = time.monotonic()
    proc = subprocess.run(list(args), capture_output=True, text=True, env=env, timeout=7200)
    if proc.returncode:
        raise SystemExit(f"{' '.join(args[:4])} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return time.monotonic() - started, proc


def index(root: Path, env: dict) -> dict:
    seconds, proc = run(sys.executable, "-m", "codeask", "index", str(root), "--json", env=env)
    stats = json.loads(proc.stdout)
    keys = (
        "chunks_total",
        "chunks_embedded",
        "chunks_reused",
        "vectors_pending",
        "seconds_to_searchable",
        "seconds",
        "startup_seconds",
    )
    return {"wall_seconds": round(seconds, 2), **{k: stats[k] for k in keys}}


def sources(root: Path, question: str, env: dict) -> list:
    proc = run(sys.executable, "-m", "codeask", "ask", str(root), question, "--no-llm", "--json", env=env)[1]
    return [
        (s["path"], s["start_line"], s["end_line"], round(s["score"], 9)) for s in json.loads(proc.stdout)["sources"]
    ]


def one_shot(root: Path, env: dict, runs: int) -> dict:
    """Median wall seconds of a one-shot ask and of ``import lancedb``, alternated, after a warm-up each."""
    ask = [sys.executable, "-m", "codeask", "ask", str(root), QUESTIONS[0], "--no-llm"]
    imp = [sys.executable, "-c", "import lancedb"]
    times: dict[str, list[float]] = {"ask": [], "import_lancedb": []}
    for i in range(runs + 1):
        for name, cmd in (("ask", ask), ("import_lancedb", imp)):
            seconds = run(*cmd, env=env)[0]
            if i:
                times[name].append(seconds)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "runs": runs,
        "ask_seconds": [round(t, 3) for t in times["ask"]],
        "import_lancedb_seconds": [round(t, 3) for t in times["import_lancedb"]],
        "ask_median": round(med["ask"], 3),
        "import_lancedb_median": round(med["import_lancedb"], 3),
        "ratio": round(med["ask"] / med["import_lancedb"], 3),
        "goal_ratio": 1.5,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdist", default="sphinx==9.0.4", help="PyPI pin to index (default sphinx==9.0.4)")
    parser.add_argument("--runs", type=int, default=5, help="one-shot asks (and imports) timed, after a warm-up")
    parser.add_argument("--skip-copy", action="store_true", help="only the one-shot ratio (indexes copy A only)")
    parser.add_argument("--keep", type=Path, help="work dir kept after the run; copy A's index there is reused")
    parser.add_argument("--out", help="result name (default machine-<sdist name>)")
    args = parser.parse_args()
    src = fetch_sdist(args.sdist)
    work = args.keep.resolve() if args.keep else Path(tempfile.mkdtemp(prefix="codeask-bench-machine-"))
    env = {**os.environ, "CODEASK_CACHE_DIR": str(work / "cache"), "HF_HUB_OFFLINE": "1"}
    result: dict = {"sdist": args.sdist, "load_before": os.getloadavg()}
    try:
        a, done = work / "a" / src.name, work / "a-indexed"
        b = work / f"b{sum(1 for _ in work.glob('b*'))}" / src.name
        if done.exists():
            result["first_copy"] = {"reused": True}
        else:
            shutil.rmtree(work / "a", ignore_errors=True)
            shutil.copytree(src, a)
            result["first_copy"] = index(a, env)
            if args.keep:
                done.touch()
        print(f"first copy: {result['first_copy']}", flush=True)
        if not args.skip_copy:
            shutil.copytree(src, b)
            result["second_copy"] = index(b, env)
            print(f"second copy: {result['second_copy']}", flush=True)
            same = [sources(a, q, env) == sources(b, q, env) for q in QUESTIONS]
            result["same_ranking"] = {"questions": len(same), "same": sum(same)}
            result["goal_second_copy_wall_seconds"] = 15
        result["one_shot"] = one_shot(a, env, args.runs)
        result["load_after"] = os.getloadavg()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2))
    path = write_result(args.out or f"machine-{args.sdist.split('==')[0]}", result)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
