"""The names a question spells as code, and the chunks and files that define them.

A developer who writes ``TerminalReporter``, ``from_envvar`` or ``Session.send`` in a question names
code: :func:`code_identifiers` finds such names, :func:`identifier_ranking` ranks the retrieved chunks
spelling them (their definitions first) as one of retrieval's rankings
(:class:`codeask.query.steps.retrieve.HybridRetrieve`), and :func:`defining_paths` tells which files
the question names that way, as a file name names its file (:mod:`codeask.query.steps.priors`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from codeask.query.question_words import chunk_symbols

if TYPE_CHECKING:
    from codeask.index.rows import Hit

__all__ = ["code_identifiers", "defining_paths", "identifier_ranking"]

#: What separates the names of a chunk's symbol (``Session.send, Session.get_adapter``).
_SYMBOL_NAMES = re.compile(r"[.,\s]+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def code_identifiers(question: str) -> list[str]:
    """Names in a question that look like code: ``snake_case``, ``camelCase``, ``dotted.names``.

    Plain words are left out; a name must have an underscore, an inner capital or a dot, and at
    least 4 characters.
    """
    found: list[str] = []
    for token in _IDENTIFIER.findall(question):
        token = token.strip("_.")
        looks_like_code = "_" in token or "." in token or any(c.isupper() for c in token[1:])
        if len(token) >= 4 and looks_like_code and token not in found:
            found.append(token)
    return found


def identifier_ranking(pool: Sequence[Hit], identifiers: Sequence[str]) -> list[Hit]:
    """Candidates that contain question identifiers verbatim: those defining most of them in full
    first, then most of their last parts, then most distinct identifiers, then pool order.

    A developer who names a function wants the code that spells it; keyword and dense rankings
    alone can rank a chunk full of the name's word parts above it. Among the chunks spelling a name,
    the one defining it (a name of its qualified symbols, :func:`~codeask.query.question_words.chunk_symbols`:
    ``TerminalReporter`` of ``TerminalReporter.__init__``) comes before its uses, however many: pytest's
    ``terminal.py`` was 11th for a question naming ``TerminalReporter``, after the plugins and tests
    taking it from a fixture (bench/multifile, MRR .822 -> .827 over 210 rows). Dotted names also match
    on their last part (``Config.from_envvar`` -> ``from_envvar``), below the chunk defining the whole
    name, and a chunk packing several definitions defines each: xarray's
    ``DummyBackendEntrypointKwargs.open_dataset`` is a class in a test module's first chunk (stored under
    no symbol), and every backend's ``open_dataset`` outranked it.
    """
    names = [(ident, ident.rsplit(".", 1)[-1]) for ident in identifiers]
    scored: dict[str, tuple[int, int, int, int, Hit]] = {}
    for order, hit in enumerate(pool):
        if hit.id in scored:
            continue
        count = sum(1 for full, last in names if full in hit.content or last in hit.content)
        if count:
            symbols = chunk_symbols(hit)
            defined = {name for symbol in symbols for name in _SYMBOL_NAMES.split(symbol)}
            whole = sum(1 for full, _ in names if _defines_whole(symbols, full))
            scored[hit.id] = (whole, sum(1 for _, last in names if last in defined), count, order, hit)
    return [hit for *_, hit in sorted(scored.values(), key=lambda t: (-t[0], -t[1], -t[2], t[3]))]


def _defines_whole(symbols: Sequence[str], full: str) -> bool:
    """Whether one of a chunk's qualified ``symbols`` is the name ``full`` (``Session.send``), or ends in it."""
    return any(s == full or s.endswith(f".{full}") for s in symbols)


def defining_paths(ranking: Sequence[Hit], identifiers: Sequence[str]) -> set[str]:
    """The files of ``ranking`` (:func:`identifier_ranking`'s) that alone define one of ``identifiers``
    in full: the question names such a file's code as surely as by its file name, so a test file
    holding it is not downweighted (xarray's ``DummyBackendEntrypointKwargs``, a class in
    ``tests/test_plugins.py``, was past the 40th chunk for a question naming it, though the keyword
    search ranked it first). Only a type's name (a capital first) or a qualified one (``Session.send``)
    names one definition: tests define the callbacks they pass under an API's function names (ky's
    ``throwHttpErrors() {..}`` in a test, its option only typed in the source), and test methods
    repeat the names they test (``test_concat``). A name several files define names none of them (a C
    prototype reads as a definition of its parameter's type); a docs heading is no definition."""
    names = [full for full in identifiers if full[0].isupper() or "." in full]
    files: dict[str, set[str]] = defaultdict(set)
    for hit in ranking if names else ():
        if hit.kind == "docs":
            continue
        symbols = chunk_symbols(hit)
        for full in names:
            if _defines_whole(symbols, full):
                files[full].add(hit.path)
    return {path for paths in files.values() if len(paths) == 1 for path in paths}
