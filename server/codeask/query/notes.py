"""The notes an answer's markdown shows under its own text, before ``Sources:`` (one line each):
what a not-``ready`` index misses, sources changed on disk, documents cut to fit, a shortened
question, an answer cut off, an LLM error, citations removed."""

from __future__ import annotations

from typing import Any, Protocol

from codeask.query.freshness import stale_note

__all__ = ["AnswerState", "answer_notes", "index_note"]


class AnswerState(Protocol):
    """What the notes read of an answer (:class:`codeask.query.result.Answer` has each field)."""

    index: dict[str, Any] | None
    stale_sources: list[dict[str, Any]]
    not_reindexed: str | None
    cut_documents: list[dict[str, Any]]
    question_digest: dict[str, int] | None
    truncated: bool
    cut_reason: str | None
    error: str | None
    invalid_citations: list[int]


def answer_notes(answer: AnswerState) -> list[str]:
    """The markdown lines (``> **...:** ...``) noting what ``answer`` stands on and misses, in the
    order shown; ``[]`` for a complete answer from a ``ready`` index."""
    notes = []
    if note := index_note(answer.index):
        notes.append(note)
    if note := stale_note(answer.stale_sources, answer.not_reindexed):
        notes.append(note)
    if answer.cut_documents:
        cut = ", ".join(
            f"[{c['n']}] `{c['path']}` to lines {c['start_line']}-{c['end_line']}" for c in answer.cut_documents
        )
        notes.append(f"> **Cut to fit the model's context:** {cut}.")
    if digest := answer.question_digest:
        notes.append(
            f"> **Question shortened:** the search and the model got a {digest['chars_sent']:,}-character digest "
            f"of the {digest['chars_in']:,}-character question (logs and repeated lines collapsed; "
            "stack frames and error lines were read from all of it)."
        )
    if answer.truncated:
        notes.append(f"> **Answer cut off** ({answer.cut_reason}).")
    if answer.error:
        notes.append(f"> **LLM error:** {answer.error}")
    if answer.invalid_citations:
        shown = ", ".join(f"[{n}]" for n in answer.invalid_citations)
        notes.append(f"> Citations to sources that do not exist were removed: {shown}.")
    return notes


def index_note(index: dict[str, Any] | None) -> str:
    """One markdown line saying what an answer from a not-``ready`` index misses; ``""`` when ready."""
    if not index or index.get("state") == "ready":
        return ""
    if index["state"] == "building":
        return (
            f"> **Index:** still being built ({index['files_indexed']:,} files so far): "
            "code not indexed yet cannot be found; ask again when indexing ends."
        )
    return (
        f"> **Index:** keyword search only for now: {index['vectors_pending']:,} chunks still wait for "
        "their vectors, so results may miss code that uses other words than the question."
    )
