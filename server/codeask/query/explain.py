"""Explain code: a selection, or the symbol under the cursor, run through the same :class:`Pipeline` as ask.

What to explain is a :class:`~codeask.query.span.Span` (:mod:`codeask.query.span`: lines a user
selected, or for hover the definition of the symbol under the cursor; re-exported here). :func:`explain` runs it through
the explain pipeline (:func:`explain_pipeline`)::

    embed (the selection's vector) -> retrieve (RelatedRetrieve: code related to the selection,
    ranked as ask ranks it) -> explain (ExplainAnswer: the LLM, budgeted, streamed) or the related
    code as links (RelatedList, without an LLM)

so history, cancellation (between steps and inside the LLM call), progress, the secret filter and
the ``[pipeline] evaluators`` are those of ask. LLM replies are cached by the text sent
(:class:`~codeask.query.steps.explain_answer.ExplainCache`, an LRU).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from codeask.lines import split_lines
from codeask.llm import LLM, LLMError
from codeask.query.assemble import any_vectors, search_targets
from codeask.query.citations import check_citations
from codeask.query.custom import load_step
from codeask.query.options import ExplainSelection, RetrievalOptions
from codeask.query.pipeline import Pipeline, Query
from codeask.query.request import ExplainRequest
from codeask.query.result import Source, Withheld, source_list
from codeask.query.span import (
    NotExplainable,
    Span,
    enclosing_chunk,
    explain_source,
    make_span,
    symbol_span,
    withheld_reason,
)
from codeask.query.steps.embed import EmbedQuery
from codeask.query.steps.explain_answer import ExplainAnswer, ExplainCache, RelatedList
from codeask.query.steps.related import RelatedRetrieve, identifiers
from codeask.query.templates import Templates

__all__ = [
    "Explanation",
    "Span",
    "NotExplainable",
    "explain_source",
    "explain",
    "explain_request",
    "check_request",
    "explain_pipeline",
    "make_span",
    "symbol_span",
    "enclosing_chunk",
    "identifiers",
    "ExplainCache",
    "withheld_reason",
]

#: Characters of the selection embedded for the dense search (the model reads ~512 tokens anyway).
_EMBED_CHARS = 4000


@dataclass
class Explanation:
    """What ``codeask explain`` / ``codeask.explain`` return: the markdown and the related sources
    (best first), with how the LLM call ended (as for ask: ``finish_reason``, ``truncated``,
    ``cut_reason``)."""

    markdown: str
    sources: list[Source]
    llm: str | None = None
    error: str | None = None
    cached: bool = False
    withheld: list[Withheld] = field(default_factory=list)
    """Text kept from the LLM (the selection or related code: secret files, credential lines)."""
    warnings: list[str] = field(default_factory=list)
    """Settings warnings: ignored workspace values, templates the sandbox refused."""
    selection: Span | None = None
    """What was explained (for hover: the definition found for the symbol under the cursor)."""
    finish_reason: str | None = None
    """How the LLM call ended (``stop``, ``length``, ``incomplete``, ``error``); ``None`` without one."""
    cut_reason: str | None = None
    """Why the explanation is cut off, in words; ``None`` when complete."""
    selection_cut: bool = False
    """Whether only the selection's first lines were sent (it was over half the model's context)."""

    @property
    def truncated(self) -> bool:
        """Whether the explanation is cut off."""
        return self.cut_reason is not None

    def to_json(self) -> dict[str, Any]:
        """``{"markdown", "sources", "llm", "withheld", "warnings", "selection", "finish_reason",
        "truncated", "selection_cut"}``, plus ``error`` and ``cut_reason`` when set (``cached`` is left
        out)."""
        out: dict[str, Any] = {
            "markdown": self.markdown,
            "sources": [asdict(s) for s in self.sources],
            "llm": self.llm,
            "withheld": [w.to_json() for w in self.withheld],
            "warnings": list(self.warnings),
            "selection": self.selection.to_json() if self.selection else None,
            "finish_reason": self.finish_reason,
            "truncated": self.truncated,
            "selection_cut": self.selection_cut,
        }
        if self.error:
            out["error"] = self.error
        if self.cut_reason:
            out["cut_reason"] = self.cut_reason
        return out

    @classmethod
    def from_query(cls, query: Query, *, brief: bool, error: str | None, warnings: list[str]) -> Explanation:
        """The explanation of an answered explain ``query``: the LLM's text (its ``[n]`` linked to the
        prompt's documents, :func:`~codeask.query.citations.check_citations`, as an answer's are), the
        cut-off line (not in a brief one: its text ends with ``…``), then ``Related:`` links; or the
        related code as links."""
        span = query.options.explained().span
        sources = [Source.from_document(d) for d in query.documents]
        data = query.history[-1].data if query.history else {}
        errors = "; ".join(dict.fromkeys([*([error] if error else []), *query.errors])) or None
        markdown = query.answer or ""
        if data.get("llm"):
            if query.prompt_documents:  # the model's [n] as links to the documents it was shown
                markdown = check_citations(markdown, query.prompt_documents).markdown
            if query.cut_reason and not brief:
                markdown += f"\n\n> **Answer cut off** ({query.cut_reason})."
            links = source_list(sources)
            markdown = f"{markdown}\n\nRelated:\n{links}\n" if links else markdown
        return cls(
            markdown,
            sources,
            llm=data.get("model") or (query.options.explained().model if query.errors else None),
            error=errors,
            cached=bool(data.get("cached")),
            withheld=list(query.withheld),
            warnings=warnings,
            selection=span,
            finish_reason=query.finish_reason,
            cut_reason=query.cut_reason,
            selection_cut=bool(data.get("selection_cut")),
        )


def explain_pipeline(
    workspace, *, llm: LLM | None, brief: bool, templates: Templates, cache: ExplainCache | None = None
) -> Pipeline:
    """The explain pipeline: embed -> :class:`RelatedRetrieve` -> :class:`ExplainAnswer` (with ``llm``)
    or :class:`RelatedList` (without), plus the ``[pipeline] evaluators`` of the settings.

    Raises:
        SettingsError: an evaluator that cannot be loaded.
    """
    s = workspace.settings
    indexes = list(workspace.indexes.values())
    targets = search_targets(indexes)

    context = {"llm": llm, "templates": templates, "settings": s, "workspace": workspace}
    evaluators = [
        load_step(name, kind="evaluator", options=dict(s.pipeline.options.get(name) or {}), **context)
        for name in s.pipeline.evaluators
    ]
    answerer = ExplainAnswer(llm, templates, s, brief=brief, cache=cache) if llm is not None else RelatedList()
    return Pipeline(
        query_transformers=[EmbedQuery(workspace.embedder, partial(any_vectors, indexes))],
        retriever=RelatedRetrieve(lambda: targets, s.retrieval, s.index),
        response_transformers=[],
        answerer=answerer,
        evaluators=evaluators,
    )


def explain(
    workspace,
    span: Span,
    *,
    brief: bool = False,
    no_llm: bool = False,
    cancelled: Callable[[], bool] | None = None,
    progress: Callable[[str], None] | None = None,
    cache: ExplainCache | None = None,
    llm: LLM | None = None,
) -> Explanation:
    """Explain ``span`` through :func:`explain_pipeline` (``brief``: under 80 words, as on hover).

    ``llm`` replaces the workspace's LLM (the language server's hover uses one with a short timeout
    and no retries). LLM failures never lose the related code: the markdown then lists it, with
    ``error`` set. ``cancelled`` (a ``() -> bool``, ``threading.Event`` or
    :class:`~codeask.llm.CancelToken`) is checked between steps and aborts the LLM call.

    Raises:
        Cancelled: cancelled between steps or during the LLM call.
        TemplateError, SettingsError: a broken template or setting.
    """
    templates = Templates(workspace.settings)
    error = None
    if no_llm:
        llm = None
    elif llm is None:
        try:
            llm = workspace.llm()
        except LLMError as exc:
            error = str(exc)
    selection = ExplainSelection(
        span,
        brief,
        withheld_reason=withheld_reason(workspace, span) if llm is not None else None,
        model=llm.describe() if llm is not None else None,
        note=f"**LLM error:** {error}" if llm is None and error else None,
    )
    options = RetrievalOptions(selection=selection)
    query = Query(f"explain {span.label}", search_texts=[span.text[:_EMBED_CHARS] or span.label], options=options)
    pipeline = explain_pipeline(workspace, llm=llm, brief=brief, templates=templates, cache=cache)
    query = pipeline.run(query, cancelled=cancelled, progress=progress)
    warnings = list(dict.fromkeys([*workspace.warnings, *templates.warnings]))
    return Explanation.from_query(query, brief=brief, error=error, warnings=warnings)


def check_request(workspace, request: ExplainRequest) -> str:
    """Refuse ``request`` before any indexing when it can be refused: a file codeask does not read
    (:func:`explain_source`), or a selection of blank lines (:func:`make_span` says so before it
    reads the index). Returns the file's text as read.

    Raises:
        NotExplainable: the file is not read, or ``nothing to explain: ...`` (reason ``blank``).
    """
    text = explain_source(workspace, request.path, text=request.text)
    lines = split_lines(text)[request.start_line - 1 : request.end_line]
    if request.word is None and not "".join(lines).strip():
        make_span(workspace, request.path, request.start_line, request.end_line, text=text)
    return text


def explain_request(
    workspace,
    request: ExplainRequest,
    *,
    cancelled: Callable[[], bool] | None = None,
    progress: Callable[[str], None] | None = None,
    cache: ExplainCache | None = None,
    llm: LLM | None = None,
) -> Explanation:
    """:func:`explain` the span of ``request``: its lines (:func:`make_span`), or with ``word`` the
    definition a hover names (:func:`symbol_span`).

    Raises:
        NotExplainable: the file is not read, the lines are blank, or no definition of ``word`` is
            found (reason ``no-definition``).
        Cancelled, TemplateError, SettingsError: as :func:`explain`.
    """
    path, text = request.path, request.text
    if request.word is not None:
        span = symbol_span(workspace, path, request.start_line, request.word, text=text)
        if span is None:
            raise NotExplainable(f"nothing to explain: no definition of {request.word} here", "no-definition")
    else:
        span = make_span(workspace, path, request.start_line, request.end_line, text=text)
    brief, no_llm = request.brief, request.no_llm
    return explain(
        workspace, span, brief=brief, no_llm=no_llm, cancelled=cancelled, progress=progress, cache=cache, llm=llm
    )
