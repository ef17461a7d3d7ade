"""What a front door asks for, checked once where it comes in: :class:`AskRequest` and :class:`ExplainRequest`.

A request is a frozen dataclass validated at construction, so everything below the door
(:meth:`codeask.service.Service.ask` -> :func:`codeask.query.ask.ask`, and explain) receives values it
need not check again. The errors are those the doors already report: :class:`QuestionError` (a
usage error, exit code 2 in the CLI) for the question, ``ValueError`` for the numbers and the glob.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from codeask.counts import as_positive_int
from codeask.index.decode import decode
from codeask.query.steps.retrieve import path_filter

__all__ = ["AskRequest", "ExplainRequest", "QuestionError", "check_question", "decode_question"]


class QuestionError(ValueError):
    """The question cannot be asked: empty, blank, or longer than ``retrieval.max_question_chars``
    (the CLI reports it as a usage error, exit code 2)."""


def check_question(question: str, limit: int) -> str:
    """``question`` stripped, once it is askable; ``limit`` is ``retrieval.max_question_chars``.

    Raises:
        QuestionError: it is empty or blank, or longer than ``limit`` characters (the message gives
            both numbers).
    """
    text = (question or "").strip()
    if not text:
        raise QuestionError("the question is empty")
    if len(text) > limit:
        raise QuestionError(
            f"the question is {len(text):,} characters long; the limit is {limit:,} "
            f"(retrieval.max_question_chars): paste the report without its longest logs"
        )
    return text


def decode_question(data: bytes) -> str | None:
    """A question given as bytes (``codeask ask PATH -``'s standard input), decoded as a file is
    (:func:`codeask.index.decode.decode`: a BOM, else UTF-8, else the detected legacy encoding);
    ``None`` when it is not text."""
    decoded = decode(data)
    return None if decoded is None else decoded.text


@dataclass(frozen=True)
class AskRequest:
    """One question and its per-call options, validated at construction (in this order: the
    question, ``top_k``, ``max_files``, ``path_glob``). Build it with
    :meth:`codeask.service.Service.ask_request`, which fills ``max_question_chars`` from the settings.

    Attributes:
        question: the question, stripped (a pasted bug report may be long: see ``max_question_chars``).
        max_question_chars: the longest question accepted (``retrieval.max_question_chars``).
        top_k, max_files: override ``retrieval.top_k`` / ``retrieval.max_files``; positive ints
            (an int or a string of digits, as :func:`codeask.counts.as_positive_int` reads them).
        path_glob: search only files matching this gitignore-style glob (``src/**/*.py``); ``None``
            or blank for all files.
        no_llm: answer with the ranked sources, without any LLM call.
        sources_on_llm_error: no usable LLM at all (an explicit ``llm.provider`` without a key)
            answers with the ranked sources and that ``error`` instead of raising ``LLMError`` (the
            editor and MCP servers; the CLI checks the LLM itself, before indexing).

    Raises:
        QuestionError: the question is empty, blank or longer than ``max_question_chars``.
        ValueError: ``top_k`` / ``max_files`` is not a positive integer, or ``path_glob`` is invalid.
    """

    question: str
    max_question_chars: int
    top_k: int | None = None
    max_files: int | None = None
    path_glob: str | None = None
    no_llm: bool = False
    sources_on_llm_error: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "question", check_question(self.question, self.max_question_chars))
        if self.top_k is not None:
            object.__setattr__(self, "top_k", as_positive_int("top_k", self.top_k))
        if self.max_files is not None:
            object.__setattr__(self, "max_files", as_positive_int("max_files", self.max_files))
        glob = (self.path_glob or "").strip() or None
        path_filter(glob)  # a bad glob fails here, before any indexing or LLM call
        object.__setattr__(self, "path_glob", glob)


@dataclass(frozen=True)
class ExplainRequest:
    """Lines of a file to explain, or (with ``word``) the symbol under a hover.

    Attributes:
        path: the file, absolute (a door resolves what its user typed against the roots first).
        start_line, end_line: 1-based, inclusive; for a hover both are the cursor's line.
        text: the editor's buffer of the file; ``None`` reads the file on disk.
        word: for a hover, the identifier under the cursor: the definition it names is explained
            (:func:`codeask.query.span.symbol_span`) instead of the lines.
        brief: under 80 words (hover).
        no_llm: the related code as links, without an LLM call.

    Raises:
        ValueError: ``path`` is empty or relative, a line is not a positive integer, or
            ``end_line < start_line``.
    """

    path: str
    start_line: int
    end_line: int
    text: str | None = None
    word: str | None = None
    brief: bool = False
    no_llm: bool = False

    def __post_init__(self) -> None:
        if not self.path or not os.path.isabs(self.path):
            raise ValueError(f"the file to explain must be an absolute path: {self.path!r}")
        object.__setattr__(self, "start_line", as_positive_int("start_line", self.start_line))
        object.__setattr__(self, "end_line", as_positive_int("end_line", self.end_line))
        if self.end_line < self.start_line:
            raise ValueError(f"end_line {self.end_line} is before start_line {self.start_line}")
