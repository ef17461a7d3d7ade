"""How the ask pipeline is assembled from the settings: subquestions -> parse_question -> embed ->
retrieve -> neighbours -> one_per_file -> [rerank] -> [widen] -> [summary] -> answer (``widen`` while :data:`codeask.query.steps.widen.SPANS_PER_FILE` > 1), with the ``[pipeline]`` custom steps
(entry-point group ``codeask.steps``, see docs/pipeline.md) in their places.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from codeask.index.embed import Embedder
from codeask.llm import LLM
from codeask.query.answer import SimpleAnswer, local_speed
from codeask.query.budget import SUBQUESTIONS_SHARE, subquestions_in_time
from codeask.query.custom import BUILTIN_STEPS, available_steps, load_step
from codeask.query.no_llm import NoLLMAnswer
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
from codeask.query.steps.neighbours import Neighbours
from codeask.query.steps.rerank import Rerank
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

    Step minimums are settled here, once: with the built-in rerank in the chain, retrieval returns
    at least twice the reranker's ``top_k`` (:data:`codeask.query.steps.rerank.TOP_K`) chunks and ``one_per_file`` keeps at least ``top_k``
    files, whatever a question's ``top_k`` / ``max_files``; the reranker keeps
    ``min(top_k, max_files)``.

    Raises:
        SettingsError: an unknown step name, or a rerank model that cannot be loaded offline.
    """
    context = {"llm": llm, "templates": templates, "settings": settings, **(context or {})}
    steps = _StepMaker(settings, llm, templates, targets, context)
    query_transformers = _query_transformers(settings, steps, llm, templates, embedder, has_vectors)
    response_transformers = _response_transformers(settings, steps)
    rerank = next((t for t in response_transformers if isinstance(t, Rerank)), None)
    least = rerank.top_k if rerank is not None else 0
    response_transformers = [
        OnePerFile(t.max_files, min_files=least) if type(t) is OnePerFile else t for t in response_transformers
    ]
    p = settings.pipeline
    retriever = HybridRetrieve(targets, settings.retrieval, min_top_k=2 * least)
    if p.answer:
        answerer = steps(p.answer, "answer")
    elif llm is not None:
        answerer = SimpleAnswer(llm, templates, settings, stream=stream, on_sources=on_sources)
    else:
        answerer = NoLLMAnswer()
    return Pipeline(
        query_transformers=query_transformers,
        retriever=retriever,
        response_transformers=response_transformers,
        answerer=answerer,
        evaluators=[steps(name, "evaluator") for name in p.evaluators],
    )


class _StepMaker:
    """Makes a named step of the ``[pipeline]`` settings: a built-in one with its settings as
    defaults (``[pipeline.options.NAME]`` win), or the ``codeask.steps`` entry point of that name
    (:func:`~codeask.query.custom.load_step`). ``None`` for ``summary`` without an LLM."""

    def __init__(
        self,
        settings: Settings,
        llm: LLM | None,
        templates: Templates,
        targets: Callable[[], list[SearchTarget]],
        context: dict[str, Any],
    ):
        self.settings, self.llm, self.templates, self.targets = settings, llm, templates, targets
        self.context = context
        self.installed = available_steps()

    def overridden(self, name: str) -> bool:
        """Whether an installed ``codeask.steps`` entry point replaces built-in step ``name``."""
        return name in self.installed and self.installed[name].value != BUILTIN_STEPS.get(name)

    def __call__(self, name: str, kind: str) -> Any:
        s = self.settings
        options = dict(s.pipeline.options.get(name) or {})
        builtin = not self.overridden(name)
        if name == "one_per_file" and builtin:
            return OnePerFile(**{"max_files": s.retrieval.max_files, **options})
        if name == "rerank" and builtin:
            return Rerank(templates=self.templates, settings=s, **{"max_files": s.retrieval.max_files, **options})
        if name == "neighbours" and builtin:
            options = {"max_files": s.retrieval.max_files, "files": s.retrieval.expand_files, **options}
            return Neighbours(self.targets, HybridRetrieve(self.targets, s.retrieval), **options)
        if name == "widen" and builtin:
            return widen.Widen(**{"spans_per_file": widen.SPANS_PER_FILE, **options, "targets": self.targets})
        if name == "summary" and builtin:
            return Summary(self.llm, self.templates, s) if self.llm is not None else None
        return load_step(name, kind=kind, options=options, **self.context)


def _query_transformers(
    s: Settings,
    steps: _StepMaker,
    llm: LLM | None,
    templates: Templates,
    embedder: Callable[[], Embedder],
    has_vectors: Callable[[], bool],
) -> list[Step]:
    """[subquestions] -> the ``[pipeline] query_transformers`` -> [parse_question] -> embed."""
    out: list[Step] = []
    # a local model too slow to write search queries within its time budget answers without them;
    # one whose measured speed planned them stops them at their share (unmeasured, the call measures it)
    speed = local_speed(llm, s) if llm is not None else None
    if llm is not None and s.llm.num_subquestions > 0 and subquestions_in_time(speed, s.llm.first_token_seconds):
        deadline = SUBQUESTIONS_SHARE * s.llm.first_token_seconds if speed is not None else None
        out.append(GenerateSubquestions(llm, templates, s.llm.num_subquestions, embedder=embedder, deadline=deadline))
    out.extend(steps(name, "query transformer") for name in s.pipeline.query_transformers)
    if evidence.REPORT_EVIDENCE:
        out.append(ParseQuestion())
    out.append(EmbedQuery(embedder, has_vectors))
    return out


def _response_transformers(s: Settings, steps: _StepMaker) -> list[Step]:
    """The ``[pipeline] response_transformers``, or by default neighbours -> one_per_file -> [rerank]
    -> [widen]; then [summary]. Steps that are off (``summary`` without an LLM) are left out."""
    if s.pipeline.response_transformers:
        names = list(s.pipeline.response_transformers)
    else:
        names = ["neighbours", "one_per_file"] + (["rerank"] if s.rerank.enabled else [])
        names += ["widen"] if widen.SPANS_PER_FILE > 1 else []
    if s.summary.enabled and "summary" not in names:
        names.append("summary")
    return [t for t in (steps(n, "response transformer") for n in names) if t is not None]
