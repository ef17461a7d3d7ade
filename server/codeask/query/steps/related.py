"""Retriever for explain: code related to a selection, ranked as ask ranks it.

The selection (``query.options.selection.span``, a :class:`~codeask.query.span.Span`) gives three
kinds of rankings per root, fused with the ask retriever's :func:`~codeask.query.steps.fusion.fuse`
(per-file reciprocal rank fusion, files matching ``retrieval.downweight_patterns`` - tests, docs,
examples, configs - multiplied by :data:`~codeask.query.steps.priors.DOWNWEIGHT_FACTOR`, exactly as for a question):

* definitions it uses: each distinctive identifier of the selection (:func:`identifiers`) searched
  by keyword, a chunk whose symbol *is* that identifier first;
* places that use it: the selection's symbol name, searched by keyword;
* similar code: a dense search with the selection's vector (``query.embeddings[0]``, when the index
  has vectors);
* its neighbours in the symbol graph, as ``codeask related`` lists them
  (:func:`codeask.query.span_links.span_edges` over the definitions the selection covers, its own
  file included: the definitions it calls, reads or takes, and the code calling what it defines, an
  edge counting when its name is in the selection's text), weighted
  :attr:`RelatedRetrieve.graph_weight`; the documents it reaches come first (in fused order), each
  narrowed to the definition the edge links (``Cart.total``, not the ``Cart`` chunk; a caller the
  chunker split, whole), with the edge
  it came along as ``via`` (``caller of apply_discount in pricing.py:6``) and
  ``via_sure``, so hover's related-code links list the callers and callees, marked so, before code
  that only shares words (no ``via``).

The selection's own chunks and anything overlapping it in its own file are left out, as are secret
files. At most ``limit`` documents are kept, at most ``per_file`` of one file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from codeask.index.walk import is_secret
from codeask.query.graph import Edge, via_parts
from codeask.query.names import COMMON_NAMES
from codeask.query.pipeline import Document, Query
from codeask.query.span_links import span_edges
from codeask.query.steps.fusion import fuse
from codeask.query.steps.priors import DOWNWEIGHT_FACTOR
from codeask.query.steps.retrieve import RRF_K, HybridRetrieve, SearchTarget
from codeask.settings import IndexSettings, RetrievalSettings

if TYPE_CHECKING:
    from codeask.index.rows import Hit

__all__ = ["RelatedRetrieve", "identifiers"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def identifiers(text: str, limit: int = 8) -> list[str]:
    """Distinctive identifiers of ``text`` (no keywords, builtins or 1-2 letter names), longest and
    rarest-looking (``snake_case`` / ``camelCase`` count double) first, at most ``limit``."""
    counts: dict[str, int] = {}
    order: dict[str, int] = {}
    for i, m in enumerate(_IDENT.finditer(text)):
        word = m.group(0)
        if word in COMMON_NAMES or len(word) < 3:
            continue
        counts[word] = counts.get(word, 0) + 1
        order.setdefault(word, i)
    ranked = sorted(counts, key=lambda w: (-len(w) * (1 + ("_" in w or any(c.isupper() for c in w[1:]))), order[w]))
    return ranked[:limit]


class RelatedRetrieve:
    """The explain retriever: pending -> retrieved with the code related to the selection.

    Args:
        targets: the roots to search (as for :class:`~codeask.query.steps.retrieve.HybridRetrieve`).
        retrieval: ``rrf_k`` and the down-weighting settings, shared with ask.
        index: the secret-file patterns (a secret file is never related code).
        limit: documents kept (6 by default: a prompt's worth of context for one selection).
        per_file: documents kept of one file (2: several definitions of one module may matter).
        per_search: hits fetched per keyword or dense search (20).
    """

    name = "retrieve"
    graph_weight = 2.0
    """Weight of the symbol-graph ranking: a call or a caller is stronger evidence of relatedness
    than a shared word, so it outweighs one keyword or dense ranking."""

    def __init__(
        self,
        targets: Callable[[], list[SearchTarget]],
        retrieval: RetrievalSettings,
        index: IndexSettings,
        *,
        limit: int = 6,
        per_file: int = 2,
        per_search: int = 20,
    ):
        self.targets = targets
        self.retrieval = retrieval
        self.index = index
        self.limit, self.per_file, self.per_search = limit, per_file, per_search
        self.ranker = HybridRetrieve(targets, retrieval)  # its down-weighting rules, one copy

    def __call__(self, query: Query) -> Query:
        span = query.options.explained().span
        idents = identifiers(span.text)
        usage = span.symbol.rsplit(".", 1)[-1] if span.symbol else ""
        vector = query.embeddings[0] if query.embeddings else None
        rankings: list[tuple[float, str, list[Hit]]] = []
        linked: dict[tuple[str, str], Edge] = {}  # (root, chunk id) of the selection's graph neighbours
        targets = self.targets()
        for target in targets:
            store = target.store()
            for ident in idents:
                hits = store.keyword_search(ident, self.per_search)
                named = [h for h in hits if h.symbol.rsplit(".", 1)[-1] == ident]  # its definition first
                rankings.append((1.0, target.root, named + [h for h in hits if h not in named]))
            if usage:
                rankings.append((1.0, target.root, store.keyword_search(usage, self.per_search)))
            if vector is not None:
                rankings.append((1.0, target.root, store.vector_search(vector, self.per_search)))
            if target.root == span.root and span.own_ids:
                edges = span_edges(store, list(store.linked(span.own_ids).values()), (span.start_line, span.end_line))
                # the selection's own edges: its chunks may hold other definitions (their callers are not its);
                # a name between non-word characters (\b never matches before TypeScript's #fetch)
                edges = [e for e in edges if re.search(rf"(?<![\w$#]){re.escape(e.name)}(?![\w$])", span.text)]
                ranked = sorted(edges, key=lambda e: (-e.weight, e.target.path, e.target.start_line))
                rankings.append((self.graph_weight, target.root, [e.target for e in ranked]))
                for e in reversed(ranked):  # the surest edge of each chunk
                    linked[target.root, e.target.id] = e

        def own(root: str, hit: Hit) -> bool:
            """The selection itself: a chunk of it, or lines overlapping it; a caller in a chunk of it (a
            reader of a constant in the constant's own chunk: ``slow`` below ``LIMIT_MS = 500``) by its lines."""
            edge = linked.get((root, hit.id))
            if hit.id in span.own_ids and not _calls_it(edge):
                return True
            shown = hit if edge is None else edge.target
            same_file = root == span.root and shown.path == span.path
            return same_file and shown.start_line <= span.end_line and shown.end_line >= span.start_line

        rankings = [
            (w, r, [h for h in hits if not own(r, h) and not is_secret(h.path, self.index)]) for w, r, hits in rankings
        ]
        fused = fuse(
            rankings,
            rrf_k=RRF_K,
            downweighted=self.ranker.downweighted,
            factor=DOWNWEIGHT_FACTOR,
        )
        fused = sorted(fused, key=lambda f: (f[2], f[3].id) not in linked)  # callers and callees first
        labels = {t.root: t.label for t in targets}
        documents = self._kept(fused, linked, labels)
        caller = next((f for f in fused if _calls_it(linked.get((f[2], f[3].id)))), None)
        if caller is not None and not any(_up(d.via) for d in documents):
            # callees filled the page: its surest caller first (ky's #fetch: six callees hid its one caller)
            documents = self._kept([caller, *(f for f in fused if f is not caller)], linked, labels)
        query.retrieved(self.name, documents, rankings=len(rankings), identifiers=idents, dense=vector is not None)
        return query

    def _kept(
        self, fused: list[tuple[float, float, str, Hit]], linked: dict[tuple[str, str], Edge], labels: dict[str, str]
    ) -> list[Document]:
        """The first :attr:`limit` documents of ``fused`` (best first), at most :attr:`per_file` of a
        file; a graph neighbour (in ``linked``, by root and chunk id) as the definition its edge links
        (the edge's target: a method packed with its class's others at its own lines, a split caller
        whole, as ``codeask related`` cites them), with the edge's ``via`` and ``via_sure``; none inside
        the lines of a document already kept."""
        documents: list[Document] = []
        per_file: dict[tuple[str, str], int] = {}
        for score, _, root, hit in fused:
            key = (root, hit.path)
            edge = linked.get((root, hit.id))
            shown = hit if edge is None else edge.target  # span_edges' targets are the definitions linked
            inside = any(
                d.key() == key and d.start_line <= shown.start_line <= shown.end_line <= d.end_line for d in documents
            )
            if per_file.get(key, 0) >= self.per_file or inside:
                continue  # a chunk of a split caller already cited whole is that caller again
            per_file[key] = per_file.get(key, 0) + 1
            doc = Document.from_hit(shown, root, score, labels.get(root, ""))
            documents.append(doc if edge is None else replace(doc, via=edge.via, via_sure=edge.sure))
            if len(documents) >= self.limit:
                break
        return documents


def _calls_it(edge: Edge | None) -> bool:
    """Whether ``edge`` leads to a caller (or another user) of the selection (``caller of send in a.py:10``)."""
    return edge is not None and edge.up


def _up(via: str) -> bool:
    """Whether ``via`` says a caller or another user of the selection (:func:`~codeask.query.graph.via_parts`)."""
    parts = via_parts(via)
    return parts is not None and parts[2]
