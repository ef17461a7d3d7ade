"""The answer without an LLM (:class:`NoLLMAnswer`): the ranked files with a snippet of each span.

What a user with no model configured reads (the README's first command, the editors' answer with no
``llm.provider``): each span's link, its label (the definitions in it a reader meets, the one that
matches the question best among them: :func:`~codeask.query.question_words.matched_symbol`) and
:data:`SNIPPET_LINES` of its lines, from the line the labelled definition holding most of the
question's words starts on (:func:`snippet`): a span opening on the statements before a function, or
on the method before the one the question is about, shows the one the question is about.
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set

from codeask.index.chunking.symbols import Definition
from codeask.lines import split_lines
from codeask.query.pipeline import Document, Query, per_file
from codeask.query.question_words import match_key, question_terms
from codeask.query.resolve import definitions_of
from codeask.query.result import source_link

__all__ = ["NOTHING_FOUND", "NoLLMAnswer", "SNIPPET_LINES", "snippet"]

NOTHING_FOUND = "No matching code was found for this question in the indexed workspace."

#: Lines of a span shown under its link.
SNIPPET_LINES = 8


#: A line of comment (or an attribute: Rust's ``#[derive]``) that belongs to the definition below it.
_COMMENT = re.compile(r"\s*(?://|#|/\*|\*|--|;)")


def _named(defs: Sequence[Definition], name: str) -> Definition | None:
    """The definition of ``defs`` a label's ``name`` names: by its qualified symbol, else its last part."""
    last = re.split(r"[.:]+", name)[-1]
    same = (d for d in defs if d.symbol == name or name.endswith(f".{d.symbol}") or d.symbol.endswith(f".{name}"))
    return next(same, None) or next((d for d in defs if d.name == last), None)


def _labelled_line(doc: Document, lines: list[str], terms: set[str]) -> int:
    """The 0-based line of ``doc.content`` (its ``lines``) where the definition its label names that
    holds the most of the question's ``terms`` begins (:func:`~codeask.query.question_words.match_key`; the later
    on a tie: a label ``A.copy, A.push`` names the best match last, and a merged span's label names
    its chunks' in the file's order), with the comment lines right above it (a Go or Java doc
    comment); 0 when the content holds none of the names."""
    defs = definitions_of(doc.content, doc.language)
    named = [d for d in (_named(defs, n.strip()) for n in doc.symbol.split(",") if n.strip()) if d is not None]
    if not named:
        return 0
    best = max(reversed(named), key=lambda d: match_key(terms, d.name, "\n".join(lines[d.start_line - 1 : d.end_line])))
    start = best.start_line - 1
    while 0 < start < len(lines) and _COMMENT.match(lines[start - 1]):
        start -= 1
    return start


def snippet(doc: Document, terms: Set[str] = frozenset()) -> tuple[list[str], bool, bool]:
    """The lines of ``doc`` shown under its link: :data:`SNIPPET_LINES` from the line its labelled
    definition best matching the question's ``terms`` begins (:func:`_labelled_line`), and whether
    lines were left out before and after them."""
    lines = split_lines(doc.content)
    start = _labelled_line(doc, lines, set(terms))
    if start >= len(lines):
        start = 0
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
                link = f"{source_link(d.label, d.start_line, d.end_line, d.uri)}{symbol}"
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
