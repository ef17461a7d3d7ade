"""Conversions between codeask's 1-based line ranges and LSP's 0-based positions and locations.

Lines follow :mod:`codeask.lines` (``\\n``, ``\\r\\n``, ``\\r`` only); ``character`` values count code
units of the negotiated position encoding (UTF-16 by default).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from codeask.lines import column_units, split_lines
from codeask.uris import file_uri, uri_to_path

__all__ = [
    "location",
    "lsp_range",
    "last_line",
    "word_at",
    "word_range",
    "uri_to_path",
    "selection_lines",
    "settings_from",
    "source_locations",
    "related_locations",
]


def lsp_range(start_line: int, end_line: int, last_line_text: str = "", encoding: str | None = "utf-16") -> lsp.Range:
    """1-based inclusive lines -> an LSP Range ending at the end of the last line
    (``last_line_text``'s length in ``encoding`` code units, see :func:`codeask.lines.column_units`)."""
    return lsp.Range(
        start=lsp.Position(line=max(0, start_line - 1), character=0),
        end=lsp.Position(line=max(0, end_line - 1), character=column_units(last_line_text, encoding)),
    )


def last_line(text: str, start_line: int, end_line: int) -> str:
    """Line ``end_line`` of ``text``, the content of lines ``start_line..end_line`` (1-based), lines as in
    :mod:`codeask.lines`; ``""`` past its lines: a chunk ending in blank lines holds them as its text's
    final line end, and the range of flask's ``Flask.run`` (546-668) ended at column 43 of its blank
    line 668, the length of line 667."""
    lines = split_lines(text)
    n = end_line - start_line + 1
    return lines[n - 1] if 0 < n <= len(lines) else ""


def location(
    root: str, path: str, start_line: int, end_line: int, content: str = "", encoding: str | None = "utf-16"
) -> lsp.Location:
    """An LSP Location: ``file:///abs/path`` (no ``#L`` fragment) and a 0-based range whose end
    character counts ``encoding`` code units."""
    return lsp.Location(
        uri=file_uri(Path(root) / path),
        range=lsp_range(start_line, end_line, last_line(content, start_line, end_line), encoding),
    )


def source_locations(sources: list[dict[str, Any]], encoding: str | None = "utf-16") -> list[lsp.Location]:
    """Locations of ``Answer.to_json()["sources"]`` items, same order, one per span: a source with
    ``spans`` (its best span first, then the spans widening added) gives one Location each;
    ``encoding``: the negotiated position encoding."""
    return [
        location(s["root"], s["path"], span["start_line"], span["end_line"], span.get("content", ""), encoding)
        for s in sources
        for span in (s.get("spans") or [s])
    ]


def related_locations(found: dict[str, Any], encoding: str | None = "utf-16") -> dict[str, Any]:
    """``RelatedCode.to_json()`` with an LSP ``location`` on each definition, caller and callee."""
    for kind in ("definitions", "callers", "callees"):
        for x in found.get(kind) or []:
            # to the start of the line after: the whole last line, without reading the file
            x["location"] = location(x["root"], x["path"], x["start_line"], x["end_line"] + 1, "", encoding)
    return found


def word_at(text: str, line: int, character: int, encoding: str | None = "utf-16") -> str:
    """The identifier (letters of any script, digits, ``_``: ``größe``, ``計算``) at 0-based ``line`` / ``character`` of ``text`` (``character`` in
    ``encoding`` code units), ``""`` when there is none; lines as in :mod:`codeask.lines` (pygls's own
    ``TextDocument.lines`` uses ``str.splitlines()``, which also breaks at form feeds)."""
    found = _word_bounds(text, line, character, encoding)
    return found[0][found[1] : found[2]] if found else ""


def word_range(text: str, line: int, character: int, encoding: str | None = "utf-16") -> lsp.Range | None:
    """The LSP Range of the identifier :func:`word_at` finds (``encoding`` code units), or ``None``."""
    found = _word_bounds(text, line, character, encoding)
    if found is None or found[1] == found[2]:
        return None
    row, start, end = found
    return lsp.Range(
        start=lsp.Position(line=line, character=column_units(row[:start], encoding)),
        end=lsp.Position(line=line, character=column_units(row[:end], encoding)),
    )


def _word_bounds(text: str, line: int, character: int, encoding: str | None) -> tuple[str, int, int] | None:
    """``(line text, start, end)``: the identifier's character offsets around the position."""
    lines = split_lines(text)
    if not 0 <= line < len(lines):
        return None
    row = lines[line]
    units = index = 0
    while index < len(row) and units < character:
        units += column_units(row[index], encoding)
        index += 1
    start = end = index
    while start > 0 and _word_char(row[start - 1]):
        start -= 1
    while end < len(row) and _word_char(row[end]):
        end += 1
    return row, start, end


def _word_char(ch: str) -> bool:
    return ch == "_" or ch.isalnum()


def selection_lines(rng: Any) -> tuple[int, int]:
    """An LSP Range (object or JSON) -> 1-based inclusive ``(start_line, end_line)``; a selection
    ending at character 0 of a later line does not include that line."""
    if hasattr(rng, "start"):
        start, end = rng.start, rng.end
        s_line, e_line, e_char = start.line, end.line, end.character
    else:
        s_line, e_line, e_char = rng["start"]["line"], rng["end"]["line"], rng["end"]["character"]
    if e_line > s_line and e_char == 0:
        e_line -= 1
    return s_line + 1, max(s_line, e_line) + 1


def settings_from(value: Any) -> dict[str, Any]:
    """Editor settings from ``initializationOptions`` / ``workspace/configuration`` / a
    ``didChangeConfiguration`` payload: either the ``codeask`` section itself or an object
    holding it under ``codeask``."""
    if not isinstance(value, dict):
        return {}
    inner = value.get("codeask")
    if isinstance(inner, dict):
        return inner
    return dict(value)
