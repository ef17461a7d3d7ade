"""Helpers shared by the benchmarks: fetching the pinned sdists, peak RSS, writing results."""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for tests.sdist

from tests.sdist import fetch_sdist as _fetch  # noqa: E402

SDISTS = Path.home() / ".cache" / "codeask-bench-sdists"
RESULTS = Path(__file__).resolve().parent / "results"
EVAL_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "eval"


def fetch_sdist(pin: str, where: Path = SDISTS) -> Path:
    """Download (once) and unpack ``name==version`` from PyPI; returns the unpacked root."""
    return _fetch(pin, where)


def peak_rss_mb() -> float:
    """Peak resident set size of this process, MiB (Linux ru_maxrss is KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_result(name: str, data: dict) -> Path:
    """Write ``bench/results/<name>.json`` and return its path."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path
