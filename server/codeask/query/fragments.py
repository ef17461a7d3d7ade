"""A chunk's text as the code it is a piece of: the chunker cuts a file at definitions, so a chunk may be a
piece of a class body (TypeScript's ``#fetch() {..}`` among its class's other methods; Java's method
whose head chunk ends inside a ``switch``), which alone parses as no definition, or start inside a block
comment (a JSDoc example ``ky.retry(..)``), which alone parses as code. Read by the graph's queries
(:mod:`codeask.query.uses`, :func:`codeask.query.resolve.definitions_of`); the index's names come from
whole files and need none of this.
"""

from __future__ import annotations

import re
from functools import lru_cache

from codeask.index.chunking.symbols import Definition, definitions
from codeask.lines import split_lines

__all__ = ["CLASS_HEAD", "STATEMENTS", "class_body", "code_text"]

#: What a piece of a class body the chunker cut (TypeScript's ``#fetch() {..}`` among its class's other
#: methods) is parsed inside: one line before it, so its methods parse as methods (:func:`class_body`).
CLASS_HEAD = "class _ {\n"
#: Languages whose class-body pieces parse as no definition on their own.
_BODIES = frozenset({"javascript", "typescript", "tsx", "java"})
#: Statement keywords tree-sitter's error recovery may read as a method's name (a piece of a method's
#: body, ``for (const hook of hooks) {``, inside a class): no definition.
STATEMENTS = frozenset({"if", "for", "while", "switch", "catch", "try", "do", "else", "return", "with"})
#: A block comment's ``*/`` on a line of its own (after blanks): how a doc comment holding a code example ends.
_CLOSING = re.compile(r"^[ \t]*\*/", re.MULTILINE)
#: Languages with ``/* .. */`` block comments.
_C_COMMENTS = _BODIES | {"c", "cpp", "go", "rust", "csharp", "kotlin", "swift", "scala", "php"}


def code_text(content: str, language: str) -> str:
    """``content`` as :func:`codeask.lines.split_lines` lines joined by ``\\n``, the lines of a block comment
    the chunk starts inside blanked (its first line a ``* ...`` continuation, or a ``*/`` on a line of its
    own closing it before any ``/*`` opens: the code of a JSDoc example, ky's ``return ky.retry({..})``, is
    no call), line numbers kept."""
    text = "\n".join(split_lines(content))
    if language not in _C_COMMENTS or text.lstrip().startswith("*/"):
        return text
    end = text.find("*/")
    if end < 0 or 0 <= text.find("/*") < end:
        return text
    closing = _CLOSING.search(text)  # an example's code in a doc comment: its `*/` closes a line of its own
    if not text.lstrip().startswith("*") and (closing is None or closing.start() > end):
        return text
    return re.sub(r"[^\n]", " ", text[: end + 2]) + text[end + 2 :]


@lru_cache(maxsize=2048)
def class_body(content: str, language: str) -> tuple[Definition, ...] | None:
    """The definitions of ``content`` read as a piece of a class body (TypeScript's ``async #fetch()
    {..}`` among its class's other methods: alone it parses as no definition, and the method's name as a
    bare use), with lines and symbols of ``content`` itself (the class ``_`` around it left out), when
    ``content`` holds no definition alone and a method inside :data:`CLASS_HEAD`; else ``None``. Lines are
    :func:`codeask.lines.split_lines` lines, 1-based."""
    if language not in _BODIES or definitions(code_text(content, language), language):
        return None
    inside = definitions(CLASS_HEAD + code_text(content, language) + "\n}", language)
    methods = tuple(
        Definition(d.symbol.removeprefix("_."), d.name, d.start_line - 1, d.end_line - 1, d.name_line - 1)
        for d in inside
        if d.symbol.startswith("_.") and d.name not in STATEMENTS
    )
    return methods or None
