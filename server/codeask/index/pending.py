"""Which chunk rows still wait for their vector, known without scanning the tables on every change.

A chunk row is *pending* while no row of ``vectors`` has its ``embed_hash``. Counting that is a scan
of both tables (two columns of a million rows at monorepo scale: seconds), so it is done once and
then kept current by the writer's own commits: a file replacement adds its new pending rows and
removes its old ones, a vector commit removes its hashes, and compaction, index builds and the
collection of unused vectors change no pending row. The state is keyed by the pair of table
versions it is true for; a commit by another process (another version) makes it unknown again, and
the next question scans. It is saved beside the tables (``pending.json``, at most
:data:`SAVE_MAX_HASHES` hashes) so that a new process, e.g. a restart with nothing changed, starts
from it instead of scanning.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["PendingVectors", "SAVE_MAX_HASHES"]

#: A state with more distinct pending hashes than this (a cold index) is not saved to disk.
SAVE_MAX_HASHES = 50_000

Versions = tuple[int, int]


class PendingVectors:
    """``{embed_hash: pending chunk rows}`` at the tables' latest versions.

    Args:
        path: the file the state is saved to (``<index>/pending.json``).
        versions: returns the latest ``(chunks version, vectors version)``.
        scan: returns the state by scanning both tables (called when it is not known).
    """

    def __init__(self, path: Path, versions: Callable[[], Versions], scan: Callable[[], dict[str, int]]):
        self.path = Path(path)
        self._versions = versions
        self._scan = scan
        self._lock = threading.Lock()
        self._state: tuple[Versions, dict[str, int]] | None = None

    def _current(self) -> dict[str, int]:
        """The state at the latest versions (loaded from disk or scanned if unknown); hold no lock."""
        versions = self._versions()
        with self._lock:
            if self._state is not None and self._state[0] == versions:
                return self._state[1]
        rows = self._load(versions)
        if rows is None:
            rows = self._scan()
            self._save(versions, rows)
        with self._lock:
            self._state = (versions, rows)
        return rows

    def count(self, *, distinct: bool = False) -> int:
        """Pending chunk rows, or with ``distinct`` the texts to embed for them."""
        rows = self._current()
        with self._lock:
            return len(rows) if distinct else sum(rows.values())

    def hashes(self, limit: int) -> list[str]:
        """Up to ``limit`` pending embed hashes, in sorted order."""
        rows = self._current()
        with self._lock:
            return sorted(rows)[:limit]

    def known(self) -> dict[str, int] | None:
        """The state if it is known for the latest versions (call before a write), else ``None``."""
        versions = self._versions()
        with self._lock:
            if self._state is not None and self._state[0] == versions:
                return self._state[1]
        return None

    def committed(
        self,
        before: dict[str, int] | None,
        *,
        added: Iterable[str] = (),
        removed: Iterable[str] = (),
        vectors: Iterable[str] = (),
    ) -> None:
        """Record a commit: ``before`` is what :meth:`known` returned before it (``None``: the
        state is dropped); ``added``/``removed``: embed hashes of pending chunk rows written/deleted
        (one per row); ``vectors``: embed hashes that got a vector."""
        if before is None:
            with self._lock:
                self._state = None
            return
        added, removed, vectors = list(added), list(removed), list(vectors)
        versions = self._versions()
        with self._lock:
            if not (added or removed or vectors) and self._state is not None and self._state[0] == versions:
                return  # nothing was committed

            for h in removed:
                left = before.get(h, 0) - 1
                if left > 0:
                    before[h] = left
                else:
                    before.pop(h, None)
            for h in added:
                before[h] = before.get(h, 0) + 1
            for h in vectors:
                before.pop(h, None)
            self._state = (versions, before)
        self._save(versions, before)

    def _load(self, versions: Versions) -> dict[str, int] | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if tuple(data["versions"]) == versions and isinstance(data["rows"], dict):
                return {str(h): int(n) for h, n in data["rows"].items()}
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return None

    def _save(self, versions: Versions, rows: dict[str, int]) -> None:
        """Write the state atomically (a reader never sees half a file); too large or a read-only
        folder: remove the stale file, or leave it (it names older versions, so it is never used)."""
        try:
            if len(rows) > SAVE_MAX_HASHES:
                self.path.unlink(missing_ok=True)
                return
            with self._lock:
                text = json.dumps({"versions": list(versions), "rows": rows})
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            pass
