"""What one question asks of the pipeline beyond its text: typed, frozen, set once when the
:class:`~codeask.query.pipeline.Query` is made.

The front door (the request types of :mod:`codeask.query.request`) checks the values; the steps only
read them. A step's own minimum (the reranker's candidates) is settled when the pipeline is built
(:func:`codeask.query.assemble.build_ask_pipeline`), never by changing these values during a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # span.py imports the retrieve step, which imports the pipeline and this module
    from codeask.query.span import Span

__all__ = ["RetrievalOptions", "ExplainSelection"]


@dataclass(frozen=True)
class ExplainSelection:
    """What an explain question is about and how to answer it.

    Attributes:
        span: the selected code (:class:`~codeask.query.span.Span`).
        brief: answer in under 80 words (hover).
        withheld_reason: why the selection may not be sent to the LLM, or ``None`` when it may.
        model: the LLM's description (``"openai:gpt-4o-mini"``), ``None`` without an LLM.
        note: a line shown under the related code when there is no LLM answer (an LLM error).
    """

    span: Span
    brief: bool = False
    withheld_reason: str | None = None
    model: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class RetrievalOptions:
    """One question's knobs; ``None`` leaves the setting in force.

    Attributes:
        top_k: chunks each search keeps (``retrieval.top_k``), a positive int.
        max_files: files the answer may cite (``retrieval.max_files``), a positive int.
        path_glob: search only files matching this gitignore-style glob (``src/**/*.py``).
        spans_per_file: spans the ``widen`` step keeps per file (``retrieval.spans_per_file``).
        selection: the explained code, for an explain question; ``None`` for an ask.
    """

    top_k: int | None = None
    max_files: int | None = None
    path_glob: str | None = None
    spans_per_file: int | None = None
    selection: ExplainSelection | None = None

    def explained(self) -> ExplainSelection:
        """:attr:`selection`, for a step that only runs in the explain pipeline.

        Raises:
            ValueError: this is not an explain question (a step of explain in the ask pipeline).
        """
        if self.selection is None:
            raise ValueError("this step explains a selection; the question has none (an ask, not an explain)")
        return self.selection
