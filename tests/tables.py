"""The tables of an index folder as LanceDB itself opens them: tests check what is on disk through
LanceDB's public API, never through a ``Store``'s private attributes."""

from __future__ import annotations

from collections import Counter

import lancedb

from codeask.index.rows import TABLE, VECTORS
from codeask.index.store import Store


def tables(store: Store) -> tuple[lancedb.table.Table, lancedb.table.Table]:
    """The ``chunks`` and ``vectors`` tables of ``store``'s folder (``<index_dir>/lance``), at their
    latest versions."""
    db = lancedb.connect(str(store.index_dir / "lance"))
    return db.open_table(TABLE), db.open_table(VECTORS)


def pending_by_scan(store: Store) -> dict[str, int]:
    """``{embed_hash: chunk rows}`` of the rows whose vector is not stored, by reading both tables."""
    chunks, vectors = tables(store)
    stored = set(vectors.to_arrow()["embed_hash"].to_pylist())
    return dict(Counter(h for h in chunks.to_arrow()["embed_hash"].to_pylist() if h not in stored))
