"""Hover's related code: the callers and callees of the definitions a selection covers, as ``codeask
related`` lists them (:mod:`codeask.query.related_code`: one resolver, one sureness), as graph edges."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from codeask.index.chunking.symbols import Definition
from codeask.query.graph import MAX_DEFINITIONS, Edge, edge_kind, via_of
from codeask.query.links import Links
from codeask.query.related_code import callees, caller_sites
from codeask.query.resolve import definitions_of
from codeask.query.sites import declaration, first_use_line, narrowed

if TYPE_CHECKING:
    from codeask.index.edges import Linked
    from codeask.index.rows import Hit
    from codeask.index.store import Store

__all__ = ["span_edges"]


def span_edges(store: Store, rows: Sequence[Linked], lines: tuple[int, int]) -> list[Edge]:
    """The callers and callees of the definitions a selection covers (hover's related code), as
    ``codeask related`` lists them (:func:`~codeask.query.related_code.caller_sites`, :func:`~codeask.query.related_code.callees`: one resolver, one sureness):
    ``rows`` are the selection's chunks, ``lines`` its 1-based file lines; the definitions inside it,
    else the innermost one holding its first line, else the chunk's code outside definitions (with
    the readers of a constant declared there). A name
    defined in more than :data:`MAX_DEFINITIONS` chunks links nothing, as a caller or as a callee (hover
    stays quick: ``codeask related`` lists their sure links, seconds on a large class). Each
    :class:`~codeask.query.graph.Edge` weighs ``sure / definitions of the name``; a caller's ``via``
    cites the line its definition starts on (``caller of send in a.py:10``), a callee's the definition
    holding the first use (``calls send from a.py:20``)."""
    links, chunks = Links(store), [r.hit for r in rows]
    edges = []
    for row, inner in _covered(rows, lines):
        d = narrowed(row.hit, inner)
        declared = [(inner.name, d)] if inner is not None else _declared(row, lines)
        for name, definition in declared:
            edges += _caller_edges(store, links, chunks, name, definition)
        for hit, n, sure in callees(links, [(row, inner)], MAX_DEFINITIONS):
            via = via_of(edge_kind(n, d.content, hit), n, f"{d.path}:{first_use_line(d, n)}", up=False)
            edges.append(Edge(hit, n, sure / len(links.definers(n)), via, d.path, sure, hit.symbol))
    once = {(e.target.path, e.target.start_line, e.target.end_line, e.name, e.up): e for e in reversed(edges)}
    return list(reversed(once.values()))  # a class and its method inside the selection both call it


def _caller_edges(store: Store, links: Links, chunks: list[Hit], name: str, definition: Hit) -> list[Edge]:
    """The callers of ``definition`` (of ``name``, narrowed) as edges up, none for a name defined in more
    than :data:`MAX_DEFINITIONS` chunks."""
    many = len(links.definers(name))
    if not 0 < many <= MAX_DEFINITIONS:
        return []
    where = f"{definition.path}:{definition.start_line}"
    return [
        Edge(
            s.hit,
            name,
            s.sure / many,
            via_of(edge_kind(name, s.hit.content, definition), name, where, up=True),
            definition.path,
            s.sure,
            s.hit.symbol,
        )
        for s in caller_sites(store, name, [definition], chunks, links)
    ]


def _declared(row: Linked, lines: tuple[int, int]) -> list[tuple[str, Hit]]:
    """The names ``row`` defines outside its definitions (a module constant ``LIMIT_MS = 500``, a
    TypeScript module's ``const``) declared on file ``lines`` (1-based, inclusive), each with its
    declaration (:func:`~codeask.query.sites.declaration`): hover on that line lists their readers."""
    out = []
    for name in row.defines:
        d = declaration(row.hit, name)
        if d is not row.hit and lines[0] <= d.start_line <= lines[1] and d.start_line == d.end_line:
            out.append((name, d))
    return out


def _covered(rows: Sequence[Linked], lines: tuple[int, int]) -> list[tuple[Linked, Definition | None]]:
    """The definitions of ``rows`` inside file ``lines`` (1-based, inclusive), else the innermost one
    holding the first line, else each chunk as a whole (``None``: code outside definitions)."""
    inside: list[tuple[Linked, Definition | None]] = []
    holding: list[tuple[Linked, Definition | None]] = []
    for row in rows:
        for d in definitions_of(row.hit.content, row.hit.language):
            first, last = row.hit.start_line + d.start_line - 1, row.hit.start_line + d.end_line - 1
            if lines[0] <= first and last <= lines[1]:
                inside.append((row, d))
            elif first <= lines[0] <= last:
                holding.append((row, d))
    return inside or holding[-1:] or [(row, None) for row in rows]
