"""Citations anchored to code: a cited span carries its symbol and a hash of its text, so it can be
found again after the file changed (:func:`resolve`).

An anchor is ``{"symbol", "hash"}``: the span's enclosing definition (``""`` when none) and
:func:`text_hash` of its lines. Resolving a citation against a file's current text gives a
:class:`Resolution` whose ``status`` is, in the order tried:

* ``same``: the lines still hold the cited text;
* ``moved``: the same text is at other lines (the occurrence nearest the cited lines);
* ``changed``: the text is gone but the symbol is still defined: its definition's current lines
  ("changed since the answer"); a packed span's symbol names several
  (``Mux.updateSubRoutes, Mux.updateRouteHandler``): from the first's to the last's;
* ``gone``: neither: the definition of the symbol's (first name's) last name part when one exists
  (``Session.send`` -> ``send``), else the cited lines kept inside the file ("nearest match").

A resolution also carries ``open_line``, where an editor puts the cursor: the cited span's open line
(:func:`codeask.query.opening.open_line`) as far into the lines found as it was into the cited ones;
for ``changed``, the first line of the definition named that starts nearest as far in (of a packed
span, the one the span opened on); else the first line found.

Pure string work: callers read the file with the indexer's rules
(:func:`codeask.query.span.explain_source` or :func:`codeask.index.walk.read_text`); definitions
come from :func:`codeask.index.chunking.symbols.definitions`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from codeask.index.chunking.languages import language_for
from codeask.index.chunking.symbols import Definition, definitions
from codeask.lines import split_lines
from codeask.query.span import NotExplainable, explain_source
from codeask.uris import file_uri

__all__ = ["Resolution", "Status", "anchor", "resolve", "resolve_file", "text_hash", "NOTES"]

Status = Literal["same", "moved", "changed", "gone"]

#: What each status tells a reader (shown beside the opened lines).
NOTES: dict[str, str] = {
    "same": "",
    "moved": "moved since the answer",
    "changed": "changed since the answer",
    "gone": "gone since the answer: nearest match",
}

_HASH_CHARS = 16


def text_hash(lines: Sequence[str]) -> str:
    """The first 16 hex digits of the sha256 of the non-blank ``lines`` (trailing whitespace dropped,
    joined with ``\\n``, UTF-8): the same for a span whatever its file's line endings and blank lines.
    A chunk's stored content is not always the file's lines verbatim: a last blank line leaves only a
    line end, and packed small definitions lose the blank lines between them
    (:mod:`codeask.index.chunking.packing`); a change of blank lines alone is no change of the code."""
    joined = "\n".join(line.rstrip() for line in lines if line.strip())
    return hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]


def anchor(content: str, symbol: str) -> dict[str, str]:
    """``{"symbol", "hash"}`` of a span whose text is ``content`` (lines as :mod:`codeask.lines`)."""
    return {"symbol": symbol or "", "hash": text_hash(split_lines(content))}


@dataclass(frozen=True)
class Resolution:
    """Where a citation is now: 1-based inclusive ``start_line`` / ``end_line`` in the current file,
    ``status`` (see the module docstring), ``note`` (:data:`NOTES`, ``""`` for ``same``) and
    ``open_line``, the line inside them to open at (1-based)."""

    status: Status
    start_line: int
    end_line: int
    note: str
    open_line: int = 0

    def to_json(self) -> dict[str, Any]:
        """``{"status", "start_line", "end_line", "note", "open_line"}``."""
        return asdict(self)


def _found(status: Status, start: int, end: int, into: int = 0) -> Resolution:
    """The resolution ``status`` of lines ``start..end``, opening ``into`` lines past the first (kept inside)."""
    return Resolution(status, start, end, NOTES[status], min(start + max(into, 0), end))


def _same_text(lines: list[str], size: int, digest: str, near: int) -> int | None:
    """The 1-based first line of the ``size``-line window of ``lines`` hashing to ``digest``, or
    ``None``: one opening on code before one opening on a blank line, then the nearest ``near``. The
    hash skips blank lines, so windows a few blank lines apart can hash alike: five blank lines put
    above flask's ``ctx.py`` moved ``AppContext`` (238-286, its last two lines blank) to 243-291, and
    the nearest of the three windows hashing alike, 241-289, opened on a blank line above the class."""
    hits = [i + 1 for i in range(len(lines) - size + 1) if text_hash(lines[i : i + size]) == digest]
    return min(hits, key=lambda start: (not lines[start - 1].strip(), abs(start - near))) if hits else None


def _nearest(found: list[Definition], near: int) -> Definition | None:
    return min(found, key=lambda d: abs(d.start_line - near)) if found else None


def _changed(defs: list[Definition], names: list[str], near: int, into: int) -> Resolution | None:
    """``changed``: the lines (1-based) from the definition of the first of ``names`` (qualified
    symbols) to that of the last, each the one nearest ``near``, opening on the one starting nearest
    ``into`` lines past their first (the one the cited span opened on); ``None`` unless every name is
    defined."""
    found = [d for d in (_nearest([d for d in defs if d.symbol == name], near) for name in names) if d]
    if not found or len(found) < len(names):
        return None
    start, end = min(d.start_line for d in found), max(d.end_line for d in found)
    opened = min(found, key=lambda d: (abs(d.start_line - start - into), d.start_line))
    return _found("changed", start, end, opened.start_line - start)


def resolve(
    text: str, language: str, start_line: int, end_line: int, symbol: str, digest: str, open_line: int = 0
) -> Resolution:
    """Find the span cited as lines ``start_line..end_line`` (1-based inclusive) with anchor
    ``symbol`` / ``digest`` (a packed span's symbol names several, split by commas) in ``text``, a
    file in ``language`` (:func:`codeask.index.chunking.languages.language_for`); the cited span
    opened at ``open_line`` (``0``: its first line). Never raises."""
    lines = split_lines(text)
    size = max(1, end_line - start_line + 1)
    into = open_line - start_line if start_line <= open_line <= end_line else 0
    if digest:
        cited = lines[start_line - 1 : start_line - 1 + size] if start_line >= 1 else []
        if cited and cited[0].strip() and text_hash(cited) == digest:
            return _found("same", start_line, end_line, into)
        found = _same_text(lines, size, digest, start_line)
        if found is not None:
            return _found("same" if found == start_line else "moved", found, found + size - 1, into)
    names = [name.strip() for name in symbol.split(",") if name.strip()]
    defs = definitions(text, language) if names else []
    changed = _changed(defs, names, start_line, into)
    if changed is not None:
        inside = changed.start_line <= start_line and end_line <= changed.end_line
        return _found("same", start_line, end_line, into) if not digest and inside else changed
    last = names[0].rsplit(".", 1)[-1] if names else ""
    match = _nearest([d for d in defs if d.name == last], start_line)
    if match is not None:
        return _found("gone", match.start_line, match.end_line)
    if not digest and not names and end_line <= len(lines):
        return _found("same", start_line, end_line, into)
    end = max(1, min(end_line, len(lines)))
    return _found("gone", max(1, min(start_line, end)), end, into)


def resolve_file(
    workspace: Any,
    abs_path: str,
    start_line: int,
    end_line: int,
    symbol: str,
    digest: str,
    *,
    open_line: int = 0,
    text: str | None = None,
) -> dict[str, Any]:
    """:func:`resolve` against ``abs_path`` as it is now (``text``: an editor's unsaved buffer), read
    as the indexer reads it (:func:`codeask.query.span.explain_source`, which decides what may be read):
    ``{"path", "uri", "status", "start_line", "end_line", "note", "open_line"}`` (``uri`` a
    ``file:///abs/path#Lstart-Lend``; ``open_line`` the cited span's ``open_line`` where it is now).
    A file that is gone gives ``status`` ``"gone"`` and the cited lines.

    Raises:
        NotExplainable: the file may not be read (a secret file, a folder, binary...), in one line.
    """
    try:
        current = explain_source(workspace, abs_path, text=text)
        found = resolve(current, language_for(abs_path), start_line, end_line, symbol, digest, open_line)
    except NotExplainable as exc:
        if exc.reason != "vanished":
            raise
        found = Resolution("gone", start_line, end_line, "the file is gone", start_line)
    uri = file_uri(abs_path, found.start_line, found.end_line)
    return {"path": abs_path, "uri": uri, **found.to_json()}
