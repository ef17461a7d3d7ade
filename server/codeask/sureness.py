"""How sure a symbol-graph link is, in words: what a ``via`` line adds to its text.

A leaf module (no codeask imports), so the answer's Sources (:mod:`codeask.query.result`), the
MCP text (:mod:`codeask.mcp_results`) and ``codeask related`` (:mod:`codeask.cli_related`) say it alike. The numbers are
:func:`codeask.query.resolve.sureness`'s: 1.0 sure, 0.7 typed, 0.5 an import alias, 0.3 by the name.
"""

from __future__ import annotations

__all__ = ["via_label", "link_note", "location_label", "alias_note"]


def via_label(sure: float) -> str:
    """What a ``via`` line adds about how sure its edge is: ``""`` for a sure one (1.0),
    ``", typed"`` through a variable of the class (0.7), ``", by import alias"`` (0.5), else
    ``", by name only"`` (the link is a guess)."""
    if sure >= 1.0:
        return ""
    return ", typed" if sure >= 0.7 else (", by import alias" if sure >= 0.5 else ", by name only")


def link_note(sure: float, of: str, several: bool, gap: str = " ") -> str:
    """What a related-code line adds after its location: ``(sure 0.3)`` for a link less than sure,
    then ``(of path:line)`` naming the definition ``of`` it links to when the symbol has ``several``;
    each note after ``gap`` (``""`` for a sure link of the only definition)."""
    note = f"{gap}(sure {sure:.1f})" if sure < 1.0 else ""
    return note + (f"{gap}(of {of})" if several and of else "")


def location_label(kind: str, symbol: str, name: str) -> str:
    """How a related-code line names its location: the definition ``symbol`` holding it, else, for a
    ``callers`` line, ``(top level)`` (a use outside every definition), else the linked ``name``."""
    return symbol or ("(top level)" if kind == "callers" else name)


def alias_note(symbol: str, alias: dict | None) -> str:
    """The line above a related-code listing asked for by an import's other name (``alias``, the
    ``alias`` of :meth:`~codeask.query.related_code.RelatedCode.to_json`), ``""`` without one:
    ``RequestsSSLError is SSLError, imported under that name at src/requests/models.py:51``."""
    if not alias:
        return ""
    return f"{alias['name']} is {symbol}, imported under that name at {alias['path']}:{alias['line']}"
