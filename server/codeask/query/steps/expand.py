"""Response transformer: follow the symbol graph from the best hits to the files of their call chain.

After ``one_per_file`` (and rerank), the first ``seeds`` documents are looked up in the graph
(:func:`codeask.query.graph.one_hop`): the definitions they call, instantiate, read or take as
types, the chunks that call what they define, and the definitions of the names the question spells
(``CamelCase``, ``snake_case``, ``pkg.func``: :func:`~codeask.query.steps.retrieve.code_identifiers`).
Files are ranked by personalised PageRank over those edges (each weighted by how sure it is:
:func:`codeask.query.resolve.sureness`), restarting at the hits in proportion to
their scores (as Aider's repo map ranks tags), times ``1 + the share of the question's words`` the
candidate chunk holds, times :data:`~codeask.query.steps.priors.DOWNWEIGHT_FACTOR` for tests, docs and examples
unless the question asks for that kind ("the test that ...": the retriever's own rule for the question,
:meth:`~codeask.query.steps.retrieve.HybridRetrieve.downweighted_for`), so a question about a test can reach it.

The best ``files`` new files (``retrieval.expand_files``) are added after the retrieved ones, one
document per file (the chunk the edge leads to; for a caller, the calling definition, never an
import block), each saying why in ``Document.via``; they take the
places of the weakest retrieved files when ``max_files`` is reached, never those of the seeds. The
answer's prompt moves each right after the file it was reached from, so it reads along the call
chain (:func:`~codeask.query.pipeline.along_chain`), while the sources keep the retrieval ranks
(moving them up cost 0.035 MRR on the requests question set). The event records every addition
with its edge and rank.

A question that asks for the callers of a symbol ("callers of `should_strip_auth`", "who calls
Session.send": :func:`~codeask.query.intent.caller_symbols`) also gets them from the graph, tests
included, each cited at the calling definition (:mod:`codeask.query.steps.callers`): in a retrieved
file they replace the span holding them, caller files retrieval missed come first among the added.
Every document is labelled by the definition in it that matches the question best, not by its
chunk's first (:func:`relabelled`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from codeask.index.rows import Hit, split_identifier
from codeask.query.graph import Edge, one_hop, pagerank
from codeask.query.intent import Intent, caller_symbols, question_intent
from codeask.query.pipeline import Document, Query
from codeask.query.sites import matched_symbol
from codeask.query.steps.callers import caller_documents, callers_ahead, callers_first
from codeask.query.steps.retrieve import SearchTarget, code_identifiers, path_filter

__all__ = ["Expand", "question_terms", "relabelled", "term_overlap"]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_QUESTION = "\0question"


def question_terms(question: str) -> set[str]:
    """The question's words of 3+ letters, identifiers split (``rebuild_auth`` -> rebuild, auth)."""
    return {p for w in _WORD.findall(question) for p in split_identifier(w) if len(p) >= 3}


def term_overlap(terms: set[str], hit: Hit) -> float:
    """Share of ``terms`` found in the hit's path, symbol and content words."""
    if not terms:
        return 0.0
    words = {p for w in _WORD.findall(f"{hit.path} {hit.symbol} {hit.content}") for p in split_identifier(w)}
    return len(terms & words) / len(terms)


class Expand:
    """Adds up to ``files`` files reached along the symbol graph from the first ``seeds`` documents.

    Args:
        targets: the roots to search (:class:`~codeask.query.steps.retrieve.SearchTarget`).
        downweighted_for: for a question and its intent, whether a path ranks lower for it (tests, docs, unless the
            question asks for them: the retriever's
            :meth:`~codeask.query.steps.retrieve.HybridRetrieve.downweighted_for`).
        factor: multiplier of a downweighted candidate (:data:`~codeask.query.steps.priors.DOWNWEIGHT_FACTOR`).
        files: files added at most (``retrieval.expand_files``); 0 adds none.
        max_files: files kept in all (``retrieval.max_files``; ``query.options.max_files`` wins).
        seeds: documents the graph is followed from.
    """

    name = "expand"

    def __init__(
        self,
        targets: Callable[[], list[SearchTarget]],
        downweighted_for: Callable[[str, Intent], Callable[[str], bool]],
        factor: float,
        *,
        files: int = 3,
        max_files: int = 8,
        seeds: int = 5,
    ):
        self.targets, self.downweighted_for, self.factor = targets, downweighted_for, factor
        self.files, self.max_files, self.seeds = files, max_files, seeds

    def __call__(self, query: Query) -> Query:
        terms = question_terms(query.original)
        docs = [relabelled(d, terms) for d in query.documents]
        names = [i.rsplit(".", 1)[-1] for i in code_identifiers(query.original)]
        if self.files <= 0 or not (docs or names):
            query.reordered(self.name, docs, added=[])
            return query
        docs, callers, holding = self._callers(query, docs)
        seeds = docs[: self.seeds]
        found: list[tuple[str, str, Edge]] = []  # (root, label, edge)
        for target in self.targets():
            mine = [d for d in seeds if d.root == target.root]
            store = target.store()
            links = store.linked([d.id for d in mine])
            rows = [links[d.id] for d in mine if d.id in links]
            edges, _ = one_hop(store, rows, {d.path: d.label for d in mine}, names)
            found += [(target.root, target.label, e) for e in edges]
        taken = {group[0].key() for group, _ in callers}
        picked = [(g, sure) for g, sure in self._pick(query, docs, seeds, found) if g[0].key() not in taken]
        groups = callers + picked[: max(0, self.files - len(callers))]
        out = callers_ahead(self._place(query, docs, [g for g, _ in groups], len(callers)), holding)
        sure = {g[0].key(): e_sure for g, e_sure in groups}
        added = [
            {"path": d.label, "via": d.via, "score": round(d.score, 6), "sure": sure.get(d.key(), 1.0)}
            for d in out
            if d.via and not d.extra
        ]
        query.reordered(self.name, out, added=added, edges=len(found), callers=len(callers))
        return query

    def _callers(
        self, query: Query, docs: list[Document]
    ) -> tuple[list[Document], list[tuple[list[Document], float]], set[tuple[str, str]]]:
        """For a question asking for the callers of symbols (:func:`~codeask.query.intent.caller_symbols`):
        ``docs`` with each retrieved file's caller definitions cited (replacing a span that holds
        them), the caller files not retrieved, one group of documents each (the surest caller
        first, the others as added spans), with how sure their link is, and the keys of all the
        files holding callers. Tests are callers too."""
        symbols = caller_symbols(query.original)
        if not symbols:
            return docs, [], set()
        only = path_filter(query.options.path_glob)
        floor = min((d.score for d in docs), default=1.0)
        files: dict[tuple[str, str], list[tuple[Document, float]]] = {}
        for target in self.targets():
            for doc, sure in caller_documents(target, symbols, floor):
                if only is None or only(doc.path):
                    files.setdefault(doc.key(), []).append((doc, sure))
        holding = set(files)
        out = callers_first(docs, files)
        new = [([replace(doc, extra=i > 0) for i, (doc, _) in enumerate(s)], s[0][1]) for s in files.values()]
        return out, sorted(new, key=lambda g: -g[1]), holding

    def _pick(
        self, query: Query, docs: list[Document], seeds: list[Document], found: list[tuple[str, str, Edge]]
    ) -> list[tuple[list[Document], float]]:
        """The best ``files`` new files among the edges' targets, best first: one document each
        (labelled with the definition the edge leads to, not the chunk's first; ``via_path`` the file
        its edge came from, ``""`` for a name in the question) and how sure the edge is
        (:func:`~codeask.query.resolve.sureness`)."""
        only = path_filter(query.options.path_glob)
        down = self.downweighted_for(query.asked, question_intent(query.asked))
        have = {d.key() for d in docs}
        terms = question_terms(query.original)
        personal = {f"{d.root}\0{d.path}": max(d.score, 1e-9) for d in seeds}
        personal[_QUESTION] = max(personal.values(), default=1.0)
        graph: dict[tuple[str, str], float] = {}
        best: dict[tuple[str, str], tuple[float, str, str, Edge]] = {}
        for root, label, e in found:
            key = (root, e.target.path)
            if key in have or not e.followed(only):
                continue
            source = f"{root}\0{e.source_path}" if e.source_path else _QUESTION
            node = f"{root}\0{e.target.path}"
            graph[(source, node)] = graph.get((source, node), 0.0) + e.weight
            strength = e.weight * (1 + term_overlap(terms, e.target))
            if key not in best or strength > best[key][0]:
                best[key] = (strength, root, label, e)
        ranks = pagerank(graph, personal)
        scored = []
        for _strength, root, label, e in best.values():
            score = ranks.get(f"{root}\0{e.target.path}", 0.0) * (1 + term_overlap(terms, e.target))
            if down(e.target.path):
                score *= self.factor
            scored.append((score, root, label, e))
        scored.sort(key=lambda t: (-t[0], t[1], t[3].target.path))
        floor = min((d.score for d in docs), default=1.0)
        top = (scored[0][0] if scored else 0.0) or 1.0
        return [
            (
                [
                    replace(
                        Document.from_hit(e.labelled(), root, floor * score / top, label),
                        via=e.via,
                        via_path=e.source_path,
                        via_sure=e.sure,
                    )
                ],
                e.sure,
            )
            for score, root, label, e in scored[: self.files]
        ]

    def _place(
        self, query: Query, docs: list[Document], picked: list[list[Document]], callers: int = 0
    ) -> list[Document]:
        """``docs`` then the picked files' documents (best file first; the first ``callers`` of them
        hold the callers a question asks for), the weakest retrieved files that are not seeds dropped
        to stay within ``max_files``; the caller files go in before the seeds beyond the first.
        Retrieved files keep their ranks; the prompt reads the added ones along the chain
        (:func:`~codeask.query.pipeline.along_chain`)."""
        limit = query.options.max_files or self.max_files
        files = list(dict.fromkeys(d.key() for d in docs))
        seeds = min(self.seeds, len(files), max(1, limit - callers) if callers else self.seeds)
        kept = set(files[: max(limit - len(picked), seeds)])
        added = [d for group in picked[: max(0, limit - len(kept))] for d in group]
        return [d for d in docs if d.key() in kept] + added


def relabelled(doc: Document, terms: set[str]) -> Document:
    """``doc`` named by the definition in it that matches the question's ``terms``
    (:func:`question_terms`) best, not by its chunk's first (:func:`~codeask.query.sites.matched_symbol`)."""
    hit = Hit(doc.id, doc.path, doc.language, doc.start_line, doc.end_line, doc.symbol, doc.content, doc.score)
    return replace(doc, symbol=matched_symbol(hit, terms))
