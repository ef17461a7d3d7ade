"""Index upkeep of one index folder: missing indexes, compaction, unused vectors, old versions.

Indexes: an inverted (full-text) index on ``chunks.text``; B-tree indexes on ``chunks.id``,
``chunks.path``, ``chunks.embed_hash`` and ``vectors.embed_hash``; LabelList indexes on
``chunks.defines`` and ``chunks.refs`` (the symbol graph); above :data:`~codeask.index.store.ANN_MIN_ROWS`
vectors an IVF-SQ index on ``vectors.vector`` (partitions of about
:data:`codeask.index.search.PARTITION_ROWS` vectors, 8-bit scalar quantization, dot product of
L2-normalized vectors = cosine; an index of another layout is rebuilt at compaction). Compaction
(:func:`optimize`) folds new rows into every index incrementally and deletes the files of versions
older than :data:`~codeask.index.store.KEEP_VERSIONS_MINUTES`, never those a running query may still read.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Collection
from datetime import timedelta
from pathlib import Path

import pyarrow.compute as pc
from lancedb.index import FTS, BTree, IvfSq, LabelList

from codeask.index import search
from codeask.index.rows import TABLE, VECTORS, batches, sql_in
from codeask.index.tables import Tables

__all__ = ["ensure_indexes", "optimize", "index_stats", "disk_bytes"]


def ensure_indexes(tables: Tables, *, ann_min_rows: int) -> None:
    """Create the indexes a table lacks: full-text, B-tree and LabelList indexes once ``chunks`` has rows,
    the B-tree on ``vectors.embed_hash`` once it has rows, and the ANN index at ``ann_min_rows``
    vectors. Cheap when they exist (index lists are cached per version)."""
    with tables.index_lock, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _create_missing_indexes(tables, ann_min_rows)


def _create_missing_indexes(tables: Tables, ann_min_rows: int) -> None:
    have = tables.indices(TABLE)
    if tables.latest(TABLE)[0]:
        if "text" not in have:
            tables.chunks.create_index("text", config=FTS(with_position=False), replace=True)
        for column in ("id", "path", "embed_hash"):
            if column not in have:
                tables.chunks.create_index(column, config=BTree(), replace=True)
        for column in ("defines", "refs"):
            if column not in have:
                tables.chunks.create_index(column, config=LabelList(), replace=True)
    have = tables.indices(VECTORS)
    vectors = tables.latest(VECTORS)[0]
    if vectors and "embed_hash" not in have:
        tables.vectors.create_index("embed_hash", config=BTree(), replace=True)
    if vectors >= ann_min_rows and "vector" not in have:
        _create_ann_index(tables)


def _create_ann_index(tables: Tables) -> None:
    """(Re)build the IVF-SQ index on ``vectors.vector``. The partition size, not the partition
    count, is what LanceDB keeps in the index and its incremental optimize splits and joins
    partitions around: given only a count, optimize joins them into a few huge ones."""
    tables.vectors.create_index(
        "vector",
        config=IvfSq(distance_type="dot", target_partition_size=search.PARTITION_ROWS),
        replace=True,
    )


def _ann_layout_outdated(tables: Tables) -> bool:
    """Whether ``vectors`` has an ANN index built for another partition size (or, by an older
    codeask, for a partition count, which LanceDB's optimize collapses): rebuilt at compaction."""
    for ix in tables.read(tables.vectors.list_indices):
        if ix.columns == ["vector"]:
            return (ix.index_details or {}).get("target_partition_size") != search.PARTITION_ROWS
    return False


def optimize(
    tables: Tables, *, keep_versions_minutes: float, collect_unused: bool, names: Collection[str] = (TABLE, VECTORS)
) -> None:
    """Compaction (after :func:`ensure_indexes`): delete vectors no chunk uses (with
    ``collect_unused``: rows were deleted since the last compaction), rebuild an ANN index of an
    outdated layout, compact the tables in ``names`` (:data:`~codeask.index.rows.TABLE`,
    :data:`~codeask.index.rows.VECTORS`), fold new rows into every index (full-text, B-tree, ANN:
    incremental), and delete the files of versions older than ``keep_versions_minutes``.
    """
    if collect_unused:
        _collect_unused_vectors(tables)
    if _ann_layout_outdated(tables):
        with tables.index_lock, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _create_ann_index(tables)
    retention = timedelta(minutes=keep_versions_minutes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in sorted(names):
            tables.table(name).optimize(cleanup_older_than=retention)


def _collect_unused_vectors(tables: Tables) -> int:
    """Delete vectors whose ``embed_hash`` no chunk row has; returns how many."""
    used = tables.chunks.search().select(["embed_hash"]).limit(None).to_arrow()["embed_hash"]
    stored = tables.vectors.search().select(["embed_hash"]).limit(None).to_arrow()["embed_hash"]
    if not len(stored):
        return 0
    unused = pc.unique(stored.filter(pc.invert(pc.is_in(stored, value_set=used.combine_chunks())))).to_pylist()
    for part in batches(unused, 5000):
        tables.vectors.delete(sql_in("embed_hash", part))
    return len(unused)


def index_stats(tables: Tables) -> dict[str, dict]:
    """``{"<table>.<column>": {"type", "indexed_rows", "unindexed_rows"}}`` for every index,
    from LanceDB's index statistics."""
    out: dict[str, dict] = {}
    for name, tbl in ((TABLE, tables.chunks), (VECTORS, tables.vectors)):
        for ix in tables.read(tbl.list_indices):
            stats = tbl.index_stats(ix.name)
            if stats is not None:
                out[f"{name}.{ix.columns[0]}"] = {
                    "type": stats.index_type,
                    "indexed_rows": stats.num_indexed_rows,
                    "unindexed_rows": stats.num_unindexed_rows,
                }
    return out


def disk_bytes(index_dir: Path) -> int:
    """Bytes used by the files below ``index_dir``."""
    total = 0
    for dirpath, _, files in os.walk(index_dir):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, name))
            except OSError:
                pass
    return total
