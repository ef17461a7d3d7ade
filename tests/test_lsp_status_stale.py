"""``codeask.status`` while the index is busy (the reopen of a folder with an index): the first
answer, given after ~30 ms before any snapshot was read, carries no counts (VS Code showed its zero
placeholder as "codeask: 0 files"); later ones carry the last snapshot, marked stale."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

from codeask.lsp.session import CodeaskServer


class _BusyWorkspace:
    """A workspace whose ``status()`` blocks until released (a write holding the index)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.settings = SimpleNamespace(resolved_llm=lambda: None)

    def status(self) -> dict:
        self.release.wait(10)
        return {"files": 7, "chunks_total": 40, "vectors_pending": 0, "index_dir": "/idx"}


class _StartedScheduler:
    started = True

    def keyword_ready(self) -> bool:
        return True

    def snapshot(self) -> dict:
        return {"indexing": True, "index_state": "indexing", "index_message": "", "lock_holder": None}


def test_first_busy_status_has_no_counts_then_the_last_snapshot():
    async def run() -> None:
        server = CodeaskServer()
        ws = _BusyWorkspace()
        server.ws = ws  # type: ignore[assignment]
        server.scheduler = _StartedScheduler()  # type: ignore[assignment]
        first = await server.status()
        assert first["stale"] is True and first["indexing"] is True
        assert "files" not in first and "chunks_total" not in first and "vectors_pending" not in first
        ws.release.set()
        while (st := await server.status()).get("stale"):
            await asyncio.sleep(0.01)
        assert st["files"] == 7 and st["chunks_total"] == 40
        ws.release.clear()
        server._status_task = None  # the next read blocks again
        busy = await server.status()
        assert busy["stale"] is True and busy["files"] == 7  # the last snapshot, not zero
        ws.release.set()

    asyncio.run(run())
