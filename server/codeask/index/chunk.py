"""The chunker as the indexer uses it: :func:`chunk_file` chunks one file at the index settings'
sizes (the engine, ``codeask publish`` and explain call it, so the three chunk a file the same way
and a published vector matches the indexed chunk). The chunker itself is :mod:`codeask.index.chunking`;
its names are re-exported here for the storage, engine, explain and language-server modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeask.index.chunking import (
    KNOWN_EXTENSIONS,
    KNOWN_FILENAMES,
    TREE_SITTER_LANGUAGES,
    Chunk,
    chunk_text,
    language_for,
)

if TYPE_CHECKING:
    from codeask.settings import IndexSettings

__all__ = [
    "KNOWN_EXTENSIONS",
    "KNOWN_FILENAMES",
    "TREE_SITTER_LANGUAGES",
    "Chunk",
    "chunk_file",
    "chunk_text",
    "language_for",
]


def chunk_file(path: str, text: str, settings: IndexSettings) -> list[Chunk]:
    """The chunks of the file at ``path`` (relative to its root, POSIX; its name picks the language)
    holding ``text``, at ``settings.chunk_lines`` lines and ``settings.max_chunk_chars`` characters
    at most (:func:`~codeask.index.chunking.chunk_text`)."""
    return chunk_text(path, text, chunk_lines=settings.chunk_lines, max_chunk_chars=settings.max_chunk_chars)
