"""Retrieval from one index: BM25 keyword search, and dense search joined to chunk rows.

Dense search finds the nearest vectors (content-addressed, one per distinct embedded text) and then
the chunk rows that use them with one keyed lookup, ``embed_hash IN (...)`` on its B-tree: never a
scan of the chunk table. Above :data:`~codeask.index.store.ANN_MIN_ROWS` vectors the IVF-SQ index (partitions of about
:data:`PARTITION_ROWS` vectors) is probed in :func:`ann_params` partitions and the best candidates
re-ranked with the full vectors (``bench/scale.py`` measures top-10 recall against exact search and
the latency at 1M chunks).
"""

from __future__ import annotations

import math
from typing import cast

import numpy as np
import pyarrow as pa
from lancedb.query import LanceVectorQueryBuilder

from codeask.index.rows import HIT_COLUMNS, IDENT, TABLE, VECTORS, Hit, keyword_text, sql_in
from codeask.index.tables import Tables

__all__ = ["keyword_search", "vector_search", "nearest_hashes", "ann_params", "partitions"]

#: Vectors per IVF partition the index is built for (LanceDB's ``target_partition_size``, kept in
#: the index so its incremental optimize splits and joins partitions around it: an index built by
#: partition count only was joined by optimize into 35 partitions of 23,500 vectors at 1M chunks,
#: and every query compared all 824,412 codes, 0.3 s). About sqrt(1M): 1,000 partitions at 1M.
PARTITION_ROWS = 1024
#: Partitions probed at least, and at least 1/NPROBES_SHARE of them (32 of ~800 at 1M chunks).
NPROBES_MIN = 20
NPROBES_SHARE = 25
#: The best ``REFINE_FACTOR * limit`` quantized candidates are re-ranked with the full vectors.
REFINE_FACTOR = 2


def partitions(vectors: int) -> int:
    """IVF partitions of an index over ``vectors`` rows: ``ceil(n / PARTITION_ROWS)`` (about; LanceDB
    splits and joins partitions around :data:`PARTITION_ROWS` as rows change)."""
    return max(1, math.ceil(vectors / PARTITION_ROWS))


def ann_params(vectors: int) -> tuple[int, int]:
    """``(nprobes, refine_factor)`` of an ANN search over ``vectors`` rows: :data:`NPROBES_MIN`
    partitions or 1/:data:`NPROBES_SHARE` of them, whichever is more, and :data:`REFINE_FACTOR`."""
    return max(NPROBES_MIN, partitions(vectors) // NPROBES_SHARE), REFINE_FACTOR


def keyword_search(tables: Tables, question: str, limit: int) -> list[Hit]:
    """BM25 full-text search over ``text``; best first; ``[]`` for a question with no words or
    before the first full-text index exists. Rows committed since the index was last updated
    are searched too (LanceDB scans them), so a live update is found at once."""
    query = " ".join(IDENT.findall(keyword_text(question)))
    if not query.strip():
        return []
    rows, indices = tables.latest(TABLE)
    if not rows or "text" not in indices:
        return []
    found = tables.read(
        lambda: (
            tables.chunks.search(query, query_type="fts", fts_columns="text")
            .select([*HIT_COLUMNS, "_score"])
            .limit(limit)
            .to_list()
        )
    )
    return [Hit.from_row(r, float(r["_score"])) for r in found]


def vector_search(tables: Tables, vector: np.ndarray, limit: int) -> list[Hit]:
    """Cosine search: the nearest vectors (ANN with refinement above ``ann_min_rows``, else
    exact), joined to the chunk rows that use them by a keyed lookup (``embed_hash IN (...)`` on
    its B-tree); best first, score = 1 - cosine distance."""
    nearest = nearest_hashes(tables, vector, limit + 10)
    if not nearest:
        return []
    rows = tables.rows(TABLE, sql_in("embed_hash", list(nearest)), [*HIT_COLUMNS, "embed_hash"]).to_pylist()
    rows.sort(key=lambda r: (nearest[r["embed_hash"]], r["path"], r["start_line"]))
    return [Hit.from_row(r, 1.0 - nearest[r["embed_hash"]]) for r in rows[:limit]]


def nearest_hashes(tables: Tables, vector: np.ndarray, limit: int, *, exact: bool = False) -> dict[str, float]:
    """The ``limit`` stored vectors nearest to ``vector`` (``(dim,)`` float32):
    ``{embed_hash: cosine distance}``, nearest first. ``exact`` skips the ANN index.

    With the ANN index, :func:`ann_params` partitions are probed and the best
    ``refine_factor * limit`` re-ranked exactly (``bench/scale.py`` measures recall vs exact)."""
    stored, indices = tables.latest(VECTORS)
    if not stored:
        return {}
    query = np.asarray(vector, dtype=np.float32).reshape(tables.dim)

    def run() -> pa.Table:
        # Vectors are L2-normalized: LanceDB's "dot" distance, 1 - x.y, is the cosine distance
        # without normalizing every stored vector per query (about 2x faster exact search).
        q = cast(LanceVectorQueryBuilder, tables.vectors.search(query, vector_column_name="vector"))
        q = q.distance_type("dot")
        if exact:
            q = q.bypass_vector_index()
        elif indices.get("vector"):
            nprobes, refine = ann_params(stored)
            q = q.nprobes(nprobes).refine_factor(refine)
        return q.select(["embed_hash", "_distance"]).limit(limit).to_arrow()

    tbl = tables.read(run)
    nearest: dict[str, float] = {}
    for h, d in zip(tbl["embed_hash"].to_pylist(), tbl["_distance"].to_pylist()):
        nearest.setdefault(h, float(d))
    return nearest
