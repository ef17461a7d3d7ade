"""The answer without an LLM (:class:`NoLLMAnswer`): the ranked files with a snippet of each span.

What a user with no model configured reads (the README's first command, the editors' answer with no
``llm.provider``): each span's link, its label (the definitions in it a reader meets, the one that
matches the question best among them: :func:`~codeask.query.question_words.matched_symbol`) and
:data:`SNIPPET_LINES` of its lines, from the line the labelled definition holding most of the
question's words starts on (:func:`snippet`): a span opening on the statements before a function, or
on the method before the one the question is about, shows the one the question is about.
"""

from __future__ import annotations

from collections.abc import Set

from codeask.lines import split_lines
from codeask.query.anchors import anchor
from codeask.query.opening import open_line
from codeask.query.pipeline import Document, Query, per_file
from codeask.query.question_words import question_terms
from codeask.query.result import anchor_title, source_link

__all__ = ["NOTHING_FOUND", "NoLLMAnswer", "SNIPPET_LINES", "snippet"]

NOTHING_FOUND = "No matching code was found for this question in the indexed workspace."

#: Lines of a span shown under its link.
SNIPPET_LINES = 8


def snippet(doc: Document, terms: Set[str] = frozenset()) -> tuple[list[str], bool, bool]:
    """The lines of ``doc`` shown under its link: :data:`SNIPPET_LINES` from the line its labelled
    definition best matching the question's ``terms`` begins (:func:`~codeask.query.opening.open_line`),
    and whether lines were left out before and after them."""
    lines = split_lines(doc.content)
    start = open_line(doc, terms) - doc.start_line
    shown = lines[start : start + SNIPPET_LINES]
    return shown, start > 0, start + SNIPPET_LINES < len(lines)


class NoLLMAnswer:
    """The answer without an LLM: the ranked files, numbered as the ``Sources:`` list numbers them
    (one item per file, in order of its best document), each span with its link, symbol and
    :func:`snippet` (``...`` where lines were left out)."""

    name = "answer"

    def __call__(self, query: Query) -> Query:
        if not query.documents:
            query.answered(self.name, NOTHING_FOUND, llm=False)
            return query
        first = next((line for line in query.asked.strip().splitlines() if line.strip()), query.asked)
        lines = [f"Most relevant code for: *{first.strip()}*", ""]
        terms = question_terms(query.asked)
        for i, spans in enumerate(per_file(query.documents), 1):
            marker = f"{i}. "
            indent = " " * len(marker)  # a list item's content lines start under its text
            for j, d in enumerate(spans):
                symbol = f" `{d.symbol}`" if d.symbol else ""
                title = anchor_title({"anchor": anchor(d.content, d.symbol)})  # what cite-check re-finds it by
                link = f"{source_link(d.label, d.start_line, d.end_line, d.uri, title)}{symbol}"
                lines.append(f"{marker}{link}" if j == 0 else f"{indent}{link}")
                lines.extend(f"{indent}{line}" for line in _fenced(d, terms))
        query.answered(self.name, "\n".join(lines), llm=False)
        return query


def _fenced(doc: Document, terms: set[str]) -> list[str]:
    """``doc``'s :func:`snippet` for the question's ``terms`` in a code fence (four backticks when it
    holds three), ``...`` where lines were left out."""
    shown, before, after = snippet(doc, terms)
    fence = "````" if any("```" in line for line in shown) else "```"
    language = doc.language if doc.language != "text" else ""
    return [f"{fence}{language}", *(["..."] if before else []), *shown, *(["..."] if after else []), fence]
