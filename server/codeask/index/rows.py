"""Chunk rows: what is stored, full-text indexed and embedded for a chunk, and a search :class:`Hit`.

Pure functions of the chunk (no LanceDB): the columns of the ``chunks`` table
(:mod:`codeask.index.store` documents them), the keyword text the full-text index sees, and the
embedded text and its hash, the key vectors are stored and shared by.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from codeask.index.chunk import Chunk
from codeask.index.records import ChunkRow

__all__ = [
    "TABLE",
    "VECTORS",
    "Hit",
    "HIT_COLUMNS",
    "IDENT",
    "chunk_rows",
    "embed_hash",
    "embed_text",
    "EMBED_TEXT_VERSION",
    "keyword_text",
    "split_identifier",
    "path_words",
    "sql_in",
    "sql_has_any",
    "batches",
    "GRAPH_COLUMNS",
]

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*|[0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
#: The two LanceDB tables of an index folder.
TABLE = "chunks"
VECTORS = "vectors"
#: Values per ``IN (...)`` filter: larger lists are sent in batches.
IN_BATCH = 500
T = TypeVar("T")
#: An identifier, as keyword queries are split into words.
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def split_identifier(token: str) -> list[str]:
    """``token`` split at underscores and camelCase humps, lower-cased: ``getHTTPResponse_x`` -> ``[get, http, response, x]``."""
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

    return IDENT.sub(_expanded_match, text)


def _expanded_match(match: re.Match[str]) -> str:
    return _expanded(match.group(0))


@functools.lru_cache(maxsize=1 << 16)
def _expanded(token: str) -> str:
    """``token`` followed by its word parts (:func:`split_identifier`), or alone when it has one part.
    Memoized: a repository repeats its identifiers, and splitting each occurrence anew was two thirds
    of :func:`keyword_text`'s time (sphinx 9.0.4's 11,615 chunks: 2.5 s -> 0.8 s of CPU; 47,344
    distinct identifiers, so a cache of 65,536 holds a large project's)."""
    parts = split_identifier(token)
    if len(parts) <= 1:
        return token
    return token + " " + " ".join(parts)


#: Version of :func:`embed_text`'s layout: part of the key of the machine's vector store
#: (:mod:`codeask.index.machine`), so a changed layout never reuses vectors of the old one.
EMBED_TEXT_VERSION = 1


def embed_text(symbol: str, content: str) -> str:
    """What is embedded for a chunk: its symbol line, then its content.

    The path is left out on purpose, so moving or renaming a file keeps every vector. Rows store
    ``sha256(embed_text)[:32]`` as ``embed_hash``, the key vectors are reused by.
    """
    return f"{symbol}\n{content}" if symbol else content


def embed_hash(text: str) -> str:
    """The key a vector is stored and shared by: ``sha256(text)[:32]`` (hex) of :func:`embed_text`."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def path_words(path: str) -> str:
    """The words of a path, split like identifiers: ``src/flaskApp/cli.py`` -> ``src flask app cli py``."""
    return " ".join(split_identifier(" ".join(_WORD.findall(path.replace("/", " ")))) or [])


def chunk_rows(
    chunks: Sequence[Chunk], kinds: Mapping[str, str] | None = None, keyword_only: Collection[str] = ()
) -> list[ChunkRow]:
    """Rows of the ``chunks`` table for ``chunks`` (vectors live apart, keyed by ``embed_hash``).

    ``kinds``: ``{path: kind}`` (:func:`codeask.index.kinds.classify`; a path not in it is
    ``source``); the chunks of a kind in ``keyword_only`` get ``embed_hash`` ``""``: they are
    found by keyword search only and are never pending a vector.
    """
    rows: list[ChunkRow] = []
    kinds = kinds or {}
    for c in chunks:
        kind = kinds.get(c.path, "source")
        ehash = "" if kind in keyword_only else embed_hash(embed_text(c.symbol, c.content))
        words = " ".join(w for w in (path_words(c.path), " ".join(split_identifier(c.symbol.replace(".", "_")))) if w)
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
                "kind": kind,
                "embed_hash": ehash,
                "text": f"{c.path} {words} {c.symbol}\n{keyword_text(c.content)}",
                "defines": list(c.defines),
                "refs": list(c.refs),
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
    kind: str = "source"
    """The file's kind (:mod:`codeask.index.kinds`)."""

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
            kind=row.get("kind") or "source",
        )


#: The ``chunks`` columns a :class:`Hit` is made from.
HIT_COLUMNS = ["id", "path", "language", "start_line", "end_line", "symbol", "content", "kind"]
#: The symbol graph's columns (:mod:`codeask.index.chunking.graph`).
GRAPH_COLUMNS = ["defines", "refs"]


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def sql_in(column: str, values: Sequence[str]) -> str:
    """The SQL filter ``column IN ('a', 'b', ...)`` (values quoted, ``'`` doubled)."""
    return f"{column} IN ({', '.join(_sql_str(v) for v in values)})"


def sql_has_any(column: str, values: Sequence[str]) -> str:
    """The SQL filter ``array_has_any(column, ['a', 'b', ...])`` on a ``list<string>`` column (values
    quoted, ``'`` doubled): answered by the column's LabelList index, not a scan."""
    return f"array_has_any({column}, [{', '.join(_sql_str(v) for v in values)}])"


def batches(values: Sequence[T], size: int = IN_BATCH) -> Iterable[Sequence[T]]:
    """``values`` in slices of at most ``size``."""
    for start in range(0, len(values), size):
        yield values[start : start + size]
