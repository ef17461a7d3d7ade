"""The chunker as the indexer uses it: :func:`chunk_file` chunks one file at the index settings'
sizes (the engine, ``codeask publish`` and explain call it, so the three chunk a file the same way
and a published vector matches the indexed chunk). The chunker itself is :mod:`codeask.index.chunking`;
its names are re-exported here for the storage, engine, explain and language-server modules.
"""

from __future__ import annotations

from codeask.index.chunking import (
    KNOWN_EXTENSIONS,
    KNOWN_FILENAMES,
    TREE_SITTER_LANGUAGES,
    Chunk,
    chunk_text,
    language_for,
)
from codeask.index.filetext import MAX_LINE_LENGTH
from codeask.lines import split_lines

__all__ = [
    "KNOWN_EXTENSIONS",
    "KNOWN_FILENAMES",
    "TREE_SITTER_LANGUAGES",
    "Chunk",
    "chunk_file",
    "shorten_long_lines",
    "chunk_text",
    "language_for",
]


#: What ends a line :func:`shorten_long_lines` cut.
CUT_MARK = "\u2026"


def shorten_long_lines(text: str, max_line_length: int) -> str:
    """``text`` with every line longer than ``max_line_length`` cut to that many characters and
    :data:`CUT_MARK` (a long literal in a source file: a base64 blob in a test); lines as
    :func:`~codeask.lines.split_lines` cuts them, each keeping its number (joined with ``\\n``)."""
    if len(text) <= max_line_length:
        return text
    lines = split_lines(text)
    if all(len(line) <= max_line_length for line in lines):
        return text
    return "\n".join(line if len(line) <= max_line_length else line[:max_line_length] + CUT_MARK for line in lines)


def chunk_file(path: str, text: str) -> list[Chunk]:
    """The chunks of the file at ``path`` (relative to its root, POSIX; its name picks the language)
    holding ``text``, at :data:`~codeask.index.chunking.CHUNK_LINES` lines and
    :data:`~codeask.index.chunking.MAX_CHUNK_CHARS` characters at most
    (:func:`~codeask.index.chunking.chunk_text`); lines over
    :data:`~codeask.index.filetext.MAX_LINE_LENGTH` characters are cut (:func:`shorten_long_lines`)."""
    short = shorten_long_lines(text, MAX_LINE_LENGTH)
    return chunk_text(path, short)
