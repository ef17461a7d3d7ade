"""How the ask pipeline is assembled from the settings: subquestions -> parse_question -> embed ->
retrieve -> one_per_file -> [rerank] -> [expand] -> [widen] -> [summary] -> answer (``expand``
while ``retrieval.expand_files`` > 0, ``widen`` while :data:`codeask.query.steps.widen.SPANS_PER_FILE` > 1), with the ``[pipeline]`` custom steps
(entry-point group ``codeask.steps``, see docs/pipeline.md) in their places.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from codeask.index.embed import Embedder
from codeask.llm import LLM
from codeask.query.answer import NoLLMAnswer, SimpleAnswer
from codeask.query.custom import BUILTIN_STEPS, available_steps, load_step
from codeask.query.pipeline import Pipeline, Query, Step, root_labels
from codeask.query.steps import (
    EmbedQuery,
    GenerateSubquestions,
    HybridRetrieve,
    OnePerFile,
    ParseQuestion,
    evidence,
    widen,
)
from codeask.query.steps.expand import Expand
from codeask.query.steps.priors import DOWNWEIGHT_FACTOR
from codeask.query.steps.rerank import OnePerFileForRerank, Rerank, RetrieveAtLeast
from codeask.query.steps.retrieve import SearchTarget
from codeask.query.steps.summary import Summary
from codeask.query.templates import Templates
from codeask.settings import Settings

if TYPE_CHECKING:  # the engine and the store import LanceDB; the targets only pass them on
    from codeask.index.engine import RootIndex
    from codeask.index.store import Store

__all__ = ["build_ask_pipeline", "search_targets", "any_vectors"]


def search_targets(indexes: Iterable[RootIndex]) -> list[SearchTarget]:
    """One :class:`~codeask.query.steps.retrieve.SearchTarget` per index, labelled by
    :func:`~codeask.query.pipeline.root_labels` of all of them; each store is opened when the
    retriever first calls for it."""
    indexes = list(indexes)
    labels = root_labels([str(i.root) for i in indexes])
    return [SearchTarget(str(i.root), _store_of(i), labels[str(i.root)]) for i in indexes]


def _store_of(index: RootIndex) -> Callable[[], Store]:
    return lambda: index.store


def any_vectors(indexes: Iterable[RootIndex]) -> bool:
    """Whether any of ``indexes`` holds vectors yet (else a question is searched by keywords only)."""
    return any(i.store.has_vectors() for i in indexes)


def build_ask_pipeline(
    settings: Settings,
    *,
    llm: LLM | None,
    templates: Templates,
    embedder: Callable[[], Embedder],
    has_vectors: Callable[[], bool],
    targets: Callable[[], list[SearchTarget]],
    context: dict[str, Any] | None = None,
    stream: Callable[[str], None] | None = None,
    on_sources: Callable[[Query], None] | None = None,
) -> Pipeline:
    """The ask pipeline for ``settings``; without ``llm``: no subquestions, no LLM answer.

    Args:
        settings: the workspace settings (``llm``, ``retrieval``, ``rerank``, ``summary``, ``pipeline``).
        llm: the answering model, or ``None``.
        templates: the templates every step renders (collects refused overrides' warnings).
        embedder: returns the embedding model (loaded on first use).
        has_vectors: whether any root has vectors yet (else the question is not embedded).
        targets: the roots to search (:class:`~codeask.query.steps.retrieve.SearchTarget`).
        context: more keyword arguments a custom step's factory may take (e.g. ``workspace``).
        stream, on_sources: passed to :class:`~codeask.query.answer.SimpleAnswer`.

    With rerank in the chain, retrieval returns at least twice its ``top_k`` chunks
    (:data:`codeask.query.steps.rerank.TOP_K`) and ``one_per_file`` keeps at least ``top_k`` files;
    the reranker keeps ``min(top_k, max_files)``.

    Raises:
        SettingsError: an unknown step name, or a rerank model that cannot be loaded offline.
    """
    s = settings
    p = s.pipeline
    context = {"llm": llm, "templates": templates, "settings": s, **(context or {})}
    installed = available_steps()

    def _overridden(name: str) -> bool:
        # an installed ``codeask.steps`` entry point replacing built-in step ``name``
        return name in installed and installed[name].value != BUILTIN_STEPS.get(name)

    def step(name: str, kind: str):
        options = dict(p.options.get(name) or {})
        if name == "one_per_file" and not _overridden(name):
            options.setdefault("max_files", s.retrieval.max_files)
            return OnePerFile(**options)
        if name == "rerank" and not _overridden(name):
            options.setdefault("max_files", s.retrieval.max_files)
            return Rerank(templates=templates, settings=s, **options)
        if name == "expand" and not _overridden(name):
            options.setdefault("files", s.retrieval.expand_files)
            options.setdefault("max_files", s.retrieval.max_files)
            ranker = HybridRetrieve(targets, s.retrieval)
            return Expand(targets, ranker.downweighted, DOWNWEIGHT_FACTOR, **options)
        if name == "widen" and not _overridden(name):
            options.setdefault("spans_per_file", widen.SPANS_PER_FILE)
            return widen.Widen(**options)
        if name == "summary" and not _overridden(name):
            return Summary(llm, templates, s) if llm is not None else None
        return load_step(name, kind=kind, options=options, **context)

    query_transformers: list = []
    if llm is not None and s.llm.num_subquestions > 0:
        query_transformers.append(GenerateSubquestions(llm, templates, s.llm.num_subquestions, embedder=embedder))
    for name in p.query_transformers:
        query_transformers.append(step(name, "query transformer"))
    if evidence.REPORT_EVIDENCE:
        query_transformers.append(ParseQuestion())
    query_transformers.append(EmbedQuery(embedder, has_vectors))

    if p.response_transformers:
        names = list(p.response_transformers)
    else:
        names = ["one_per_file"] + (["rerank"] if s.rerank.enabled else [])
        names += ["expand"] if s.retrieval.expand_files > 0 else []
        names += ["widen"] if widen.SPANS_PER_FILE > 1 else []
    if s.summary.enabled and "summary" not in names:
        names.append("summary")
    response_transformers: list = [t for t in (step(n, "response transformer") for n in names) if t is not None]

    retriever: Step = HybridRetrieve(targets, s.retrieval)
    rerank = next((t for t in response_transformers if isinstance(t, Rerank)), None)
    if rerank is not None:
        retriever = RetrieveAtLeast(retriever, 2 * rerank.top_k, s.retrieval.top_k)
        response_transformers = [
            OnePerFileForRerank(t.max_files, rerank.top_k) if type(t) is OnePerFile else t
            for t in response_transformers
        ]

    if p.answer:
        answerer = step(p.answer, "answer")
    else:
        answerer = (
            SimpleAnswer(llm, templates, s, stream=stream, on_sources=on_sources) if llm is not None else NoLLMAnswer()
        )
    evaluators = [step(name, "evaluator") for name in p.evaluators]
    return Pipeline(
        query_transformers=query_transformers,
        retriever=retriever,
        response_transformers=response_transformers,
        answerer=answerer,
        evaluators=evaluators,
    )
