"""A document trimmed to the lines that answer the question: the definition around them.

A local model's time budget (:mod:`codeask.query.budget`) holds a few hundred tokens per document,
about 15 lines of a 60-120 line chunk. Its first lines are often another function's tail or a long
docstring, while the lines naming what the question asks about sit further down (issue 30: a
chunk of flask's ``app.py`` cut to lines 864-885 lost ``full_dispatch_request``'s call of
``finalize_request`` at line 918). :func:`focus` keeps instead the contiguous run of lines, within
the document's token share, that holds the most of the question's words (:func:`question_terms`),
starting at a definition's first line (tree-sitter, :func:`codeask.index.chunking.symbols.definitions`)
when one starts near them. The run stays contiguous so its ``start_line``/``end_line`` link stays true.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache

from codeask.index.chunking.symbols import definitions
from codeask.index.rows import IDENT, split_identifier
from codeask.lines import split_lines
from codeask.query.elide import MARKER, elided_lines, quiet_runs
from codeask.query.pipeline import Document

__all__ = [
    "question_terms",
    "code_names",
    "line_score",
    "focus",
    "shown",
    "labelled",
    "CHARS_PER_TOKEN",
    "DEFINITION_BONUS",
    "NAMED_BONUS",
    "MIN_LINES",
]

#: The least lines a trimmed document keeps.
MIN_LINES = 5
#: What starting at a definition's first line is worth, in matched words: a run holding a whole
#: function is easier to read than one starting mid-body. Measured on the top 4 documents of
#: issue 30's 12 idle-run questions, cut to 170 tokens: the key facts they hold were 0.528 for their
#: first lines, 0.597 for the best-matching run, 0.708 with this bonus (also 0.708 at 3-5, 0.667 at 8+;
#: counting distinct words, as :func:`focus` now does: 0.708 at 157, 170 and 200 tokens, where the sum
#: of line scores held 0.708, 0.708 and 0.639).
DEFINITION_BONUS = 2
#: What starting at the first line of a definition whose name the question spells out (or the
#: best-ranked document's window calls, :func:`codeask.query.budget.tighten`) is worth, in matched
#: words, on top of :data:`DEFINITION_BONUS`: the question "What does full_dispatch_request do
#: after the view returns?" was sent the docstring of the ``dispatch_request`` above it, which
#: names more of its plain words, and not ``full_dispatch_request``'s body.
NAMED_BONUS = 4
#: Characters a quiet run's marker line costs in :func:`focus` (:data:`~codeask.query.elide.MARKER`
#: with six-digit line numbers and a docstring's indentation).
_MARKER_COST = len(MARKER.format(indent=" " * 8, first=100000, last=100000, what="docstring")) + 1
#: Characters per token where the endpoint cannot count (the estimate of
#: :func:`codeask.llm.protocol.estimate_tokens`).
CHARS_PER_TOKEN = 3.0
#: Words of a question that say nothing about the code (English function words and question words).
STOP_WORDS = frozenset(
    re.findall(
        r"\w+",
        "the and for are was were does did done how what when where which who whom why with without from into onto "
        "that this these those then than there their them they its has have had not but can could should would will "
        "may might via per each any all out use used using get gets set sets one two happen happens happened make "
        "makes made work works find found way ways also some only other just about after before goes come comes "
        "during across",
    )
)


def _stem(word: str) -> str:
    """``word`` lower-cased, a plural ``s`` dropped (``cookies`` and ``cookie`` match; ``process`` stays)."""
    word = word.lower()
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _words(text: str, keep: Callable[[str], bool] = bool) -> set[str]:
    """The stemmed identifiers of ``text`` and their parts (:func:`split_identifier`), three letters or
    more, those ``keep`` keeps."""
    out = set()
    for ident in IDENT.findall(text):
        for word in {ident, *split_identifier(ident)}:
            if len(word) >= 3 and keep(word):
                out.add(_stem(word))
    return out


@lru_cache(maxsize=1 << 15)
def line_words(line: str) -> frozenset[str]:
    """:func:`_words` of ``line``, kept for the next time it is read: a time budget's plan measures the
    prompt some forty times per question (:func:`~codeask.query.budget.tighten`), each time reading
    every line of every document again (requests' bench: 485k calls, 46 s of 148 s)."""
    return frozenset(_words(line))


def question_terms(*texts: str) -> frozenset[str]:
    """The words of ``texts`` (the question, its search queries) a relevant line would use: each
    identifier whole and split into parts, stemmed, without :data:`STOP_WORDS` words."""
    words: set[str] = set()
    for text in texts:
        words |= {w for w in _words(text, keep=lambda word: word.lower() not in STOP_WORDS)}
    return frozenset(words)


def code_names(*texts: str) -> frozenset[str]:
    """The identifiers of ``texts`` spelled as code: with an underscore or a capital after the first
    letter (``full_dispatch_request``, ``iterContent``, ``HTTPAdapter``), whole, four characters or
    more; a definition of one of these names is what the text points at."""
    names = set()
    for ident in IDENT.findall("\n".join(texts)):
        if len(ident) >= 4 and ("_" in ident.strip("_") or any(c.isupper() for c in ident[1:])):
            names.add(ident)
    return frozenset(names)


def line_score(line: str, terms: frozenset[str]) -> int:
    """How many of ``terms`` ``line`` names (an identifier of the question counts whole and by parts:
    ``full_dispatch_request`` in both scores 4)."""
    return len(line_words(line) & terms)


def _definitions(lines: list[str], language: str) -> list[tuple[int, int, str]]:
    """The definitions of ``lines``: ``(first, last, name)``, 0-based lines (decorators included),
    outer before inner; the common indentation removed first, so a method out of its class still parses."""
    text = textwrap.dedent("\n".join(lines))
    return [(d.start_line - 1, d.end_line - 1, d.name) for d in definitions(text, language)]


def _label(symbol: str, spans: list[tuple[int, int, str]], first: int, last: int) -> str:
    """``symbol`` (a packed document's ``"a, b"`` label) without the names whose definitions lie
    outside lines ``first`` to ``last - 1``: a run cut from ``rebuild_auth, rebuild_proxies`` that
    holds only ``rebuild_auth`` is labelled so. When the run holds none of the label's names but
    starts definitions of its own, those, under the label's qualifier: flask's chunk labelled
    ``Flask.log_exception, Flask.dispatch_request`` cut to ``full_dispatch_request`` is labelled
    ``Flask.full_dispatch_request``, not after code the model is not sent; so is a one-name label
    whose definition the document holds outside the run (requests' chunk ``rebuild_auth`` cut to the
    ``rebuild_proxies`` after it was sent as ``rebuild_auth``). A one-name label whose definition
    starts before the document (a class around a body's methods) or none is kept."""
    names = [part.strip() for part in symbol.split(",") if part.strip()]
    inside = {name for start, end, name in spans if start < last and end >= first}
    kept = [name for name in names if name.rsplit(".", 1)[-1] in inside]
    parsed = {name for _, _, name in spans}
    if len(names) == 0 or (len(names) == 1 and (kept or names[0].rsplit(".", 1)[-1] not in parsed)):
        return symbol
    if kept:
        return ", ".join(kept)
    qualifier = names[0].rsplit(".", 1)[0] + "." if "." in names[0] else ""
    started = list(dict.fromkeys(name for start, _, name in spans if first <= start < last))
    return ", ".join(qualifier + name for name in started) or symbol


def focus(
    document: Document,
    terms: frozenset[str],
    tokens: int,
    chars_per_token: float = CHARS_PER_TOKEN,
    names: frozenset[str] = frozenset(),
) -> Document:
    """``document`` cut to at most ``tokens`` tokens (``chars_per_token`` characters each; at least
    :data:`MIN_LINES` lines): the contiguous lines naming the most distinct ``terms``, a run that
    starts at the first line of a definition holding a matched line counting :data:`DEFINITION_BONUS`
    more; between runs naming as many, the one with more :func:`line_score` in all, then the earlier
    (so without a match the document keeps its first lines). Distinct words first: five comment lines
    repeating "redirect" must not outrank the docstring naming four of the question's words (a
    newcomer's question on requests' ``should_strip_auth`` was sent ``get_redirect_target``'s
    comment). A run starting at a definition named in ``names`` (:func:`code_names`) counts
    :data:`NAMED_BONUS` more. The quiet runs :func:`shown` leaves out cost only their marker line,
    so a window past a long docstring reaches the code after it. ``start_line`` and ``end_line``
    follow the lines kept; ``document`` itself when all of it fits."""
    lines = split_lines(document.content)
    costs = [(len(line) + 1) / chars_per_token for line in lines]
    if sum(costs) <= tokens:
        return document
    hits = [line_words(line) & terms for line in lines]
    for run in quiet_runs(lines, document.language, {i for i, hit in enumerate(hits) if hit}):
        costs[run.first : run.last + 1] = [_MARKER_COST / chars_per_token] + [0.0] * (run.last - run.first)
    spans = _definitions(lines, document.language) if any(hits) or names else []
    # a definition holding a matched line: the run starting at its first line gets the bonus,
    # one the question (or the best document) names more
    starts: dict[int, int] = {}
    for start, end, name in spans:
        bonus = DEFINITION_BONUS * any(hits[start : end + 1]) + NAMED_BONUS * (name in names)
        starts[start] = max(starts.get(start, 0), bonus)
    best, first, last = (-1, -1), 0, len(lines)
    for start in range(len(lines)):
        end, used = start, 0.0
        while end < len(lines) and (used + costs[end] <= tokens or end - start < MIN_LINES):
            used += costs[end]
            end += 1
        named = len(set().union(*hits[start:end])) + starts.get(start, 0)
        value = (named, sum(map(len, hits[start:end])))
        if value > best:
            best, first, last = value, start, end
    return replace(
        document,
        symbol=_label(document.symbol, spans, first, last),
        content="\n".join(lines[first:last]),
        start_line=document.start_line + first,
        end_line=document.start_line + last - 1,
    )


def shown(document: Document, terms: frozenset[str]) -> Document:
    """``document`` as a local model is sent it (:mod:`codeask.query.elide`): each quiet run (a
    docstring's body; a comment block naming none of the question's ``terms``) replaced by a marker
    line naming the lines it stands for; its ``start_line``/``end_line`` unchanged, so its source
    and link keep the lines as indexed. :func:`focus` costs a window so, so that these lines leave
    room for more code."""
    content = _elided(document.content, document.language, document.start_line, terms)
    return document if content is None else replace(document, content=content)


@lru_cache(maxsize=1024)
def _elided(content: str, language: str, start_line: int, terms: frozenset[str]) -> str | None:
    """:func:`shown`'s text of a document (``None``: nothing elided), kept for the next time the
    prompt is measured with it (a time budget's plan measures it once per cut of each later document)."""
    lines = split_lines(content)
    hits = {i for i, line in enumerate(lines) if line_words(line) & terms}
    runs = quiet_runs(lines, language, hits)
    return "\n".join(elided_lines(lines, runs, start_line)) if runs else None


def labelled(document: Document) -> Document:
    """``document`` with a packed ``"a, b"`` label cut to the definitions its lines hold (a part of a
    packed chunk, :func:`codeask.query.more.remainders`); ``document`` itself otherwise."""
    if "," not in document.symbol:
        return document
    lines = split_lines(document.content)
    spans = _definitions(lines, document.language)
    return replace(document, symbol=_label(document.symbol, spans, 0, len(lines)))
