"""One vector store per machine and embedding model: each text is embedded once per machine.

Every root's index looks a missing vector up here before the model embeds it, and adds what the model
(or the team's shared cache, :mod:`codeask.index.shared`) gave it. A second clone, a ``git worktree``
or a branch switch of an indexed repository therefore embeds only the chunks whose text is new to the
machine (``chunks_reused`` in ``codeask index --json``).

Where: ``<cache dir>/_vectors/<model key>/`` (:func:`store_dir`), beside the per-root index folders;
the model key names the embedding model, its token cap, the vector dimension and the version of
:func:`codeask.index.rows.embed_text`, so a vector is never served to another model or another way
of building the embedded text.

What is stored: a LanceDB table ``vectors`` of ``embed_hash`` (``sha256(embed_text)[:32]``, the key the
per-root indexes use), ``vector`` (``dim`` float32, L2-normalized) and ``used`` (seconds since the
epoch when the vector was last added or found, to within :data:`TOUCH_SECONDS`). No text, no path: a
root can learn from it only whether a text it already holds was embedded on this machine before.

Safety:

* Several processes (two ``codeask index``, a watch, a language server) read at any time; writes take
  the folder's ``write.lock`` (filelock) for at most :data:`LOCK_SECONDS`, and a writer that cannot
  get it keeps its vectors for the next flush instead of waiting (it is a cache).
* Each write is one LanceDB commit, atomic: a process killed at any moment leaves the last committed
  version, whose every row was written whole, and a row's key is the hash of the very text its vector
  was computed from, so no vector is ever served for another text.
* Size: past :data:`MACHINE_CACHE_MB` the least recently used vectors are deleted down to 90% of
  the limit (:meth:`MachineVectors.flush`); ``codeask clean`` lists the store and its size.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from datetime import timedelta
from pathlib import Path

import filelock
import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import BTree

from codeask.index.folders import VECTOR_STORES
from codeask.index.rows import EMBED_TEXT_VERSION, batches, sql_in

__all__ = ["MachineVectors", "store_dir", "folder_vectors", "BYTES_PER_VECTOR_OVERHEAD", "MACHINE_CACHE_MB"]

log = logging.getLogger(__name__)

#: Size of the machine's vector store, MiB: 2048 MiB holds about 1.3 million 384-d vectors (4 bytes a
#: value plus :data:`BYTES_PER_VECTOR_OVERHEAD`), the texts of many checkouts of large projects; past it
#: the least recently used vectors go. ``0`` turns the store off. Was
#: ``embedding.machine_cache_mb``.
MACHINE_CACHE_MB = 2048

#: Vectors buffered by :meth:`MachineVectors.put_vectors` before a flush is forced.
FLUSH_ROWS = 2048
#: At most this many vectors wait for a flush; past it the oldest buffered ones are dropped.
MAX_BUFFER = 20_000
#: Seconds a writer waits for the store's write lock before it keeps its buffer for later.
LOCK_SECONDS = 2.0
#: A found vector's ``used`` time is refreshed only when older than this (seconds): a day, so
#: lookups of recently used vectors write nothing.
TOUCH_SECONDS = 86_400.0
#: Commits between compactions of the store (files of older versions kept 10 minutes for readers).
COMPACT_EVERY = 16
#: Bytes a stored vector costs besides its ``4 * dim`` float32 values (its key, ``used``, and LanceDB's
#: per-row overhead), for the size limit.
BYTES_PER_VECTOR_OVERHEAD = 64


def store_dir(cache: Path, model_key: str, dim: int) -> Path:
    """``<cache>/_vectors/<model_key>-<dim>d-t<EMBED_TEXT_VERSION>`` with unsafe characters replaced."""
    name = "".join(ch if ch.isalnum() or ch in "-_.@" else "_" for ch in f"{model_key}-{dim}d-t{EMBED_TEXT_VERSION}")
    return Path(cache) / VECTOR_STORES / name


class MachineVectors:
    """The machine's vectors for one embedding model (a :class:`~codeask.index.vectors.VectorCache`).

    Args:
        folder: the store's folder (:func:`store_dir`); created when missing.
        dim: vector dimension of the model.
        limit_bytes: size above which the least recently used vectors go (:data:`MACHINE_CACHE_MB`).

    Raises:
        OSError: the folder cannot be created.
    """

    def __init__(self, folder: Path, dim: int, *, limit_bytes: int):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.dim = dim
        self.limit_rows = max(1, limit_bytes // (4 * dim + BYTES_PER_VECTOR_OVERHEAD))
        self._schema = pa.schema(
            [
                pa.field("embed_hash", pa.string()),
                pa.field("vector", pa.list_(pa.float32(), dim)),
                pa.field("used", pa.float64()),
            ]
        )
        self._lock = filelock.FileLock(str(self.folder / "write.lock"))
        self._db = lancedb.connect(str(self.folder / "lance"), read_consistency_interval=timedelta(0))
        with self._lock:  # two processes creating the table at once would race
            self._table = self._db.create_table("vectors", schema=self._schema, exist_ok=True)
        self._buffer: dict[str, np.ndarray] = {}
        self._touch: set[str] = set()
        self._mutex = threading.Lock()  # the buffer and the touched keys (phase 2 and live updates)
        self._commits = 0

    def get_vectors(self, embed_hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """``{embed_hash: (dim,) float32}`` for the hashes stored (or buffered); keyed lookups on the
        B-tree over ``embed_hash``, at most 512 keys a query. A store that cannot be read answers
        ``{}`` (logged): the caller embeds instead."""
        wanted = sorted(set(embed_hashes))
        with self._mutex:
            found = {h: self._buffer[h] for h in wanted if h in self._buffer}
        buffered = set(found)
        stale = time.time() - TOUCH_SECONDS
        try:
            for part in batches([h for h in wanted if h not in found]):
                tbl = self._table.search().where(sql_in("embed_hash", part)).limit(None).to_arrow()
                if not tbl.num_rows:
                    continue
                matrix = np.asarray(
                    tbl["vector"].combine_chunks().flatten().to_numpy(zero_copy_only=False), dtype=np.float32
                ).reshape(-1, self.dim)
                keys = tbl["embed_hash"].to_pylist()
                found.update(zip(keys, matrix))
                with self._mutex:
                    self._touch.update(k for k, used in zip(keys, tbl["used"].to_pylist()) if used < stale)
        except Exception as exc:  # a damaged or foreign store is a cache miss, never a failed index
            log.warning("the machine's vector store %s could not be read (%s); embedding instead", self.folder, exc)
            return {h: v for h, v in found.items() if h in buffered}
        return found

    def put_vectors(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Keep ``{embed_hash: (dim,) float32}``: buffered, written by :meth:`flush` (at
        :data:`FLUSH_ROWS` buffered vectors, or when the index commits its own vectors)."""
        with self._mutex:
            for key, vector in vectors.items():
                self._buffer[key] = np.asarray(vector, dtype=np.float32).reshape(self.dim)
            if len(self._buffer) > MAX_BUFFER:  # no flush could take the lock for a long time
                for key in list(self._buffer)[: len(self._buffer) - MAX_BUFFER]:
                    del self._buffer[key]
            full = len(self._buffer) >= FLUSH_ROWS
        if full:
            self.flush()

    def flush(self) -> None:
        """Write the buffered vectors (those not stored yet) and refresh ``used`` of stale found ones,
        in one commit each, then evict past the size limit and compact every :data:`COMPACT_EVERY`
        commits. Skipped (buffer kept) when another process holds the write lock for
        :data:`LOCK_SECONDS`; a failed write is logged and dropped."""
        with self._mutex:
            buffer, touch = self._buffer, self._touch
            self._buffer, self._touch = {}, set()
        if not buffer and not touch:
            return
        try:
            with self._lock.acquire(timeout=LOCK_SECONDS):
                self._write(buffer, touch)
        except filelock.Timeout:
            log.info("the machine's vector store %s is busy; its new vectors wait for the next flush", self.folder)
            with self._mutex:
                self._buffer = {**buffer, **self._buffer}
                self._touch |= touch
        except Exception as exc:
            log.warning("the machine's vector store %s could not be written (%s)", self.folder, exc)

    def _write(self, buffer: dict[str, np.ndarray], touch: set[str]) -> None:
        """:meth:`flush`'s work, under the write lock: insert ``buffer``, refresh ``used`` of ``touch``."""
        now = time.time()
        if buffer:
            self._ensure_index()
            keys = sorted(buffer)
            matrix = np.stack([buffer[k] for k in keys])
            data = pa.table(
                {
                    "embed_hash": pa.array(keys, pa.string()),
                    "vector": pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), self.dim),
                    "used": pa.array([now] * len(keys), pa.float64()),
                },
                schema=self._schema,
            )
            # insert-if-absent: a vector another process stored meanwhile is the same vector
            self._table.merge_insert("embed_hash").when_not_matched_insert_all().execute(data)
            self._commits += 1
        for part in batches(sorted(touch)):
            self._table.update(where=sql_in("embed_hash", part), values={"used": now})
            self._commits += 1
        self._evict()
        if self._commits >= COMPACT_EVERY:
            self._table.optimize(cleanup_older_than=timedelta(minutes=10))
            self._commits = 0

    def _ensure_index(self) -> None:
        """The B-tree on ``embed_hash`` once the table has rows (lookups and merges are keyed)."""
        if self._table.count_rows() and not any(i.columns == ["embed_hash"] for i in self._table.list_indices()):
            self._table.create_index("embed_hash", config=BTree(), replace=True)

    def _evict(self) -> None:
        """Delete the least recently used vectors down to 90% of :attr:`limit_rows` once above it."""
        rows = self._table.count_rows()
        if rows <= self.limit_rows:
            return
        column = self._table.search().select(["used"]).limit(None).to_arrow().column("used")
        used = np.sort(np.asarray(column.to_numpy(), dtype=np.float64))
        cutoff = float(used[rows - int(self.limit_rows * 0.9) - 1])
        self._table.delete(f"used <= {cutoff!r}")
        self._commits += 1
        log.info("the machine's vector store %s held %d vectors; the least recently used went", self.folder, rows)

    def count(self) -> int:
        """Vectors stored (buffered ones not counted)."""
        return self._table.count_rows()


def folder_vectors(folder: Path) -> int:
    """Vectors in the store at ``folder`` without opening it for writing; 0 when unreadable."""
    try:
        return int(lancedb.connect(str(Path(folder) / "lance")).open_table("vectors").count_rows())
    except Exception:
        return 0
