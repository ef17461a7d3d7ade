"""Response transformer: the retrieved files and the graph neighbours of the best ones, ranked by one score.

Runs right after retrieval, before ``one_per_file`` cuts the fused list to ``max_files`` files: the
one step that ranks by the symbol graph (no later step adds a file). The first :data:`SEEDS` files
keep their places (where most needed files rank). Every other file is a candidate: the retrieved
ones, and the files the symbol graph reaches from the best files, retrieved or not. Two kinds of
link are read (:mod:`codeask.query.graph`):

* one hop from the best chunk of each of the first :data:`EDGE_SEEDS` files, and to the definitions
  of the names the question spells (:func:`~codeask.query.graph.one_hop`: resolved, each edge
  weighted by how sure it is over the name's definitions); over these edges each linked file's
  PageRank personalised to the first files (:func:`_ranks`) is recorded;
* from the whole of the first :data:`SEEDS` files (:func:`~codeask.query.graph.file_links`): the
  files defining the names they use (their callees), and the files using the names they define
  (their tests, the modules built on them), counted in distinct names, each name as sure as its
  surest link (1 sure, .7 typed, .3 by the name only); a user's name counts that over the files
  using it (:func:`_spread`), as an edge's weight is its sureness over the name's definitions: each
  of the fifty checkers calling a utility module's helpers links by a fiftieth, not as a module
  built on the best file.

No link into a test by the name alone is followed (:meth:`~codeask.query.graph.Edge.followed`).

A file's score is its retrieval score over the best file's, plus :data:`GAIN` for each of four
links, each capped at one: its edges' summed weight (times ``1 + the share of the question's words``
the linked definition holds: :meth:`~codeask.query.graph.Edge.definition`) from the first
:data:`EDGE_SEEDS` files, the same from the first :data:`SEEDS` files and the question's names, its
callee names' sureness over :data:`NAMES`, its user names' (each shared by its users) over
:data:`NAMES`; and :data:`RANK_GAIN` times its PageRank over the question's most reached linked
file's (:func:`_ranks`); the whole gain times the share of the question's words its linked
definitions hold over the most any linked file's hold (``overlap``, to :data:`OVERLAP_POWER`): a
neighbour holding none of them gains nothing. The files past the first keep that order, their scores scaled to stay at or under the
last first file's (the scores descend along the answer). The graph part is scaled by the retriever's
down-weighting (tests, docs unless the question asks for them) and its prior (vendored, generated,
data files). A file not retrieved enters with the chunk its strongest link leads to, at most
``files`` of them (``retrieval.expand_files``, the best by score). A file that enters the first
``max_files`` this way says why (``Document.via``, the link it came along; ``via_path`` the best
file's). The event records each linked file with its graph gain, its links before their caps
(:meth:`_Links.parts`), its rank and whether it entered. Every document is named by the definition
in it that matches the question best (:func:`~codeask.query.question_words.relabelled`), and a
question asking for a symbol's callers gets them (:func:`~codeask.query.steps.callers.with_callers`).

Why one step and one score: two graph steps (this one moving retrieved neighbours up, ``expand``
adding one file by PageRank after the cut) took each other's places (r31's and r35's issue-29
reports: on bench/multifile's recaptured records this step alone raised all@10 .590 -> .610, the
97 how-questions .371 -> .392, and ``expand`` then pushed a needed tenth file out in three rows).
Offline (each row's retrieval, edges and whole-file links captured, the top 10 recomputed),
:data:`GAIN` .2-.3 and :data:`NAMES` 3-5 gave within a row of each other on the how-questions.
``expand``'s PageRank is now a part of the one score (:data:`RANK_GAIN`), chosen leave-one-repository-out
on r36's records (175 rows of 12 trees: 0, .1, .2, .4 tried, .2 chosen in 12 of 12 folds): against
the coordinator's run of main fa4c6f7 on those rows, all@10 .657 -> .669 (without it .651), MRR
.826 -> .826, the 62 how-questions .403 -> .403 (docs/pipeline.md). :data:`OVERLAP_POWER` (the
evidence a needed neighbour has over the others is the question's words: r36 found the links alone
do not separate them) was chosen leave-one-repository-out on this step's records of the 9 trees
indexed then (151 rows of bench/multifile, ``bench/neighbours_overlap.py``: 0, .5, 1, 1.5, 2 tried,
.5 chosen in 9 of 9 folds): all@10 .728 -> .755 (110 -> 114 rows; at 1, 113), the 38 how-questions
21 -> 22, MRR .851 -> .852; the pipeline run again at .5 gave the same rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from codeask.index.rows import Hit
from codeask.query.graph import Edge, file_links, one_hop, pagerank
from codeask.query.intent import question_intent
from codeask.query.pipeline import Document, Query
from codeask.query.question_words import question_terms, relabelled, term_overlap
from codeask.query.steps.callers import with_callers
from codeask.query.steps.identifiers import code_identifiers
from codeask.query.steps.priors import DOWNWEIGHT_FACTOR
from codeask.query.steps.retrieve import HybridRetrieve, SearchTarget, path_filter

__all__ = ["Neighbours", "SEEDS", "EDGE_SEEDS", "GAIN", "NAMES", "RANK_GAIN", "OVERLAP_POWER"]

#: Files that keep their places, and whose whole content is linked from.
SEEDS = 3
#: Files whose best chunk's edges are followed (one hop).
EDGE_SEEDS = 5
#: Score one full link adds, in units of the best file's retrieval score (module docstring).
GAIN = 0.2
#: Distinct names that make a whole-file link full.
NAMES = 4
#: Score a linked file's PageRank beyond its own restart adds at most (the question's most reached
#: file gets it all): chosen leave-one-repository-out on bench/multifile (module docstring).
RANK_GAIN = 0.2
#: How a linked file's graph gain follows the question's words: it is multiplied by the share of
#: the question's words its linked definitions hold over the most any linked file's hold, to this
#: power (:meth:`Neighbours._gains`); 0 leaves the links alone. Chosen leave-one-repository-out on
#: bench/multifile stage records (module docstring).
OVERLAP_POWER = 0.5
#: PageRank's damping (:func:`~codeask.query.graph.pagerank`'s, as Aider's repo map and networkx).
DAMPING = 0.85
#: The node of the names the question spells in the PageRank graph.
_QUESTION = "\0question"


def _file_hit(d: Document) -> Hit:
    """The hit the retriever's prior reads (path, language, kind) of document ``d``."""
    return Hit(d.id, d.path, d.language, d.start_line, d.end_line, d.symbol, d.content, d.score, kind=d.kind)


@dataclass
class _Links:
    """One candidate file's links: edge strength from the first :data:`EDGE_SEEDS` files and from the
    first :data:`SEEDS` files (and the question's names), its callee and user names, the files
    linking to it, its PageRank, and its strongest edge."""

    near: float = 0.0
    first: float = 0.0
    callees: dict[str, float] = field(default_factory=dict)
    users: dict[str, float] = field(default_factory=dict)
    sources: set[str] = field(default_factory=set)
    up: float = 0.0
    overlap: float = 0.0
    rank: float = 0.0
    factor: float = 1.0
    edge: Edge | None = None
    strength: float = -1.0

    def gain(self, most: float) -> float:
        """The four links' sum, each capped at one (module docstring), times :data:`GAIN`, plus
        :data:`RANK_GAIN` times its PageRank over ``most`` (the highest of the question's linked files)."""
        whole = min(1.0, sum(self.callees.values()) / NAMES) + min(1.0, sum(self.users.values()) / NAMES)
        reach = RANK_GAIN * self.rank / most if most > 0 else 0.0
        return GAIN * (min(1.0, self.near) + min(1.0, self.first) + whole) + reach

    def parts(self) -> dict[str, float]:
        """The links before their caps (the event records them: bench/multifile_stages.py reads
        where a needed file sits): ``near``, ``first``, ``callees`` and ``users`` (summed sureness),
        ``sources`` (files linking to it, the question's names one), ``up`` (the part of ``near``
        from its callers' edges), ``overlap`` (the question's words its linked definitions hold at
        most), ``pagerank`` (its personalised PageRank beyond its own restart: :func:`_ranks`) and ``factor`` (its down-weighting times its prior)."""
        return {
            "near": round(self.near, 4),
            "first": round(self.first, 4),
            "callees": round(sum(self.callees.values()), 4),
            "users": round(sum(self.users.values()), 4),
            "sources": len(self.sources),
            "up": round(self.up, 4),
            "overlap": round(self.overlap, 4),
            "pagerank": round(self.rank, 6),
            "factor": round(self.factor, 4),
        }

    def add(self, edge: Edge, strength: float) -> None:
        self.sources.add(edge.source_path)
        if strength > self.strength:
            self.edge, self.strength = edge, strength


class Neighbours:
    """Ranks the retrieved files and the first files' graph neighbours by one score (module docstring).

    Args:
        targets: the roots searched (:class:`~codeask.query.steps.retrieve.SearchTarget`).
        ranker: the retriever, whose down-weighting and priors a graph gain is scaled by.
        max_files: files the answer keeps (``retrieval.max_files``; ``query.options.max_files`` wins).
        files: files at most that a link brings in that retrieval did not find (``retrieval.expand_files``);
            0 leaves the retrieval order (the callers a question asks for still enter).
    """

    name = "neighbours"

    def __init__(
        self, targets: Callable[[], list[SearchTarget]], ranker: HybridRetrieve, *, max_files: int = 8, files: int = 10
    ):
        self.targets, self.ranker, self.max_files, self.files = targets, ranker, max_files, files

    def __call__(self, query: Query) -> Query:
        terms = question_terms(query.original)
        docs = [relabelled(d, terms) for d in query.documents]
        limit = query.options.max_files or self.max_files
        docs, data = self._ranked(query, docs, terms, limit)
        docs, callers = with_callers(self.targets(), query.original, query.options.path_glob, docs, limit)
        query.reordered(self.name, docs, callers=callers, **data)
        return query

    def _ranked(
        self, query: Query, docs: list[Document], terms: set[str], limit: int
    ) -> tuple[list[Document], dict[str, object]]:
        """``docs`` with the linked files ranked among them (module docstring), and the event's
        ``boosted`` (each linked file: gain, rank, entered, :meth:`_Links.parts`) and ``edges``."""
        files = list(dict.fromkeys(d.key() for d in docs))
        links, labels = self._links(query, docs, files, terms) if self.files > 0 else ({}, {})
        links = {key: link for key, link in links.items() if key not in files[:SEEDS]}
        if not links:  # no neighbour: the retrieval order stands
            return docs, {"boosted": [], "edges": 0}
        gain = self._gains(query, docs, links)
        firsts = {d.key(): d for d in reversed(docs)}
        top = max((firsts[key].score for key in files), default=1.0) or 1.0
        new = {
            key: _entering(edge, labels[key[0]], key[0])
            for key, link in links.items()
            if key not in firsts and (edge := link.edge) is not None and gain.get(key, 0.0) > 0
        }
        score = {key: d.score / top + gain.get(key, 0.0) for key, d in (firsts | new).items()}
        new = {key: new[key] for key in sorted(new, key=lambda k: -score[k])[: self.files]}
        firsts.update(new)
        order = files[:SEEDS] + sorted((k for k in firsts if k not in files[:SEEDS]), key=lambda k: -score[k])
        entered = {k for k in order[:limit] if k not in files[:limit] and links.get(k) and links[k].edge}
        out = self._documents(docs, new, order, _below(firsts, files, order, score, top), entered, links)
        rank = {k: i for i, k in enumerate(order, 1)}
        boosted = [
            {"path": k[1], "gain": round(gain[k], 6), "rank": rank[k], "entered": k in entered, **links[k].parts()}
            for k in sorted(gain, key=lambda k: rank.get(k, len(rank) + 1))
            if k in rank
        ]
        return out, {"boosted": boosted, "edges": sum(1 for link in links.values() if link.edge)}

    def _links(
        self, query: Query, docs: list[Document], files: list[tuple[str, str]], terms: set[str]
    ) -> tuple[dict[tuple[str, str], _Links], dict[str, str]]:
        """``({(root, path): links}, {root: label})`` of every file the first files link to (within
        ``query.options.path_glob``), each with its PageRank over the one-hop edges (:func:`_ranks`)."""
        only = path_filter(query.options.path_glob)
        names = [i.rsplit(".", 1)[-1] for i in code_identifiers(query.original)]
        firsts = {d.key(): d for d in reversed(docs)}
        links: dict[tuple[str, str], _Links] = defaultdict(_Links)
        labels = {}
        graph: dict[tuple[str, str], float] = defaultdict(float)
        for target in self.targets():
            labels[target.root] = target.label
            near = [firsts[k] for k in files[:EDGE_SEEDS] if k[0] == target.root]
            if not near and not names:
                continue
            store = target.store()
            by_id = store.linked([d.id for d in near])
            seeds = {d.path for d in near[:SEEDS] if (target.root, d.path) in files[:SEEDS]}
            rows = [by_id[d.id] for d in near if d.id in by_id]
            edges, _ = one_hop(store, rows, {d.path: d.label for d in near}, names)
            for e in (e for e in edges if e.followed(only)):
                overlap = term_overlap(terms, e.definition())
                link, strength = links[(target.root, e.target.path)], e.weight * (1 + overlap)
                link.near += strength
                link.up += strength if e.up else 0.0
                link.first += strength if e.source_path in seeds or not e.source_path else 0.0
                link.overlap = max(link.overlap, overlap)
                link.add(e, strength)
                source = f"{target.root}\0{e.source_path}" if e.source_path else _QUESTION
                graph[(source, f"{target.root}\0{e.target.path}")] += e.weight
            whole = store.linked([r["id"] for path in sorted(seeds) for r in store.rows_for_path(path)])
            callees, users = file_links(store, list(whole.values()), {d.path: d.label for d in near})
            users = [e for e in users if e.followed(only)]
            spread = _spread(users)
            for e, user in [(e, False) for e in callees if e.followed(only)] + [(e, True) for e in users]:
                link = links[(target.root, e.target.path)]
                names_of, sure = (link.users, e.sure / spread[e.name]) if user else (link.callees, e.sure)
                names_of[e.name] = max(names_of.get(e.name, 0.0), sure)
                overlap = term_overlap(terms, e.definition())
                link.overlap = max(link.overlap, overlap)
                link.add(e, e.weight * overlap)
        ranks = _ranks(graph, [firsts[k] for k in files[:EDGE_SEEDS]])
        for (root, path), link in links.items():
            link.rank = ranks.get(f"{root}\0{path}", 0.0)
        return dict(links), labels

    def _gains(
        self, query: Query, docs: list[Document], links: dict[tuple[str, str], _Links]
    ) -> dict[tuple[str, str], float]:
        """Each linked file's graph gain (:meth:`_Links.gain`), scaled as the retriever scales a
        score: by :data:`DOWNWEIGHT_FACTOR` when down-weighted for this question, and by its prior (a
        file the retriever found alone defining a name the question spells counts as named there too:
        the retrieve event's ``defining``);
        and by the question's words it holds (:data:`OVERLAP_POWER`: its ``overlap`` over the
        highest of the linked files'; 1 when none holds any)."""
        intent = question_intent(query.asked)
        retrieval = query.retrieval_event()
        defining = set(retrieval.data.get("defining", ())) if retrieval is not None else set()
        down = self.ranker.downweighted_for(query.asked, intent, defining)
        targets = [t for t in self.targets() if any(key[0] == t.root for key in links)]
        prior = self.ranker.prior_for(query.asked, intent, targets, [t.store() for t in targets], defining)
        hits = {d.key(): _file_hit(d) for d in reversed(docs)}
        gains = {}
        most = max((link.rank for link in links.values()), default=0.0)
        words = max((link.overlap for link in links.values()), default=0.0)
        for key, link in links.items():
            hit = hits.get(key) or (link.edge.target if link.edge is not None else None)
            if hit is None:
                continue
            link.factor = (DOWNWEIGHT_FACTOR if down(key[1]) else 1.0) * prior(key[0], hit)
            share = (link.overlap / words) ** OVERLAP_POWER if words > 0 else 1.0
            gains[key] = link.factor * link.gain(most) * share
        return gains

    @staticmethod
    def _documents(
        docs: list[Document],
        new: dict[tuple[str, str], Document],
        order: list[tuple[str, str]],
        scores: dict[tuple[str, str], float],
        entered: set[tuple[str, str]],
        links: dict[tuple[str, str], _Links],
    ) -> list[Document]:
        """Every document grouped by file in ``order``, each file's best document scored ``scores``
        (its others scaled alike); of the files that ``entered``, the documents holding the link's
        target say why (a retrieved span beside the linked definition does not: chi's ``FileServer``
        said "caller of NewRouter", which ``main`` above it calls)."""
        by_file: dict[tuple[str, str], list[Document]] = defaultdict(list)
        for d in docs:
            by_file[d.key()].append(d)
        for key, d in new.items():
            by_file[key].append(d)
        out = []
        for key in order:
            group = by_file[key]
            best = group[0].score
            edge = links[key].edge if key in entered else None
            for i, d in enumerate(group):
                if key in scores:  # the file's new score; its other documents keep their share of its best
                    d = replace(d, score=scores[key] * (d.score / best if best > 0 and i else 1.0))
                if edge is not None and not d.via and _holds(d, edge.target):
                    d = replace(d, via=edge.via, via_path=edge.source_path, via_sure=edge.sure)
                out.append(d)
        return out


def _ranks(graph: dict[tuple[str, str], float], seeds: list[Document]) -> dict[str, float]:
    """Personalised PageRank (:func:`~codeask.query.graph.pagerank`) over the one-hop edges
    ``graph`` (``{(from node, to node): summed weight}``, a node ``root\\0path``), restarting at the
    ``seeds`` in proportion to their retrieval scores and at the question's names as at the best
    seed, as Aider's repo map ranks tags; each node's rank less its own restart (``1 - DAMPING``
    times its share: a seed's retrieval score is in its score already), at least 0."""
    personal = {f"{d.root}\0{d.path}": max(d.score, 1e-9) for d in seeds}
    personal[_QUESTION] = max(personal.values(), default=1.0)
    total = sum(personal.values())
    ranks = pagerank(graph, personal, DAMPING) if graph else {}
    return {n: max(0.0, r - (1 - DAMPING) * personal.get(n, 0.0) / total) for n, r in ranks.items()}


def _below(
    firsts: dict[tuple[str, str], Document],
    files: list[tuple[str, str]],
    order: list[tuple[str, str]],
    score: dict[tuple[str, str], float],
    top: float,
) -> dict[tuple[str, str], float]:
    """The new scores of the files past the first :data:`SEEDS` (``order[SEEDS:]``): their combined
    ``score`` (units of the best file's, ``top``) in retrieval units, scaled alike so that the best
    of them is no higher than the last of the first files' (which keep theirs): the scores descend
    along the answer, as ``one_per_file`` and the prompt read them."""
    rest = {k: score[k] * top for k in order[SEEDS:]}
    last = firsts[files[min(SEEDS, len(files)) - 1]].score if files else 0.0
    high = max(rest.values(), default=0.0)
    factor = last / high if high > last > 0 else 1.0
    return {k: v * factor for k, v in rest.items()}


def _spread(users: list[Edge]) -> dict[str, int]:
    """``{name: files using it}`` among ``users`` (whole-file links into the files using a name the
    first files define): a name many files use (a utility, a decorator) says little about each of them."""
    files: dict[str, set[str]] = defaultdict(set)
    for e in users:
        files[e.name].add(e.target.path)
    return {name: len(paths) for name, paths in files.items()}


def _holds(doc: Document, hit: Hit) -> bool:
    """Whether ``doc`` shares a line with ``hit`` (the definition a link leads to) in one file."""
    return doc.path == hit.path and doc.start_line <= hit.end_line and hit.start_line <= doc.end_line


def _entering(edge: Edge, label: str, root: str) -> Document:
    """The document a file not retrieved enters with: the chunk its strongest link leads to,
    named by the definition it leads to, scored 0 (its score is its graph gain)."""
    return Document.from_hit(edge.labelled(), root, 0.0, label)
