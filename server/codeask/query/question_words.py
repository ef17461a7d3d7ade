"""A question's words as the graph ranking and the spans read them: the words of 3+ letters,
identifiers split, the share of them a chunk holds, and a chunk named by its definition that holds most."""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache

from codeask.index.rows import Hit, split_identifier
from codeask.lines import split_lines
from codeask.query.pipeline import Document
from codeask.query.resolve import definitions_of, scoped

__all__ = ["question_terms", "relabelled", "term_overlap", "matched_symbol"]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def question_terms(question: str) -> set[str]:
    """The question's words of 3+ letters, identifiers split (``rebuild_auth`` -> rebuild, auth)."""
    return {p for w in _WORD.findall(question) for p in split_identifier(w) if len(p) >= 3}


def term_overlap(terms: set[str], hit: Hit) -> float:
    """Share of ``terms`` found in the hit's path, symbol and content words (0 to 1)."""
    if not terms:
        return 0.0
    return len(terms & _hit_words(hit.path, hit.symbol, hit.content)) / len(terms)


@lru_cache(maxsize=4096)
def _hit_words(path: str, symbol: str, content: str) -> frozenset[str]:
    """The words of a chunk's ``path``, ``symbol`` and ``content``, identifiers split, kept for the next
    edge to the same definition (the neighbours step reads one per edge: requests' bench, 8,687 for
    19 questions, 9 of 115 s)."""
    return frozenset(p for w in _WORD.findall(f"{path} {symbol} {content}") for p in split_identifier(w))


def relabelled(doc: Document, terms: set[str]) -> Document:
    """``doc`` named by the definition in it that matches the question's ``terms``
    (:func:`question_terms`) best, not by its chunk's first (:func:`matched_symbol`)."""
    hit = Hit(doc.id, doc.path, doc.language, doc.start_line, doc.end_line, doc.symbol, doc.content, doc.score)
    return replace(doc, symbol=matched_symbol(hit, terms))


def matched_symbol(hit: Hit, terms: set[str]) -> str:
    """The label of ``hit`` for a question with ``terms`` (lower-case word parts,
    :func:`~codeask.index.rows.split_identifier`): the qualified symbol of the definition in the
    chunk whose own lines hold the most of them (an inner one on a tie with the definition around
    it, the first of siblings), after the chunk's first definition when it is another one outside
    it (``SessionRedirectMixin.rebuild_auth, SessionRedirectMixin.rebuild_proxies``: a reader
    opening the span meets its first definition first); ``hit.symbol`` when the chunk holds one
    definition or none, or no definition holds a term. A chunk packing several definitions is
    stored under its first (or its class): a question about the third one names the third one."""
    defs = definitions_of(hit.content, hit.language)
    if len(defs) < 2 or not terms:
        return hit.symbol
    lines = split_lines(hit.content)
    best, most = None, 0
    for d in defs:
        text = "\n".join(lines[d.start_line - 1 : d.end_line])
        count = len(terms & {p for w in _WORD.findall(text) for p in split_identifier(w)})
        if count > most or (count == most and best is not None and best.contains(d.start_line)):
            best, most = d, count
    if best is None:
        return hit.symbol
    first = defs[0]
    if best is first or first.contains(best.start_line):
        return scoped(hit, best)
    return f"{scoped(hit, first)}, {scoped(hit, best)}"
