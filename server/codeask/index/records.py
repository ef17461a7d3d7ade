"""The records the index hands to the rest of codeask, as typed dicts (their keys are the LanceDB
columns and the JSON keys of ``codeask status``, so they stay plain dicts on the wire).

* :class:`ChunkRow`: one row of the ``chunks`` table, as :func:`~codeask.index.store.chunk_rows`
  builds it from a :class:`~codeask.index.chunking.Chunk` (files -> chunks -> **rows**).
* :class:`StoredRow`: the columns of a stored row that readers get back
  (:meth:`~codeask.index.store.Store.rows_for_path`).
* :class:`RootStatus`: one root's index, as :meth:`~codeask.index.engine.RootIndex.status` reports it.
"""

from __future__ import annotations

from typing import TypedDict

__all__ = ["ChunkRow", "StoredRow", "RootStatus"]


class StoredRow(TypedDict):
    """A chunk as stored: ``id`` (32 hex chars), ``path`` (POSIX, relative to the root), 1-based
    inclusive lines, the enclosing ``symbol`` (``""`` for none) and the chunk's text."""

    id: str
    path: str
    language: str
    start_line: int
    end_line: int
    symbol: str
    content: str


class ChunkRow(StoredRow):
    """A row to write: a :class:`StoredRow` plus ``embed_hash`` (the key of its vector in the
    ``vectors`` table) and ``text`` (what the full-text index searches: path words, symbol parts
    and the content's identifiers split)."""

    embed_hash: str
    text: str


class RootStatus(TypedDict):
    """One root's index: ``indexed`` (it has an index), ``read_only`` (it cannot be updated),
    ``files``, ``chunks_total``, ``vectors_pending`` (chunks without a vector yet), ``index_dir``,
    ``embedding_model`` and ``index_bytes`` (the index folder's size on disk, bytes)."""

    root: str
    indexed: bool
    read_only: bool
    files: int
    chunks_total: int
    vectors_pending: int
    index_dir: str
    embedding_model: str
    index_bytes: int
