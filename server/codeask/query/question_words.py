"""A question's words as the graph ranking and the spans read them: the words of 3+ letters,
identifiers split, the share of them a chunk holds, and a chunk named by its definition that holds most."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from functools import lru_cache

from codeask.index.rows import Hit, split_identifier
from codeask.lines import split_lines
from codeask.query.focus import STOP_WORDS
from codeask.query.pipeline import Document
from codeask.query.resolve import definitions_of, scoped

__all__ = [
    "question_terms",
    "relabelled",
    "term_overlap",
    "matched_symbol",
    "terms_held",
    "match_key",
    "names_definition",
    "chunk_symbols",
    "INFLECTION",
    "DETERMINERS",
]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _word_parts(text: str) -> list[str]:
    """The words of ``text`` with identifiers split, the parts of 3+ letters, in order."""
    return [p for w in _WORD.findall(text) for p in split_identifier(w) if len(p) >= 3]


def question_terms(question: str) -> set[str]:
    """The question's words of 3+ letters, identifiers split (``rebuild_auth`` -> rebuild, auth)."""
    return set(_word_parts(question))


#: Letters a question's word may add to a definition's name part and still spell it: an English
#: inflection (``blueprint`` -> ``blueprints``, ``register`` -> ``registered``, ``pop`` -> ``popped``),
#: not another word (``app`` is not spelled by ``application``).
INFLECTION = 3


#: Determiners skipped between a question's words: "save the session" spells ``save_session``.
DETERMINERS = frozenset({"the", "its", "their", "this", "that", "these", "those"})

#: Shortest name part that several words may spell together (:func:`_compound`): ``pyfile``, not
#: ``exec`` by "execution context".
COMPOUND_MIN = 5


def _inflects(word: str, part: str) -> bool:
    """Whether ``word`` spells ``part``: the part itself, or the part and up to :data:`INFLECTION` letters."""
    return word.startswith(part) and len(word) - len(part) <= INFLECTION


def _compound(part: str, words: Sequence[str]) -> bool:
    """Whether ``part`` is 2+ consecutive ``words`` written as one, every word but the last cut to a
    prefix of 2+ letters, the last whole (or inflected): "python file" spells ``pyfile``, "base name"
    ``basename``, "url join" ``urljoin``; "remote version" no ``remove`` (its last word is cut)."""
    *heads, last = words
    if part[:2] != heads[0][:2]:
        return False
    cuts = range(len(last), max(1, len(last) - INFLECTION - 1), -1)  # the last word, less an inflection
    stem = next((last[:n] for n in cuts if part.endswith(last[:n])), "")
    if not stem:
        return False
    rest = part[: len(part) - len(stem)]
    for word in heads:
        size = next((n for n in range(len(word), 1, -1) if rest.startswith(word[:n])), 0)
        if not size:
            return False
        rest = rest[size:]
    return rest == ""


def _spelled_from(words: Sequence[str], i: int, parts: Sequence[str]) -> bool:
    """Whether ``parts`` are spelled in order by ``words`` from ``i`` on: each by one word
    (:func:`_inflects`) or, one of :data:`COMPOUND_MIN`+ letters, by two or three (:func:`_compound`)."""
    if not parts:
        return True
    part, rest = parts[0], parts[1:]
    if i < len(words) and _inflects(words[i], part) and _spelled_from(words, i + 1, rest):
        return True
    return len(part) >= COMPOUND_MIN and any(
        i + k <= len(words) and _compound(part, words[i : i + k]) and _spelled_from(words, i + k, rest) for k in (2, 3)
    )


def names_definition(question: str) -> Callable[[Hit], int]:
    """How many parts of a chunk's definition name ``question`` spells in words, 0 when it names none.

    The question's words are its words of 3+ letters, identifiers split, determiners
    (:data:`DETERMINERS`) left out; a word spells a name's part when it is the part or the part with
    at most :data:`INFLECTION` more letters. A name is one of the chunk's qualified symbols (its stored
    symbol and its definitions', :func:`chunk_symbols`) or its leading names (``RequestContext`` of
    ``RequestContext.push``), its parts of 3+ letters; the
    question names it when consecutive words spell two or more of its last parts, from the start of
    one of its names or, in a type's name (a capital first), from any part, as English names a thing
    by its head words ("a session interface": ``SessionInterface`` and
    ``SecureCookieSessionInterface``, not the function ``copy_current_request_context`` by "request
    context"). The count is the most parts spelled, so the definition named most fully leads: "how
    does the session interface save the session" spells 4 parts of
    ``SecureCookieSessionInterface.save_session``, 2 of ``SessionInterface.make_null_session``.
    "How are blueprints registered" names ``Blueprint.register``, "Session#send" ``Session.send``;
    "the session's request" names no ``Session.request`` (not consecutive), one word (``run``,
    ``App``) no definition.
    """
    words = [p for p in _word_parts(question) if p not in DETERMINERS]

    @lru_cache(maxsize=4096)
    def spelled(parts: tuple[str, ...]) -> bool:
        return any(_spelled_from(words, i, parts) for i in range(len(words)))

    def named(hit: Hit) -> int:
        most = 0
        for symbol in chunk_symbols(hit):
            parts: list[str] = []  # the parts of the symbol's leading names read so far
            starts: list[int] = []  # where a spelled run may begin: a name's first part, any part of a type name
            for name in symbol.strip().split("."):
                own = _word_parts(name)
                starts += range(len(parts), len(parts) + len(own)) if name[:1].isupper() else [len(parts)]
                parts += own
                runs = (len(parts) - s for s in starts if len(parts) - s >= 2 and spelled(tuple(parts[s:])))
                most = max(most, *runs, 0)
        return most

    return named


def chunk_symbols(hit: Hit) -> list[str]:
    """The qualified symbols a chunk defines: its stored symbol's (``a, b`` of a packed label) and those
    of the definitions in its lines (:func:`~codeask.query.resolve.definitions_of`): a chunk packing
    several methods is stored under its class (flask's ``FlaskClient`` for the lines holding ``open``)."""
    inner = [scoped(hit, d) for d in definitions_of(hit.content, hit.language)] if hit.content else []
    return list(dict.fromkeys([part.strip() for part in hit.symbol.split(",")] + inner))


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


def terms_held(terms: set[str], text: str) -> int:
    """How many of the question's ``terms`` (:func:`question_terms`) the words of ``text`` (a
    definition's lines, identifiers split) hold, as they are or inflected either way
    (:func:`_inflects`: "chained" holds ``chain``, "middleware" ``middlewares``), the question's
    function words left out (:data:`~codeask.query.focus.STOP_WORDS`: a long docstring holds every
    "the", "how" and "for", and named ``RequestContext.copy`` for "how does flask push the context")."""
    parts = {p for w in _WORD.findall(text) for p in split_identifier(w)}
    return sum(1 for t in terms if t not in STOP_WORDS and _spelled(t, parts))


def _spelled(term: str, parts: Iterable[str]) -> bool:
    """Whether one of ``parts`` is ``term``, or either is the other inflected (:func:`_inflects`)."""
    return any(term == p or _inflects(term, p) or _inflects(p, term) for p in parts)


def match_key(terms: set[str], name: str, text: str) -> tuple[bool, int, bool]:
    """How a definition named ``name`` whose lines are ``text`` matches a question of ``terms``:
    whether the question spells its whole name (each part of 3+ letters a term, as it is or
    inflected: "how does the Throttle middleware limit requests" names ``Throttle``, not the
    ``ThrottleOpts`` whose field comments hold more of its words; "dispatch a request" names
    ``dispatch_request``, not ``finalize_request``), then the terms it holds (:func:`terms_held`),
    then whether its name spells one (``push`` for "how does flask push the context", over ``copy``,
    whose docstring holds as many: "flask", "app")."""
    parts = split_identifier(name)
    asked = [t for t in terms if t not in STOP_WORDS]
    long = [p for p in parts if len(p) >= 3]
    whole = bool(long) and all(any(_spelled(t, [p]) for t in asked) for p in long)
    return whole, terms_held(terms, text), any(_spelled(t, parts) for t in asked)


def matched_symbol(hit: Hit, terms: set[str]) -> str:
    """The label of ``hit`` for a question with ``terms`` (lower-case word parts,
    :func:`~codeask.index.rows.split_identifier`): the qualified symbol of the definition in the
    chunk matching them best (:func:`match_key`: one whose whole name the question spells, then whose
    own lines hold the most of them; on a tie, the one whose name spells one; then an inner one over
    the definition around it, the first of siblings), after the
    chunk's first definition when it is another one outside it (``SessionRedirectMixin.rebuild_auth,
    SessionRedirectMixin.rebuild_proxies``: a reader opening the span meets its first definition first); ``hit.symbol`` when the chunk holds one
    definition or none, or no definition holds a term (:func:`terms_held`; a chunk stored under no
    symbol, as one packing Go functions is, then its first definition's). A chunk packing several
    definitions is stored under its first (or its class): a question about the third one names the
    third one."""
    defs = definitions_of(hit.content, hit.language)
    if len(defs) < 2 or not terms:
        return hit.symbol
    lines = split_lines(hit.content)
    best, most = None, (False, 0, False)
    for d in defs:
        key = match_key(terms, d.name, "\n".join(lines[d.start_line - 1 : d.end_line]))
        if key > most or (key == most and best is not None and best.contains(d.start_line)):
            best, most = d, key
    if best is None:  # a chunk packing definitions is stored under none: named by its first
        return hit.symbol or scoped(hit, defs[0])
    first = defs[0]
    if best is first or first.contains(best.start_line):
        return scoped(hit, best)
    return f"{scoped(hit, first)}, {scoped(hit, best)}"
