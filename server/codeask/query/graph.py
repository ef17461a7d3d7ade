"""Following the symbol graph from code: the files one hop from a set of hits, ranked by
personalised PageRank (a symbol's definitions, callers and callees: :mod:`codeask.query.related_code`).

The index stores each chunk's names unresolved (:mod:`codeask.index.chunking.graph`); resolution
happens here and is heuristic. A reference to ``send`` may mean any chunk that defines ``send``;
how sure each such edge is (:func:`~codeask.query.resolve.sureness`) comes from how the chunk's
code uses it (its syntax tree: :mod:`codeask.query.uses`; a word in a comment or string is no use): through a
receiver or qualifier that names the definition's class or module (``Session.send``,
``sessions.send``, Go's ``pkg.Func``) or as a bare call of a function it is sure (1.0); through a
variable in a chunk that also names the class (``s = Session(); s.send()``) it is typed (0.7);
through ``self``/``this`` into another file, bare into a method, or through a variable of unknown
type (``sock.send()``, ``DEFAULT_PORTS.get()``) it is the name only (0.3). A reference with a sure or typed target drops its
name-only ones. An edge's weight is its sureness divided by the name's definitions (a name
defined once is a whole edge, one of three a third of one); a reference inside the same file is
not an edge between files, and a name defined in more than :data:`MAX_DEFINITIONS` chunks
(``get``, ``__init__``, ``run``) or a common word (:data:`codeask.query.names.COMMON_NAMES`) is no
edge at all.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from codeask.query.imported import import_groups
from codeask.query.names import COMMON_NAMES
from codeask.query.resolve import NAME_ONLY, NONE, SELF, SURE, TYPE_HEAD, defined_symbol, sureness
from codeask.query.sites import declaration, first_use_line, unshadowed, use_sites
from codeask.query.split import split_start
from codeask.query.uses import uses_in

if TYPE_CHECKING:
    from codeask.index.edges import Linked
    from codeask.index.rows import Hit
    from codeask.index.store import Store

__all__ = [
    "MAX_DEFINITIONS",
    "LOOKUP_LIMIT",
    "Edge",
    "edge_kind",
    "defines_type",
    "via_of",
    "via_parts",
    "usable",
    "one_hop",
    "file_links",
    "pagerank",
]

#: A name defined in more chunks than this is too ambiguous to follow (``get``, ``run``, ``main``).
MAX_DEFINITIONS = 8
#: Graph rows read per lookup (definers, referrers).
LOOKUP_LIMIT = 300


def usable(name: str) -> bool:
    """Whether ``name`` can be an edge: 3+ characters, not a dunder, not a common word or builtin."""
    return len(name) >= 3 and not name.startswith("__") and name not in COMMON_NAMES


def edge_kind(name: str, content: str, definition: Hit | None = None) -> str:
    """How ``content`` uses ``name``, defined by ``definition`` (a chunk defining it, or that
    definition cut from it): of a type (:func:`defines_type`) ``creates`` when it calls it or instantiates it with ``new``
    (``Session()``, ``new CodeWriter(out)``), else ``uses type`` (an annotation, a field's type, a base
    class); of anything else ``reads`` (an ``ALL_CAPS`` constant), ``calls`` (``name(``, ``new name``,
    ``name!``, ``name::<``) or ``uses`` (an import, a value, a method reference)."""
    word = rf"(?<![\w$#]){re.escape(name)}(?![\w$])"  # not \b: it never matches before `#x` or `$x`
    called = re.search(rf"(?:\bnew\s+{word}|{word}\s*(?:\(|!|::<))", content) is not None
    if definition is not None and defines_type(definition, name):
        return "creates" if called else "uses type"
    if name.isupper():
        return "reads"
    return "calls" if called else "uses"


def defines_type(definition: Hit, name: str) -> bool:
    """Whether ``definition`` (a chunk defining ``name``, or that definition cut from it) defines a
    type: a word of :data:`~codeask.query.resolve.TYPE_HEAD` before the name on its definition's
    lines (``class Session``, ``type Mux struct``, ``impl Config``), or a constructor (Java's
    ``CodeWriter.CodeWriter``: a ``new CodeWriter(..)`` creates one)."""
    d = declaration(definition, name)
    head = re.split(rf"(?<![\w$#]){re.escape(name)}(?![\w$])", d.content, maxsplit=1)[0]
    return bool(TYPE_HEAD.search(head)) or d.symbol.split(".")[-2:] == [name, name]


def via_of(kind: str, name: str, where: str, up: bool) -> str:
    """An edge's ``via``: for a definition using ``name`` the seed defines at ``where`` (``up``) ``caller
    of send in a.py:10`` (``creates Session in ..``, ``reads MAX in ..``, ``uses type Session in ..``);
    for the definition of ``name`` the seed uses at ``where`` ``calls send from a.py:20`` (``creates``,
    ``reads``, ``uses type``, ``uses``). ``kind``: :func:`edge_kind`."""
    return (
        f"caller of {name} in {where}" if up and kind == "calls" else f"{kind} {name} {'in' if up else 'from'} {where}"
    )


#: A ``via`` of :func:`via_of`: its kind, name and direction word.
_VIA = re.compile(r"(caller of|calls|creates|reads|uses type|uses) (\S+) (in|from) ")


def via_parts(via: str) -> tuple[str, str, bool] | None:
    """``(kind, name, up)`` of a ``via`` made by :func:`via_of` (``caller of`` read as ``calls``;
    ``up``: the target uses what the seed defines), ``None`` for another (``defines send, named in the
    question``)."""
    found = _VIA.match(via)
    if found is None:
        return None
    kind, name, word = found.groups()
    return ("calls" if kind == "caller of" else kind), name, word == "in"


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

    def labelled(self) -> Hit:
        """``target`` named by the definition the edge leads to (a packed chunk's stored symbol names
        its first definition)."""
        return replace(self.target, symbol=self.symbol) if self.symbol else self.target

    def definition(self) -> Hit:
        """The definition the edge leads to, whose words are matched with a question's: the one of
        ``target`` defining ``name`` (:func:`~codeask.query.sites.declaration`, not the whole chunk
        it is packed in), or for a caller the definition holding the use (``target`` is cut to it)."""
        return declaration(self.target, self.name) if self.symbol.rsplit(".", 1)[-1] == self.name else self.target

    @property
    def up(self) -> bool:
        """Whether ``target`` uses what the seed defines (a caller, a user: ``caller of send in
        a.py:10``), not the definition of what the seed uses (:func:`via_parts`)."""
        parts = via_parts(self.via)
        return parts is not None and parts[2]

    def followed(self, only: Callable[[str], bool] | None = None) -> bool:
        """Whether the graph steps follow the edge: not into a test by the name alone
        (``sock.send()`` in a socket test is no use of ``Session.send``, a ``conn.close()`` no call
        of a project's ``close``; a test that calls the definition surely still counts), and only to
        a path ``only`` accepts when given (``query.options.path_glob``)."""
        return (self.sure > NAME_ONLY or self.target.kind != "test") and (only is None or only(self.target.path))


def _resolved(name: str, seed: Hit, rows: Sequence[Linked]) -> list[tuple[Linked, float, str]]:
    """The definitions among ``rows`` of ``name`` that ``seed``'s uses mean, as ``(row, sure,
    symbol)``: a definition in the seed's own file is sure for a bare or ``self`` use; a name the
    seed only mentions in comments or strings means none; name-only targets are dropped when a
    surer one is there; a bare use of a name the seed's file defines at top level means that one
    (no other package's: :func:`~codeask.query.sites.unshadowed`)."""
    found, imports = uses_in(seed.content, seed.language), import_groups(seed.content, seed.language)
    own = any(u.receiver in {"", *SELF} for u in found.of(name))
    shadowed = any(r.hit.path == seed.path and "." not in defined_symbol(r.hit, name) for r in rows)
    scored = []
    for row in rows:
        symbol = defined_symbol(row.hit, name)
        mine = unshadowed(found, name, (symbol, row.hit.path), seed, shadowed)
        sure = (
            SURE
            if own and row.hit.path == seed.path
            else sureness(mine, name, symbol, row.hit.path, seed.language, imports=imports, at=seed.path)
        )
        scored.append((row, sure, symbol))
    top = max((x[1] for x in scored), default=NAME_ONLY)
    return [x for x in scored if x[1] > NAME_ONLY or (top <= NAME_ONLY and x[1] > NONE)]


def _callees(
    seed: Linked,
    sure: Mapping[str, list[Linked]],
    labels: Mapping[str, str],
    same_file: bool = False,
    start: int | None = None,
) -> list[Edge]:
    """Edges from ``seed`` to the definitions of the names it references, in other files (in its own
    file too with ``same_file``, other chunks only); ``start``: the first line of the definition
    ``seed`` is a later part of (``via`` cites it)."""
    label = labels.get(seed.hit.path, seed.hit.path)
    edges = []
    for name in seed.refs:
        for row, how, symbol in _resolved(name, seed.hit, sure.get(name, ())):
            if row.hit.path != seed.hit.path or (same_file and row.hit.id != seed.hit.id):
                line = first_use_line(seed.hit, name, start)
                via = via_of(edge_kind(name, seed.hit.content, row.hit), name, f"{label}:{line}", up=False)
                edges.append(Edge(row.hit, name, how / len(sure[name]), via, seed.hit.path, how, symbol))
    return edges


def _callers(
    store: Store,
    seeds: Sequence[Linked],
    sure: Mapping[str, list[Linked]],
    labels: Mapping[str, str],
    same_file: bool = False,
) -> list[Edge]:
    """Edges from the seeds' definitions to the definitions of other files that use them as code
    (of their own file too with ``same_file``, other chunks only), each edge's target narrowed to that
    definition (the calling function, never an import block: :func:`~codeask.query.sites.use_sites`);
    a call through another class defining the name itself (``self.send()`` in it) is none."""
    defined = {n: s for s in seeds for n in s.defines if n in sure}
    edges = []
    for row in store.referrers(sorted(defined), LOOKUP_LIMIT) if defined else []:
        for name in row.refs:
            called = defined.get(name)
            if called is None or row.hit.id == called.hit.id or (row.hit.path == called.hit.path and not same_file):
                continue
            edges.extend(_user_edges(row, name, called, sure[name], labels))
    return edges


def _user_edges(
    row: Linked, name: str, called: Linked, definitions: Sequence[Linked], labels: Mapping[str, str]
) -> list[Edge]:
    """The edges from ``called`` (a chunk defining ``name``, one of its ``definitions``) to each
    definition of ``row`` using it as code, that definition's lines, content and symbol (never the
    chunk's first definition, nor an import block: :func:`~codeask.query.sites.use_sites`), each as
    sure as its uses; ``via`` cites the line ``name`` is defined on (not the chunk's start). A call
    through another class defining the name itself (``self.send()`` in it) is none."""
    where = f"{labels.get(called.hit.path, called.hit.path)}:{declaration(called.hit, name).start_line}"
    target = [(defined_symbol(called.hit, name), called.hit.path)]
    methods = (defined_symbol(r.hit, name) for r in definitions)
    claimed = frozenset(m.rsplit(".", 2)[-2] for m in methods if "." in m)  # self.send() in Other
    return [
        Edge(site.hit, name, site.sure / len(definitions), via, called.hit.path, site.sure, site.hit.symbol)
        for site in use_sites(row.hit, name, target, claimed=claimed)
        for via in [via_of(edge_kind(name, site.hit.content, called.hit), name, where, up=True)]
    ]


def one_hop(
    store: Store,
    seeds: Sequence[Linked],
    labels: Mapping[str, str],
    extra_names: Iterable[str] = (),
    *,
    same_file: bool = False,
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
        same_file: keep the edges to other chunks of a seed's own file (hover's related code: a
            caller in the same module is what a reader looks for; ask's expansion has the file already).

    Returns:
        ``(edges, {name: definitions})``; edges within a seed's own file are left out unless ``same_file``.
    """
    extra = [n for n in dict.fromkeys(extra_names) if usable(n)]
    wanted = {n for s in seeds for n in (*s.refs, *s.defines) if usable(n)} | set(extra)
    by_name: dict[str, list[Linked]] = defaultdict(list)
    for row in store.definers(sorted(wanted), LOOKUP_LIMIT * 2):
        for name in row.defines:
            if name in wanted:
                by_name[name].append(row)
    sure = {n: rows for n, rows in by_name.items() if len(rows) <= MAX_DEFINITIONS}
    edges = [e for seed in seeds for e in _callees(seed, sure, labels, same_file, split_start(store, seed.hit))]
    for name in extra:
        for row in sure.get(name, ()):
            via = f"defines {name}, named in the question"
            edges.append(Edge(row.hit, name, 1 / len(sure[name]), via, "", SURE, defined_symbol(row.hit, name)))
    return edges + _callers(store, seeds, sure, labels, same_file), dict(sure)


def file_links(store: Store, rows: Sequence[Linked], labels: Mapping[str, str]) -> tuple[list[Edge], list[Edge]]:
    """The files the whole of some files links to: ``rows`` are every chunk of those files
    (:meth:`Store.rows_for_path` read back with :meth:`Store.linked`). One edge per definition in
    another file of a name the files reference and do not define (``calls send from a.py:10``, the
    line of the definition holding the first use: :func:`~codeask.query.sites.first_use_line`), and
    one per definition of another file that uses a name they define (``caller of send in a.py:10``,
    the line ``send`` is defined on; the target cut to the using definition: a test that exercises
    them, a module built on them). Each edge is resolved as :func:`one_hop`'s are, ``sure`` as the
    use is and of weight ``sure / definitions of the name``; a name only mentioned (a comment, an
    import) links nothing, nor does one past :func:`usable` or defined in more than
    :data:`MAX_DEFINITIONS` chunks. Lookups read twice :data:`LOOKUP_LIMIT` rows each.
    Returns ``(callees, users)``: the edges of each kind."""
    paths = {r.hit.path for r in rows}
    defined = {n: r for r in rows for n in r.defines if usable(n)}
    used = {n: r for r in rows for n in r.refs if usable(n) and n not in defined}
    by_name: dict[str, list[Linked]] = defaultdict(list)
    for row in store.definers(sorted({*defined, *used}), LOOKUP_LIMIT * 2) if defined or used else []:
        for name in row.defines:
            if name in defined or name in used:
                by_name[name].append(row)
    sure = {n: found for n, found in by_name.items() if len(found) <= MAX_DEFINITIONS}
    callees = []
    for name, seed in used.items():
        outside = [r for r in sure.get(name, ()) if r.hit.path not in paths]
        if not outside:
            continue
        label = f"{labels.get(seed.hit.path, seed.hit.path)}:{first_use_line(seed.hit, name)}"
        for row, how, symbol in _resolved(name, seed.hit, sure[name]):
            if row.hit.path not in paths:
                via = via_of(edge_kind(name, seed.hit.content, row.hit), name, label, up=False)
                callees.append(Edge(row.hit, name, how / len(sure[name]), via, seed.hit.path, how, symbol))
    names = sorted(n for n in defined if n in sure)
    users = []
    for row in store.referrers(names, LOOKUP_LIMIT * 2) if names else []:
        if row.hit.path not in paths:
            for name in (n for n in row.refs if n in defined and n in sure):
                users.extend(_user_edges(row, name, defined[name], sure[name], labels))
    return callees, users


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
