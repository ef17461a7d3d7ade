"""A definition the chunker split over several chunks, as one: its chunks joined (:func:`whole`), and a
use site found in a later part widened to the whole definition (:func:`widened`).

The chunker splits a long definition (requests' ``resolve_redirects``: chunks 159-218, 219-261,
262-281) and stores each part under the definition's symbol; only the first part holds its head
(``def resolve_redirects``). A caller found in a later part is that definition, with one line range
everywhere: as a definition, a callee, and a caller (it was listed as 219-261).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from codeask.index.chunking.symbols import Definition
from codeask.lines import split_lines
from codeask.query.resolve import definitions_of
from codeask.query.sites import Site, code_lines, inner_definition, narrowed
from codeask.query.uses import uses_in

if TYPE_CHECKING:
    from codeask.index.edges import Linked
    from codeask.index.records import StoredRow
    from codeask.index.rows import Hit
    from codeask.index.store import Store

__all__ = ["named", "whole", "split_head", "split_start", "widened"]


class Chunks(Protocol):
    """What :func:`whole` reads of an index: a :class:`~codeask.index.store.Store`, or a
    :class:`~codeask.query.links.Links` keeping each file's rows for the next definition asked about."""

    def rows_for_path(self, path: str) -> list[StoredRow]:
        """All stored rows of one file, by start line."""

    def linked(self, ids: Iterable[str]) -> dict[str, Linked]:
        """The chunks of ``ids`` with their graph names, by id."""


#: How a line that is no code starts: a comment, a doc comment's line, an attribute or decorator.
_NOT_CODE = ("//", "/*", "*", "#[", "#!", "# ", "@", "--")


def named(hit: Hit, name: str) -> Definition | None:
    """The first definition of ``name`` in ``hit``'s content, or ``None``."""
    return next((d for d in definitions_of(hit.content, hit.language) if d.name == name), None)


def whole(store: Chunks, row: Linked, inner: Definition | None, name: str) -> tuple[Linked, Definition | None]:
    """``row`` and its definition ``inner`` of ``name``; when ``inner`` (or the chunk named ``name``
    whose head does not parse) runs to the chunk's end (blank lines after it aside: requests'
    ``resolve_redirects`` is 159-217 of chunk 159-218; or the chunk is stored under it, whatever its
    parse: a docstring cut by the chunker) and the next chunks of its file continue it
    (each starting where the last ended, under its symbol or one inside it, defining no other
    ``name``: a definition the chunker split, a class stored as its head and its methods' chunks),
    those chunks joined to ``row``: one :class:`Linked` with the whole line range, the joined text and
    the references of all, and ``inner`` read again from that text (``Session.request``, 557-654 of
    three chunks; the class ``Session``, 356-831 of its head and methods)."""
    head = narrowed(row.hit, inner)  # the whole chunk for a head that does not parse (Rust's open brace)
    after = split_lines(row.hit.content)[head.end_line - row.hit.start_line + 1 :]
    scope = head.symbol.split(".")
    # a chunk stored under the definition is all of it, wherever its parse ends: a docstring the
    # chunker cut (flask's Flask.run, 546-605 of 546-668) leaves the string open, and the parse ends
    # the function mid-docstring (580)
    ends_in_it = not any(line.strip() for line in after) or row.hit.symbol == head.symbol
    if not ends_in_it or name not in scope or (inner is not None and scope[-1] != name):
        return row, inner
    # a class head stored under its first method's symbol (ky's `export class Ky {` in chunk Ky.create): the class
    symbol, end, parts = ".".join(scope[: len(scope) - scope[::-1].index(name)]), row.hit.end_line, []
    for stored in store.rows_for_path(row.hit.path):
        if stored["start_line"] <= row.hit.start_line:
            continue
        inside = stored["symbol"] == symbol or stored["symbol"].startswith(symbol + ".")  # a class's methods
        if stored["start_line"] != end + 1 or not inside:
            break
        parts.append(stored["id"])
        end = stored["end_line"]
    found = store.linked(parts) if parts else {}
    rest = [found[i] for i in parts if i in found]
    rest = rest[: next((k for k, r in enumerate(rest) if name in r.defines), len(rest))]
    if not rest:
        return row, inner
    text = "\n".join([row.hit.content, *(r.hit.content for r in rest)])
    hit = replace(row.hit, end_line=rest[-1].hit.end_line, content=text, symbol=symbol)
    refs = tuple(dict.fromkeys([*row.refs, *(n for r in rest for n in r.refs)]))
    return replace(row, hit=hit, refs=refs), named(hit, name) or inner


def split_head(rows: list[StoredRow], hit: Hit) -> StoredRow | None:
    """Among ``rows`` (the stored chunks of ``hit``'s file, by start line: :meth:`Store.rows_for_path`),
    the chunk a split definition starts in when ``hit`` (a chunk, whole) is a later part of it: no
    definition in it, and the chunks before it run on (each starting where the last ended) under
    its symbol; else ``None``."""
    if not hit.symbol or definitions_of(hit.content, hit.language):
        return None
    at = next((k for k, r in enumerate(rows) if r["id"] == hit.id), None)
    k = at
    while k and rows[k - 1]["symbol"] == hit.symbol and rows[k - 1]["end_line"] + 1 >= rows[k]["start_line"]:
        k -= 1
    return rows[k] if k is not None and k != at else None


def split_start(store: Store, hit: Hit) -> int | None:
    """The file line a split definition starts on (its head's first line) when ``hit`` (a chunk,
    whole) is a later part of it (:func:`split_head`) and the chunk it starts in holds its head,
    else ``None``; reads the index only for a chunk holding no definition."""
    if not hit.symbol or definitions_of(hit.content, hit.language):
        return None
    head = split_head(store.rows_for_path(hit.path), hit)
    if head is None:
        return None
    inner = next(
        (d for d in definitions_of(head["content"], head["language"]) if d.name == hit.symbol.rsplit(".", 1)[-1]), None
    )
    return head["start_line"] + inner.start_line - 1 if inner else None  # None: a piece of a class body


def widened(
    store: Store, sites: list[Site], chunks: Mapping[str, Hit], name: str, rescore: Callable[[Hit], list[Site]]
) -> list[Site]:
    """``sites`` of uses of ``name`` (narrowed from ``chunks``, by chunk id) each widened to the
    whole definition when it is part of one the chunker split: found in a later part
    (:func:`split_head`), or a definition running to its chunk's end that the next chunk continues;
    that definition's chunks joined (:func:`whole`), the site is the innermost definition holding
    its first use there (a method of a class body split into pieces, not the whole class), as sure as
    ``rescore`` (the sites of a chunk) finds it in the joined text: a variable's type declared in an
    earlier part counts (``codeWriter`` is a parameter of ``TypeSpec.emit``'s head; ky's ``const ky = new
    Ky(..)`` is in ``Ky.create``'s first chunk, its closure's use in the next). A site inside another of the same path and symbol (a part of one widened) is
    folded into it, as sure as the surer."""
    files: dict[str, list[StoredRow]] = {}
    out = [_whole_site(store, s, chunks.get(s.hit.id), files, name, rescore) for s in sites]
    kept: list[Site] = []
    for site in sorted(out, key=lambda s: (s.hit.path, s.hit.start_line, -s.hit.end_line, -s.sure)):
        last = kept[-1].hit if kept else None
        if last and (last.path, last.symbol) == (site.hit.path, site.hit.symbol) and site.hit.end_line <= last.end_line:
            kept[-1] = Site(last, max(kept[-1].sure, site.sure))
            continue
        kept.append(site)
    return kept


def _names(chunk: Hit, name: str) -> bool:
    """Whether ``chunk``'s first line of code (after comments, doc comments and attributes) names
    ``name``: the head of a definition that parses as none (Rust's ``fn spawn_senders(..) {``), not a
    piece of a class body that only follows a method, nor a doc comment that mentions the name."""
    code = (line for line in split_lines(chunk.content) if line.strip() and not line.lstrip().startswith(_NOT_CODE))
    head = next(code, "")
    return re.search(rf"(?<![\w$#]){re.escape(name)}(?![\w$])", head) is not None


def _continued(rows: list[StoredRow], chunk: Hit, symbol: str) -> StoredRow | None:
    """``chunk``'s stored row among ``rows`` (its file's, by start line) when the next chunk continues
    it under ``symbol`` (starting on the line after it ends), else ``None``."""
    at = next((k for k, r in enumerate(rows) if r["id"] == chunk.id), len(rows))
    after = rows[at + 1] if at + 1 < len(rows) else None
    return rows[at] if after and after["start_line"] == rows[at]["end_line"] + 1 and after["symbol"] == symbol else None


def _outermost(store: Store, rows: list[StoredRow], joined: Linked) -> Linked | None:
    """The definition the chunker split that holds ``joined`` (a split definition, whole: ky's closure
    ``Ky.create.function_``) in its later parts, whole (``Ky.create``, whose first chunk declares ``const ky =
    new Ky(..)``): the chunks before ``joined``'s, each ending where the next starts, under a symbol that
    qualifies ``joined``'s, the first naming that definition; ``None`` when there is none. ``rows``: the file's stored rows, by start line."""
    at = next((k for k, r in enumerate(rows) if r["id"] == joined.hit.id), 0)
    k = at
    while (
        k
        and rows[k - 1]["end_line"] + 1 == rows[k]["start_line"]
        and joined.hit.symbol.startswith(rows[k - 1]["symbol"] + ".")
    ):
        k -= 1
    head = store.linked([rows[k]["id"]]).get(rows[k]["id"]) if k != at else None
    name = head.hit.symbol.rsplit(".", 1)[-1] if head is not None else ""
    inner = named(head.hit, name) if head is not None else None
    if head is None or inner is None:
        return None  # a piece of a class body (javapoet's TypeSpec before its split emit): no one definition
    around = whole(store, head, inner, name)[0]
    return around if around.hit.end_line >= joined.hit.end_line else None


def _whole_site(
    store: Store,
    site: Site,
    chunk: Hit | None,
    files: dict[str, list[StoredRow]],
    used: str,
    rescore: Callable[[Hit], list[Site]],
) -> Site:
    """``site`` (narrowed from ``chunk``) as its whole definition when the chunker split it, as sure as
    ``rescore`` finds it there (:func:`widened`); ``files`` keeps each file's stored rows, read only for a
    site that may be."""
    hit = site.hit
    if chunk is None:
        return site
    defs = definitions_of(chunk.content, chunk.language)
    inner = next((d for d in defs if chunk.start_line + d.start_line - 1 == hit.start_line), None)
    ends = chunk.start_line + len("\n".join(split_lines(chunk.content)).rstrip().split("\n")) - 1
    if (defs and (inner is None or hit.end_line < ends)) or (not defs and not hit.symbol):
        return site  # inside its chunk: no part of a split definition
    if hit.path not in files:
        files[hit.path] = store.rows_for_path(hit.path)
    rows = files[hit.path]
    # a head (one that parses, or Rust's open brace that does not): the next chunk continues it
    head = (
        _continued(rows, chunk, hit.symbol) if defs else split_head(rows, chunk) or _continued(rows, chunk, hit.symbol)
    )
    row = store.linked([head["id"]]).get(head["id"]) if head is not None else None
    name = inner.name if inner is not None else hit.symbol.rsplit(".", 1)[-1]
    start = inner if inner is not None or row is None else named(row.hit, name)
    unparsed = start is None and not defs and row is not None and _names(row.hit, name)  # Java's void emit(..) {
    if row is None or (start is None and not unparsed):
        return site  # a piece of a class body the chunker split (ky's Ky), no one definition
    joined, whole_inner = whole(store, row, start, name)
    at = joined.hit.start_line - 1
    lines = [n for n in code_lines(uses_in(joined.hit.content, joined.hit.language), used) if n + at >= hit.start_line]
    widest = narrowed(joined.hit, (inner_definition(joined.hit, lines[0]) if lines else None) or whole_inner)
    around = _outermost(store, rows, joined) or joined
    again = [s.sure for s in rescore(around.hit) if widest.start_line <= s.hit.start_line <= widest.end_line]
    return Site(widest, max(again, default=site.sure))
