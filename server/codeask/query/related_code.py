"""A symbol's neighbourhood in the symbol graph: where it is defined, who calls it, what it calls.

What ``codeask related``, the MCP tool ``related_code``, the LSP command ``codeask.related`` and a
caller question of ``codeask ask`` (:mod:`codeask.query.steps.callers`) answer from. Callers and
callees belong to a definition's own lines (:mod:`codeask.query.sites`): a chunk packing several
definitions gives each its own callers and callees. Each link says how sure it is
(:func:`codeask.query.resolve.sureness`); a callee reached only by its name (``d.get()`` on a dict)
is listed only when the project defines that name once.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeask.index.chunking.symbols import Definition
from codeask.query.alias_names import Alias, alias_imports
from codeask.query.graph import LOOKUP_LIMIT
from codeask.query.imported import imports_module
from codeask.query.links import Links
from codeask.query.overloads import OVERLOADING, argument_counts, fits, parameters
from codeask.query.resolve import NAME_ONLY, NONE, SURE, definitions_of, scoped
from codeask.query.sites import Site, code_lines, declaration, inner_definition, narrowed, own_names
from codeask.query.split import whole, widened
from codeask.query.uses import uses_in
from codeask.uris import file_uri

if TYPE_CHECKING:
    from codeask.index.edges import Linked
    from codeask.index.rows import Hit
    from codeask.index.store import Store

__all__ = ["Location", "RelatedCode", "UnknownSymbol", "related", "caller_sites", "callees", "parse_symbol", "takes"]

#: The kinds of related code, in the order they are listed.
KINDS = ("definitions", "callers", "callees")


@dataclass(frozen=True)
class Location:
    """A definition of one root: ``root`` (absolute folder), ``path`` (POSIX, relative), 1-based
    inclusive lines, its ``symbol``, and ``name``, the name that links it (the symbol asked about
    for a definition or caller, the name called for a callee)."""

    root: str
    path: str
    start_line: int
    end_line: int
    symbol: str
    name: str
    sure: float = SURE
    """How sure the link is (:func:`~codeask.query.resolve.sureness`; definitions: 1.0)."""
    of: str = ""
    """For a caller or callee, the definition it links to: that definition's ``path:start_line``
    (two definitions of one name, ``walk::scan`` and ``WorkerState::scan``, each have their own
    callers and callees); ``""`` for a definition, or a caller by name only of several of them."""

    @classmethod
    def of_hit(cls, root: str, hit: Hit, name: str, sure: float = SURE, of: Hit | None = None) -> Location:
        """The location of ``hit`` (a chunk, or one narrowed to a definition), linked to the
        definition ``of`` (a caller's or callee's)."""
        linked = f"{of.path}:{of.start_line}" if of is not None else ""
        return cls(root, hit.path, hit.start_line, hit.end_line, hit.symbol, name, sure, linked)

    @property
    def uri(self) -> str:
        """``file:///abs/path#Lstart-Lend``."""
        return file_uri(str(Path(self.root) / self.path), self.start_line, self.end_line)

    def to_json(self) -> dict[str, Any]:
        """The fields and ``uri`` as a plain dict."""
        return {**asdict(self), "uri": self.uri}


class UnknownSymbol(LookupError):
    """The index knows no definition and no use of a symbol; the message names it (one line)."""


@dataclass
class RelatedCode:
    """A symbol's neighbourhood in the graph: where it is defined, the definitions that use it
    (``callers``, surest first) and the definitions its definitions use (``callees``, surest
    first); ``counts`` has how many of each were found before the lists were cut to a limit."""

    symbol: str
    definitions: list[Location] = field(default_factory=list)
    callers: list[Location] = field(default_factory=list)
    callees: list[Location] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    alias: Alias | None = None
    """The name asked for when a file imports ``symbol`` under it (``RequestsSSLError``), else ``None``."""

    @property
    def truncated(self) -> bool:
        """Whether a list holds fewer than were found (:func:`related`'s ``limit``)."""
        return any(self.counts.get(k, 0) > len(getattr(self, k)) for k in KINDS)

    def known(self, roots: Sequence[str]) -> RelatedCode:
        """``self`` when it holds a definition or a caller.

        Raises:
            UnknownSymbol: it holds neither: the index of ``roots`` (absolute folders) knows nothing of
                the symbol (``send: no definition or use in the index of /src/app``: every door's line).
        """
        if self.definitions or self.callers:
            return self
        raise UnknownSymbol(f"{self.symbol}: no definition or use in the index of {', '.join(roots)}")

    def to_json(self) -> dict[str, Any]:
        """``{"symbol", "definitions", "callers", "callees", "counts", "truncated", "alias"}``: locations
        as :meth:`Location.to_json`, ``counts`` ``{kind: how many were found}``, ``truncated`` whether
        a list was cut to fewer, ``alias`` the name asked for (:meth:`Alias.to_json`) or ``None``."""
        kinds = {k: [x.to_json() for x in getattr(self, k)] for k in KINDS}
        counts = {k: self.counts.get(k, len(kinds[k])) for k in KINDS}
        alias = self.alias.to_json() if self.alias else None
        return {"symbol": self.symbol, **kinds, "counts": counts, "truncated": self.truncated, "alias": alias}


def parse_symbol(symbol: str) -> str:
    """``symbol`` stripped, ``::`` read as ``.`` (``Config::load`` -> ``Config.load``); a part may
    start with ``#`` (JavaScript's private ``Ky.#fetch``).

    Raises:
        ValueError: ``symbol`` is not an identifier or dotted name.
    """
    symbol = symbol.strip()
    if not re.fullmatch(r"#?[A-Za-z_$][\w$]*(?:(?:\.|::)#?[A-Za-z_$][\w$]*)*", symbol):
        raise ValueError(f"not a symbol name: {symbol[:80]!r} (give a name such as send or Session.send)")
    return symbol.replace("::", ".")


def _matches(symbol: str, hit: Hit) -> bool:
    """Whether ``hit`` (narrowed to a definition) is ``symbol`` (``send``; dotted ``Session.send``
    when its qualified symbol ends so, or ``sessions.send`` when its file is named so)."""
    if "." not in symbol:
        return True
    qualifier = symbol.rsplit(".", 1)[0].rsplit(".", 1)[-1]
    stem = hit.path.rsplit("/", 1)[-1].split(".", 1)[0]
    return hit.symbol == symbol or hit.symbol.endswith("." + symbol) or qualifier == stem


def definitions(store: Store, symbol: str) -> list[tuple[Linked, Definition | None]]:
    """The definitions of ``symbol`` in ``store``: each chunk defining it, with each definition of it
    in the chunk (two classes packed in one chunk each have their ``put``; a Java or C++ method's
    overloads each, a Python property's setter none; ``None``: the whole chunk, which only declares it, a C prototype), by path and line. A
    definition the chunker split over several chunks is one, its chunks joined
    (:func:`~codeask.query.split.whole`)."""
    name = symbol.rsplit(".", 1)[-1]
    out: list[tuple[Linked, Definition | None]] = []
    for row in store.definers([name], LOOKUP_LIMIT):
        found = [d for d in definitions_of(row.hit.content, row.hit.language) if d.name == name]
        firsts = {scoped(row.hit, d): d for d in reversed(found)}  # a Python property's setter is its getter
        overloads = row.hit.language in OVERLOADING  # Java's four CodeWriter.emit are four
        inners: list[Definition | None] = [d for d in found if overloads or d in firsts.values()] or [None]
        out += [(row, inner) for inner in inners if _matches(symbol, narrowed(row.hit, inner))]
    bodies: list[tuple[Linked, Definition | None]] = [(row, inner) for row, inner in out if inner is not None]
    return [whole(store, row, inner, name) for row, inner in bodies or out]  # a C prototype only without a body


def caller_sites(
    store: Store, name: str, defs: Sequence[Hit], chunks: Sequence[Hit] = (), links: Links | None = None
) -> list[Site]:
    """The definitions in ``store`` that use ``name`` as code, each narrowed to its lines and as sure
    as its surest link to one of ``defs`` (the definitions asked about; :meth:`~codeask.query.links.Links.sites`,
    the rules a callee is resolved by too: ``links``, made for the call when ``None``), surest first,
    then by path and line; a definition is not its own caller. ``chunks`` (those holding ``defs``) are
    searched too: a chunk's stored references leave out the names it defines, not its other
    definitions' uses. A site in a later part of a definition the chunker split is that definition
    (:func:`~codeask.query.split.widened`). A use under the name its file imports ``name`` as
    (``from .exceptions import HTTPError as _HTTPError``) is a site too (:meth:`~codeask.query.links.Links.aliased`)."""
    links = Links(store) if links is None else links
    # a chunk's references leave out the names it defines: a wrapper of the same name (api.request
    # calling session.request) is found among the chunks defining ``name``
    found = [*store.referrers([name], LOOKUP_LIMIT), *links.definers(name)]
    rows = {r.hit.id: r.hit for r in found} | {c.id: c for c in chunks}
    sites = [s for hit in rows.values() for s in links.sites(hit, name, defs)]
    sites = widened(store, sites, rows, name, lambda h: links.sites(h, name, defs))
    sites += [s for hit, alias in links.aliased(name, defs).values() for s in links.sites(hit, alias, defs)]
    sites = [s for s in sites if not any(_within(s.hit, d, name) for d in defs)]
    return sorted(_joined(sites), key=lambda s: (-s.sure, s.hit.path, s.hit.start_line))


def _within(site: Hit, definition: Hit, name: str) -> bool:
    """Whether ``site`` is ``definition`` itself: inside its lines, overlapping them under its symbol
    (the chunk a split definition starts in), or using ``name`` only on its lines (a TypeScript
    module's chunk, no definition to narrow to, whose one use of ``RETRY_METHODS`` declares it)."""
    if site.path != definition.path or site.start_line > definition.end_line or definition.start_line > site.end_line:
        return False
    inside = definition.start_line <= site.start_line and site.end_line <= definition.end_line
    lines = (site.start_line + n - 1 for n in code_lines(uses_in(site.content, site.language), name))
    return (
        inside
        or site.symbol == definition.symbol
        or all(definition.start_line <= n <= definition.end_line for n in lines)
    )


def _joined(sites: list[Site]) -> list[Site]:
    """``sites`` with the parts of one definition the chunker split (same path and symbol, each
    starting where the last ended) joined into one, as sure as its surest part."""
    out: list[Site] = []
    for site in sorted(sites, key=lambda s: (s.hit.path, s.hit.start_line)):
        last = out[-1].hit if out else None
        same = last is not None and (last.path, last.symbol) == (site.hit.path, site.hit.symbol)
        if last is not None and same and last.start_line < site.hit.start_line <= last.end_line + 1:
            tail = site.hit.content.split("\n")[last.end_line + 1 - site.hit.start_line :]
            content = "\n".join([last.content, *tail]) if tail else last.content
            joined = replace(last, end_line=max(last.end_line, site.hit.end_line), content=content)
            out[-1] = Site(joined, max(out[-1].sure, site.sure))
            continue
        out.append(site)
    return out


def callees(
    links: Links, defs: Sequence[tuple[Linked, Definition | None]], most: int = LOOKUP_LIMIT
) -> list[tuple[Hit, str, float]]:
    """``(definition, name, sure)`` of what ``defs`` use on their own lines: the surest definitions
    of each name (whole: a definition the chunker split has one line range everywhere; another
    definition of the same name too: Rust's free ``scan`` calls ``WorkerState::scan``, never ``defs``
    themselves nor a definition holding them, nor a constant that code outside definitions only declares); name-only ones only for a name defined once (a guess among several is listed only
    among the callers, once: :func:`_guessed_once`). A name with many definitions (``emit``, ``new``)
    keeps its links surer than a name-only guess, as its callers list them; one defined in more than
    ``most`` chunks links nothing (hover's rule, both ways: :func:`~codeask.query.span_links.span_edges`)."""
    wanted: dict[str, list[Hit]] = defaultdict(list)
    selves = [narrowed(row.hit, inner) for row, inner in defs]
    for row, inner in defs:
        for n in own_names(row.hit, inner) & {*row.refs, *row.defines, inner.name if inner else ""}:
            if n and not n.startswith("__"):  # chunk-mates called too; a common name (new, get) as its callers have it
                wanted[n].append(narrowed(row.hit, inner))
    out = []
    links.prefetch(wanted, owners=True)
    for n in sorted(wanted):
        found_targets = links.definers(n)  # each name its own chunks: a common one does not crowd out the others
        if not 0 < len(found_targets) <= most:
            continue
        bodies: list[tuple[Linked, Definition | None]] = [
            (t, d) for t in found_targets for d in definitions_of(t.hit.content, t.hit.language) if d.name == n
        ]
        targets = bodies or [(t, None) for t in found_targets]  # a C function's body, not its prototype
        scored = [_callee(links, n, t, inner, wanted[n]) for t, inner in targets]  # packed classes' each
        overloaded = len({(hit.path, hit.symbol) for hit, _ in scored}) < len(scored)
        built = any(constructor(hit, n) for hit, _ in scored)
        scored = [(hit, sure) for hit, sure in scored if takes(hit, wanted[n], n, overloaded, built)]
        top = max((sure for _, sure in scored), default=NONE)
        unique = top <= NAME_ONLY and len(scored) == 1
        kept = [(hit, n, sure) for hit, sure in scored if sure > NAME_ONLY or (unique and sure > NONE)]
        out += [x for x in kept if not any(_around(x[0], d) or _declared_in(x[0], d) for d in selves)]
    return sorted(out, key=lambda x: (-x[2], x[0].path, x[0].start_line))


def takes(definition: Hit, users: Sequence[Hit], name: str, overloaded: bool = True, built: bool = False) -> bool:
    """Whether ``definition`` (of ``name``, narrowed) takes as many arguments as one of ``users``'
    calls of ``name`` passes (:func:`~codeask.query.overloads.fits`): asked in Java always (no default
    arguments: ``emitAnnotations(out)`` is no call of ``emitAnnotations(List, boolean)``), in C++ only
    among ``overloaded`` definitions of one symbol (a default argument takes fewer); else ``True``. A Java
    constructor is called only by a ``new``; a class with constructors (``built``) is used by the others
    (``new CodeWriter(out)`` is a caller of the constructor, ``CodeWriter out`` of the class: each once)."""
    if definition.language != "java" and not (overloaded and definition.language in OVERLOADING):
        return True
    owner = definition.symbol.rsplit(".", 2)[-2] if definition.symbol.count(".") else ""
    counts = frozenset(c for u in users for c in argument_counts(u.content, u.language, name, owner))
    if constructor(definition, name) or (built and definition.symbol.rsplit(".", 1)[-1] == name):
        return bool(counts) == constructor(definition, name) and (not counts or _fits(definition, counts, name))
    return _fits(definition, counts, name)


def _fits(definition: Hit, counts: frozenset[int], name: str) -> bool:
    return fits(parameters(definition.content, definition.language, name), counts)


def constructor(definition: Hit, name: str) -> bool:
    """Whether ``definition`` (of ``name``, narrowed) is a constructor: its symbol ``CodeWriter.CodeWriter``."""
    return definition.symbol.split(".")[-2:] == [name, name]


def _around(target: Hit, definition: Hit) -> bool:
    """Whether ``target`` is ``definition`` or holds it (its class: ``new Ky()`` in ``Ky.create`` is no
    callee, as ``Ky.create`` is no caller of ``Ky``: :func:`_within`)."""
    same = target.path == definition.path
    return same and target.start_line <= definition.start_line and definition.end_line <= target.end_line


def _declared_in(target: Hit, user: Hit) -> bool:
    """Whether ``target`` (a callee's definition) is a line of ``user``'s code outside its definitions:
    a constant the chunk declares (``LIMIT_MS = 500``), read by its own functions, is no callee of it."""
    if target.path != user.path or not user.start_line <= target.start_line <= target.end_line <= user.end_line:
        return False
    lines = range(target.start_line - user.start_line + 1, target.end_line - user.start_line + 2)
    return target.start_line == target.end_line and all(inner_definition(user, n) is None for n in lines)


def _callee(
    links: Links, name: str, target: Linked, inner: Definition | None, users: Sequence[Hit]
) -> tuple[Hit, float]:
    """``target`` (a chunk defining ``name``) narrowed to its definition ``inner`` of it, whole
    (:func:`~codeask.query.split.whole`; ``None``: the chunk's line naming it), and how sure the uses by
    ``users`` (definitions, narrowed) are of it (:meth:`~codeask.query.links.Links.sure`: as sure as
    ``users`` are listed among its callers)."""
    joined, again = whole(links, target, inner, name)
    definition = narrowed(joined.hit, again) if again is not None else declaration(joined.hit, name)
    return definition, links.sure(users, name, definition)


def related(stores: Sequence[tuple[str, Store]], symbol: str, limit: int = 50) -> RelatedCode:
    """The definitions, callers and callees of ``symbol`` (``should_strip_auth``, ``Session.send``)
    across ``(root, store)`` pairs, at most ``limit`` of each (callers and callees surest first;
    ``counts`` has how many were found). Each definition has its own callers and callees, each
    :class:`Location` naming the definition it links to (``of``): a caller of both is listed twice.

    Raises:
        ValueError: ``symbol`` is not an identifier or dotted name (:func:`parse_symbol`).
    """
    symbol = parse_symbol(symbol)
    name = symbol.rsplit(".", 1)[-1]
    out, overloads = RelatedCode(symbol), {}
    for root, store in stores:
        defs, links = definitions(store, symbol), Links(store)
        chunks = [row.hit for row, _ in defs]
        for row, inner in defs:
            d = narrowed(row.hit, inner) if inner is not None else declaration(row.hit, name)
            out.definitions.append(Location.of_hit(root, d, name))
            if d.language in OVERLOADING:
                overloads[root, f"{d.path}:{d.start_line}"] = (d.path, d.symbol)
            overloaded = sum(narrowed(r.hit, i).symbol == d.symbol and r.hit.path == d.path for r, i in defs) > 1
            built = any(constructor(narrowed(r.hit, i), name) for r, i in defs if i is not None)
            sites = caller_sites(store, name, [d], chunks, links)
            sites = [s for s in sites if takes(d, [s.hit], name, overloaded, built)]
            out.callers += [Location.of_hit(root, s.hit, name, s.sure, d) for s in sites]
            own = (row, inner) if inner is not None else (replace(row, hit=d), None)  # a constant: its own line
            out.callees += [Location.of_hit(root, h, n, sure, d) for h, n, sure in callees(links, [own])]
    if not out.definitions and not out.callers and "." not in symbol:
        return _through_alias(stores, symbol, limit) or out
    callers = _once_per_symbol(_guessed_once(out.callers), overloads)
    out.callers, out.callees = _surest_first(callers), _surest_first(out.callees)
    out.counts = {k: len(getattr(out, k)) for k in KINDS}
    for kind in (out.definitions, out.callers, out.callees):
        kind[limit:] = []
    return out


def _through_alias(stores: Sequence[tuple[str, Store]], alias: str, limit: int) -> RelatedCode | None:
    """:func:`related` of the project's definition a file imports as ``alias`` (requests'
    ``from .exceptions import SSLError as RequestsSSLError``), its :attr:`~RelatedCode.alias` saying
    where; ``None`` when no import binds ``alias`` to a definition in the index (``urllib3``'s)."""
    for root, store in stores:
        for name, module, path, line in alias_imports(store, alias):
            if any(imports_module(module, path, row.hit.path) for row, _ in definitions(store, name)):
                found = related(stores, name, limit)
                found.alias = Alias(alias, root, path, line)
                return found
    return None


def _guessed_once(callers: list[Location]) -> list[Location]:
    """``callers`` with each name-only caller (:data:`~codeask.query.resolve.NAME_ONLY` or less) of several
    definitions listed once, as sure as its surest such link and linked to none of them (``of`` ``""``): a
    guess by the name alone says nothing of which definition it calls (``handle_401`` was once per ``send``)."""
    guesses: dict[tuple[str, str, int, int], list[Location]] = defaultdict(list)
    for x in callers:
        if x.sure <= NAME_ONLY:
            guesses[x.root, x.path, x.start_line, x.end_line].append(x)
    out = [x for x in callers if x.sure > NAME_ONLY]
    for same in guesses.values():
        several = len({x.of for x in same}) > 1
        out += [replace(max(same, key=lambda x: x.sure), of="")] if several else same
    return out


def _once_per_symbol(callers: list[Location], overloads: dict[tuple[str, str], tuple[str, str]]) -> list[Location]:
    """``callers`` with a caller of several overloads of one symbol (``overloads``: ``(root, of)`` ->
    path and symbol, in a language whose calls pick one by their arguments: :data:`OVERLOADING`) listed
    once, linked to the first it links to surest: ``JavaFile.writeTo`` calls two ``CodeWriter``
    constructors. Rust's two ``DirEntry::file_type`` (one call of either) each keep theirs."""
    kept: dict[tuple[str, str, int, int, object], Location] = {}
    for x in callers:
        key = (x.root, x.path, x.start_line, x.end_line, overloads.get((x.root, x.of), x.of))
        kept[key] = x if key not in kept or x.sure > kept[key].sure else kept[key]
    return list(kept.values())


def _surest_first(locations: list[Location]) -> list[Location]:
    """``locations`` surest first; among equally sure ones, the definitions they link to (``of``) take
    turns, each in its own order, so a cut to a limit keeps callers of every definition (chi's three
    ``Get`` definitions each have the same 49 name-only callers: the cut kept only the first's)."""
    turn: Counter[tuple[str, float]] = Counter()
    keyed = []
    for x in locations:
        keyed.append((-x.sure, turn[x.of, x.sure], x))
        turn[x.of, x.sure] += 1
    return [x for *_, x in sorted(keyed, key=lambda k: (k[0], k[1]))]
