"""Where a reader of a cited span starts (:func:`open_line`): the definition its label names that
holds the most of the question's words, with the comment lines right above it.

A span is cut by chunks, not by definitions: chi's ``chain.go:1-40`` opens on ``package chi``, its
``Chain`` at line 6; a merged span ``Flask.log_exception, Flask.dispatch_request`` opens on the
method before the one a question about dispatching is about; a later window of flask's long
``App.__init__`` (330-389) opens in an attribute's comment, its lines naming the question further
down. The answer without an LLM shows its snippet from this line (:mod:`codeask.query.no_llm`),
every source and span carries it as ``open_line`` (:class:`~codeask.query.result.Source`), and the
editors open a citation there, the cited lines still the span's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set

from codeask.index.chunking.symbols import Definition
from codeask.lines import split_lines
from codeask.query.pipeline import Document
from codeask.query.question_words import match_key, terms_held
from codeask.query.resolve import definitions_of

__all__ = ["open_line"]

#: A definition's head naming a type, not a function (:func:`_outermost_function`): Python, Java,
#: C#, JavaScript and TypeScript ``class``/``interface``/``enum``/``record``, Go ``type``, Rust
#: ``struct``/``impl``/``trait``, C/C++ ``struct``/``union``/``namespace``, Kotlin/Scala ``object``.
_TYPE_HEAD = re.compile(r"\b(?:class|interface|enum|record|struct|union|impl|trait|type|object|module|namespace)\b")

#: A line of comment (or an attribute: Rust's ``#[derive]``) that belongs to the definition below it.
_COMMENT = re.compile(r"\s*(?://|#|/\*|\*|--|;)")


def _named(defs: Sequence[Definition], name: str) -> Definition | None:
    """The definition of ``defs`` a label's ``name`` names: by its qualified symbol, else its last part."""
    last = re.split(r"[.:]+", name)[-1]
    same = (d for d in defs if d.symbol == name or name.endswith(f".{d.symbol}") or d.symbol.endswith(f".{name}"))
    return next(same, None) or next((d for d in defs if d.name == last), None)


def _with_comments(lines: Sequence[str], index: int) -> int:
    """The 0-based index of the first of the comment lines right above ``lines[index]`` (a Go or Java
    doc comment, Rust's ``#[derive]``), ``index`` when none is."""
    while 0 < index < len(lines) and _COMMENT.match(lines[index - 1]):
        index -= 1
    return index


def _most_terms(lines: Sequence[str], terms: Set[str]) -> int:
    """The 0-based index of the first of ``lines`` holding the most of ``terms``
    (:func:`~codeask.query.question_words.terms_held`), from the comment it is a line of; 0 when
    none holds one."""
    held = [terms_held(set(terms), line) for line in lines]
    most = max(held, default=0)
    first = held.index(most) if most else 0
    return _with_comments(lines, first) if _COMMENT.match(lines[first] if lines else "") else first


def _outermost_function(defs: Sequence[Definition], lines: Sequence[str], best: Definition) -> Definition:
    """``best``, or the outermost function around it (a definition whose line before its name holds
    no type keyword, :data:`_TYPE_HEAD`): a closure (flask's ``with_appcontext.decorator``) and a
    class local to a test function are read from the function; a method of a class, from its own
    line."""
    around = [d for d in defs if d.start_line < best.start_line and best.end_line <= d.end_line]
    functions = [d for d in around if not _TYPE_HEAD.search(_head(lines, d))]
    return min(functions, key=lambda d: d.start_line, default=best)


def _head(lines: Sequence[str], d: Definition) -> str:
    """The text of ``d``'s name line (1-based in ``lines``) before its name: ``class ``, ``def ``,
    ``func (mx *Mux) ``."""
    line = lines[d.name_line - 1] if 0 < d.name_line <= len(lines) else ""
    return line[: max(line.find(d.name), 0)]


def open_line(doc: Document, terms: Set[str] = frozenset()) -> int:
    """The 1-based file line of ``doc`` where the definition its label (``doc.symbol``, names split by
    commas) names that holds the most of the question's ``terms`` begins
    (:func:`~codeask.query.question_words.match_key`; the later on a tie: a label ``A.copy, A.push``
    names the best match last, and a merged span's label names its chunks' in the file's order), with
    the comment lines right above it (a Go or Java doc comment); a definition inside a function (a
    closure, a class local to a test), from the outermost function around it
    (:func:`_outermost_function`). A span inside a longer definition its label names (a later
    window of a long function: no name's definition starts in it) opens on its first line holding
    the most of ``terms`` (its comment's first); a span with no label, and a section of docs (its
    label a heading), on its first line."""
    defs = definitions_of(doc.content, doc.language)
    named = [d for d in (_named(defs, n.strip()) for n in doc.symbol.split(",") if n.strip()) if d is not None]
    lines = split_lines(doc.content)
    if not named:
        return doc.start_line + (_most_terms(lines, terms) if doc.symbol.strip() and doc.kind != "docs" else 0)
    best = max(
        reversed(named), key=lambda d: match_key(set(terms), d.name, "\n".join(lines[d.start_line - 1 : d.end_line]))
    )
    start = _with_comments(lines, _outermost_function(defs, lines, best).start_line - 1)
    return doc.start_line + min(start, max(len(lines) - 1, 0))
