"""Which chunks are a file's boilerplate: import blocks, module headers, license and docstring preambles.

Such a chunk spells many of the names a question uses (``from .cookies import merge_cookies,
extract_cookies_to_jar``) and so often outscores the definition that does the work, yet it tells a
reader nothing about how the code behaves. Retrieval (:func:`codeask.query.steps.retrieve.fuse`)
ranks a file's boilerplate chunks below its matching definitions, and the widening step
(:mod:`codeask.query.steps.widen`) never adds them.

A chunk is boilerplate when it claims no symbol and at least :data:`BOILERPLATE_SHARE` of its
non-blank lines are import/include/use/package statements, comments, docstrings, dunder module
attributes (``__all__``, ``__version__``) or ``if TYPE_CHECKING:`` blocks. Lines are classified on
the chunk's tree-sitter parse where the language has a grammar, else line by line
(:data:`_LINE_HEADER`).
"""

from __future__ import annotations

import re
from typing import Any

from codeask.index.chunking.code import parser_for

__all__ = ["BOILERPLATE_SHARE", "is_boilerplate", "boilerplate_share"]

BOILERPLATE_SHARE = 0.75
"""Share of a chunk's non-blank lines that must be header material for the chunk to be boilerplate.
Not 1.0: a module header usually ends with a few module constants or a logger
(``log = logging.getLogger(__name__)``) packed into the same chunk; 3/4 still leaves any chunk
with a real body of code (a function, a class, a script's statements) out."""

# Tree-sitter node types that are header material in the grammars codeask ships (Python,
# JavaScript/TypeScript, Rust, Go, Java, Kotlin, C#, C/C++, PHP, Ruby's comments).
_HEADER_TYPES = frozenset(
    {
        "import_statement",
        "import_from_statement",
        "future_import_statement",
        "import_declaration",
        "import_header",
        "import_list",
        "package_clause",
        "package_declaration",
        "package_header",
        "use_declaration",
        "extern_crate_declaration",
        "using_directive",
        "preproc_include",
        "namespace_use_declaration",
        "comment",
        "line_comment",
        "block_comment",
        "doc_comment",
        "shebang",
        "inner_attribute_item",
    }
)

_LINE_HEADER = re.compile(
    r"^\s*(import\s|from\s+\S+\s+import\s|#\s*include\b|use\s|package\s|using\s|require[\s(]|#|//|/\*|\*|--|\"\"\"|''')"
)
_DUNDER = re.compile(r"^\s*__\w+__\s*(:[^=]*)?=")


def _is_header_node(node: Any) -> bool:
    kind = node.type
    if kind in _HEADER_TYPES or kind.endswith("comment"):
        return True
    text = node.text.decode("utf-8", "replace") if node.text else ""
    if kind in ("string", "concatenated_string"):  # a module docstring (newer grammars: no statement node)
        return True
    if kind == "assignment":
        return bool(_DUNDER.match(text))
    if kind == "expression_statement":  # a docstring / "use strict": a bare string literal
        children = [c for c in node.named_children if c.type != "comment"]
        if len(children) == 1 and children[0].type in ("string", "concatenated_string"):
            return True
        return bool(_DUNDER.match(text))  # __all__ = [...], __version__ = "1.0"
    if kind == "if_statement":  # if TYPE_CHECKING: imports
        condition = node.child_by_field_name("condition")
        return condition is not None and condition.text is not None and b"TYPE_CHECKING" in condition.text
    if kind == "export_statement":  # export { a } from "./a"
        return node.child_by_field_name("source") is not None
    return False


def boilerplate_share(content: str, language: str) -> float:
    """Share in ``[0, 1]`` of ``content``'s non-blank lines that are header material (0.0 when blank).

    Uses the tree-sitter grammar of ``language`` when there is one (top-level nodes of the chunk
    parsed on its own), else a line pattern (:data:`_LINE_HEADER`).
    """
    lines = content.splitlines()
    non_blank = {i for i, line in enumerate(lines) if line.strip()}
    if not non_blank:
        return 0.0
    parser = parser_for(language)
    header: set[int] = set()
    if parser is not None:
        tree = parser.parse(content.encode("utf-8"))
        for node in tree.root_node.named_children:
            if _is_header_node(node):
                header.update(range(node.start_point[0], node.end_point[0] + 1))
    else:
        header = {i for i in non_blank if _LINE_HEADER.match(lines[i])}
    return len(header & non_blank) / len(non_blank)


def is_boilerplate(content: str, language: str, symbol: str = "") -> bool:
    """Whether a chunk is boilerplate: no ``symbol`` claimed and :func:`boilerplate_share` of at
    least :data:`BOILERPLATE_SHARE`. A chunk that claims a symbol (a definition) never is."""
    if symbol:
        return False
    return boilerplate_share(content, language) >= BOILERPLATE_SHARE
