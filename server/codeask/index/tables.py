"""The two LanceDB tables of one index folder, opened, read with one retry, and their facts cached.

:class:`Tables` is what :class:`~codeask.index.store.Store` and its collaborators share: the
``chunks`` and ``vectors`` tables (schema in :mod:`codeask.index.store`), a read that is retried
once on the latest version when it hits a file of a version cleaned up meanwhile, row counts and
index lists cached per table version, and the lock that serializes index creation. Search
(:mod:`codeask.index.search`), index upkeep (:mod:`codeask.index.maintenance`) and the symbol graph
(:mod:`codeask.index.edges`) read the tables through it; writes and the pending-vector bookkeeping
stay in the store.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TypeVar, cast

os.environ.setdefault("LANCE_LOG", "error")

import lancedb
import pyarrow as pa

from codeask.index.rows import TABLE, VECTORS

__all__ = ["Tables", "chunk_schema", "vector_schema"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: LanceDB's caches per connection: index pages and table metadata (bytes).
INDEX_CACHE_BYTES = 256 << 20
METADATA_CACHE_BYTES = 64 << 20


def chunk_schema() -> pa.Schema:
    """The ``chunks`` table's schema (columns described in :mod:`codeask.index.store`)."""
    text = pa.string()
    return pa.schema(
        [
            pa.field("id", text),
            pa.field("path", text),
            pa.field("language", text),
            pa.field("start_line", pa.int32()),
            pa.field("end_line", pa.int32()),
            pa.field("symbol", text),
            pa.field("content", text),
            pa.field("kind", text),
            pa.field("embed_hash", text),
            pa.field("text", text),
            pa.field("defines", pa.list_(text)),
            pa.field("refs", pa.list_(text)),
        ]
    )


def vector_schema(dim: int) -> pa.Schema:
    """The ``vectors`` table's schema: ``embed_hash`` -> ``fixed_size_list<float32>[dim]``."""
    return pa.schema([pa.field("embed_hash", pa.string()), pa.field("vector", pa.list_(pa.float32(), dim))])


def missing_file(exc: BaseException) -> bool:
    """Whether ``exc`` is LanceDB reporting a data or index file that is gone (a cleaned-up version)."""
    text = str(exc)
    return "Not found" in text or "NotFound" in text or "No such file" in text


class Tables:
    """The ``chunks`` and ``vectors`` tables of ``<index_dir>/lance`` (created when missing).

    Reads are safe from any thread and process and see the latest commit
    (``read_consistency_interval=0``).

    Attributes:
        chunks: the ``chunks`` LanceDB table.
        vectors: the ``vectors`` LanceDB table.
        dim: the vector dimension.
        chunk_schema: ``chunks``' Arrow schema; ``vector_schema``: ``vectors``'.
        index_lock: held while an index is created or rebuilt (one at a time per object).
    """

    def __init__(self, index_dir: Path, dim: int):
        self.dim = dim
        db = lancedb.connect(
            str(Path(index_dir) / "lance"),
            read_consistency_interval=timedelta(0),
            session=lancedb.Session(
                index_cache_size_bytes=INDEX_CACHE_BYTES, metadata_cache_size_bytes=METADATA_CACHE_BYTES
            ),
        )
        self.chunk_schema = chunk_schema()
        self.vector_schema = vector_schema(dim)
        self.chunks = db.create_table(TABLE, schema=self.chunk_schema, exist_ok=True)
        self.vectors = db.create_table(VECTORS, schema=self.vector_schema, exist_ok=True)
        self.index_lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._cache: dict[str, tuple[object, object]] = {}

    def table(self, name: str) -> lancedb.table.Table:
        """``chunks`` for :data:`~codeask.index.rows.TABLE`, else ``vectors``."""
        return self.chunks if name == TABLE else self.vectors

    def read(self, fn: Callable[[], T]) -> T:
        """Run the read ``fn``; when it hits a file of a version cleaned up meanwhile, once more on
        the latest version."""
        try:
            return fn()
        except Exception as exc:
            if not missing_file(exc):
                raise
            log.info("a read hit a removed file (%s); retrying on the latest version", exc)
            for table in (self.chunks, self.vectors):
                try:
                    table.checkout_latest()
                except Exception:
                    pass
            return fn()

    def cached(self, key: str, version: object, compute: Callable[[], T]) -> T:
        """``compute()`` (read with :meth:`read`) once per ``version`` (a table version or a tuple of them)."""
        with self._cache_lock:
            cached = self._cache.get(key)
        if cached is not None and cached[0] == version:
            return cast(T, cached[1])
        value = self.read(compute)
        with self._cache_lock:
            self._cache[key] = (version, value)
        return value

    def indices(self, name: str, version: int | None = None) -> dict[str, str]:
        """``{column: index type}`` of table ``name`` (cached per version; ``version``: the latest
        one, when the caller just read it)."""
        tbl = self.table(name)
        return self.cached(
            f"indices:{name}",
            tbl.version if version is None else version,
            lambda: {ix.columns[0]: ix.index_type for ix in tbl.list_indices() if ix.columns},
        )

    def latest(self, name: str) -> tuple[int, dict[str, str]]:
        """``(rows, {column: index type})`` of table ``name`` at its latest version: one version
        check, then cached per version (a query path asks once, not per fact)."""
        tbl = self.table(name)
        version = tbl.version
        rows = self.cached(f"rows:{name}", version, tbl.count_rows)
        return rows, self.indices(name, version)

    def rows(self, name: str, where: str | None, columns: list[str], limit: int | None = None) -> pa.Table:
        """``columns`` of the rows of table ``name`` matching the SQL filter ``where`` (all rows when
        ``None``), at most ``limit``; retried once (:meth:`read`)."""

        def run() -> pa.Table:
            query = self.table(name).search()
            if where is not None:
                query = query.where(where)
            return query.select(columns).limit(limit).to_arrow()

        return self.read(run)

    def column(self, name: str, column: str, where: str | None = None) -> list:
        """``column`` of the rows of table ``name`` matching the SQL filter ``where``."""
        return self.rows(name, where, [column])[column].to_pylist()
