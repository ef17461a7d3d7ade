"""The LanceDB table of chunks: schema, writes by file, vectors, full-text and vector search, compaction.

One index folder per workspace root holds a LanceDB database with one table, ``chunks``:

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
``embed_hash`` string                  sha256 of the text that is embedded (:func:`embed_text`);
                                       vectors are reused by this key, so a moved file or an
                                       unchanged function re-embeds nothing
``text``       string                  keyword text, full-text indexed: path words, symbol words
                                       and content with identifiers split (:func:`keyword_text`)
``embedded``   bool                    whether ``vector`` holds the chunk's embedding yet
``vector``     fixed_size_list<f32>[d] the embedding (zeros until ``embedded``)
============== ======================= ===================================================

The full-text index is LanceDB's native inverted index on ``text``; rows added after it was built
are still searched (unindexed rows are scanned) until :meth:`Store.optimize` folds them in.
Dense search is a flat cosine search over rows with ``embedded = true``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

os.environ.setdefault("LANCE_LOG", "error")

import lancedb  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
from lancedb.index import FTS  # noqa: E402

from codeask.index.chunk import Chunk  # noqa: E402

__all__ = ["Store", "Hit", "embed_text", "keyword_text", "chunk_rows", "TABLE"]

log = logging.getLogger(__name__)

TABLE = "chunks"
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*|[0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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


def chunk_rows(chunks: Sequence[Chunk], dim: int) -> list[dict]:
    """Rows for ``chunks``, without vectors yet (``embedded`` false, ``vector`` zeros of ``dim``)."""
    rows = []
    zero = [0.0] * dim
    for c in chunks:
        ehash = embed_hash(embed_text(c.symbol, c.content))
        words = " ".join(
            w for w in (_path_words(c.path), " ".join(_split_identifier(c.symbol.replace(".", "_"))))
            if w
        )
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
                "embedded": False,
                "vector": zero,
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


_HIT_COLUMNS = ["id", "path", "language", "start_line", "end_line", "symbol", "content"]


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _in_clause(column: str, values: Sequence[str]) -> str:
    return f"{column} IN ({', '.join(_sql_str(v) for v in values)})"


class Store:
    """The ``chunks`` table of one index folder.

    Writes are not locked here: the engine serializes them (one writer per index, see
    ``codeask.index.engine``). Reads are safe from any thread and see the latest commit
    (``read_consistency_interval=0``), also when another process writes.

    Args:
        index_dir: the index folder (created if missing).
        dim: vector dimension of the embedding model.
    """

    def __init__(self, index_dir: Path, dim: int):
        self.index_dir = Path(index_dir)
        self.index_dir.mkdir(parents=True, exist_ok=True)
        self.dim = dim
        self._db = lancedb.connect(
            str(self.index_dir / "lance"),
            read_consistency_interval=timedelta(0),
            session=lancedb.Session(index_cache_size_bytes=64 << 20, metadata_cache_size_bytes=32 << 20),
        )
        self._schema = pa.schema(
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
                pa.field("embedded", pa.bool_()),
                pa.field("vector", pa.list_(pa.float32(), dim)),
            ]
        )
        self._table = self._db.create_table(TABLE, schema=self._schema, exist_ok=True)
        self._commits = 0
        self._rows_written = 0
        self._fts_lock = threading.Lock()
        self._has_vectors: tuple[int, bool] | None = None

    # ---------------------------------------------------------------- writes
    def replace_files(self, paths: Iterable[str], rows: Sequence[dict]) -> None:
        """Delete every row of ``paths``, then add ``rows`` (two commits).

        Deleting first makes a re-run after a crash converge: whatever a killed run left for these
        paths is removed before their rows are written again, so chunk ids never repeat.
        """
        paths = sorted(set(paths))
        for start in range(0, len(paths), 500):
            self._table.delete(_in_clause("path", paths[start : start + 500]))
            self._commits += 1
        if rows:
            self._table.add(pa.Table.from_pylist(list(rows), schema=self._schema))
            self._commits += 1
            self._rows_written += len(rows)

    def set_vectors(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Store ``vectors`` (``(len(ids), dim)`` float32) for rows ``ids`` and mark them embedded.

        Rows deleted meanwhile are simply not matched (merge on ``id``).
        """
        if not len(ids):
            return
        data = pa.table(
            {
                "id": pa.array(list(ids), pa.string()),
                "embedded": pa.array([True] * len(ids)),
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(np.asarray(vectors, dtype=np.float32).reshape(-1)), self.dim
                ),
            }
        )
        self._table.merge_insert("id").when_matched_update_all().execute(data)
        self._commits += 1
        self._rows_written += len(ids)

    def ensure_fts_index(self) -> None:
        """Build the full-text index on ``text`` if there is none (rows added later stay searchable)."""
        with self._fts_lock:
            if any(ix.index_type == "FTS" for ix in self._table.list_indices()):
                return
            if self._table.count_rows() == 0:
                return
            self._table.create_index("text", config=FTS(with_position=False), replace=True)

    def optimize(self, *, keep_versions_seconds: float = 0.0) -> None:
        """Compact data files, fold new rows into the full-text index, drop old versions.

        Bounds the disk after many small commits. Old versions are removed once older than
        ``keep_versions_seconds``; readers always query the latest version.
        """
        self.ensure_fts_index()
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._table.optimize(cleanup_older_than=timedelta(seconds=keep_versions_seconds))
        self._commits = 0
        self._rows_written = 0

    @property
    def commits_since_optimize(self) -> int:
        """LanceDB commits (deletes, adds, vector merges) since the last :meth:`optimize`."""
        return self._commits

    @property
    def rows_since_optimize(self) -> int:
        """Rows added or updated since the last :meth:`optimize` (not yet in the full-text index)."""
        return self._rows_written

    def has_vectors(self) -> bool:
        """Whether any row has its vector (cached per table version)."""
        version = self._table.version
        if self._has_vectors is None or self._has_vectors[0] != version:
            found = bool(self._table.search().where("embedded = true").select(["id"]).limit(1).to_list())
            self._has_vectors = (version, found)
        return self._has_vectors[1]

    # ----------------------------------------------------------------- reads
    def count(self, where: str | None = None) -> int:
        """Number of rows, or of the rows matching the SQL filter ``where`` (e.g. ``"embedded = false"``)."""
        return self._table.count_rows(where) if where else self._table.count_rows()

    def count_pending(self) -> int:
        """Rows still waiting for a vector."""
        return self._table.count_rows("embedded = false")

    def paths(self) -> set[str]:
        """Every path that has rows."""
        return set(self._table.search().select(["path"]).limit(None).to_arrow()["path"].to_pylist())

    def vectors_for(self, embed_hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """Existing vectors by embed hash, among embedded rows (for reuse before embedding)."""
        wanted = sorted(set(embed_hashes))
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            tbl = (
                self._table.search()
                .where(f"embedded = true AND {_in_clause('embed_hash', part)}")
                .select(["embed_hash", "vector"])
                .limit(None)
                .to_arrow()
            )
            for h, v in zip(tbl["embed_hash"].to_pylist(), tbl["vector"].to_numpy(zero_copy_only=False)):
                found.setdefault(h, np.asarray(v, dtype=np.float32))
        return found

    def pending(self, limit: int) -> list[dict]:
        """Up to ``limit`` rows without a vector: ``{"id", "embed_hash", "symbol", "content"}``."""
        return (
            self._table.search()
            .where("embedded = false")
            .select(["id", "embed_hash", "symbol", "content"])
            .limit(limit)
            .to_list()
        )

    def rows_for_path(self, path: str) -> list[dict]:
        """All rows of one file (without vectors), ordered by start line."""
        rows = (
            self._table.search()
            .where(f"path = {_sql_str(path)}")
            .select([*_HIT_COLUMNS, "embedded"])
            .limit(None)
            .to_list()
        )
        return sorted(rows, key=lambda r: r["start_line"])

    def keyword_search(self, question: str, limit: int) -> list[Hit]:
        """BM25 full-text search over ``text``; best first; ``[]`` for a question with no words."""
        query = " ".join(_IDENT.findall(keyword_text(question)))
        if not query.strip() or self._table.count_rows() == 0:
            return []
        rows = (
            self._table.search(query, query_type="fts", fts_columns="text")
            .select([*_HIT_COLUMNS, "_score"])
            .limit(limit)
            .to_list()
        )
        return [_hit(r, float(r["_score"])) for r in rows]

    def vector_search(self, vector: np.ndarray, limit: int) -> list[Hit]:
        """Cosine search over embedded rows; best first, score = 1 - cosine distance."""
        if not self.has_vectors():
            return []
        rows = (
            self._table.search(np.asarray(vector, dtype=np.float32), vector_column_name="vector")
            .metric("cosine")
            .where("embedded = true", prefilter=True)
            .select([*_HIT_COLUMNS, "_distance"])
            .limit(limit)
            .to_list()
        )
        return [_hit(r, 1.0 - float(r["_distance"])) for r in rows]

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


def _hit(row: dict, score: float) -> Hit:
    return Hit(
        id=row["id"],
        path=row["path"],
        language=row["language"],
        start_line=int(row["start_line"]),
        end_line=int(row["end_line"]),
        symbol=row["symbol"],
        content=row["content"],
        score=score,
    )
