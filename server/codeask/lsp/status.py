"""``codeask.status`` answered within ~30 ms, even while a write holds the index.

:class:`StatusSnapshots` reads :meth:`Service.status <codeask.service.Service.status>` in a lane
and waits :data:`STATUS_WAIT` seconds for it; when the read takes longer (a write holds the index)
the last snapshot answers, marked ``"stale": true``, and without counts before the first snapshot
(the counts are not known: not zero, which an editor would show as "0 files"). The first read on a
folder that is not being indexed waits up to :data:`FIRST_STATUS_WAIT` seconds instead: nothing
holds the index then, only the server's start (the read lane waits for the heavy-module preload,
:mod:`codeask.imports`), and an editor's health check asking once should get the counts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from codeask.lsp.work import Lane
from codeask.service import ServiceStatus

__all__ = ["StatusSnapshots", "STATUS_WAIT", "FIRST_STATUS_WAIT", "status_json", "index_state"]

#: Seconds ``codeask.status`` waits for a fresh read before answering with the last snapshot.
STATUS_WAIT = 0.03

#: Seconds the first ``codeask.status`` waits for its read when nothing is being indexed (a read
#: then waits only for the server's start: the preload took 7.5 s on a busy 2-core machine, so
#: Neovim's ``:checkhealth codeask`` printed "no index yet" for an indexed folder). Below the 30 s
#: editors/nvim's health check waits.
FIRST_STATUS_WAIT = 20.0

#: ``codeask.status`` before anything was indexed (no index is opened to read counts).
_NOT_INDEXED: dict[str, Any] = {
    "files": 0,
    "chunks_total": 0,
    "vectors_pending": 0,
    "index_dir": None,
    "roots": [],
    "state": "not-indexed",
    "note": None,
}

#: ``index_state`` of ``codeask.status`` for each scheduler activity (the editors read these names).
_INDEX_STATES = {"idle": "not-indexed"}


class StatusSnapshots:
    """The last :class:`~codeask.service.ServiceStatus` read, and the read under way.

    Args:
        lane: where reads run (one at a time: a read still running is awaited, not repeated).
    """

    def __init__(self, lane: Lane):
        self.lane = lane
        self.last: ServiceStatus | None = None
        #: Whether the last :meth:`read` answered with a status read then (not a snapshot).
        self.fresh = False
        self._task: asyncio.Future | None = None

    async def read(self, status: Callable[[], ServiceStatus], wait: float = STATUS_WAIT) -> ServiceStatus | None:
        """A fresh ``status()`` when it comes within ``wait`` seconds, else the last one (``None``
        before the first); :attr:`fresh` says which."""
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self.lane.run(status))
        done, _ = await asyncio.wait({self._task}, timeout=wait)
        self.fresh = bool(done) and self._task.exception() is None
        if self.fresh:
            self.last = self._task.result()
        return self.last


def status_json(status: ServiceStatus | None, *, stale: bool, activity: dict[str, Any]) -> dict[str, Any]:
    """The JSON of ``codeask.status``: the status's counts, ``state`` and ``note`` (``stale``: a
    snapshot, then ``"stale": true``, and ``{"index_dir": None}`` when there is none yet; ``status``
    ``None`` and not ``stale``: nothing indexed yet, zero counts); then ``activity``:
    ``{"indexing", "index_state", "index_message", "lock_holder", "llm", "watch"}`` as they are now."""
    if status is None:
        out: dict[str, Any] = {"index_dir": None, "stale": True} if stale else dict(_NOT_INDEXED)
    else:
        out = status.to_json()
        if stale:
            out["stale"] = True
    out.update(activity)
    return out


def index_state(activity: str) -> str:
    """``index_state`` for a scheduler activity: ``not-indexed`` for ``idle``, else the activity."""
    return _INDEX_STATES.get(activity, activity)
