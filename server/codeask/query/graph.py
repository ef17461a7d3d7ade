"""Following the symbol graph from code: a symbol's definitions, callers and callees, and the files
one hop from a set of hits, ranked by personalised PageRank.

The index stores each chunk's names unresolved (:mod:`codeask.index.chunking.graph`); resolution
happens here and is heuristic: a reference to ``send`` may mean any chunk that defines ``send``, so
an edge's weight is ``1 / definitions of the name`` (a name defined once is a sure edge, one of
three definitions a third of one), a reference inside the same file is not an edge between files,
and a name defined in more than :data:`MAX_DEFINITIONS` chunks (``get``, ``__init__``, ``run``) or a
common word (:data:`codeask.query.names.COMMON_NAMES`) is no edge at all.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeask.index.chunking.symbols import definitions
from codeask.query.names import COMMON_NAMES
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
    """One graph edge from a known chunk (``source``: path and first line) to ``target``, a chunk
    defining or referencing ``name``; ``weight`` is ``1 / definitions of name``."""

    target: Hit
    name: str
    weight: float
    via: str
    source_path: str


def one_hop(
    store: Store, seeds: Sequence[Linked], labels: Mapping[str, str], extra_names: Iterable[str] = ()
) -> tuple[list[Edge], dict[str, list[Linked]]]:
    """The edges one hop from ``seeds`` in one index: to the definitions of the names they reference
    (``calls send from a.py:10``), from the chunks referencing the names they define (``caller of
    send in a.py:10``), and to the definitions of ``extra_names`` (named in a question).

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
    edges: list[Edge] = []
    for seed in seeds:
        where = f"{labels.get(seed.hit.path, seed.hit.path)}:{seed.hit.start_line}"
        for name in seed.refs:
            for row in sure.get(name, ()):
                if row.hit.path != seed.hit.path:
                    via = f"{edge_kind(name, seed.hit.content)} {name} from {where}"
                    edges.append(Edge(row.hit, name, 1 / len(sure[name]), via, seed.hit.path))
    for name in extra:
        for row in sure.get(name, ()):
            edges.append(Edge(row.hit, name, 1 / len(sure[name]), f"defines {name}, named in the question", ""))
    defined = {n: s for s in seeds for n in s.defines if n in sure}
    for row in store.referrers(sorted(defined), LOOKUP_LIMIT) if defined else []:
        for name in row.refs:
            called = defined.get(name)
            if called is not None and row.hit.path != called.hit.path:
                where = f"{labels.get(called.hit.path, called.hit.path)}:{called.hit.start_line}"
                edges.append(Edge(row.hit, name, 1 / len(sure[name]), f"caller of {name} in {where}", called.hit.path))
    return edges, dict(sure)


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
    (``callers``) and the definitions its definitions reference (``callees``), each by path."""

    symbol: str
    definitions: list[Location] = field(default_factory=list)
    callers: list[Location] = field(default_factory=list)
    callees: list[Location] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """``{"symbol", "definitions", "callers", "callees"}``, locations as :meth:`Location.to_json`."""
        kinds = {k: [x.to_json() for x in getattr(self, k)] for k in ("definitions", "callers", "callees")}
        return {"symbol": self.symbol, **kinds}


def _qualified(scope: str, symbol: str) -> str:
    """``symbol`` (qualified within a chunk) qualified by the chunk's ``scope``, their overlap once:
    ``(A.f, f.g)`` -> ``A.f.g``, ``(A, f)`` -> ``A.f``, ``(A.f, f)`` -> ``A.f``."""
    outer, inner = scope.split(".") if scope else [], symbol.split(".")
    for k in range(min(len(outer), len(inner)), 0, -1):
        if outer[-k:] == inner[:k]:
            return ".".join(outer + inner[k:])
    return ".".join(outer + inner)


def _location(root: str, hit: Hit, name: str, *, defining: bool = False) -> Location:
    """Where ``hit`` defines (``defining``) or uses ``name``: the innermost definition of the chunk
    that is named ``name`` or holds its first use, qualified by the chunk's symbol
    (``SessionRedirectMixin.rebuild_auth``), else the whole chunk."""
    inner = None
    lines = hit.content.split("\n")
    pattern = re.compile(rf"\b{re.escape(name)}\b")
    use = next((i + 1 for i, line in enumerate(lines) if pattern.search(line)), 0)
    for d in definitions(hit.content, hit.language):
        if (d.name == name) if defining else d.contains(use):
            inner = d
    if inner is None:
        return Location(root, hit.path, hit.start_line, hit.end_line, hit.symbol, name)
    symbol = _qualified(hit.symbol, inner.symbol)
    start = hit.start_line + inner.start_line - 1
    return Location(root, hit.path, start, hit.start_line + inner.end_line - 1, symbol, name)


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
    across ``(root, store)`` pairs, at most ``limit`` of each, by root, path and line.

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
            where = _location(root, row.hit, name, defining=True)
            if _matches(symbol, where):
                defs.append(row)
                out.definitions.append(where)
        out.callers += [_location(root, row.hit, name) for row in store.referrers([name], LOOKUP_LIMIT)]
        called = {n for row in defs for n in row.refs if usable(n)}
        rows = store.definers(sorted(called), LOOKUP_LIMIT) if called else []
        count = Counter(n for row in rows for n in row.defines if n in called)
        for row in rows:
            for n in row.defines:
                if 0 < count[n] <= MAX_DEFINITIONS:
                    out.callees.append(_location(root, row.hit, n, defining=True))
    for kind in (out.definitions, out.callers, out.callees):
        kind[limit:] = []
    return out
