"""Ask: one question -> a cited :class:`~codeask.query.result.Answer` over a workspace's indexes.

The entry point of the ask pipeline, as :mod:`codeask.query.explain` is of explain: it checks the
question and the per-call options, picks the LLM, runs the pipeline the workspace assembles
(:func:`codeask.query.assemble.build_ask_pipeline`) and says what the answer stands on
(:func:`index_state`) and, when nothing was retrieved, why (:func:`why_empty`).
:meth:`codeask.workspace.Workspace.ask` is the front door the CLI, the editor and the MCP server use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from codeask.counts import as_positive_int
from codeask.index.records import IndexReadiness, IndexState
from codeask.llm import LLM, LLMError
from codeask.query.digest import QUESTION_DIGEST_CHARS, digest_question
from codeask.query.freshness import stale_sources, why_not_reindexed
from codeask.query.pipeline import Pipeline, Query
from codeask.query.report import parse_question
from codeask.query.result import Answer, Source
from codeask.query.steps.retrieve import path_filter
from codeask.query.templates import Templates
from codeask.settings import Settings

if TYPE_CHECKING:  # the engine imports LanceDB when an index is opened; ask only reads counts
    from codeask.index.engine import RootIndex

__all__ = ["ask", "AskWorkspace", "QuestionError", "check_question", "index_state", "why_empty"]


class QuestionError(ValueError):
    """The question cannot be asked: empty, blank, or longer than ``retrieval.max_question_chars``
    (the CLI reports it as a usage error, exit code 2)."""


class AskWorkspace(Protocol):
    """What :func:`ask` uses of a :class:`~codeask.workspace.Workspace`."""

    settings: Settings
    indexes: dict[str, RootIndex]

    @property
    def warnings(self) -> list[str]:
        """Settings warnings of the workspace and its roots."""
        ...

    def llm(self) -> LLM | None:
        """The configured LLM, or ``None``; raises ``LLMError`` for an explicit provider without a key."""
        ...

    def build_pipeline(
        self,
        *,
        llm: LLM | None,
        stream: Callable[[str], None] | None = None,
        on_sources: Callable[[Query], None] | None = None,
        templates: Templates | None = None,
    ) -> Pipeline:
        """The ask pipeline for the current settings."""
        ...


def check_question(settings: Settings, question: str) -> str:
    """``question`` stripped, once it is askable.

    Raises:
        QuestionError: it is empty or blank, or longer than ``retrieval.max_question_chars``
            characters (the message gives both numbers).
    """
    text = (question or "").strip()
    if not text:
        raise QuestionError("the question is empty")
    limit = settings.retrieval.max_question_chars
    if len(text) > limit:
        raise QuestionError(
            f"the question is {len(text):,} characters long; the limit is {limit:,} "
            f"(retrieval.max_question_chars): paste the report without its longest logs"
        )
    return text


def ask(
    workspace: AskWorkspace,
    question: str,
    *,
    top_k: int | None = None,
    max_files: int | None = None,
    path_glob: str | None = None,
    no_llm: bool = False,
    cancelled: Callable[[], bool] | None = None,
    progress: Callable[[str], None] | None = None,
    stream: Callable[[str], None] | None = None,
    on_sources: Callable[[list[Source]], None] | None = None,
    sources_on_llm_error: bool = False,
) -> Answer:
    """Answer ``question`` from the current indexes of ``workspace`` (callers update them first if
    they want).

    LLM failures never lose the sources: a failed subquestion call searches with the original
    question, a failed answer call (or a custom step that lets an ``LLMError`` through) returns the
    ranked sources; ``Answer.error`` says what failed.

    Args:
        top_k, max_files: override ``retrieval.top_k`` / ``retrieval.max_files`` (positive ints).
        path_glob: search only files matching this gitignore-style glob (``src/**/*.py``).
        no_llm: answer with the ranked sources, without any LLM call.
        cancelled: a ``() -> bool``, ``threading.Event`` or :class:`~codeask.llm.CancelToken`;
            checked between steps and by every LLM call (which it aborts, closing the connection).
        progress: gets each step's name as it starts.
        stream: gets the answer's text deltas as they arrive.
        on_sources: gets the answer's sources just before the answer's LLM call.
        sources_on_llm_error: no usable LLM at all (an explicit ``llm.provider`` without a key)
            answers with the ranked sources and that ``error`` instead of raising ``LLMError`` (the
            editor and MCP servers; the CLI checks ``Workspace.llm`` itself, before indexing).

    Returns:
        The :class:`Answer`; its ``index`` is :func:`index_state` (what the answer stands on), its
        ``stale_sources`` the retrieved files changed on disk since they were indexed
        (:mod:`codeask.query.freshness`), and with no document retrieved its text is :func:`why_empty`.

    Raises:
        QuestionError: the question is empty or longer than ``retrieval.max_question_chars``.
        LLMError: an explicit ``llm.provider`` without a key (see ``Workspace.llm``), unless
            ``sources_on_llm_error``.
        ValueError: ``top_k`` or ``max_files`` is not a positive integer, or ``path_glob`` is invalid.
        Cancelled: cancelled between steps or during an LLM call.
        TemplateError, SettingsError: a broken template or setting.
    """
    question = check_question(workspace.settings, question)
    parts = parse_question(question)  # all of it, in linear time; the rest reads the digest
    digest = digest_question(question, QUESTION_DIGEST_CHARS)
    options: dict[str, Any] = {
        "top_k": None if top_k is None else as_positive_int("top_k", top_k),
        "max_files": None if max_files is None else as_positive_int("max_files", max_files),
    }
    if path_glob:
        path_filter(path_glob)  # a bad glob fails here, before any LLM call
        options["path_glob"] = path_glob
    errors: list[str] = []
    try:
        llm = None if no_llm else workspace.llm()
    except LLMError as exc:
        if not sources_on_llm_error:
            raise
        llm, errors = None, [str(exc)]
    query = Query(question, options=options, errors=list(errors), parts=parts, digest=digest)

    def sources_ready(query: Query) -> None:
        if on_sources is not None:
            on_sources(Answer.from_query(query).sources)

    templates = Templates(workspace.settings)
    pipeline = workspace.build_pipeline(llm=llm, stream=stream, on_sources=sources_ready, templates=templates)
    try:
        query = pipeline.run(query, cancelled=cancelled, progress=progress)
    except LLMError as exc:  # a custom step let it through: answer without the LLM
        query = Query(question, options=options, errors=[*errors, str(exc)], parts=parts, digest=digest)
        query = workspace.build_pipeline(llm=None).run(query, cancelled=cancelled, progress=progress)
    error = "; ".join(dict.fromkeys(query.errors)) or None
    indexes = list(workspace.indexes.values())
    state = index_state(indexes)
    if not query.documents:
        query.answer = why_empty(indexes, state)
    warnings = list(dict.fromkeys([*workspace.warnings, *templates.warnings]))
    stale = stale_sources(workspace.indexes, query.documents)
    return Answer.from_query(
        query,
        llm=llm.describe() if llm is not None else None,
        error=error,
        warnings=warnings,
        index=state.to_json(),
        stale=stale,
        not_reindexed=why_not_reindexed(indexes) if stale else None,
    )


def index_state(indexes: Iterable[RootIndex]) -> IndexState:
    """How far ``indexes`` are, together (:class:`IndexState`); reads only counts."""
    indexes = list(indexes)
    files = sum(i.manifest.count() for i in indexes)
    pending = sum(i.store.count_pending() for i in indexes)
    state: IndexReadiness
    if any(not i.searchable() for i in indexes):
        state = "building"
    elif pending:
        state = "keyword-only"
    else:
        state = "ready"
    return IndexState(state, files, pending)


def why_empty(indexes: Iterable[RootIndex], state: IndexState) -> str:
    """The answer text when nothing was retrieved: nothing indexable (with the skip reasons of the
    last walk of ``indexes``), an index still being built, or no match among the indexed files."""
    if state.files_indexed == 0:
        if state.state == "building":
            return (
                "Nothing is indexed yet: the first index of this workspace is still being built. Ask again in a moment."
            )
        skipped: dict[str, int] = {}
        for index in indexes:
            for reason, count in index.last_skipped().items():
                skipped[reason] = skipped.get(reason, 0) + count
        if skipped:
            reasons = ", ".join(f"{reason} {count}" for reason, count in sorted(skipped.items()))
            return (
                f"Nothing in this workspace could be indexed: {sum(skipped.values())} files skipped "
                f"({reasons}); see 'What gets indexed' in the README."
            )
        return "Nothing in this workspace could be indexed: no files were found."
    return f"No matching code was found for this question among the {state.files_indexed:,} indexed files."
