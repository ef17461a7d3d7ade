"""Response transformer: the graph neighbours of the best files compete for their places by evidence.

Runs right after retrieval, before ``one_per_file`` cuts the fused list to ``max_files`` files. The
best chunks of the first :data:`SEEDS` files are looked up in the symbol graph
(:func:`codeask.query.graph.one_hop`: the definitions they call, instantiate, read or take as types,
and the chunks that call what they define). Every other retrieved file an edge reaches is scored
by the sum of its edges' weights (each the edge's sureness over the name's definitions:
:func:`codeask.query.resolve.sureness`) times ``1 + the share of the question's words`` its target
chunk holds (:func:`~codeask.query.steps.expand.question_terms`). The seed files in their order
(where a walk over the graph restarts, so personalised PageRank ranks them first), then those
files, best first, make one more ranking for the reciprocal rank fusion the retriever did
(:mod:`codeask.query.steps.fusion`): each gains ``1 / (RRF_K + its rank)`` in it, scaled by the
prior and down-weighting the retriever gave it, so a neighbour's file score is what it would be had
the retriever fused this ranking beside its keyword and dense ones (weight 1, as each of those).

Why: on the multi-file development set (bench/multifile, 129 questions) a needed file the top 10
missed was most often ranked 11-20, where keyword and dense ranks no longer tell needed files
apart, while being a graph neighbour of the first three files did: 8% of the files ranked 11-20
that were such neighbours were needed, 2% of the others. Retrieval evidence stays: a neighbour
must have been retrieved, and one ranking moves a file only past files of nearly equal score. A
file that enters the first ``max_files`` this way says why (``Document.via``, the edge it came
along; ``via_path`` its seed's file). The event records each boosted file with its gain and rank.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

from codeask.index.rows import Hit
from codeask.query.graph import Edge, one_hop
from codeask.query.intent import question_intent
from codeask.query.pipeline import Document, Query
from codeask.query.steps.expand import question_terms, term_overlap
from codeask.query.steps.priors import DOWNWEIGHT_FACTOR
from codeask.query.steps.retrieve import RRF_K, HybridRetrieve, SearchTarget

__all__ = ["Neighbours", "SEEDS"]

#: Files whose graph neighbours are ranked: the first three, where most needed files rank
#: (bench/multifile: the needed share of ranks 1-5 is over half).
SEEDS = 3


def _file_hit(d: Document) -> Hit:
    """The hit the retriever's prior reads (path, language, kind) of document ``d``."""
    return Hit(d.id, d.path, d.language, d.start_line, d.end_line, d.symbol, d.content, d.score, kind=d.kind)


class Neighbours:
    """Re-fuses the retrieved files with the graph ranking of the first :data:`SEEDS` files' neighbours.

    Args:
        targets: the roots searched (:class:`~codeask.query.steps.retrieve.SearchTarget`).
        ranker: the retriever, whose down-weighting and priors a gain is scaled by.
        max_files: files the answer keeps (``retrieval.max_files``; ``query.options.max_files`` wins).
    """

    name = "neighbours"

    def __init__(self, targets: Callable[[], list[SearchTarget]], ranker: HybridRetrieve, *, max_files: int = 8):
        self.targets, self.ranker, self.max_files = targets, ranker, max_files

    def __call__(self, query: Query) -> Query:
        docs = query.documents
        files = list(dict.fromkeys(d.key() for d in docs))
        edges = self._edges(query, docs, files[:SEEDS])
        ranking = self._ranking(query, edges, files[:SEEDS], {d.key() for d in docs})
        if len(ranking) <= min(SEEDS, len(files)):  # no neighbour: the seeds' order stands
            query.reordered(self.name, docs, boosted=[])
            return query
        gain = self._gains(query, docs, ranking)
        best = {key: max(d.score for d in docs if d.key() == key) for key in gain}
        scaled = [
            replace(d, score=d.score * (1 + gain[d.key()] / best[d.key()])) if d.key() in gain else d for d in docs
        ]
        order = sorted(range(len(scaled)), key=lambda i: (-scaled[i].score, i))
        out = [scaled[i] for i in order]
        limit = query.options.max_files or self.max_files
        before = set(files[:limit])
        after = list(dict.fromkeys(d.key() for d in out))[:limit]
        entered = {key: edge for key in after if key not in before and (edge := ranking.get(key, (0, None))[1])}
        out = [
            replace(d, via=entered[d.key()].via, via_path=entered[d.key()].source_path, via_sure=entered[d.key()].sure)
            if d.key() in entered
            else d
            for d in out
        ]
        boosted = [
            {"path": key[1], "gain": round(gain[key], 6), "rank": ranking[key][0], "entered": key in entered}
            for key in sorted(gain, key=lambda k: ranking[k][0])
        ]
        query.reordered(self.name, out, boosted=boosted, edges=len(edges))
        return query

    def _edges(self, query: Query, docs: list[Document], seeds: list[tuple[str, str]]) -> list[tuple[str, Edge]]:
        """``(root, edge)`` one hop from the best chunk of each seed file."""
        firsts = {d.key(): d for d in reversed(docs) if d.key() in seeds}
        found: list[tuple[str, Edge]] = []
        for target in self.targets():
            mine = [d for key, d in firsts.items() if key[0] == target.root]
            if not mine:
                continue
            store = target.store()
            links = store.linked([d.id for d in mine])
            rows = [links[d.id] for d in mine if d.id in links]
            edges, _ = one_hop(store, rows, {d.path: d.label for d in mine})
            found += [(target.root, e) for e in edges]
        return found

    def _ranking(
        self, query: Query, edges: list[tuple[str, Edge]], seeds: list[tuple[str, str]], retrieved: set[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[int, Edge | None]]:
        """``{(root, path): (rank from 1, its strongest edge)}``: the seeds first, in their order
        (where a walk over the graph restarts, as personalised PageRank ranks them; no edge), then
        the retrieved files the edges reach, by the sum of their edges' weights times ``1 + overlap``."""
        terms = question_terms(query.original)
        strength: dict[tuple[str, str], float] = defaultdict(float)
        strongest: dict[tuple[str, str], tuple[float, Edge]] = {}
        for root, e in edges:
            key = (root, e.target.path)
            if key in seeds or key not in retrieved:  # a seed's rank is its place
                continue
            s = e.weight * (1 + term_overlap(terms, e.target))
            strength[key] += s
            if key not in strongest or s > strongest[key][0]:
                strongest[key] = (s, e)
        order = sorted(strength, key=lambda k: (-strength[k], k))
        ranked: dict[tuple[str, str], tuple[int, Edge | None]] = {key: (i, None) for i, key in enumerate(seeds, 1)}
        ranked.update({key: (len(seeds) + i, strongest[key][1]) for i, key in enumerate(order, 1)})
        return ranked

    def _gains(
        self, query: Query, docs: list[Document], ranking: dict[tuple[str, str], tuple[int, Edge | None]]
    ) -> dict[tuple[str, str], float]:
        """Each ranked file's RRF gain ``1 / (RRF_K + rank)``, scaled as the retriever scaled its
        score: by :data:`DOWNWEIGHT_FACTOR` when down-weighted for this question, and by its prior."""
        intent = question_intent(query.asked)
        down = self.ranker.downweighted_for(query.asked, intent)
        targets = [t for t in self.targets() if any(key[0] == t.root for key in ranking)]
        prior = self.ranker.prior_for(query.asked, intent, targets, [t.store() for t in targets])
        firsts = {d.key(): d for d in reversed(docs) if d.key() in ranking}
        gains = {}
        for key, (rank, _) in ranking.items():
            factor = (DOWNWEIGHT_FACTOR if down(key[1]) else 1.0) * prior(key[0], _file_hit(firsts[key]))
            gains[key] = factor / (RRF_K + rank)
        return gains
