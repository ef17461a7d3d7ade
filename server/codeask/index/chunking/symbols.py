"""The definitions of a source file, found with the chunker's tree-sitter setup (:mod:`.code`).

Explain and hover use them to explain the symbol under the cursor (its whole definition) rather
than the chunk around it: a chunk may hold several small methods, or only part of a large one.
The node types, the unwrapping of decorators / ``export`` and the naming rules are the chunker's
own (:func:`.code.named_definition`), so a definition here has the symbol its chunk
claims in the index (``Class.method``).
"""

from __future__ import annotations

from dataclasses import dataclass

from codeask.index.chunking.code import named_definition, node_rows, parser_for
from codeask.lines import split_lines

__all__ = ["Definition", "definitions"]


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
