"""Changed files batched into one index update (the client's ``didChangeWatchedFiles`` and ``didSave``).

Paths that arrive within :data:`CHANGE_BATCH_SECONDS` of each other become one call of
:meth:`Service.files_changed <codeask.service.Service.files_changed>`, run in the ``update`` lane.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable

from codeask.lsp.work import Lane
from codeask.service import Service

__all__ = ["ChangeBatch", "CHANGE_BATCH_SECONDS"]

log = logging.getLogger("codeask.lsp")

#: Watched-file events are collected this long before one index update, seconds.
CHANGE_BATCH_SECONDS = 0.3


class ChangeBatch:
    """Collects changed paths and applies them in batches, one batch at a time.

    Args:
        lane: where updates run.
        stopping: true once the server stops (no batch starts then).
        show: ``show(message)``: an update that failed, said to the user.
    """

    def __init__(self, lane: Lane, stopping: Callable[[], bool], show: Callable[[str], None]):
        self.lane = lane
        self.stopping = stopping
        self.show = show
        self._paths: set[str] = set()
        self._task: asyncio.Task | None = None

    def add(self, service: Service, paths: list[str]) -> None:
        """Queue ``paths`` (absolute) for an update of ``service``'s indexes (never raises)."""
        if self.stopping():
            return
        self._paths.update(paths)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._apply(service))

    async def _apply(self, service: Service) -> None:
        while self._paths and not self.stopping():
            await asyncio.sleep(CHANGE_BATCH_SECONDS)
            paths, self._paths = sorted(self._paths), set()
            try:
                stats = await self.lane.run(functools.partial(service.files_changed, paths))
                log.info("file events: %d changed, %d removed", stats.files_changed, stats.files_removed)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.exception("updating %d changed paths failed", len(paths))
                self.show(f"codeask: updating the index failed: {exc}")
