"""Query transformer: split a pasted bug report into frames, messages and the text to search."""

from __future__ import annotations

from codeask.query.pipeline import Query
from codeask.query.report import QuestionParts, parse_question

__all__ = ["ParseQuestion", "question_parts", "searched_text"]


def question_parts(query: Query) -> QuestionParts:
    """``query.parts`` (parsed once, by ``ask`` or the ``parse_question`` step), or the parts of
    ``query.original`` for a query that skipped both (a custom pipeline)."""
    return query.parts if query.parts is not None else parse_question(query.original)


def searched_text(query: Query) -> str:
    """The question's text for keyword and dense search: ``query.parts.search_text``, or, for a
    question cut to a digest, the search text of the digest (bounded)."""
    if query.digest is not None and query.digest.shortened:
        return parse_question(query.digest.text).search_text
    return question_parts(query).search_text


class ParseQuestion:
    """Sets ``query.parts`` (:class:`~codeask.query.report.QuestionParts`) from ``query.original``
    (kept when ``ask`` parsed it already).

    When the question carries stack frames or template boilerplate, the first search text becomes
    its search text (the question without them; unless an earlier step replaced it), so keyword and
    dense search read the prose, messages and output; the frames reach retrieval through
    ``query.parts``. A question cut to a digest (``query.digest``) is searched by its digest's search
    text, so the search stays bounded. Subquestions, if any, stay as they are. Runs before ``embed``.
    """

    name = "parse_question"

    def __call__(self, query: Query) -> Query:
        parts = query.parts = question_parts(query)
        search = searched_text(query)
        if query.search_texts and query.search_texts[0] == query.asked != search:
            query.search_texts = [search, *query.search_texts[1:]]
        query.transformed_query(
            self.name,
            query.current,
            frames=len(parts.frames),
            messages=len(parts.messages),
            dropped_lines=parts.dropped_lines,
        )
        return query
