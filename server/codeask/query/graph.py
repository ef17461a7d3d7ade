"""Following the symbol graph from code: a symbol's definitions, callers and callees, and the files
one hop from a set of hits, ranked by personalised PageRank.

The index stores each chunk's names unresolved (:mod:`codeask.index.chunking.graph`); resolution
happens here and is heuristic. A reference to ``send`` may mean any chunk that defines ``send``;
how sure each such edge is (:func:`how_sure`) comes from how the reference spells it: through a
receiver or qualifier that names the definition's class or module (``Session.send``,
``sessions.send``, Go's ``pkg.Func``) or as a bare call of a function it is sure (1.0); through a
variable in a chunk that also names the class (``s = Session(); s.send()``) it is typed (0.7);
through ``self``/``this`` into another file, bare into a method, or through a variable of unknown
type (``sock.send()``) it is the name only (0.3). A reference with a sure or typed target drops its
name-only ones. An edge's weight is its sureness divided by the name's definitions (a name
defined once is a whole edge, one of three a third of one); a reference inside the same file is
not an edge between files, and a name defined in more than :data:`MAX_DEFINITIONS` chunks
(``get``, ``__init__``, ``run``) or a common word (:data:`codeask.query.names.COMMON_NAMES`) is no
edge at all.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeask.index.chunking.symbols import Definition
from codeask.query.names import COMMON_NAMES
from codeask.query.resolve import (
    NAME_ONLY,
    SELF,
    SURE,
    defined_symbol,
    definitions_of,
    how_sure,
    receivers,
    scoped,
    using_symbol,
)
from codeask.uris import file_uri

if TYPE_CHECKING:
    from codeask.index.edges import Linked
    from codeask.index.rows import Hit
    from codeask.index.store import Store

__all__ = [
    "MAX_DEFINITIONS",
    "Edge",
    "Location",
    "RelatedCode",
    "edge_kind",
    "usable",
    "one_hop",
    "pagerank",
    "related",
]

#: A name defined in more chunks than this is too ambiguous to follow (``get``, ``run``, ``main``).
MAX_DEFINITIONS = 8
#: Graph rows read per lookup (definers, referrers).
LOOKUP_LIMIT = 300


def usable(name: str) -> bool:
    """Whether ``name`` can be an edge: 3+ characters, not a dunder, not a common word or builtin."""
    return len(name) >= 3 and not name.startswith("__") and name not in COMMON_NAMES


def edge_kind(name: str, content: str) -> str:
    """How ``content`` uses ``name``: ``calls`` (``name(``, ``new name``, ``name!``), ``reads`` (an
    ``ALL_CAPS`` constant) or ``uses`` (a type, an import, anything else)."""
    if name.isupper():
        return "reads"
    if re.search(rf"(?:\bnew\s+{re.escape(name)}\b|\b{re.escape(name)}\s*(?:\(|!|::<))", content):
        return "calls"
    return "uses"


@dataclass(frozen=True)
class Edge:
    """One graph edge from a known chunk (``source_path``) to ``target``, a chunk defining or
    referencing ``name``: ``sure`` (:func:`how_sure`), ``weight`` = ``sure / definitions of name``,
    and ``symbol``, the qualified symbol of the definition in ``target`` the edge leads to (the one
    defining ``name``, or holding the call)."""

    target: Hit
    name: str
    weight: float
    via: str
    source_path: str
    sure: float = SURE
    symbol: str = ""


def _resolved(name: str, seed: Hit, rows: Sequence[Linked]) -> list[tuple[Linked, float, str]]:
    """The definitions among ``rows`` of ``name`` that ``seed``'s reference means, as ``(row, sure,
    symbol)``: a definition in the seed's own file is sure for a bare or ``self`` use; name-only
    targets are dropped when a surer one is there."""
    uses = receivers(name, seed.content)
    scored = []
    for row in rows:
        symbol = defined_symbol(row.hit, name)
        own = row.hit.path == seed.path and bool(uses & {"", *SELF})
        scored.append((row, SURE if own else how_sure(name, seed.content, symbol, row.hit.path), symbol))
    top = max((x[1] for x in scored), default=NAME_ONLY)
    return [x for x in scored if x[1] > NAME_ONLY or top <= NAME_ONLY]


def _callees(seed: Linked, sure: Mapping[str, list[Linked]], labels: Mapping[str, str]) -> list[Edge]:
    """Edges from ``seed`` to the definitions of the names it references, in other files."""
    where = f"{labels.get(seed.hit.path, seed.hit.path)}:{seed.hit.start_line}"
    edges = []
    for name in seed.refs:
        for row, how, symbol in _resolved(name, seed.hit, sure.get(name, ())):
            if row.hit.path != seed.hit.path:
                via = f"{edge_kind(name, seed.hit.content)} {name} from {where}"
                edges.append(Edge(row.hit, name, how / len(sure[name]), via, seed.hit.path, how, symbol))
    return edges


def _callers(
    store: Store, seeds: Sequence[Linked], sure: Mapping[str, list[Linked]], labels: Mapping[str, str]
) -> list[Edge]:
    """Edges from the seeds' definitions to the chunks of other files that reference them."""
    defined = {n: s for s in seeds for n in s.defines if n in sure}
    edges = []
    for row in store.referrers(sorted(defined), LOOKUP_LIMIT) if defined else []:
        for name in row.refs:
            called = defined.get(name)
            if called is not None and row.hit.path != called.hit.path:
                how = how_sure(name, row.hit.content, defined_symbol(called.hit, name), called.hit.path)
                where = f"{labels.get(called.hit.path, called.hit.path)}:{called.hit.start_line}"
                via = f"caller of {name} in {where}"
                symbol = using_symbol(row.hit, name)
                edges.append(Edge(row.hit, name, how / len(sure[name]), via, called.hit.path, how, symbol))
    return edges


def one_hop(
    store: Store, seeds: Sequence[Linked], labels: Mapping[str, str], extra_names: Iterable[str] = ()
) -> tuple[list[Edge], dict[str, list[Linked]]]:
    """The edges one hop from ``seeds`` in one index: to the definitions of the names they reference
    (``calls send from a.py:10``), from the chunks referencing the names they define (``caller of
    send in a.py:10``), and to the definitions of ``extra_names`` (named in a question), each with
    how sure it is (module docstring).

    Args:
        store: the index.
        seeds: the chunks to start from, with their names (:meth:`Store.linked`).
        labels: ``{path: label}`` naming a seed's file in ``via`` (its label in a multi-root workspace).
        extra_names: more names to resolve to their definitions.

    Returns:
        ``(edges, {name: definitions})``; edges within a seed's own file are left out.
    """
    extra = [n for n in dict.fromkeys(extra_names) if usable(n)]
    wanted = {n for s in seeds for n in (*s.refs, *s.defines) if usable(n)} | set(extra)
    by_name: dict[str, list[Linked]] = defaultdict(list)
    for row in store.definers(sorted(wanted), LOOKUP_LIMIT * 2):
        for name in row.defines:
            if name in wanted:
                by_name[name].append(row)
    sure = {n: rows for n, rows in by_name.items() if len(rows) <= MAX_DEFINITIONS}
    edges = [e for seed in seeds for e in _callees(seed, sure, labels)]
    for name in extra:
        for row in sure.get(name, ()):
            via = f"defines {name}, named in the question"
            edges.append(Edge(row.hit, name, 1 / len(sure[name]), via, "", SURE, defined_symbol(row.hit, name)))
    return edges + _callers(store, seeds, sure, labels), dict(sure)


def pagerank(
    edges: Mapping[tuple[str, str], float], personal: Mapping[str, float], damping: float = 0.85, rounds: int = 30
) -> dict[str, float]:
    """Personalised PageRank over a small weighted graph: ``{node: rank}``, ranks summing to 1.

    ``edges`` maps ``(from, to)`` to a weight, ``personal`` the nodes walks restart at to their
    share. Power iteration, ``rounds`` rounds (tens of nodes: converged long before). Rank of a node
    without out-edges restarts at ``personal``, as in Aider's repo map and networkx.
    """
    total = sum(personal.values()) or 1.0
    restart = {n: w / total for n, w in personal.items()}
    nodes = set(restart) | {n for e in edges for n in e}
    out: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for (a, b), w in edges.items():
        out[a].append((b, w))
    sums = {a: sum(w for _, w in targets) for a, targets in out.items()}
    rank = {n: restart.get(n, 0.0) for n in nodes}
    for _ in range(rounds):
        dangling = sum(r for n, r in rank.items() if n not in out)
        nxt = {n: (1 - damping + damping * dangling) * restart.get(n, 0.0) for n in nodes}
        for a, targets in out.items():
            for b, w in targets:
                nxt[b] += damping * rank[a] * w / sums[a]
        rank = nxt
    return rank


@dataclass(frozen=True)
class Location:
    """A chunk of one root: ``root`` (absolute folder), ``path`` (POSIX, relative), 1-based inclusive
    lines, its ``symbol``, and ``name``, the name that links it (the symbol asked about for a
    definition or caller, the name called for a callee)."""

    root: str
    path: str
    start_line: int
    end_line: int
    symbol: str
    name: str
    sure: float = SURE
    """How sure the link is (:func:`how_sure`; definitions and callees: 1.0)."""

    @property
    def uri(self) -> str:
        """``file:///abs/path#Lstart-Lend``."""
        return file_uri(str(Path(self.root) / self.path), self.start_line, self.end_line)

    def to_json(self) -> dict[str, Any]:
        """The fields and ``uri`` as a plain dict."""
        return {**asdict(self), "uri": self.uri}


@dataclass
class RelatedCode:
    """A symbol's neighbourhood in the graph: where it is defined, the chunks that reference it
    (``callers``, surest first, each definition holding a use) and the definitions its definitions
    reference (``callees``), each by path."""

    symbol: str
    definitions: list[Location] = field(default_factory=list)
    callers: list[Location] = field(default_factory=list)
    callees: list[Location] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """``{"symbol", "definitions", "callers", "callees"}``, locations as :meth:`Location.to_json`."""
        kinds = {k: [x.to_json() for x in getattr(self, k)] for k in ("definitions", "callers", "callees")}
        return {"symbol": self.symbol, **kinds}


def _span(root: str, hit: Hit, name: str, inner: Definition | None, sure: float) -> Location:
    """The Location of ``inner`` (a definition of ``hit``), or of the whole chunk."""
    if inner is None:
        return Location(root, hit.path, hit.start_line, hit.end_line, hit.symbol, name, sure)
    start, end = hit.start_line + inner.start_line - 1, hit.start_line + inner.end_line - 1
    return Location(root, hit.path, start, end, scoped(hit, inner), name, sure)


def _location(root: str, hit: Hit, name: str) -> Location:
    """Where ``hit`` defines ``name``: its definition named so, qualified by the chunk's scope
    (``SessionRedirectMixin.rebuild_auth``; a packed chunk's second function by its own name), else
    the whole chunk."""
    inner = next((d for d in definitions_of(hit.content, hit.language) if d.name == name), None)
    return _span(root, hit, name, inner, SURE)


def _uses(root: str, hit: Hit, name: str, sure: float) -> list[Location]:
    """Where ``hit`` uses ``name``: each innermost definition holding a use (a chunk of three
    functions calling it gives three; uses outside every definition, an import, are left out when
    one is inside), else the whole chunk."""
    pattern = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
    lines = [i + 1 for i, line in enumerate(hit.content.split("\n")) if pattern.search(line)]
    defs = definitions_of(hit.content, hit.language)
    inners: list[Definition] = []
    for line in lines:  # the innermost definition holding the line: the last of those that do
        inner = next((d for d in reversed(defs) if d.contains(line)), None)
        if inner is not None and inner not in inners:
            inners.append(inner)
    return [_span(root, hit, name, d, sure) for d in inners] or [_span(root, hit, name, None, sure)]


def _matches(symbol: str, where: Location) -> bool:
    """Whether the definition at ``where`` is ``symbol`` (``send``; dotted ``Session.send`` when its
    qualified symbol ends so, or ``sessions.send`` when its file is named so)."""
    if "." not in symbol:
        return True
    qualifier = symbol.rsplit(".", 1)[0].rsplit(".", 1)[-1]
    stem = where.path.rsplit("/", 1)[-1].split(".", 1)[0]
    return where.symbol == symbol or where.symbol.endswith("." + symbol) or qualifier == stem


def related(stores: Sequence[tuple[str, Store]], symbol: str, limit: int = 50) -> RelatedCode:
    """The definitions, callers and callees of ``symbol`` (``should_strip_auth``, ``Session.send``)
    across ``(root, store)`` pairs, at most ``limit`` of each, by root, path and line (callers
    surest first).

    Raises:
        ValueError: ``symbol`` is not an identifier or dotted name.
    """
    symbol = symbol.strip()
    if not re.fullmatch(r"[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*", symbol):
        raise ValueError(f"not a symbol name: {symbol[:80]!r} (give a name such as send or Session.send)")
    symbol = symbol.replace("::", ".")
    name = symbol.rsplit(".", 1)[-1]
    out = RelatedCode(symbol)
    for root, store in stores:
        defs = []
        for row in store.definers([name], LOOKUP_LIMIT):
            where = _location(root, row.hit, name)
            if _matches(symbol, where):
                defs.append(row)
                out.definitions.append(where)
        out.callers += _callers_of(root, store, name, out.definitions)
        called = {n for row in defs for n in row.refs if usable(n)}
        rows = store.definers(sorted(called), LOOKUP_LIMIT) if called else []
        count = Counter(n for row in rows for n in row.defines if n in called)
        for row in rows:
            for n in row.defines:
                if 0 < count[n] <= MAX_DEFINITIONS:
                    out.callees.append(_location(root, row.hit, n))
    out.callers.sort(key=lambda x: -x.sure)
    for kind in (out.definitions, out.callers, out.callees):
        kind[limit:] = []
    return out


def _callers_of(root: str, store: Store, name: str, defs: Sequence[Location]) -> list[Location]:
    """The uses of ``name`` in ``store``, each as sure as its surest link to one of ``defs``."""
    out = []
    for row in store.referrers([name], LOOKUP_LIMIT):
        mine = [d for d in defs if d.root == root]
        same = any(d.path == row.hit.path for d in mine)
        links = [how_sure(name, row.hit.content, d.symbol, d.path) for d in mine]
        out += _uses(root, row.hit, name, SURE if same else max(links, default=NAME_ONLY))
    return out
