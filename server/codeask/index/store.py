"""The LanceDB tables of one index folder: chunk rows, content-addressed vectors, search, maintenance.

One index folder per workspace root holds a LanceDB database with two tables.

``chunks``: one row per chunk, written in phase 1 and never rewritten when its vector lands.

============== ======================= ===================================================
column         type                    meaning
============== ======================= ===================================================
``id``         string                  ``sha256(path:start:end:content_hash)[:32]``
``path``       string                  workspace-relative POSIX path
``language``   string                  ``python``, ``markdown``, ``text``, ...
``start_line`` int32                   first line, 1-based inclusive
``end_line``   int32                   last line, 1-based inclusive
``symbol``     string                  enclosing definition (``Session.send``) or ``""``
``content``    string                  the chunk's exact lines
``kind``       string                  the file's kind: ``source``, ``test``, ``docs``, ``config``,
                                       ``data``, ``generated``, ``vendored`` (:mod:`codeask.index.kinds`)
``embed_hash`` string                  ``sha256(embed_text)[:32]`` (:func:`embed_text`): the key
                                       of the chunk's vector in ``vectors``; ``""`` for a chunk
                                       indexed keyword-only (never embedded, never pending)
``text``       string                  keyword text, full-text indexed: path words, symbol words
                                       and content with identifiers split (:func:`keyword_text`)
``defines``    list<string>            names the chunk defines (the symbol graph,
                                       :mod:`codeask.index.chunking.graph`)
``refs``       list<string>            names it calls, instantiates, reads, takes or imports
============== ======================= ===================================================

``vectors``: one row per distinct embedded text, ``embed_hash`` (string) -> ``vector``
(``fixed_size_list<float32>[dim]``, L2-normalized). A chunk "has its vector" when its
``embed_hash`` is in ``vectors``; a moved file, an unchanged function of an edited file or the
same code on another branch is a keyed lookup, never a re-embedding. Vectors no chunk uses any more
are deleted at compaction (:meth:`Store.optimize`).

Indexes (:mod:`codeask.index.maintenance`): full-text on ``chunks.text``; B-trees on ``chunks.id``,
``chunks.path``, ``chunks.embed_hash`` and ``vectors.embed_hash``; LabelList on ``chunks.defines``
and ``chunks.refs`` (graph lookups, :mod:`codeask.index.edges`); above :data:`ANN_MIN_ROWS`
vectors an IVF-SQ index on ``vectors.vector`` (partitions of about
:data:`codeask.index.search.PARTITION_ROWS` vectors), searched with refinement
(:func:`codeask.index.search.ann_params`); below it, dense search is exact. IVF-SQ was measured
against IVF-PQ and IVF-HNSW-SQ on 20,000 clustered 384-d vectors: top-10 recall vs exact 0.987 /
0.95 / 0.78 at refine factor 5, built in 6 s / 229 s / 43 s (``bench/scale.py`` measures it at 1M).
Rows committed after an index was built are searched too (LanceDB scans them) until compaction
folds them in.

Reader / writer guarantees (tested by ``tests/test_concurrency.py`` and ``bench/concurrency.py``):

* One writer per index (the engine's ``write.lock``); any number of readers, in any thread or
  process, including tools that open the LanceDB tables directly.
* Every commit is atomic, and a file's new rows replace its old ones in **one** commit
  (``merge_insert``: unchanged chunks are kept, new ones inserted, the rest of that file's rows
  deleted), so a reader sees a file's old rows or its new rows, never neither.
* A reader queries the latest committed version at the time of each query. Compaction and index
  updates write new files and a new version; the files of older versions are deleted only once they
  are older than :data:`KEEP_VERSIONS_MINUTES`, so a query that started on an older version
  finishes on it. Should one still hit a removed file, the query is retried once on the latest version.
* Chunk rows are committed first and are keyword-searchable at once; their vectors follow (a live
  update commits them right after the rows, phase 2 in groups), so a chunk without its vector is
  found by keyword search only, never by a wrong vector. Vector writes never touch chunk rows or
  their full-text index.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from codeask.index import edges, maintenance, search
from codeask.index.pending import PendingVectors
from codeask.index.records import ChunkRow, StoredRow
from codeask.index.rows import HIT_COLUMNS, TABLE, VECTORS, Hit, batches, embed_text, sql_in
from codeask.index.tables import Tables

__all__ = ["Store", "KEEP_VERSIONS_MINUTES", "ANN_MIN_ROWS"]

#: Old LanceDB versions are deleted at compaction only once older than this, minutes, so readers
#: in other threads and processes never lose the files of the version they read (a search takes
#: well under a second; ``bench/concurrency.py`` runs searches against compaction). Was
#: ``index.keep_versions_minutes``.
KEEP_VERSIONS_MINUTES = 10.0
#: Vectors above which dense search uses an ANN index (IVF-SQ with refinement), exact below:
#: ``bench/scale.py`` measured exact search still fast at this size. Was ``index.ann_min_rows``.
ANN_MIN_ROWS = 50_000


def _matrix(column: pa.ChunkedArray | pa.Array, dim: int) -> np.ndarray:
    """A ``fixed_size_list<float32>[dim]`` column as an ``(n, dim)`` float32 array."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return np.asarray(column.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(-1, dim)


class Store:
    """The ``chunks`` and ``vectors`` tables of one index folder (see the module docstring for the
    schema and the reader/writer guarantees).

    Writes are not locked here: the engine serializes them (one writer per index, see
    ``codeask.index.engine``). Reads are safe from any thread and process and see the latest commit
    (:class:`~codeask.index.tables.Tables`); counts are cached per table version.

    Args:
        index_dir: the index folder (created if missing).
        dim: vector dimension of the embedding model.
        keep_versions_minutes: old table versions are deleted at compaction once older than this
            (``None``: :data:`KEEP_VERSIONS_MINUTES`); 0 keeps only the latest.
        ann_min_rows: build the ANN vector index once ``vectors`` has this many rows
            (``None``: :data:`ANN_MIN_ROWS`).

    Attributes:
        tables: the LanceDB tables, shared with search, upkeep and the symbol graph.
        compactions: number of :meth:`optimize` runs by this object.
    """

    def __init__(
        self,
        index_dir: Path,
        dim: int,
        *,
        keep_versions_minutes: float | None = None,
        ann_min_rows: int | None = None,
    ):
        self.index_dir = Path(index_dir)
        self.index_dir.mkdir(parents=True, exist_ok=True)
        self.dim = dim
        self.keep_versions_minutes = KEEP_VERSIONS_MINUTES if keep_versions_minutes is None else keep_versions_minutes
        self.ann_min_rows = ANN_MIN_ROWS if ann_min_rows is None else ann_min_rows
        self.tables = Tables(self.index_dir, dim)
        self._commits = 0
        self._rows_written = 0
        self._rows_deleted = 0
        #: Tables this object compacted and has not written since (a later :meth:`optimize` skips them).
        self._compacted: set[str] = set()
        self.compactions = 0
        self._pending = PendingVectors(
            self.index_dir / "pending.json",
            lambda: (self.tables.chunks.version, self.tables.vectors.version),
            lambda: self.tables.read(self._scan_pending),
        )

    # ---------------------------------------------------------------- writes
    def replace_files(self, paths: Iterable[str], rows: Sequence[ChunkRow]) -> tuple[int, int]:
        """Make ``rows`` (from :func:`chunk_rows`) the only rows of ``paths``: one commit per 500 paths.

        Rows already stored with the same ``id`` (an unchanged chunk) are kept as they are, new ones
        inserted, every other row of those paths deleted, in one ``merge_insert`` commit, so a reader
        never sees such a file without rows. With no ``rows`` the paths' rows are deleted.

        Returns:
            ``(rows inserted, rows deleted)``.
        """
        by_path: dict[str, list[ChunkRow]] = {}
        for row in rows:
            by_path.setdefault(row["path"], []).append(row)
        paths = sorted(set(paths) | set(by_path))
        inserted = deleted = 0
        for part in batches(paths):
            where = sql_in("path", part)
            new = [r for p in part for r in by_path.get(p, ())]
            pending = self._pending.known()
            if pending is not None:  # the pending rows this commit deletes and adds (keyed lookups)
                old = self.tables.column(TABLE, "embed_hash", where)
                removed = [h for h in old if h and h in pending]
                new_hashes = [r["embed_hash"] for r in new if r["embed_hash"]]
                unknown = [h for h in set(new_hashes) if h not in pending]
                stored = self.stored_hashes(unknown)
                added = [h for h in new_hashes if h in pending or h not in stored]
            if new:
                result = (
                    self.tables.chunks.merge_insert("id")
                    .when_not_matched_insert_all()
                    .when_not_matched_by_source_delete(where)
                    .execute(pa.Table.from_pylist(new, schema=self.tables.chunk_schema))
                )
                inserted += result.num_inserted_rows
                deleted += result.num_deleted_rows
            else:
                result = self.tables.chunks.delete(where)
                deleted += getattr(result, "num_deleted_rows", 0) or 0
            self._commits += 1
            self._compacted.discard(TABLE)
            if pending is not None:
                self._pending.committed(pending, added=added, removed=removed)
            else:
                self._pending.committed(None)
        self._rows_written += inserted
        self._rows_deleted += deleted
        return inserted, deleted

    def get_vectors(self, embed_hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """Stored vectors by embed hash: ``{embed_hash: (dim,) float32}`` for the hashes present."""
        wanted = sorted(set(embed_hashes))
        found: dict[str, np.ndarray] = {}
        for part in batches(wanted):
            where = sql_in("embed_hash", part)
            tbl = self.tables.rows(VECTORS, where, ["embed_hash", "vector"])
            if tbl.num_rows:
                found.update(zip(tbl["embed_hash"].to_pylist(), _matrix(tbl["vector"], self.dim)))
        return found

    def stored_hashes(self, embed_hashes: Iterable[str]) -> set[str]:
        """Which of ``embed_hashes`` have a vector (keyed lookups on the B-tree, vectors not read)."""
        found: set[str] = set()
        for part in batches(sorted(set(embed_hashes))):
            found.update(self.tables.column(VECTORS, "embed_hash", sql_in("embed_hash", part)))
        return found

    def put_vectors(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Commit ``{embed_hash: (dim,) float32}`` (hashes not stored yet) to ``vectors``: one commit.

        Chunk rows are not touched: every chunk whose ``embed_hash`` is among them has its vector.
        """
        if not vectors:
            return
        keys = list(vectors)
        matrix = np.stack([np.asarray(vectors[k], dtype=np.float32).reshape(self.dim) for k in keys])
        data = pa.table(
            {
                "embed_hash": pa.array(keys, pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), self.dim),
            },
            schema=self.tables.vector_schema,
        )
        pending = self._pending.known()
        self.tables.vectors.add(data)
        self._commits += 1
        self._compacted.discard(VECTORS)
        self._pending.committed(pending, vectors=keys)

    def ensure_indexes(self) -> None:
        """Create the indexes a table lacks (:func:`codeask.index.maintenance.ensure_indexes`); the
        pending-vector state carries over (building an index changes no row)."""
        pending = self._pending.known()
        maintenance.ensure_indexes(self.tables, ann_min_rows=self.ann_min_rows)
        self._pending.committed(pending)

    def optimize(self) -> None:
        """Compaction, index updates, unused vectors and old versions (:func:`codeask.index.maintenance.optimize`);
        resets :attr:`commits_since_optimize` and :attr:`rows_since_optimize`.

        A table this object compacted and has not written since is left as it is: phase 2 writes
        only ``vectors``, so its final compaction no longer rewrites ``chunks`` and every index on
        it (LanceDB merges the fragments of the last compaction once more when asked: 1.3 s of CPU
        for sphinx 9.0.4's 11,615 rows, on every index run). A table written by another process,
        or before this object's first compaction, is compacted as before.
        """
        self.ensure_indexes()
        pending = self._pending.known()  # no pending row changes below: the state carries over
        collect = self._rows_deleted > 0
        names = {TABLE, VECTORS} - self._compacted
        if collect:
            names.add(VECTORS)  # unused vectors are deleted
        maintenance.optimize(
            self.tables, keep_versions_minutes=self.keep_versions_minutes, collect_unused=collect, names=names
        )
        self._pending.committed(pending)
        self._compacted = {TABLE, VECTORS}
        self._commits = self._rows_written = self._rows_deleted = 0
        self.compactions += 1

    @property
    def commits_since_optimize(self) -> int:
        """LanceDB commits (file replacements, vector writes) since the last :meth:`optimize`."""
        return self._commits

    @property
    def rows_since_optimize(self) -> int:
        """Chunk rows inserted since the last :meth:`optimize` (not yet in the full-text index)."""
        return self._rows_written

    # ----------------------------------------------------------------- reads
    def has_vectors(self) -> bool:
        """Whether ``vectors`` has any row (cached per version)."""
        return self.tables.latest(VECTORS)[0] > 0

    def count(self, where: str | None = None) -> int:
        """Number of chunk rows (cached per version), or of those matching the SQL filter ``where``."""
        if where:
            return self.tables.read(lambda: self.tables.chunks.count_rows(where))
        return self.tables.latest(TABLE)[0]

    def count_vectors(self) -> int:
        """Rows of ``vectors`` (cached per version); unused ones remain until compaction."""
        return self.tables.latest(VECTORS)[0]

    def _scan_pending(self) -> dict[str, int]:
        """``{embed_hash: chunk rows}`` of rows without a vector, by scanning both tables."""
        hashes = self.tables.rows(TABLE, "embed_hash != ''", ["embed_hash"])["embed_hash"]
        if not len(hashes):
            return {}
        stored = self.tables.rows(VECTORS, None, ["embed_hash"])["embed_hash"]
        missing = hashes.filter(pc.invert(pc.is_in(hashes, value_set=stored.combine_chunks())))
        counts = pc.value_counts(missing.combine_chunks()) if len(missing) else []
        return {c["values"].as_py(): c["counts"].as_py() for c in counts}

    def count_pending(self, *, distinct: bool = False) -> int:
        """Chunk rows whose vector is not stored yet, or with ``distinct`` the texts to embed for them
        (scanned once, then kept current by this object's commits: :mod:`codeask.index.pending`)."""
        return self._pending.count(distinct=distinct)

    def pending_hashes(self, limit: int) -> list[str]:
        """Up to ``limit`` embed hashes of the texts still to embed, in sorted order."""
        return self._pending.hashes(limit)

    def texts(self, hashes: Iterable[str]) -> dict[str, str]:
        """``{embed_hash: embed_text}`` of the chunk rows with these hashes, each text once (keyed
        lookups; phase 2 reads only the texts the machine's store could not give a vector for)."""
        texts: dict[str, str] = {}
        for part in batches(list(hashes)):
            where = sql_in("embed_hash", part)
            tbl = self.tables.rows(TABLE, where, ["embed_hash", "symbol", "content"])
            for h, symbol, content in zip(*(tbl[c].to_pylist() for c in ("embed_hash", "symbol", "content"))):
                texts.setdefault(h, embed_text(symbol, content))
        return texts

    def paths(self) -> set[str]:
        """Every path that has rows: a full scan of ``path``, for checks and tools (the engine reads
        indexed paths from its manifest)."""
        return set(self.tables.column(TABLE, "path"))

    def rows_for_path(self, path: str) -> list[StoredRow]:
        """All rows of one file (``id``, ``path``, ``language``, lines, ``symbol``, ``content``, ``kind``), by start line."""
        where = sql_in("path", [path])
        rows = self.tables.rows(TABLE, where, list(HIT_COLUMNS)).to_pylist()
        return sorted(cast(list[StoredRow], rows), key=lambda r: r["start_line"])  # the HIT_COLUMNS

    def keyword_search(self, question: str, limit: int) -> list[Hit]:
        """BM25 full-text search (:func:`codeask.index.search.keyword_search`); best first."""
        return search.keyword_search(self.tables, question, limit)

    def vector_search(self, vector: np.ndarray, limit: int) -> list[Hit]:
        """Cosine search joined to chunk rows (:func:`codeask.index.search.vector_search`); best first."""
        return search.vector_search(self.tables, vector, limit)

    def nearest_hashes(self, vector: np.ndarray, limit: int, *, exact: bool = False) -> dict[str, float]:
        """``{embed_hash: cosine distance}`` of the nearest vectors (:func:`codeask.index.search.nearest_hashes`)."""
        return search.nearest_hashes(self.tables, vector, limit, exact=exact)

    def definers(self, names: Sequence[str], limit: int = 200) -> list[edges.Linked]:
        """Chunks defining any of ``names`` (:func:`codeask.index.edges.definers`)."""
        return edges.definers(self.tables, names, limit)

    def referrers(self, names: Sequence[str], limit: int = 200) -> list[edges.Linked]:
        """Chunks referencing any of ``names`` (:func:`codeask.index.edges.referrers`)."""
        return edges.referrers(self.tables, names, limit)

    def linked(self, ids: Iterable[str]) -> dict[str, edges.Linked]:
        """``{id: chunk with its graph names}`` (:func:`codeask.index.edges.linked`)."""
        return edges.linked(self.tables, ids)

    def index_stats(self) -> dict[str, dict]:
        """LanceDB's index statistics per index (:func:`codeask.index.maintenance.index_stats`)."""
        return maintenance.index_stats(self.tables)

    def disk_bytes(self) -> int:
        """Bytes used by the index folder."""
        return maintenance.disk_bytes(self.index_dir)
