"""Reading one listed file for indexing: its decoded text and content hash (:func:`read_text`), or
the reason it is skipped (binary, too large, minified, gone, ...); :func:`content_reason` judges an
editor's buffer by the same rules. The reasons are those of :data:`codeask.index.walk.SKIP_REASONS`.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from codeask.index.decode import SNIFF_BYTES, decode
from codeask.index.ignore import index_settings
from codeask.lines import split_lines
from codeask.settings import IndexSettings

__all__ = [
    "FileText",
    "LITERAL_SHARE",
    "MAX_LINE_LENGTH",
    "content_reason",
    "is_literal_line",
    "oserror_reason",
    "read_text",
]


@dataclass(frozen=True)
class FileText:
    """A file's decoded ``text`` (:func:`codeask.index.decode.decode`: BOM stripped, bad bytes as
    U+FFFD), the ``encoding`` it was read with (a canonical codec name: ``utf-8``, ``utf-16-le``,
    ``cp1252``, ...), the sha256 hex ``content_hash`` of its raw bytes and its ``size`` in bytes."""

    text: str
    content_hash: str
    size: int
    encoding: str = "utf-8"


def oserror_reason(exc: OSError) -> str:
    """The skip reason of an OS error met listing or reading a path."""
    if isinstance(exc, PermissionError):
        return "permission_denied"
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return "vanished"
    if exc.errno == errno.ELOOP:
        return "symlink_loop"
    return "unreadable"


#: Characters a line of code may have before it counts toward "minified" (:func:`_minified`), and
#: where a chunk cuts a longer literal line (:func:`codeask.index.chunk.shorten_long_lines`): 1000,
#: far above hand-written code (PEP 8's 79, most formatters' 80-120) and far below a bundler's
#: output lines (tens of thousands). Part of each content skip's record
#: (:func:`codeask.index.phase1.skip_limits`), so a new value re-reads skipped files. Was
#: ``index.max_line_length``.
MAX_LINE_LENGTH = 1000

#: Share of a long line one token (split at blanks and quotes) must cover for the line to be a
#: literal (a base64 blob, a hex string) rather than minified code.
LITERAL_SHARE = 0.8
_TOKEN_BREAKS = re.compile(r"[\s\"'`]+")


def is_literal_line(line: str) -> bool:
    """Whether ``line`` is one long literal: a single token between blanks and quotes covers over
    :data:`LITERAL_SHARE` of it (a base64 or hex string). Minified code breaks at its many quoted
    strings and never is."""
    return max((len(t) for t in _TOKEN_BREAKS.split(line)), default=0) > LITERAL_SHARE * len(line)


def _minified(text: str) -> bool:
    """Whether lines longer than :data:`MAX_LINE_LENGTH` that are code, not one long literal
    (:func:`is_literal_line`), hold more than half of the characters: a test file with a long
    base64 line is source (its chunks shorten the line: :func:`codeask.index.chunk.chunk_file`)."""
    if len(text) <= MAX_LINE_LENGTH:
        return False
    long_chars = 0
    for line in split_lines(text):
        if len(line) > MAX_LINE_LENGTH and not is_literal_line(line):
            long_chars += len(line)
    return long_chars * 2 > len(text)


def content_reason(text: str, settings: IndexSettings) -> str | None:
    """Why :func:`read_text` would skip a file holding ``text`` (an editor's buffer, not read from
    disk): ``"too_large"`` (its UTF-8 encoding is over ``max_file_bytes`` bytes), ``"binary"`` (a
    NUL in its first 8 KiB), ``"minified"`` (as :func:`read_text`), or ``None``. Never raises."""
    settings = index_settings(settings)
    if len(text.encode("utf-8", "surrogatepass")) > settings.max_file_bytes:
        return "too_large"
    if "\x00" in text[:SNIFF_BYTES]:
        return "binary"
    return "minified" if _minified(text) else None


def read_text(abs_path: str | Path, settings: IndexSettings) -> FileText | str:
    """Read and decode one file for indexing.

    Returns:
        :class:`FileText`, or a skip reason: ``"too_large"`` (over ``max_file_bytes``, at stat or
        at read time), ``"binary"`` (no encoding decodes it: :func:`codeask.index.decode.decode`), ``"minified"`` (lines longer than
        :data:`MAX_LINE_LENGTH` hold over half the characters), ``"vanished"`` (deleted or a broken
        link), ``"permission_denied"``, ``"unreadable"`` (other OS errors, not a regular file).
        Text is decoded by :func:`codeask.index.decode.decode` (a BOM, else UTF-8, else the detected
        legacy encoding; bad bytes as U+FFFD); an empty file gives ``""``.

    Raises:
        Nothing for a bad file: every OS error becomes a reason string.
    """
    settings = index_settings(settings)
    limit = settings.max_file_bytes
    try:
        st = os.stat(abs_path)
        if not stat.S_ISREG(st.st_mode):
            return "unreadable"
        if st.st_size > limit:
            return "too_large"
        with open(abs_path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        reason = oserror_reason(exc)
        return "unreadable" if reason == "symlink_loop" else reason
    if len(data) > limit:
        return "too_large"
    decoded = decode(data)
    if decoded is None:
        return "binary"
    if _minified(decoded.text):
        return "minified"
    return FileText(decoded.text, hashlib.sha256(data).hexdigest(), len(data), decoded.encoding)
