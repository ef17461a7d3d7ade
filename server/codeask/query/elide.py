"""Lines of a code document a small model reads without gain: left out of a tight document, each run
replaced by one marker line that says which lines it stood for.

Under a local model's time budget (:mod:`codeask.query.budget`) a document gets ~200 tokens, about 15
lines, and a long docstring or comment block can take most of them: issue 30's key facts (the
functions a document's code calls) sat in lines the budget cut, after such runs. A *quiet run* is
(found with tree-sitter, :func:`codeask.index.chunking.code.parser_for`):

* the lines of a docstring after its first line and before its closing line (a string that is a
  body's first statement, Python's docstring), or
* a run of lines holding nothing but comments,

at least :data:`MIN_RUN` lines long (a marker costs about what a code line does); a comment run stops
at a line the caller keeps (one naming the question's words, :func:`codeask.query.focus.shown`: a
comment may state the rule asked about), a docstring's body goes whole (its summary line stays). Its
marker (:data:`MARKER`) keeps the lines after it readable by number: the document's header still
gives its true first and last line, and the marker names the lines it stands for. Measured offline
on a32's retrieved documents of the 20 bench questions at Qwen2.5-Coder-1.5B's idle speed: the key
facts in the first prompt went from 0.675 to 0.692 of all, its median tokens from 1,040 to 1,030.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from codeask.index.chunking.code import iter_named, parser_for

__all__ = ["Quiet", "quiet_runs", "elided_lines", "MARKER", "MIN_RUN"]

#: The line standing for a quiet run: its indentation, then which lines it left out (1-based, as the
#: document's header counts) and what they were.
MARKER = "{indent}… lines {first}-{last} left out ({what})"
#: The fewest lines a quiet run leaves out: fewer cost about what their marker does.
MIN_RUN = 3


@dataclass(frozen=True, slots=True)
class Quiet:
    """One quiet run: 0-based ``first`` to ``last`` (inclusive) of a document's lines, ``what`` they
    are (``docstring`` or ``comments``)."""

    first: int
    last: int
    what: str


def _comment_lines(nodes: Iterable[Any], lines: list[str], offset: int) -> set[int]:
    """The rows (0-based, in ``lines``) that hold a comment node and nothing else (``offset``: the
    columns the dedent removed)."""
    rows: set[int] = set()
    for node in nodes:
        if "comment" not in node.type:
            continue
        (r0, c0), (r1, c1) = node.start_point, node.end_point
        if lines[r0][: c0 + offset].strip() or lines[r1][c1 + offset :].strip():
            continue  # code before or after it on its lines: a trailing comment
        rows.update(range(r0, r1 + 1))
    return rows


def _docstring_rows(nodes: Iterable[Any]) -> set[int]:
    """The rows of each docstring (a body's first statement that is a string) after its first row and
    before its last: its summary line and closing quotes stay."""
    rows: set[int] = set()
    for node in nodes:
        if node.type not in ("block", "module"):
            continue
        first = next((c for c in node.named_children if "comment" not in c.type), None)
        if first is not None and first.type == "expression_statement" and first.named_child_count == 1:
            first = first.named_children[0]
        if first is not None and first.type == "string":
            rows.update(range(first.start_point.row + 1, first.end_point.row))
    return rows


@lru_cache(maxsize=1024)
def _kinds(text: str, language: str) -> dict[int, str]:
    """The rows of ``text`` (a document's lines joined) that hold only a comment (``comments``) or a
    docstring's inner lines (``docstring``); ``{}`` without a grammar. Cached by text: one tight
    document is read by :func:`codeask.query.focus.focus`, again to count what it takes, and on every
    try of the prompt's fitting loop (one tree-sitter parse each before)."""
    parser = parser_for(language)
    if parser is None or not text:
        return {}
    lines = text.split("\n")
    dedented = textwrap.dedent(text)
    shown = next((i for i, line in enumerate(lines) if line.strip()), 0)
    offset = len(lines[shown]) - len(dedented.split("\n")[shown])
    nodes = list(iter_named(parser.parse(dedented.encode("utf-8", "surrogatepass")).root_node))
    kinds = {row: "comments" for row in _comment_lines(nodes, lines, offset)}
    kinds.update({row: "docstring" for row in _docstring_rows(nodes)})
    return kinds


def quiet_runs(lines: list[str], language: str, keep: AbstractSet[int] = frozenset()) -> list[Quiet]:
    """The quiet runs of ``lines`` (a document in ``language``; ``[]`` without a grammar), in order:
    each of :data:`MIN_RUN` lines or more, a comment run holding none of the rows in ``keep``. Blank lines between
    two quiet lines of one kind join their run. The text is dedented first, so a method out of its
    class still parses; the parse is cached by text (:func:`_kinds`)."""
    if not lines:
        return []
    kinds = _kinds("\n".join(lines), language)
    runs: list[Quiet] = []
    row = 0
    while row < len(lines):
        what = kinds.get(row)
        if what is None or (row in keep and what == "comments"):
            row += 1
            continue
        end = row
        while (
            end + 1 < len(lines)
            and not (end + 1 in keep and what == "comments")
            and (kinds.get(end + 1) == what or (not lines[end + 1].strip() and kinds.get(end + 2) == what))
        ):
            end += 1
        if end - row + 1 >= MIN_RUN:
            runs.append(Quiet(row, end, what))
        row = end + 1
    return runs


def elided_lines(lines: list[str], runs: list[Quiet], first_line: int) -> list[str]:
    """``lines`` with each of ``runs`` replaced by its :data:`MARKER` line, numbered from
    ``first_line`` (the 1-based line of ``lines[0]``)."""
    out: list[str] = []
    row = 0
    for run in runs:
        out.extend(lines[row : run.first])
        shown = next((line for line in lines[run.first : run.last + 1] if line.strip()), "")
        indent = shown[: len(shown) - len(shown.lstrip())]
        out.append(
            MARKER.format(indent=indent, first=first_line + run.first, last=first_line + run.last, what=run.what)
        )
        row = run.last + 1
    out.extend(lines[row:])
    return out
