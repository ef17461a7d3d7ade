"""Query transformer: split a pasted bug report into frames, messages and the text to search."""

from __future__ import annotations

from codeask.query.pipeline import Query
from codeask.query.report import parse_question

__all__ = ["ParseQuestion"]


class ParseQuestion:
    """Sets ``query.parts`` (:class:`~codeask.query.report.QuestionParts`) from ``query.original``.

    When the question carries stack frames or template boilerplate, the first search text becomes
    ``parts.search_text`` (the question without them; unless an earlier step replaced it), so keyword and dense search read the prose,
    messages and output; the frames reach retrieval through ``query.parts``. Subquestions, if any,
    stay as they are. Runs before ``embed``.
    """

    name = "parse_question"

    def __call__(self, query: Query) -> Query:
        parts = parse_question(query.original)
        query.parts = parts
        if query.search_texts and query.search_texts[0] == query.original != parts.search_text:
            query.search_texts = [parts.search_text, *query.search_texts[1:]]
        query.transformed_query(
            self.name,
            query.current,
            frames=len(parts.frames),
            messages=len(parts.messages),
            dropped_lines=parts.dropped_lines,
        )
        return query
