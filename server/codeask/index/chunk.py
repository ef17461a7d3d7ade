"""Compatibility alias of :mod:`codeask.index.chunking` (the chunker package).

New code imports from :mod:`codeask.index.chunking`; this module keeps the
names the storage, engine, explain and language-server modules import.
"""

from codeask.index.chunking import (
    KNOWN_EXTENSIONS,
    KNOWN_FILENAMES,
    TREE_SITTER_LANGUAGES,
    Chunk,
    chunk_text,
    language_for,
)

__all__ = ["KNOWN_EXTENSIONS", "KNOWN_FILENAMES", "TREE_SITTER_LANGUAGES", "Chunk", "chunk_text", "language_for"]
