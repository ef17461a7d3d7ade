"""The one line and column model of codeask, the one editors, git and the LSP specification use.

Lines end only at ``\\n``, ``\\r\\n`` and ``\\r`` (LSP 3.17, "Text Documents": "the end-of-line
sequence ... is \\n, \\r\\n and \\r"). ``str.splitlines()`` also ends lines at form feed, vertical
tab, ``\\x1c``-``\\x1e``, NEL (``\\x85``), U+2028 and U+2029, so a Python file with a ``^L`` page
break would be numbered one line off below it: every line number codeask produces (chunks,
citations, selections, hover, LSP ranges) comes from :func:`split_lines` instead.

Columns on the wire count code units of the negotiated ``positionEncoding``: UTF-16 unless the
client offered ``utf-8`` or ``utf-32`` (:func:`column_units`).
"""

from __future__ import annotations

import re

__all__ = ["split_lines", "column_units"]

_LINE_END = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """``text`` cut at ``\\n``, ``\\r\\n`` and ``\\r`` only, without the line ends.

    Like ``str.splitlines()`` for the end of the text: a final line end does not start another
    line (``"a\\n"`` is ``["a"]``, ``"a\\n\\n"`` is ``["a", ""]``, ``""`` is ``[]``). A form feed,
    vertical tab, NEL, U+2028 or U+2029 stays inside its line.
    """
    if not text:
        return []
    lines = _LINE_END.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


def column_units(text: str, encoding: str | None = "utf-16") -> int:
    """Length of ``text`` (one line, or its prefix) in LSP ``character`` units.

    ``encoding`` is the negotiated ``PositionEncodingKind`` value: ``"utf-16"`` (the default when a
    client names none: a character outside the Basic Multilingual Plane counts 2), ``"utf-8"``
    (bytes) or ``"utf-32"`` (code points, Python's ``len``).
    """
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2
