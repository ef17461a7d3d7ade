"""``codeask.status`` while the index is busy (the reopen of a folder with an index): the first
answer, given after ~30 ms before any snapshot was read, carries no counts (VS Code showed its zero
placeholder as "codeask: 0 files"); later ones carry the last snapshot, marked stale."""

from __future__ import annotations

import asyncio
import threading

from codeask.lsp.status import StatusSnapshots, status_json
from codeask.lsp.work import Lane
from codeask.service import ServiceStatus
from tests.test_lsp import cmd, session
from tests.workspaces import indexed, write_tree

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


def test_the_first_status_on_an_indexed_folder_carries_its_counts(tmp_path):
    """Over stdio: a folder indexed before the server starts, not re-indexed (``indexOnStartup:
    never``). The first ``codeask.status`` came back stale and without counts while the server's read
    lane waited for the heavy-module preload, so ``:checkhealth codeask`` printed "no index yet";
    it now waits for the read (``FIRST_STATUS_WAIT``) and carries the folder's counts."""
    root = write_tree(tmp_path / "ws", {"src/a.py": "def alpha():\n    return 1\n", "src/b.py": "def beta():\n    return 2\n"})
    indexed(root)

    async def run() -> dict:
        async with session(root, options={"indexOnStartup": "never"}) as client:
            return await cmd(client, "codeask.status")

    first = asyncio.run(run())
    assert "stale" not in first and not first["indexing"], first
    assert first["files"] == 2 and first["chunks_total"] >= 2 and first["index_dir"], first
