"""The records the index hands to the rest of codeask, as typed dicts (their keys are the LanceDB
columns and the JSON keys of ``codeask status``, so they stay plain dicts on the wire).

* :class:`ChunkRow`: one row of the ``chunks`` table, as :func:`~codeask.index.rows.chunk_rows`
  builds it from a :class:`~codeask.index.chunking.Chunk` (files -> chunks -> **rows**).
* :class:`StoredRow`: the columns of a stored row that readers get back
  (:meth:`~codeask.index.store.Store.rows_for_path`).
* :class:`RootStatus`: one root's index, as :meth:`~codeask.index.engine.RootIndex.status` reports it;
  :class:`WorkspaceStatus`: every root's, summed (:meth:`~codeask.workspace.Workspace.status`).
* :class:`IndexState`: what an answer stands on (the ``"index"`` object of every ask result).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, TypedDict

__all__ = ["ChunkRow", "StoredRow", "RootStatus", "WorkspaceStatus", "IndexState", "IndexReadiness"]

#: How ready the indexes are: the one readiness every front door reports
#: (:class:`codeask.readiness.ServiceStatus`); what an answer stands on (:class:`IndexState`) is one of
#: ``building``, ``keyword-only`` and ``ready``.
IndexReadiness = Literal["not-indexed", "building", "keyword-only", "ready", "read-only", "locked-elsewhere"]


class StoredRow(TypedDict):
    """A chunk as stored: ``id`` (32 hex chars), ``path`` (POSIX, relative to the root), 1-based
    inclusive lines, the enclosing ``symbol`` (``""`` for none), the chunk's text and its file's
    ``kind`` (``source``, ``test``, ``docs``, ``config``, ``data``, ``generated``, ``vendored``:
    :mod:`codeask.index.kinds`)."""

    id: str
    path: str
    language: str
    start_line: int
    end_line: int
    symbol: str
    content: str
    kind: str


class ChunkRow(StoredRow):
    """A row to write: a :class:`StoredRow` plus ``embed_hash`` (the key of its vector in the
    ``vectors`` table; ``""`` for a chunk indexed keyword-only, which never gets one), ``text`` (what
    the full-text index searches: path words, symbol parts and the content's identifiers split),
    ``defines`` and ``refs`` (the names the chunk defines and references: the symbol graph,
    :mod:`codeask.index.chunking.graph`)."""

    embed_hash: str
    text: str
    defines: list[str]
    refs: list[str]


class RootStatus(TypedDict):
    """One root's index: ``indexed`` (it has an index), ``read_only`` (it cannot be updated),
    ``files``, ``chunks_total``, ``vectors_pending`` (chunks without a vector yet), ``index_dir``,
    ``embedding_model``, ``index_bytes`` (the index folder's size on disk, bytes),
    ``files_by_encoding`` (indexed files by the encoding they were read with, ``{"utf-8": 120}``) and
    ``outdated`` (its rows were cut or linked by an older release: the next index run reads every
    file again, :func:`codeask.index.meta.rows_outdated`)."""

    root: str
    indexed: bool
    read_only: bool
    files: int
    chunks_total: int
    vectors_pending: int
    index_dir: str
    embedding_model: str
    index_bytes: int
    files_by_encoding: dict[str, int]
    outdated: bool


class WorkspaceStatus(TypedDict):
    """:meth:`Workspace.status`: the roots' :class:`~codeask.index.records.RootStatus` summed
    (``indexed`` when every root has an index, ``read_only`` and ``outdated`` when any is), the first
    root's ``index_dir`` (``None`` without roots), the embedding model, the LLM as
    ``provider:model`` (``None`` without one) and each root's own status; ``files_by_encoding`` sums
    the roots' counts."""

    indexed: bool
    read_only: bool
    outdated: bool
    files: int
    files_by_encoding: dict[str, int]
    chunks_total: int
    vectors_pending: int
    index_dir: str | None
    embedding_model: str
    llm: str | None
    roots: list[RootStatus]


@dataclass(frozen=True)
class IndexState:
    """What an answer stands on, the ``"index"`` object of every ask result.

    ``state``: ``"building"`` (the first keyword index of some root has not finished: files are
    missing), ``"keyword-only"`` (``vectors_pending`` chunks still wait for vectors, so dense
    retrieval sees only part of the code) or ``"ready"``. ``files_indexed``: files in the index.
    """

    state: IndexReadiness
    files_indexed: int
    vectors_pending: int

    def to_json(self) -> dict[str, Any]:
        """``{"state", "files_indexed", "vectors_pending"}``."""
        return asdict(self)
