"""Retriever: hybrid keyword + dense search over every root, fused per file with reciprocal rank fusion.

For each search text (the original question, then any subquestions) and each root, two rankings of
chunks are fetched: BM25 over the keyword text and cosine over the vectors (where vectors exist).
They are fused at the file level, each file scored by its best chunk in each ranking::

    file_score(f) = sum over rankings r of  weight(r) / (rrf_k + rank of f among r's distinct files)

with ``weight`` 1 for the original question and ``subquestion_weight`` for subquestions. Each
keyword search also gives a per-file ranking, files ordered by the sum of their matching chunks'
scores (:func:`~codeask.query.steps.fusion.file_ranking`), so a file whose matches are spread over
many chunks is a candidate as it is for whole-file BM25; each dense search gives one the same way,
files ordered by the sum of their best chunks' cosine similarities (:data:`~codeask.query.steps.fusion.DENSE_BEST`),
so a module the answer walks through, several of whose chunks are near the question, is one
although no single chunk of it is the nearest. When the
question names code (``snake_case``, ``camelCase``, ``dotted.names``), a third ranking lists the
candidates that spell those names verbatim (:func:`~codeask.query.steps.identifiers.identifier_ranking`), and one lists the
candidates of files whose name it spells (:func:`named_file_ranking`). A question shaped like a
bug report (``query.parts``, see :mod:`codeask.query.report`) adds two more, weighted
``evidence_weight``: the chunks its stack frames point at, innermost first, and the code chunks
whose string literals produce its text (:mod:`codeask.query.steps.evidence`). Files
matching ``retrieval.downweight_patterns`` (tests, docs, changelogs, examples, templates, CI and
tool configs) are multiplied by :data:`DOWNWEIGHT_FACTOR`, unless the question names the file
or asks for that kind ("the tests"); each file is then scaled by its prior (vendored, generated and
data files lower; files in languages other than the ones the question names lower:
:mod:`codeask.query.steps.priors`). Each ranking is fetched deep enough to hold ``POOL * max_files`` (:data:`~codeask.query.steps.depth.POOL`)
files where as many match, and the fused list keeps ``max_files`` files even past ``top_k`` chunks. Chunks within a file are ordered by their own chunk-level RRF
score relative to the file's best chunk (:func:`codeask.query.steps.fusion.fuse`), so the first chunk of each file is its best
one and files come in file-score order; a file's boilerplate chunks (import blocks, module headers)
rank below its other matching chunks (:func:`~codeask.query.steps.fusion.demote_boilerplate`), so the best span a file leads with
is a definition whenever one matched, and one the question names in words when it holds one
(:func:`~codeask.query.question_words.names_definition`, read from the question without its stack frames). Fusing per file rather than per chunk is what beat whole-file BM25 in the
prototype (shared/eval/FINDINGS.md, point 3); the down-weighting is a setting, on by default.
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict
from collections.abc import Callable, Container, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

import pathspec

import codeask.query.steps.evidence as evidence_module
from codeask.index.hubs import load_hubs
from codeask.query.intent import Intent, question_intent
from codeask.query.pipeline import Document, Query
from codeask.query.question_words import names_definition
from codeask.query.report import QuestionParts
from codeask.query.steps.depth import POOL, keep_files, per_file
from codeask.query.steps.evidence import frame_ranking, literal_ranking
from codeask.query.steps.fusion import DENSE_BEST, file_ranking, fuse
from codeask.query.steps.identifiers import code_identifiers, defining_paths, identifier_ranking
from codeask.query.steps.parse import question_parts, searched_text
from codeask.query.steps.priors import DOWNWEIGHT_FACTOR, downweight_rule, file_prior, lifted
from codeask.settings import RetrievalSettings

if TYPE_CHECKING:  # the store module imports LanceDB (~1.4 s); retrieval only passes its rows on
    from codeask.index.rows import Hit
    from codeask.index.store import Store

__all__ = ["HybridRetrieve", "SearchTarget", "path_filter", "CANDIDATES", "RRF_K"]

#: Chunks fetched from each ranking (keyword, dense, ...) before fusion, at least ``top_k``: five
#: times the default ``retrieval.top_k``, so fusion sees what one ranking puts lower. Was
#: ``retrieval.candidates``.
CANDIDATES = 100
#: Reciprocal rank fusion constant, score = sum 1 / (RRF_K + rank): the k = 60 of Cormack, Clarke and
#: Buettcher, "Reciprocal Rank Fusion outperforms Condorcet and individual Rank Learning Methods"
#: (SIGIR 2009). Was ``retrieval.rrf_k``.
RRF_K = 60


@dataclass(frozen=True)
class SearchTarget:
    """One root to search: its absolute folder, a callable returning its store, and the name its
    documents' labels carry (``root_label``, see :func:`codeask.query.pipeline.root_labels`)."""

    root: str
    store: Callable[[], Store]
    label: str = ""


def names_file(lowered_question: str, path: str) -> bool:
    """Whether the (lower-cased) question spells ``path``'s file name (4+ characters) as a word."""
    name = path.rsplit("/", 1)[-1].lower()
    return len(name) >= 4 and re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", lowered_question) is not None


def named_file_ranking(
    pool: Sequence[Hit], question: str, paths: Callable[[], Iterable[str]] | None = None
) -> list[Hit]:
    """Candidates of files whose name the question spells (``.pylintrc``, ``models.py``), pool order.

    A file name that more than one indexed file carries (``paths()``, called only when the question
    names a candidate; the pool's own paths without it) does not rank: ``app.py`` in a report is as
    likely the reporter's own file as any of the project's ``app.py`` files, so it is evidence for
    none of them.
    """
    lowered = question.lower()
    named: dict[str, bool] = {}
    out = []
    for hit in pool:
        if hit.path not in named:
            named[hit.path] = names_file(lowered, hit.path)
        if named[hit.path]:
            out.append(hit)
    if not out:
        return out
    per_name: dict[str, int] = defaultdict(int)
    for path in set(paths()) if paths is not None else {hit.path for hit in pool}:
        per_name[path.rsplit("/", 1)[-1].lower()] += 1
    return [hit for hit in out if per_name[hit.path.rsplit("/", 1)[-1].lower()] <= 1]


def path_filter(glob: str | None) -> Callable[[str], bool] | None:
    """A predicate on root-relative POSIX paths for ``query.options.path_glob`` (gitignore glob
    syntax: ``*.py``, ``src/**/*.ts``, ``docs/``), or ``None`` when no glob is given.

    Raises:
        ValueError: the glob is not valid gitignore syntax.
    """
    if not glob or not str(glob).strip():
        return None
    try:
        spec = pathspec.GitIgnoreSpec.from_lines([str(glob).strip()])
    except Exception as exc:  # pathspec raises its own GitWildMatchPatternError (a ValueError) or others
        raise ValueError(f"path_glob {glob!r} is not a valid glob: {exc}") from None
    return spec.match_file


_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _searches() -> ThreadPoolExecutor:
    """The process's pool for keyword and dense searches (4 threads, started once: starting threads
    per ask cost 8 ms each on a busy 2-core machine)."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="codeask-retrieve")
        return _executor


def _kept(hits: list[Hit], only: Callable[[str], bool] | None) -> list[Hit]:
    return hits if only is None else [h for h in hits if only(h.path)]


#: Per search text, the ``(keyword, dense)`` searches of one store (dense ``None`` without a vector).
_Found = tuple["Future[list[Hit]]", "Future[list[Hit]] | None"]


@dataclass(frozen=True)
class _Question:
    """What every root's rankings read of one question: the query, its parts, the path filter,
    the depth of each search (chunks) and which files rank lower."""

    query: Query
    parts: QuestionParts
    only: Callable[[str], bool] | None
    candidates: int
    downweighted: Callable[[str], bool]


class HybridRetrieve:
    """The retriever step: pending -> retrieved with ``top_k`` documents, more when those hold
    fewer than ``POOL * max_files`` (:data:`~codeask.query.steps.depth.POOL`) files and more files match (:func:`keep_files`): the files just
    past ``max_files`` are the candidates the ``neighbours`` step may move up
    (:mod:`codeask.query.steps.neighbours`); ``one_per_file`` keeps ``max_files``.

    ``query.options.top_k`` overrides ``settings.top_k``, ``query.options.max_files``
    ``settings.max_files``; ``query.options.path_glob`` keeps only files matching a glob
    (:func:`path_filter`). Each ranking gathers at least ``POOL * max_files`` (:data:`~codeask.query.steps.depth.POOL`) files where as many
    match (:func:`per_file`). ``min_top_k`` is the least ``top_k`` a later step needs (the
    reranker's candidates: ``2 * rerank.top_k``), set when the pipeline is built.
    """

    name = "retrieve"
    subquestion_weight = 0.5
    evidence_weight = 2.0
    """Weight of the frame and string-literal rankings: a workspace frame or a message the code
    prints is stronger evidence than word overlap, so either outweighs one keyword or dense ranking."""
    message_searches = 3
    """Extra keyword searches, one per message of a bug report (first ones), widening the pool the
    literal ranking reads."""

    def __init__(self, targets: Callable[[], list[SearchTarget]], settings: RetrievalSettings, *, min_top_k: int = 0):
        self.targets = targets
        self.settings = settings
        self.min_top_k = min_top_k
        self._down = downweight_rule(settings)

    def downweighted(self, path: str) -> bool:
        """Whether ``path`` matches ``retrieval.downweight_patterns`` (gitignore syntax); such a
        file's fused score is multiplied by :data:`DOWNWEIGHT_FACTOR`."""
        return self._down(path)

    def downweighted_for(
        self, question: str, intent: Intent | None = None, defining: Container[str] = ()
    ) -> Callable[[str], bool]:
        """:meth:`downweighted`, except for files the question names (:func:`names_file`): asking
        about ``tox.ini`` or the ``ChangeLog`` still finds it first; for files ``defining`` a name
        the question spells as code (:func:`~codeask.query.steps.identifiers.defining_paths`); and for files of a
        kind the question asks for (``intent``: "the Go tests", "the docs", :func:`~codeask.query.steps.priors.lifted`)."""
        lowered = question.lower()
        intent = intent or Intent()

        def down(path: str) -> bool:
            if not self.downweighted(path) or names_file(lowered, path) or path in defining:
                return False
            return not lifted(intent, path)

        return down

    def prior_for(
        self,
        question: str,
        intent: Intent,
        targets: Sequence[SearchTarget],
        stores: Sequence[Store],
        defining: Container[str] = (),
    ) -> Callable[[str, Hit], float]:
        """Each file's prior (:func:`~codeask.query.steps.priors.file_prior`) for ``question``,
        with the hub shares each root's index measured (:func:`~codeask.index.hubs.load_hubs`); a file
        ``defining`` a name the question spells as code counts as named (:func:`~codeask.query.steps.identifiers.defining_paths`)."""
        lowered = question.lower()
        hubs = {t.root: load_hubs(s.index_dir) for t, s in zip(targets, stores) if hasattr(s, "index_dir")}
        return file_prior(intent, lambda path: names_file(lowered, path) or path in defining, hubs)

    def __call__(self, query: Query) -> Query:
        top_k = max(query.options.top_k or self.settings.top_k, self.min_top_k)
        files = query.options.max_files or self.settings.max_files
        only = path_filter(query.options.path_glob)
        candidates = max(CANDIDATES, top_k)
        if only is not None:  # the filter drops most hits: fetch more of each ranking
            candidates *= 4
        parts = self._parts(query)
        intent = question_intent(query.asked)
        question = _Question(query, parts, only, candidates, self.downweighted_for(query.asked, intent))
        targets = self.targets()
        stores = [target.store() for target in targets]
        found = self._search(query, stores, candidates, POOL * files)  # per ranking: fusion picks from every one
        rankings: list[tuple[float, str, list[Hit]]] = []
        evidence = {"frame_hits": 0, "literal_hits": 0}
        defining: set[str] = set()  # files that alone define a name the question spells (defining_paths)
        for target, store, per_text in zip(targets, stores, found):
            rankings.extend(self._root_rankings(question, target.root, store, per_text, evidence, defining))
        fused = fuse(
            rankings,
            rrf_k=RRF_K,
            downweighted=self.downweighted_for(query.asked, intent, defining),
            factor=DOWNWEIGHT_FACTOR,
            prior=self.prior_for(query.asked, intent, targets, stores, defining),
            named=names_definition(parts.search_text),
            named_files=POOL * files,
        )
        labels = {t.root: t.label for t in targets}
        documents = [
            Document.from_hit(hit, root, score, labels.get(root, ""))
            for score, _, root, hit in keep_files(fused, top_k, POOL * files)
        ]
        query.retrieved(
            self.name,
            documents,
            rankings=len(rankings),
            dense=bool(query.embeddings),
            defining=sorted(defining),
            **evidence,
        )
        return query

    def _parts(self, query: Query) -> QuestionParts:
        """The question's parts as retrieval reads them: frames and messages from all of the
        question, texts searched from its digest; only the question's text without :data:`~codeask.query.steps.evidence.REPORT_EVIDENCE`."""
        if not evidence_module.REPORT_EVIDENCE:
            return QuestionParts(search_text=query.asked)
        return replace(question_parts(query), search_text=searched_text(query))

    def _search(self, query: Query, stores: Sequence[Store], candidates: int, want: int) -> list[list[_Found]]:
        """Every root's keyword and dense searches of every search text, started at once (LanceDB
        releases the GIL: on 2 cores an ask at 1M chunks waits for the slower search, not for both);
        per store, per search text, ``(keyword, dense or None)`` futures, fused in this fixed order."""
        searches = _searches()
        return [
            [
                (
                    searches.submit(per_file, partial(store.keyword_search, text), candidates, want),
                    searches.submit(per_file, partial(store.vector_search, query.embeddings[i]), candidates, want)
                    if i < len(query.embeddings)
                    else None,
                )
                for i, text in enumerate(query.search_texts)
            ]
            for store in stores
        ]

    def _root_rankings(
        self,
        question: _Question,
        root: str,
        store: Store,
        per_text: list[_Found],
        evidence: dict[str, int],
        defining: set[str],
    ) -> list[tuple[float, str, list[Hit]]]:
        """One root's ``(weight, root, hits)`` rankings: keyword, per-file keyword, dense and per-file dense per search text, then the
        identifier, named-file, string-literal and frame rankings; counts the evidence hits in ``evidence``
        and adds to ``defining`` the files that alone define a name the question spells (:func:`~codeask.query.steps.identifiers.defining_paths`)."""
        only, parts, evidence_on = question.only, question.parts, evidence_module.REPORT_EVIDENCE
        rankings: list[tuple[float, str, list[Hit]]] = []
        pool: list[Hit] = []
        for i, (keyword, dense) in enumerate(per_text):
            weight = 1.0 if i == 0 else self.subquestion_weight
            words = _kept(keyword.result(), only)
            rankings += [(weight, root, words), (weight, root, file_ranking(words))]
            pool.extend(words)
            if dense is not None:
                hits = _kept(dense.result(), only)
                rankings += [(weight, root, hits), (weight, root, file_ranking(hits, DENSE_BEST))]
                pool.extend(hits)
        identifiers = code_identifiers(parts.search_text)
        if identifiers:
            ranking = identifier_ranking(pool, identifiers)
            rankings.append((1.0, root, ranking))
            defining.update(defining_paths(ranking, identifiers))
        named = named_file_ranking(pool, parts.search_text, store.paths) if evidence_on else []
        if named:
            rankings.append((1.0, root, named))
        for message in parts.messages[: self.message_searches]:
            pool.extend(_kept(store.keyword_search(message, question.candidates // 2), only))
        literals = literal_ranking(pool, question.query.asked, question.downweighted) if evidence_on else []
        if literals:
            rankings.append((self.evidence_weight, root, literals))
            evidence["literal_hits"] += len(literals)
        frames = _kept(frame_ranking(store, parts.frames), only)
        if frames:
            rankings.append((self.evidence_weight, root, frames))
            evidence["frame_hits"] += len(frames)
        return rankings
