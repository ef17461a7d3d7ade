"""``codeask.status`` while the index is busy (the reopen of a folder with an index): the first
answer, given after ~30 ms before any snapshot was read, carries no counts (VS Code showed its zero
placeholder as "codeask: 0 files"); later ones carry the last snapshot, marked stale."""

from __future__ import annotations

import asyncio
import threading

from codeask.lsp.status import StatusSnapshots, status_json
from codeask.lsp.work import Lane
from codeask.service import ServiceStatus

COUNTS = {"indexed": True, "read_only": False, "files": 7, "chunks_total": 40, "vectors_pending": 0, "index_dir": "/idx"}
ACTIVITY = {"indexing": True, "index_state": "indexing", "index_message": "", "lock_holder": None}


class _BusyService:
    """A service whose ``status()`` blocks until released (a write holding the index)."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def status(self) -> ServiceStatus:
        self.release.wait(10)
        return ServiceStatus("ready", COUNTS)


async def _status(snapshots: StatusSnapshots, service: _BusyService) -> dict:
    got = await snapshots.read(service.status)
    return status_json(got, stale=not snapshots.fresh, activity=ACTIVITY)


def test_first_busy_status_has_no_counts_then_the_last_snapshot():
    async def run() -> None:
        snapshots = StatusSnapshots(Lane("status", 1, imports=False))
        service = _BusyService()
        first = await _status(snapshots, service)
        assert first["stale"] is True and first["indexing"] is True
        assert "files" not in first and "chunks_total" not in first and "vectors_pending" not in first
        service.release.set()
        while (st := await _status(snapshots, service)).get("stale"):
            await asyncio.sleep(0.01)
        assert st["files"] == 7 and st["chunks_total"] == 40 and st["state"] == "ready"
        service.release.clear()  # the next read blocks again
        busy = await _status(snapshots, service)
        assert busy["stale"] is True and busy["files"] == 7  # the last snapshot, not zero
        service.release.set()

    asyncio.run(run())
