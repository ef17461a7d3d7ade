"""The per-file manifest: which files are indexed, at which content hash.

A SQLite file (``manifest.sqlite``, WAL mode) beside the LanceDB folder. Its invariant: a file has
a row only while the chunk rows for exactly that content are committed in LanceDB. The engine
deletes a file's row *before* touching its chunks and writes it back *after* they are committed,
so a process killed at any moment leaves the file unrecorded, and the next run re-indexes it.
A file is also listed in ``dirty`` from before its chunks are touched until its new state is recorded,
so a run that finds it gone from disk knows to delete rows a killed run committed for it, and the
indexed paths never have to be read from the chunk table.

Tables::

    files(path TEXT PRIMARY KEY, content_hash TEXT, size INTEGER, mtime_ns INTEGER, chunks INTEGER,
          encoding TEXT)                        -- NULL: recorded before encodings were (read again once)
    dirty(path TEXT PRIMARY KEY)                -- files whose chunks are being rewritten
    skipped(path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, reason TEXT, limits TEXT)
                                                -- files read once and skipped for their content
    meta(key TEXT PRIMARY KEY, value TEXT)      -- embedding model, vector dimension, schema version
"""

from __future__ import annotations

import sqlite3
import threading
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

__all__ = ["Manifest", "FileRecord", "SkipRecord"]


class FileRecord(NamedTuple):
    """One indexed file: content hash (sha256 hex of the bytes), size (bytes), mtime (ns), chunks, and
    the encoding its text was decoded with (:func:`codeask.index.decode.decode`'s codec name; ``None``
    for a file recorded by a codeask that did not record it: the next walk reads it again).

    A named tuple (immutable): a restart reads one per indexed file, 147k at 1M chunks, and a
    frozen dataclass cost 4x as much to build."""

    path: str
    content_hash: str
    size: int
    mtime_ns: int
    chunks: int
    encoding: str | None = "utf-8"


@dataclass(frozen=True)
class SkipRecord:
    """A file read once and skipped for its content (``binary``, ``minified``, ``too_large``) at this
    size (bytes) and mtime (ns), under these ``limits`` (the settings that decided it, as a string):
    while all three match, the walk does not read it again."""

    path: str
    size: int
    mtime_ns: int
    reason: str
    limits: str


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """Open ``path`` for reading only: ``mode=ro``, or ``immutable=1`` where SQLite cannot create the
    WAL's shared-memory file beside it (a read-only mount or folder).

    Raises:
        sqlite3.OperationalError: the file cannot be read at all.
    """
    uri = "file:" + urllib.parse.quote(str(Path(path).absolute()))
    last: sqlite3.Error | None = None
    for mode in ("mode=ro", "immutable=1"):
        db = sqlite3.connect(f"{uri}?{mode}", uri=True, check_same_thread=False, timeout=30)
        try:
            db.execute("SELECT COUNT(*) FROM files").fetchone()
            return db
        except sqlite3.Error as exc:
            db.close()
            last = exc
    assert last is not None
    raise last


class Manifest:
    """Indexed files of one root. Thread-safe (one connection behind a lock).

    Args:
        path: the ``manifest.sqlite`` file (created unless ``read_only``).
        read_only: open an existing manifest without writing anything (a read-only index folder);
            the write methods then raise ``sqlite3.OperationalError``.
    """

    def __init__(self, path: Path, *, read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        self._lock = threading.Lock()
        self._count: tuple[tuple[int, int], int] | None = None
        if read_only:
            self._db = _connect_read_only(self.path)
            self._columns = "path, content_hash, size, mtime_ns, chunks, " + (
                "encoding" if self._has_encoding() else "NULL"
            )
            return
        self._columns = "path, content_hash, size, mtime_ns, chunks, encoding"
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, content_hash TEXT NOT NULL,"
            " size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, chunks INTEGER NOT NULL, encoding TEXT)"
        )
        if not self._has_encoding():  # a manifest from before encodings were recorded
            self._db.execute("ALTER TABLE files ADD COLUMN encoding TEXT")
        self._db.execute("CREATE TABLE IF NOT EXISTS dirty (path TEXT PRIMARY KEY)")
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS skipped (path TEXT PRIMARY KEY, size INTEGER NOT NULL,"
            " mtime_ns INTEGER NOT NULL, reason TEXT NOT NULL, limits TEXT NOT NULL)"
        )
        self._db.commit()

    def _has_encoding(self) -> bool:
        return "encoding" in {r[1] for r in self._db.execute("PRAGMA table_info(files)")}

    def all(self) -> dict[str, FileRecord]:
        """Every indexed file's record, by workspace-relative path."""
        with self._lock:
            rows = self._db.execute(f"SELECT {self._columns} FROM files").fetchall()
        return {r[0]: FileRecord._make(r) for r in rows}

    def get(self, path: str) -> FileRecord | None:
        """The record of ``path`` (workspace-relative), or ``None`` when it is not indexed."""
        with self._lock:
            row = self._db.execute(f"SELECT {self._columns} FROM files WHERE path = ?", (path,)).fetchone()
        return FileRecord(*row) if row else None

    def forget(self, paths: Iterable[str]) -> None:
        """Mark files as not indexed and dirty (committed before their chunks change)."""
        rows = [(p,) for p in paths]
        with self._lock:
            self._db.executemany("DELETE FROM files WHERE path = ?", rows)
            self._db.executemany("INSERT OR IGNORE INTO dirty (path) VALUES (?)", rows)
            self._db.commit()

    def done(self, paths: Iterable[str]) -> None:
        """Files whose rows were deleted for good: no longer dirty."""
        with self._lock:
            self._db.executemany("DELETE FROM dirty WHERE path = ?", [(p,) for p in paths])
            self._db.commit()

    def dirty(self) -> set[str]:
        """Files forgotten but not recorded or done since: a run was rewriting them (maybe killed)."""
        with self._lock:
            return {r[0] for r in self._db.execute("SELECT path FROM dirty").fetchall()}

    def record(self, records: Iterable[FileRecord]) -> None:
        """Mark files as indexed and not dirty (called only after their chunks are committed)."""
        records = list(records)
        with self._lock:
            self._db.executemany(
                "INSERT OR REPLACE INTO files (path, content_hash, size, mtime_ns, chunks, encoding)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                records,
            )
            self._db.executemany("DELETE FROM dirty WHERE path = ?", [(r.path,) for r in records])
            self._db.executemany("DELETE FROM skipped WHERE path = ?", [(r.path,) for r in records])
            self._db.commit()

    def skipped(self) -> dict[str, SkipRecord]:
        """Files skipped for their content by an earlier read, by workspace-relative path."""
        with self._lock:
            rows = self._db.execute("SELECT path, size, mtime_ns, reason, limits FROM skipped").fetchall()
        return {r[0]: SkipRecord(*r) for r in rows}

    def record_skipped(self, records: Iterable[SkipRecord]) -> None:
        """Remember files skipped for their content, so an unchanged one is not read again."""
        with self._lock:
            self._db.executemany(
                "INSERT OR REPLACE INTO skipped (path, size, mtime_ns, reason, limits) VALUES (?, ?, ?, ?, ?)",
                [(r.path, r.size, r.mtime_ns, r.reason, r.limits) for r in records],
            )
            self._db.commit()

    def forget_skipped(self, paths: Iterable[str]) -> None:
        """Drop the skip records of ``paths`` (gone from disk, or indexable again)."""
        with self._lock:
            self._db.executemany("DELETE FROM skipped WHERE path = ?", [(p,) for p in paths])
            self._db.commit()

    def count(self) -> int:
        """Number of indexed files: counted once per manifest change (this connection's changes and
        SQLite's ``data_version`` for other processes' commits), not per call (every ``ask`` reads
        it; ``COUNT(*)`` over 147k files took 4-18 ms)."""
        with self._lock:
            stamp = (self._db.execute("PRAGMA data_version").fetchone()[0], self._db.total_changes)
            if self._count is None or self._count[0] != stamp:
                self._count = (stamp, int(self._db.execute("SELECT COUNT(*) FROM files").fetchone()[0]))
            return self._count[1]

    def by_encoding(self) -> dict[str, int]:
        """Indexed files counted by the encoding they were read with (``{"cp1252": 2, "utf-8": 120}``;
        files recorded before encodings were count as ``"unknown"`` until the next walk reads them)."""
        column = self._columns.rpartition(", ")[2]
        with self._lock:
            rows = self._db.execute(f"SELECT COALESCE({column}, 'unknown'), COUNT(*) FROM files GROUP BY 1").fetchall()
        return {str(r[0]): int(r[1]) for r in sorted(rows)}

    def get_meta(self, key: str) -> str | None:
        """The ``meta`` value for ``key`` (e.g. ``index``: JSON of model, dim, schema), or ``None``."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        """Insert or replace the ``meta`` value for ``key``; committed at once."""
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
            self._db.commit()

    def clear(self) -> None:
        """Forget every file (the ``meta`` table is kept); committed at once."""
        with self._lock:
            self._db.execute("DELETE FROM files")
            self._db.execute("DELETE FROM dirty")
            self._db.execute("DELETE FROM skipped")
            self._db.commit()

    def checkpoint(self) -> None:
        """Fold the write-ahead log into the database file and truncate it (bounds disk use)."""
        if self.read_only:
            return
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        """Close the SQLite connection; later calls raise ``sqlite3.ProgrammingError``."""
        with self._lock:
            self._db.close()
