"""One writer per index: an in-process re-entrant lock plus an inter-process file lock.

``<index>/write.lock`` is a :mod:`filelock` lock, released by the OS when its owner dies;
``<index>/write.owner`` names the holder (pid and command) so a waiting or refused process can say
who holds it. Readers never take it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import filelock

__all__ = ["IndexLocked", "WriteLock"]

log = logging.getLogger(__name__)


class IndexLocked(RuntimeError):
    """Another process holds the index's write lock; the message names its pid and command."""


class WriteLock:
    """The write lock of the index folder ``index_dir`` (which must exist before :meth:`hold`).

    Re-entrant within a process (one thread at a time); the owner file is written when the
    outermost hold starts.
    """

    def __init__(self, index_dir: Path):
        self.index_dir = Path(index_dir)
        self._thread_lock = threading.RLock()
        self._file_lock = filelock.FileLock(str(self.index_dir / "write.lock"))
        self._owner_file = self.index_dir / "write.owner"

    @contextmanager
    def hold(self, *, wait: bool = True, timeout: float | None = None) -> Iterator[None]:
        """Hold the lock for the ``with`` block.

        Args:
            wait: block until the lock is free; ``False`` raises at once if another process holds it.
            timeout: seconds to wait at most (``None``: forever).

        Raises:
            IndexLocked: another process holds it (and ``wait`` is false or ``timeout`` passed).
        """
        with self._thread_lock:
            try:
                self._file_lock.acquire(timeout=0)
            except filelock.Timeout:
                if not wait:
                    raise IndexLocked(self.message()) from None
                log.warning("%s; waiting for it to finish", self.message())
                try:
                    self._file_lock.acquire(timeout=-1 if timeout is None else timeout)
                except filelock.Timeout:
                    raise IndexLocked(self.message()) from None
            try:
                if self._file_lock.lock_counter == 1:
                    self._owner_file.write_text(
                        json.dumps({"pid": os.getpid(), "argv": " ".join(sys.argv[:3])}), encoding="utf-8"
                    )
                yield
            finally:
                self._file_lock.release()

    def message(self) -> str:
        """Who holds the lock, as one line (``"another process"`` when the owner file is unreadable)."""
        try:
            owner = json.loads(self._owner_file.read_text(encoding="utf-8"))
            who = f"pid {owner.get('pid')} ({owner.get('argv', '').strip()})"
        except (OSError, ValueError):
            who = "another process"
        return f"the index {self.index_dir} is being updated by {who}"
