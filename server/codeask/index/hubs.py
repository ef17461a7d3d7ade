"""Hub files: files that rank for most questions, measured from the index itself.

A file with many chunks and a broad vocabulary (an options-definition file, a settings table, a
``main.go`` that wires everything) enters the top files of almost any keyword search: in one
terminal emulator an options file was in the top 10 for 21 of 26 questions. This is *hubness*, as
the nearest-neighbour literature calls it: a point's k-occurrence, how often it is among the k
nearest neighbours of other points, is far above the k/N a point gets by chance.

:func:`measure_hubs` estimates each file's k-occurrence share from the index alone: up to
:data:`SAMPLE` chunks of the project's own code (kind ``source``), spread evenly over the chunk ids,
each searched by keyword as a pseudo-question (its first :data:`QUERY_WORDS` words); a file's share
is the fraction of pseudo-questions from *other* files whose top :data:`TOP_FILES` files hold it.
It runs after phase 1 (its keyword searches only) and is saved beside the tables as ``hubs.json``.
A hub is a file that ranks for *most* questions: a share above :data:`HUB_SHARE` (three quarters).
Retrieval damps it by :func:`hub_factor` unless the question names it
(:mod:`codeask.query.steps.priors`): a file in every top 10 keeps half its score, one in 90% of
them 0.625, one in three quarters of them or fewer all of it. Roots with fewer than :data:`MIN_FILES` files
have no hubs: there, k/N (10/200 = 5%) is large enough that the core modules of a small library
(``sessions.py`` of requests, in 84% of the top 10s of its 36 files) rank for most questions
because they are most of the code, not because they crowd it out.
"""

from __future__ import annotations

import functools
import json
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeask.index.rows import IDENT, TABLE, sql_in

if TYPE_CHECKING:
    from codeask.index.store import Store

__all__ = [
    "HUBS_FILE",
    "HUB_SHARE",
    "MIN_FILES",
    "SAMPLE",
    "TOP_FILES",
    "QUERY_WORDS",
    "hub_factor",
    "measure_hubs",
    "save_hubs",
    "load_hubs",
]

HUBS_FILE = "hubs.json"
#: Pseudo-questions per measurement.
SAMPLE = 64
#: Top files a pseudo-question's result is counted in (the depth users read: ``--max-files 10``).
TOP_FILES = 10
#: Words of a sampled chunk that make its pseudo-question (a question's length, give or take).
QUERY_WORDS = 24
#: Below this many indexed files a root has no hubs.
MIN_FILES = 200
#: Shares at or below this are not kept: a hub ranks for three questions in four or more. At one half
#: the damping cost the flask set of shared/eval 0.07 MRR (0.718 -> 0.647): its ``src/flask/app.py``,
#: at 0.56, is both central and the answer to many questions; the hubs issue 29 names rank for 21 of
#: 26 questions (0.81) and 7 of 8 (0.88).
HUB_SHARE = 0.75


def sample_rows(store: Store, n: int, kind: str) -> list[dict[str, Any]]:
    """Up to ``n`` chunk rows (``path``, ``content``) of ``kind``, spread evenly over the rows
    sorted by id (deterministic: the same index gives the same sample)."""
    ids = store.tables.column(TABLE, "id", f"kind = '{kind}'")
    if not ids:
        return []
    ids.sort()
    step = max(1, len(ids) // n)
    picked = ids[::step][:n]
    return store.tables.rows(TABLE, sql_in("id", picked), ["path", "content"]).to_pylist()


def measure_hubs(store: Store, files: int) -> dict[str, float]:
    """``{path: k-occurrence share}`` (0..1) of the hub files of ``store``: shares above
    :data:`HUB_SHARE` (see the module docstring); ``{}`` for a root of fewer than
    :data:`MIN_FILES` ``files``."""
    if files < MIN_FILES:
        return {}
    sample = sample_rows(store, SAMPLE, "source")
    counts: Counter[str] = Counter()
    asked = 0
    for row in sample:
        words = IDENT.findall(row["content"])[:QUERY_WORDS]
        if len(words) < 3:
            continue
        asked += 1
        top: list[str] = []
        for hit in store.keyword_search(" ".join(words), TOP_FILES * 5):
            if hit.path not in top:
                top.append(hit.path)
        counts.update(path for path in top[:TOP_FILES] if path != row["path"])
    if not asked:
        return {}
    return {path: round(n / asked, 4) for path, n in counts.items() if n / asked > HUB_SHARE}


def hub_factor(share: float) -> float:
    """A hub's score multiplier: ``1 / (1 + 4 * (share - HUB_SHARE))`` above :data:`HUB_SHARE`
    (1 at three quarters, 0.5 at every question), else 1."""
    return 1.0 / (1.0 + 4.0 * max(0.0, share - HUB_SHARE))


def save_hubs(index_dir: Path, hubs: dict[str, float]) -> None:
    """Write ``hubs.json`` atomically; a read-only folder keeps the old one."""
    path = Path(index_dir) / HUBS_FILE
    tmp = path.with_name(f".{HUBS_FILE}.{os.getpid()}")
    try:
        tmp.write_text(json.dumps(hubs, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass


def load_hubs(index_dir: Path) -> dict[str, float]:
    """``hubs.json`` of ``index_dir`` (read again only when it changed); ``{}`` when missing or
    unreadable."""
    path = Path(index_dir) / HUBS_FILE
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        return {}
    return _read_hubs(str(path), stamp)


@functools.lru_cache(maxsize=32)
def _read_hubs(path: str, stamp: int) -> dict[str, float]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(p): float(v) for p, v in data.items() if isinstance(v, (int, float)) and 0 <= v <= 1}
