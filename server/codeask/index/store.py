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
``embed_hash`` string                  ``sha256(embed_text)[:32]`` (:func:`embed_text`): the key
                                       of the chunk's vector in ``vectors``
``text``       string                  keyword text, full-text indexed: path words, symbol words
                                       and content with identifiers split (:func:`keyword_text`)
============== ======================= ===================================================

``vectors``: one row per distinct embedded text, ``embed_hash`` (string) -> ``vector``
(``fixed_size_list<float32>[dim]``, L2-normalized). A chunk "has its vector" when its
``embed_hash`` is in ``vectors``; a moved file, an unchanged function of an edited file or the
same code on another branch is a keyed lookup, never a re-embedding. Vectors no chunk uses any more
are deleted at compaction (:meth:`Store.optimize`).

Indexes: an inverted (full-text) index on ``chunks.text``; B-tree indexes on ``chunks.id``,
``chunks.path``, ``chunks.embed_hash`` and ``vectors.embed_hash``; above ``index.ann_min_rows``
vectors an IVF-SQ index on ``vectors.vector`` (dot product of L2-normalized vectors = cosine;
``sqrt(n)`` partitions, 8-bit scalar
quantization), searched in ``max(20, partitions / 16)`` partitions with refinement (exact
re-ranking of ``_REFINE_FACTOR`` x the requested rows). Below it, dense search is exact. IVF-SQ was
measured against IVF-PQ and IVF-HNSW-SQ on 20,000 clustered 384-d vectors: top-10 recall vs exact
0.987 / 0.95 / 0.78 at refine factor 5, built in 6 s / 229 s / 43 s (``bench/scale.py`` measures it at
1M). Rows committed after an
index was built are searched too (LanceDB scans them) until compaction folds them in.

Reader / writer guarantees (tested by ``tests/test_concurrency.py`` and ``bench/concurrency.py``):

* One writer per index (the engine's ``write.lock``); any number of readers, in any thread or
  process, including tools that open the LanceDB tables directly.
* Every commit is atomic, and a file's new rows replace its old ones in **one** commit
  (``merge_insert``: unchanged chunks are kept, new ones inserted, the rest of that file's rows
  deleted), so a reader sees a file's old rows or its new rows, never neither.
* A reader queries the latest committed version at the time of each query. Compaction and index
  updates write new files and a new version; the files of older versions are deleted only once they
  are older than ``index.keep_versions_minutes``, so a query that started on an older version
  finishes on it. Should one still hit a removed file, the query is retried once on the latest version.
* A vector is committed before the chunk rows that use it (live updates), so a saved file is
  searchable by keyword and vector together; in phase 2 chunks wait for vectors, and keyword search
  and its full-text index are untouched by vector writes.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar, cast

os.environ.setdefault("LANCE_LOG", "error")

import lancedb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lancedb.index import FTS, BTree, IvfSq
from lancedb.query import LanceVectorQueryBuilder

from codeask.index.chunk import Chunk
from codeask.index.records import ChunkRow, StoredRow

__all__ = ["Store", "Hit", "embed_text", "keyword_text", "chunk_rows", "TABLE", "VECTORS"]

log = logging.getLogger(__name__)

TABLE = "chunks"
VECTORS = "vectors"
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*|[0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_IN_BATCH = 500
# ANN search: re-rank this many times the requested rows exactly (bench/scale.py measures recall).
_REFINE_FACTOR = 10
T = TypeVar("T")


def _split_identifier(token: str) -> list[str]:
    parts: list[str] = []
    for piece in token.split("_"):
        parts.extend(_CAMEL.findall(piece))
    return [p.lower() for p in parts if p]


def keyword_text(text: str) -> str:
    """``text`` with every identifier followed by its word parts, for the full-text index.

    ``getFlashedMessages`` -> ``getFlashedMessages get flashed messages``; ``resolve_redirects`` ->
    ``resolve_redirects resolve redirects``. LanceDB's default tokenizer splits snake_case but
    not camelCase (shared/eval/FINDINGS.md, point 7), so the parts are written out. Used for both
    chunks and questions, so the two tokenize alike.
    """

    def expand(match: re.Match[str]) -> str:
        token = match.group(0)
        parts = _split_identifier(token)
        if len(parts) <= 1:
            return token
        return token + " " + " ".join(parts)

    return _IDENT.sub(expand, text)


def embed_text(symbol: str, content: str) -> str:
    """What is embedded for a chunk: its symbol line, then its content.

    The path is left out on purpose, so moving or renaming a file keeps every vector. Rows store
    ``sha256(embed_text)[:32]`` as ``embed_hash``, the key vectors are reused by.
    """
    return f"{symbol}\n{content}" if symbol else content


def embed_hash(text: str) -> str:
    """The key a vector is stored and shared by: ``sha256(text)[:32]`` (hex) of :func:`embed_text`."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _path_words(path: str) -> str:
    return " ".join(_split_identifier(" ".join(_WORD.findall(path.replace("/", " ")))) or [])


def chunk_rows(chunks: Sequence[Chunk]) -> list[ChunkRow]:
    """Rows of the ``chunks`` table for ``chunks`` (vectors live apart, keyed by ``embed_hash``)."""
    rows: list[ChunkRow] = []
    for c in chunks:
        ehash = embed_hash(embed_text(c.symbol, c.content))
        words = " ".join(w for w in (_path_words(c.path), " ".join(_split_identifier(c.symbol.replace(".", "_")))) if w)
        rows.append(
            {
                "id": hashlib.sha256(
                    f"{c.path}:{c.start_line}:{c.end_line}:{c.content_hash}".encode("utf-8", "surrogatepass")
                ).hexdigest()[:32],
                "path": c.path,
                "language": c.language,
                "start_line": c.start_line,
                "end_line": c.end_line,
                "symbol": c.symbol,
                "content": c.content,
                "embed_hash": ehash,
                "text": f"{c.path} {words} {c.symbol}\n{keyword_text(c.content)}",
            }
        )
    return rows


@dataclass(frozen=True)
class Hit:
    """One chunk row returned by a search, with its rank score (higher is better)."""

    id: str
    path: str
    language: str
    start_line: int
    end_line: int
    symbol: str
    content: str
    score: float

    @classmethod
    def from_row(cls, row: Mapping[str, Any], score: float) -> Hit:
        """The hit of a stored chunk row (a :class:`~codeask.index.records.StoredRow`, or a LanceDB
        result row holding its columns) with rank ``score``."""
        return cls(
            id=row["id"],
            path=row["path"],
            language=row["language"],
            start_line=int(row["start_line"]),
            end_line=int(row["end_line"]),
            symbol=row["symbol"],
            content=row["content"],
            score=score,
        )


_HIT_COLUMNS = ["id", "path", "language", "start_line", "end_line", "symbol", "content"]


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _in_clause(column: str, values: Sequence[str]) -> str:
    return f"{column} IN ({', '.join(_sql_str(v) for v in values)})"


def _batches(values: Sequence[T], size: int = _IN_BATCH) -> Iterable[Sequence[T]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _partitions(vectors: int) -> int:
    """IVF partitions for ``vectors`` rows: ``sqrt(n)`` (1,000 at 1M)."""
    return max(1, int(math.sqrt(vectors)))


def _missing_file(exc: BaseException) -> bool:
    """Whether ``exc`` is LanceDB reporting a data or index file that is gone (a cleaned-up version)."""
    text = str(exc)
    return "Not found" in text or "NotFound" in text or "No such file" in text


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
    (``read_consistency_interval=0``); counts are cached per table version.

    Args:
        index_dir: the index folder (created if missing).
        dim: vector dimension of the embedding model.
        keep_versions_minutes: old table versions are deleted at compaction once older than this
            (``index.keep_versions_minutes``); 0 keeps only the latest.
        ann_min_rows: build the ANN vector index once ``vectors`` has this many rows
            (``index.ann_min_rows``).
    """

    def __init__(self, index_dir: Path, dim: int, *, keep_versions_minutes: float = 10.0, ann_min_rows: int = 50_000):
        self.index_dir = Path(index_dir)
        self.index_dir.mkdir(parents=True, exist_ok=True)
        self.dim = dim
        self.keep_versions_minutes = keep_versions_minutes
        self.ann_min_rows = ann_min_rows
        self._db = lancedb.connect(
            str(self.index_dir / "lance"),
            read_consistency_interval=timedelta(0),
            session=lancedb.Session(index_cache_size_bytes=256 << 20, metadata_cache_size_bytes=64 << 20),
        )
        self._chunk_schema = pa.schema(
            [
                pa.field("id", pa.string()),
                pa.field("path", pa.string()),
                pa.field("language", pa.string()),
                pa.field("start_line", pa.int32()),
                pa.field("end_line", pa.int32()),
                pa.field("symbol", pa.string()),
                pa.field("content", pa.string()),
                pa.field("embed_hash", pa.string()),
                pa.field("text", pa.string()),
            ]
        )
        self._vector_schema = pa.schema(
            [pa.field("embed_hash", pa.string()), pa.field("vector", pa.list_(pa.float32(), dim))]
        )
        self._chunks = self._db.create_table(TABLE, schema=self._chunk_schema, exist_ok=True)
        self._vectors = self._db.create_table(VECTORS, schema=self._vector_schema, exist_ok=True)
        self._commits = 0
        self._rows_written = 0
        self._rows_deleted = 0
        #: Number of :meth:`optimize` runs by this object.
        self.compactions = 0
        self._index_lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._cache: dict[str, tuple[object, object]] = {}

    # ------------------------------------------------------------- internals
    def _select(self, table: lancedb.table.Table, where: str, columns: list[str]) -> pa.Table:
        """The ``columns`` of every row of ``table`` matching the SQL filter ``where`` (read by :meth:`_read`)."""
        return self._read(lambda: table.search().where(where).select(columns).limit(None).to_arrow())

    def _read(self, fn: Callable[[], T]) -> T:
        """Run the read ``fn``; when it hits a file of a version cleaned up meanwhile, once more on
        the latest version."""
        try:
            return fn()
        except Exception as exc:
            if not _missing_file(exc):
                raise
            log.info("a read hit a removed file (%s); retrying on the latest version", exc)
            for table in (self._chunks, self._vectors):
                try:
                    table.checkout_latest()
                except Exception:
                    pass
            return fn()

    def _cached(self, key: str, version: object, compute: Callable[[], T]) -> T:
        """``compute()`` once per ``version`` (a table version or a tuple of them)."""
        with self._cache_lock:
            hit = self._cache.get(key)
        if hit is not None and hit[0] == version:
            return hit[1]  # type: ignore[return-value]
        value = self._read(compute)
        with self._cache_lock:
            self._cache[key] = (version, value)
        return value

    def _indices(self, table: str) -> dict[str, str]:
        """``{column: index type}`` of ``chunks`` or ``vectors`` (cached per version)."""
        tbl = self._chunks if table == TABLE else self._vectors
        return self._cached(
            f"indices:{table}",
            tbl.version,
            lambda: {ix.columns[0]: ix.index_type for ix in tbl.list_indices() if ix.columns},
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
        for part in _batches(paths):
            where = _in_clause("path", part)
            new = [r for p in part for r in by_path.get(p, ())]
            if new:
                result = (
                    self._chunks.merge_insert("id")
                    .when_not_matched_insert_all()
                    .when_not_matched_by_source_delete(where)
                    .execute(pa.Table.from_pylist(new, schema=self._chunk_schema))
                )
                inserted += result.num_inserted_rows
                deleted += result.num_deleted_rows
            else:
                result = self._chunks.delete(where)
                deleted += getattr(result, "num_deleted_rows", 0) or 0
            self._commits += 1
        self._rows_written += inserted
        self._rows_deleted += deleted
        return inserted, deleted

    def get_vectors(self, embed_hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """Stored vectors by embed hash: ``{embed_hash: (dim,) float32}`` for the hashes present."""
        wanted = sorted(set(embed_hashes))
        found: dict[str, np.ndarray] = {}
        for part in _batches(wanted):
            tbl = self._select(self._vectors, _in_clause("embed_hash", part), ["embed_hash", "vector"])
            if tbl.num_rows:
                found.update(zip(tbl["embed_hash"].to_pylist(), _matrix(tbl["vector"], self.dim)))
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
            schema=self._vector_schema,
        )
        self._vectors.add(data)
        self._commits += 1

    def ensure_indexes(self) -> None:
        """Create the indexes a table lacks: full-text and B-tree indexes once ``chunks`` has rows,
        the B-tree on ``vectors.embed_hash`` once it has rows, and the ANN index at ``ann_min_rows``
        vectors. Cheap when they exist (index lists are cached per version)."""
        with self._index_lock, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            have = self._indices(TABLE)
            if self.count():
                if "text" not in have:
                    self._chunks.create_index("text", config=FTS(with_position=False), replace=True)
                for column in ("id", "path", "embed_hash"):
                    if column not in have:
                        self._chunks.create_index(column, config=BTree(), replace=True)
            have = self._indices(VECTORS)
            vectors = self._cached("vector_count", self._vectors.version, self._vectors.count_rows)
            if vectors and "embed_hash" not in have:
                self._vectors.create_index("embed_hash", config=BTree(), replace=True)
            if vectors >= self.ann_min_rows and "vector" not in have:
                self._vectors.create_index(
                    "vector",
                    config=IvfSq(distance_type="dot", num_partitions=_partitions(vectors)),
                    replace=True,
                )

    def ensure_fts_index(self) -> None:
        """:meth:`ensure_indexes` (kept for callers that need keyword search to use its index)."""
        self.ensure_indexes()

    def optimize(self) -> None:
        """Compaction: create missing indexes, delete vectors no chunk uses, compact both tables, fold
        new rows into every index (full-text, B-tree, ANN: incremental), and delete the files of
        versions older than ``keep_versions_minutes``.
        """
        self.ensure_indexes()
        if self._rows_deleted:
            self._collect_unused_vectors()
        retention = timedelta(minutes=self.keep_versions_minutes)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._chunks.optimize(cleanup_older_than=retention)
            self._vectors.optimize(cleanup_older_than=retention)
        self._commits = 0
        self._rows_written = 0
        self._rows_deleted = 0
        self.compactions += 1

    def _collect_unused_vectors(self) -> int:
        """Delete vectors whose ``embed_hash`` no chunk row has; returns how many."""
        used = self._chunks.search().select(["embed_hash"]).limit(None).to_arrow()["embed_hash"]
        stored = self._vectors.search().select(["embed_hash"]).limit(None).to_arrow()["embed_hash"]
        if not len(stored):
            return 0
        unused = pc.unique(stored.filter(pc.invert(pc.is_in(stored, value_set=used.combine_chunks())))).to_pylist()
        for part in _batches(unused, 5000):
            self._vectors.delete(_in_clause("embed_hash", part))
            self._commits += 1
        return len(unused)

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
        return self._cached("vector_count", self._vectors.version, self._vectors.count_rows) > 0

    def count(self, where: str | None = None) -> int:
        """Number of chunk rows (cached per version), or of those matching the SQL filter ``where``."""
        if where:
            return self._read(lambda: self._chunks.count_rows(where))
        return self._cached("count", self._chunks.version, self._chunks.count_rows)

    def count_vectors(self) -> int:
        """Rows of ``vectors`` (cached per version); unused ones remain until compaction."""
        return self._cached("vector_count", self._vectors.version, self._vectors.count_rows)

    def _pending(self) -> tuple[int, list[str]]:
        def compute() -> tuple[int, list[str]]:
            hashes = self._chunks.search().select(["embed_hash"]).limit(None).to_arrow()["embed_hash"]
            if not len(hashes):
                return 0, []
            stored = self._vectors.search().select(["embed_hash"]).limit(None).to_arrow()["embed_hash"]
            missing = hashes.filter(pc.invert(pc.is_in(hashes, value_set=stored.combine_chunks())))
            return len(missing), pc.unique(missing).to_pylist()

        return self._cached("pending", (self._chunks.version, self._vectors.version), compute)

    def count_pending(self, *, distinct: bool = False) -> int:
        """Chunk rows whose vector is not stored yet, or with ``distinct`` the texts to embed for them
        (cached per pair of table versions)."""
        count, hashes = self._pending()
        return len(hashes) if distinct else count

    def pending_texts(self, limit: int) -> dict[str, str]:
        """Up to ``limit`` texts still to embed: ``{embed_hash: embed_text}``, each text once."""
        hashes = self._pending()[1][:limit]
        texts: dict[str, str] = {}
        for part in _batches(hashes):
            tbl = self._select(self._chunks, _in_clause("embed_hash", part), ["embed_hash", "symbol", "content"])
            for h, symbol, content in zip(*(tbl[c].to_pylist() for c in ("embed_hash", "symbol", "content"))):
                texts.setdefault(h, embed_text(symbol, content))
        return texts

    def paths(self) -> set[str]:
        """Every path that has rows: a full scan of ``path``, for checks and tools (the engine reads
        indexed paths from its manifest)."""
        return set(
            self._read(lambda: self._chunks.search().select(["path"]).limit(None).to_arrow())["path"].to_pylist()
        )

    def rows_for_path(self, path: str) -> list[StoredRow]:
        """All rows of one file (``id``, ``path``, ``language``, lines, ``symbol``, ``content``), by start line."""
        where = f"path = {_sql_str(path)}"
        rows = self._read(lambda: self._chunks.search().where(where).select(_HIT_COLUMNS).limit(None).to_list())
        return sorted(cast(list[StoredRow], rows), key=lambda r: r["start_line"])  # the _HIT_COLUMNS

    def keyword_search(self, question: str, limit: int) -> list[Hit]:
        """BM25 full-text search over ``text``; best first; ``[]`` for a question with no words or
        before the first full-text index exists."""
        query = " ".join(_IDENT.findall(keyword_text(question)))
        if not query.strip() or not self.count() or "text" not in self._indices(TABLE):
            return []
        rows = self._read(
            lambda: (
                self._chunks.search(query, query_type="fts", fts_columns="text")
                .select([*_HIT_COLUMNS, "_score"])
                .limit(limit)
                .to_list()
            )
        )
        return [Hit.from_row(r, float(r["_score"])) for r in rows]

    def vector_search(self, vector: np.ndarray, limit: int) -> list[Hit]:
        """Cosine search: the nearest vectors (ANN with refinement above ``ann_min_rows``, else
        exact), joined to the chunk rows that use them; best first, score = 1 - cosine distance."""
        if not self.has_vectors():
            return []
        nearest = self.nearest_hashes(vector, 2 * limit + 10)
        if not nearest:
            return []
        rows = self._read(
            lambda: (
                self._chunks.search()
                .where(_in_clause("embed_hash", list(nearest)))
                .select([*_HIT_COLUMNS, "embed_hash"])
                .limit(None)
                .to_list()
            )
        )
        rows.sort(key=lambda r: (nearest[r["embed_hash"]], r["path"], r["start_line"]))
        return [Hit.from_row(r, 1.0 - nearest[r["embed_hash"]]) for r in rows[:limit]]

    def nearest_hashes(self, vector: np.ndarray, limit: int, *, exact: bool = False) -> dict[str, float]:
        """The ``limit`` stored vectors nearest to ``vector`` (``(dim,)`` float32):
        ``{embed_hash: cosine distance}``, nearest first. ``exact`` skips the ANN index."""
        query = np.asarray(vector, dtype=np.float32).reshape(self.dim)

        def run() -> pa.Table:
            # Vectors are L2-normalized: LanceDB's "dot" distance, 1 - x.y, is the cosine distance
            # without normalizing every stored vector per query (about 2x faster exact search).
            # search() is typed as the base builder; with a query vector it is the vector builder.
            q = cast(LanceVectorQueryBuilder, self._vectors.search(query, vector_column_name="vector"))
            q = q.distance_type("dot")
            if exact:
                q = q.bypass_vector_index()
            elif self._indices(VECTORS).get("vector"):
                q = q.nprobes(max(20, _partitions(self.count_vectors()) // 16)).refine_factor(_REFINE_FACTOR)
            return q.select(["embed_hash", "_distance"]).limit(limit).to_arrow()

        tbl = self._read(run)
        nearest: dict[str, float] = {}
        for h, d in zip(tbl["embed_hash"].to_pylist(), tbl["_distance"].to_pylist()):
            nearest.setdefault(h, float(d))
        return nearest

    def index_stats(self) -> dict[str, dict]:
        """``{"<table>.<column>": {"type", "indexed_rows", "unindexed_rows"}}`` for every index,
        from LanceDB's index statistics."""
        out: dict[str, dict] = {}
        for name, tbl in ((TABLE, self._chunks), (VECTORS, self._vectors)):
            for ix in self._read(tbl.list_indices):
                stats = tbl.index_stats(ix.name)
                if stats is not None:
                    out[f"{name}.{ix.columns[0]}"] = {
                        "type": stats.index_type,
                        "indexed_rows": stats.num_indexed_rows,
                        "unindexed_rows": stats.num_unindexed_rows,
                    }
        return out

    def disk_bytes(self) -> int:
        """Bytes used by the index folder."""
        total = 0
        for dirpath, _, files in os.walk(self.index_dir):
            for name in files:
                try:
                    total += os.path.getsize(os.path.join(dirpath, name))
                except OSError:
                    pass
        return total
