"""A symbol's neighbourhood in the symbol graph: where it is defined, who calls it, what it calls.

What ``codeask related``, the MCP tool ``related_code``, the LSP command ``codeask.related`` and a
caller question of ``codeask ask`` (:mod:`codeask.query.steps.expand`) answer from. Callers and
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
from codeask.query.fields import field_types
from codeask.query.graph import LOOKUP_LIMIT, MAX_DEFINITIONS, usable
from codeask.query.imported import Imports, file_imports
from codeask.query.overloads import OVERLOADING, argument_counts, fits, parameters
from codeask.query.resolve import NAME_ONLY, NONE, SURE, defined_symbol, definitions_of, scoped
from codeask.query.sites import Site, declaration, narrowed, own_names, use_sites
from codeask.query.split import named, whole, widened
from codeask.uris import file_uri

if TYPE_CHECKING:
    from codeask.index.edges import Linked
    from codeask.index.rows import Hit
    from codeask.index.store import Store

__all__ = ["Location", "RelatedCode", "UnknownSymbol", "related", "caller_sites", "subclasses", "bases", "parse_symbol"]

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

    @property
    def truncated(self) -> bool:
        """Whether a list holds fewer than were found (:func:`related`'s ``limit``)."""
        return any(self.counts.get(k, 0) > len(getattr(self, k)) for k in KINDS)

    def known(self) -> RelatedCode:
        """``self`` when it holds a definition or a caller.

        Raises:
            UnknownSymbol: it holds neither: the index knows nothing of the symbol.
        """
        if self.definitions or self.callers:
            return self
        raise UnknownSymbol(f"{self.symbol}: no definition or use in the index")

    def to_json(self) -> dict[str, Any]:
        """``{"symbol", "definitions", "callers", "callees", "counts", "truncated"}``: locations as
        :meth:`Location.to_json`, ``counts`` ``{kind: how many were found}``, ``truncated`` whether
        a list was cut to fewer."""
        kinds = {k: [x.to_json() for x in getattr(self, k)] for k in KINDS}
        counts = {k: self.counts.get(k, len(kinds[k])) for k in KINDS}
        return {"symbol": self.symbol, **kinds, "counts": counts, "truncated": self.truncated}


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


def caller_sites(store: Store, name: str, defs: Sequence[Hit], chunks: Sequence[Hit] = ()) -> list[Site]:
    """The definitions in ``store`` that use ``name`` as code, each narrowed to its lines and as sure
    as its surest link to one of ``defs`` (the definitions asked about), surest first, then by path
    and line; a definition is not its own caller. ``chunks`` (those holding ``defs``) are searched
    too: a chunk's stored references leave out the names it defines, not its other definitions' uses.
    A bare use in a file with its own top-level ``name`` means that one (resolved in scope first).
    A method is reached through its class's subclasses too (``Session().should_strip_auth`` calls
    ``SessionRedirectMixin.should_strip_auth``: :func:`subclasses`) that do not override it, but not
    through a value of another class defining ``name`` itself (``claimed``: :func:`~codeask.query.sites.use_sites`;
    a base of the definitions' classes is none: a mixin's ``self.send()`` may reach ``Session.send``). A
    site in a later part of a definition the chunker split is that definition (:func:`~codeask.query.split.widened`)."""
    # a chunk's references leave out the names it defines: a wrapper of the same name (api.request
    # calling session.request) is found among the chunks defining ``name``
    found = [*store.referrers([name], LOOKUP_LIMIT), *store.definers([name], LOOKUP_LIMIT)]
    rows = {r.hit.id: r.hit for r in found} | {c.id: c for c in chunks}
    shadowing = {r.hit.path for r in found if name in r.defines and "." not in defined_symbol(r.hit, name)}
    packed = ((r.hit, d) for r in found if name in r.defines for d in definitions_of(r.hit.content, r.hit.language))
    methods = (scoped(hit, d) for hit, d in packed if d.name == name)  # every class of a packed chunk
    claimed = frozenset(m.rsplit(".", 2)[-2] for m in methods if "." in m)
    targets = [(d.symbol, d.path) for d in defs]
    owners = {d.symbol.rsplit(".", 2)[-2]: d.path for d in defs if "." in d.symbol}
    subs = ((sub, path) for owner, path in owners.items() for sub in subclasses(store, owner))
    targets += [(f"{sub}.{name}", path) for sub, path in subs if sub not in claimed]  # an override is its own
    mixins = frozenset(b for owner in owners for b in bases(store, owner))
    claimed -= mixins  # a mixin's self.send() may reach Session.send (typed: use_sites)
    seen: dict[str, Imports] = {}
    sites = [
        s
        for hit in rows.values()
        for s in use_sites(
            hit,
            name,
            targets,
            hit.path in shadowing,
            field_types(store, hit, name),
            claimed,
            file_imports(store, hit, name, seen),
            mixins,
        )
    ]
    sites = [s for s in widened(store, sites, rows, name) if not any(_within(s.hit, d) for d in defs)]
    return sorted(_joined(sites), key=lambda s: (-s.sure, s.hit.path, s.hit.start_line))


def subclasses(store: Store, owner: str) -> set[str]:
    """The classes in ``store`` that name ``owner`` on their header line (``class Session(Base):``,
    ``class A extends Base``, ``implements``): its direct subclasses, by name."""
    out = set()
    for row in store.referrers([owner], LOOKUP_LIMIT):
        lines = row.hit.content.split("\n")
        for d in definitions_of(row.hit.content, row.hit.language):
            header = lines[d.name_line - 1] if d.name_line <= len(lines) else ""
            is_class = header.lstrip().startswith(("class ", "export class ", "abstract class ", "public class "))
            names = re.search(rf"(?<![\w$]){re.escape(owner)}(?![\w$])", header.split(d.name, 1)[-1])
            if d.name != owner and (is_class or " extends " in header or " implements " in header) and names:
                out.add(d.name)
    return out


def bases(store: Store, owner: str) -> set[str]:
    """The words on class ``owner``'s header line after its name (``class Session(SessionRedirectMixin):``,
    ``class A extends B implements C``): its direct bases, by name (a keyword among them is harmless)."""
    out = set()
    for row in store.definers([owner], LOOKUP_LIMIT):
        lines = row.hit.content.split("\n")
        for d in definitions_of(row.hit.content, row.hit.language):
            if d.name == owner and d.name_line <= len(lines):
                out |= set(re.findall(r"[A-Za-z_$][\w$]*", lines[d.name_line - 1].split(owner, 1)[-1]))
    return out - {owner}


def _within(site: Hit, definition: Hit) -> bool:
    """Whether ``site`` is ``definition`` itself: inside its lines, or overlapping them under its
    symbol (the chunk a split definition starts in)."""
    if site.path != definition.path or site.start_line > definition.end_line or definition.start_line > site.end_line:
        return False
    inside = definition.start_line <= site.start_line and site.end_line <= definition.end_line
    return inside or site.symbol == definition.symbol


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


def _callees(store: Store, defs: Sequence[tuple[Linked, Definition | None]]) -> list[tuple[Hit, str, float]]:
    """``(definition, name, sure)`` of what ``defs`` use on their own lines: the surest definitions
    of each name (whole: a definition the chunker split has one line range everywhere; another
    definition of the same name too: Rust's free ``scan`` calls ``WorkerState::scan``, never ``defs``
    themselves); name-only ones only for a name defined once."""
    wanted: dict[str, list[Hit]] = defaultdict(list)
    selves = {(h.path, h.start_line) for h in (narrowed(row.hit, inner) for row, inner in defs)}
    for row, inner in defs:
        for n in own_names(row.hit, inner) & {*row.refs, *row.defines, inner.name if inner else ""}:
            if usable(n):  # chunk-mates called too
                wanted[n].append(narrowed(row.hit, inner))
    found: dict[str, list[Linked]] = defaultdict(list)
    for row in store.definers(sorted(wanted), LOOKUP_LIMIT) if wanted else []:
        for n in row.defines:
            if n in wanted:
                found[n].append(row)
    out = []
    for n, found_targets in found.items():
        bodies = [t for t in found_targets if named(t.hit, n) is not None]
        targets = bodies or found_targets  # a C function's body, not its prototype in a header
        if len(targets) > MAX_DEFINITIONS:
            continue
        scored = [_callee(store, n, t, wanted[n]) for t in targets]
        top = max(sure for _, sure in scored)
        unique = top <= NAME_ONLY and len(scored) == 1
        kept = [(hit, n, sure) for hit, sure in scored if sure > NAME_ONLY or (unique and sure > NONE)]
        out += [x for x in kept if (x[0].path, x[0].start_line) not in selves]
    return sorted(out, key=lambda x: (-x[2], x[0].path, x[0].start_line))


def _callee(store: Store, name: str, target: Linked, users: Sequence[Hit]) -> tuple[Hit, float]:
    """``target`` (a chunk defining ``name``) narrowed to that whole definition (:func:`~codeask.query.split.whole`), and
    how sure the uses by ``users`` (definitions, narrowed) are of it."""
    symbol = defined_symbol(target.hit, name)
    target_at = [(symbol, target.hit.path)]
    seen: dict[str, Imports] = {}
    owner = symbol.rsplit(".", 2)[-2] if "." in symbol else ""
    near = owner and any(u.path == target.hit.path for u in users)  # a self call in the target's file
    mixins = frozenset(bases(store, owner)) if near else frozenset()
    sure = max(
        (
            s.sure
            for u in users
            for s in use_sites(
                u,
                name,
                target_at,
                fields=field_types(store, u, name),
                imports=file_imports(store, u, name, seen),
                mixins=mixins,
            )
        ),
        default=0.0,
    )
    joined, _ = whole(store, target, named(target.hit, name), name)
    return declaration(joined.hit, name), sure


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
    out = RelatedCode(symbol)
    for root, store in stores:
        defs = definitions(store, symbol)
        chunks = [row.hit for row, _ in defs]
        for row, inner in defs:
            d = narrowed(row.hit, inner) if inner is not None else declaration(row.hit, name)
            out.definitions.append(Location.of_hit(root, d, name))
            sites = caller_sites(store, name, [d], chunks)
            overloaded = sum(narrowed(r.hit, i).symbol == d.symbol and r.hit.path == d.path for r, i in defs) > 1
            if overloaded and d.language in OVERLOADING:
                arity = parameters(d.content, d.language, name)  # an overload: the calls passing its arguments
                sites = [s for s in sites if fits(arity, argument_counts(s.hit.content, s.hit.language, name))]
            out.callers += [Location.of_hit(root, s.hit, name, s.sure, d) for s in sites]
            out.callees += [Location.of_hit(root, h, n, sure, d) for h, n, sure in _callees(store, [(row, inner)])]
    out.callers, out.callees = _surest_first(_guessed_once(out.callers)), _surest_first(out.callees)
    out.counts = {k: len(getattr(out, k)) for k in KINDS}
    for kind in (out.definitions, out.callers, out.callees):
        kind[limit:] = []
    return out


def _guessed_once(callers: list[Location]) -> list[Location]:
    """``callers`` with each name-only caller (:data:`~codeask.query.resolve.NAME_ONLY` or less) of
    several definitions listed once, as sure as its surest such link and linked to none of them
    (``of`` ``""``): a guess by the name alone says nothing of which definition it calls
    (``handle_401`` was listed once per ``send``)."""
    guesses: dict[tuple[str, str, int, int], list[Location]] = defaultdict(list)
    for x in callers:
        if x.sure <= NAME_ONLY:
            guesses[x.root, x.path, x.start_line, x.end_line].append(x)
    out = [x for x in callers if x.sure > NAME_ONLY]
    for same in guesses.values():
        several = len({x.of for x in same}) > 1
        out += [replace(max(same, key=lambda x: x.sure), of="")] if several else same
    return out


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
