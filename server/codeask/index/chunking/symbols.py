"""The definitions of a source file, found with the chunker's tree-sitter setup (:mod:`.code`).

Explain and hover use them to explain the symbol under the cursor (its whole definition) rather
than the chunk around it: a chunk may hold several small methods, or only part of a large one.
The node types, the unwrapping of decorators / ``export`` and the naming rules are the chunker's
own (:func:`.code.named_definition`), so a definition here has the symbol its chunk
claims in the index (``Class.method``).
"""

from __future__ import annotations

from dataclasses import dataclass

from codeask.index.chunking.code import Node, named_definition, node_rows, parser_for
from codeask.lines import split_lines

__all__ = ["Definition", "definitions", "statement_lines"]


@dataclass(frozen=True, slots=True)
class Definition:
    """One definition: ``symbol`` qualified by its enclosing definitions (``Session.rebuild_proxies``),
    ``name`` its last part; 1-based inclusive ``start_line`` / ``end_line`` (decorators and ``export``
    included) and ``name_line``, the line of its name."""

    symbol: str
    name: str
    start_line: int
    end_line: int
    name_line: int

    def contains(self, line: int) -> bool:
        """Whether 1-based ``line`` lies inside the definition."""
        return self.start_line <= line <= self.end_line


def definitions(text: str, language: str) -> list[Definition]:
    """Every named definition of ``text`` (a file in ``language``, see
    :func:`codeask.index.chunking.languages.language_for`), outer before inner, in file order.
    ``[]`` for a language without a tree-sitter grammar. Lines are :func:`codeask.lines.split_lines`
    lines (the text is re-joined with ``\\n`` for parsing, as the chunker does)."""
    parser = parser_for(language)
    if parser is None or not text:
        return []
    tree = parser.parse("\n".join(split_lines(text)).encode("utf-8", "surrogatepass"))
    out: list[Definition] = []
    stack = [(tree.root_node, "")]
    while stack:
        node, scope = stack.pop()
        found = []
        for child in node.named_children:
            named = named_definition(child)
            if named is None:
                found.append((child, scope))
                continue
            inner, name = named
            symbol = f"{scope}.{name}" if scope else name
            start, end = node_rows(child)
            name_node = inner.child_by_field_name("name") or inner
            out.append(Definition(symbol, name.rsplit(".", 1)[-1], start + 1, end + 1, name_node.start_point.row + 1))
            found.append((inner, symbol))
        stack.extend(reversed(found))
    out.sort(key=lambda d: (d.start_line, -d.end_line))
    return out


#: Lines a module-level statement may span to be explained on its own (a hover on ``TIMEOUT = 30``);
#: a longer one (a C ``#ifdef`` block around half the file) leaves the hover its chunk.
MAX_STATEMENT_LINES = 40


def statement_lines(text: str, language: str, line: int) -> tuple[int, int] | None:
    """1-based inclusive lines of the top-level statement of ``text`` holding 1-based ``line`` (a module
    constant ``DEFAULT_POOLSIZE = 10``, an ``export const``, a Go ``const (...)`` block), or ``None``:
    no grammar, no statement there, a comment or docstring (words, no code: the chunk is explained),
    or one longer than :data:`MAX_STATEMENT_LINES`."""
    parser = parser_for(language)
    if parser is None or not text:
        return None
    tree = parser.parse("\n".join(split_lines(text)).encode("utf-8", "surrogatepass"))
    for child in tree.root_node.named_children:
        start, end = node_rows(child)
        if start + 1 <= line <= end + 1:
            return (start + 1, end + 1) if end - start < MAX_STATEMENT_LINES and not _prose(child) else None
    return None


def _prose(node: Node) -> bool:
    """Whether the top-level ``node`` is a comment or a lone string (a module docstring): words, no code."""
    only = node.named_children[0] if node.type == "expression_statement" and node.named_child_count == 1 else node
    return "comment" in node.type or "string" in only.type
