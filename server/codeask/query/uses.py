"""Where a chunk's code uses a name, read from its syntax tree: the receiver it is reached
through, the line, and whether it is a call, an import or another use.

The symbol graph stores each chunk's names unresolved (:mod:`codeask.index.chunking.graph`);
resolving them (:mod:`codeask.query.resolve`) needs to know how each use spells the name. Reading
that from the text would count words in comments, docstrings and strings as bare calls (a
newcomer found requests' ``DEFAULT_PORTS.get(...)`` resolved to every ``get`` of the project at
sure 1.0 because a docstring says "get"); the syntax tree has no identifiers in comments and
strings, and says what an identifier's receiver is (``sock`` of ``self.sock.send``, ``Config`` of
Rust's ``Config::load``, ``pkg`` of Go's ``pkg.Func``). Pure functions of ``(content, language)``,
remembered per chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from codeask.index.chunking.code import iter_named, parser_for
from codeask.lines import split_lines

__all__ = ["Use", "Uses", "uses_in"]

#: Nodes that reach a name through a receiver or qualifier (``a.b``, ``a->b``, ``a::b``): the
#: name is the last named child, the receiver the one before it.
_MEMBER = frozenset(
    {
        "attribute",
        "member_expression",
        "selector_expression",
        "field_expression",
        "scoped_identifier",
        "scoped_type_identifier",
        "qualified_identifier",
        "qualified_type",
        "method_invocation",
        "field_access",
        "nested_identifier",
        "navigation_expression",
    }
)
#: Nodes that call, instantiate or expand the node in their first named child.
_CALLS = frozenset(
    {"call", "call_expression", "new_expression", "macro_invocation", "object_creation_expression", "composite_literal"}
)
#: Nodes whose subtree imports names.
_IMPORTS = frozenset(
    {
        "import_statement",
        "import_from_statement",
        "future_import_statement",
        "import_declaration",
        "import_spec",
        "use_declaration",
        "preproc_include",
        "import_clause",
    }
)
#: Nodes that bind a local name in their first named child (an assignment's left side).
_BINDS = frozenset(
    {
        "assignment",
        "augmented_assignment",
        "short_var_declaration",
        "range_clause",
        "var_spec",
        "let_declaration",
        "variable_declarator",
        "for_statement",
        "for_in_clause",
        "as_pattern_target",
        "with_item",
        "init_declarator",
        "local_variable_declaration",
    }
)
#: ``{node type: field}`` of nodes whose field names what they define or declare (no use).
_DEFINES = {
    "function_definition": "name",
    "class_definition": "name",
    "function_declaration": "name",
    "generator_function_declaration": "name",
    "method_definition": "name",
    "method_declaration": "name",
    "class_declaration": "name",
    "abstract_class_declaration": "name",
    "interface_declaration": "name",
    "enum_declaration": "name",
    "record_declaration": "name",
    "constructor_declaration": "name",
    "type_alias_declaration": "name",
    "type_spec": "name",
    "function_item": "name",
    "function_signature_item": "name",
    "struct_item": "name",
    "enum_item": "name",
    "union_item": "name",
    "trait_item": "name",
    "type_item": "name",
    "mod_item": "name",
    "macro_definition": "name",
    "function_declarator": "declarator",
    "struct_specifier": "name",
    "union_specifier": "name",
    "enum_specifier": "name",
    "class_specifier": "name",
    "preproc_def": "name",
    "preproc_function_def": "name",
    "keyword_argument": "name",
    "field_declaration": "name",
    "field_definition": "property",
    "public_field_definition": "name",
    "namespace_definition": "name",
}
_SELF_WORDS = frozenset({"self", "this", "super", "cls", "Self"})


@dataclass(frozen=True, slots=True)
class Use:
    """One use of ``name`` in a chunk: ``receiver`` is ``""`` for a bare use, the word it is reached
    through (``sock`` of ``self.sock.send``; ``Session`` of ``Session().send``) or ``"?"`` for another
    expression; ``line`` is 1-based in the chunk; ``kind`` is ``call`` (called, instantiated,
    expanded), ``import`` or ``use`` (a type, a constant read, anything else)."""

    name: str
    receiver: str
    line: int
    kind: str
    plain: bool = False
    """Whether the receiver is a bare identifier that may name a module (``pkg`` of ``pkg.f``,
    ``module::f``; not ``self.pkg.f``, ``g().f``, nor a Rust or C value's field ``v.f``)."""


@dataclass(frozen=True, slots=True)
class Uses:
    """A chunk's uses (in order) and the local names it binds (parameters, assignment targets)."""

    uses: tuple[Use, ...]
    bound: frozenset[str]

    def of(self, name: str, first: int = 1, last: int = 1 << 30) -> list[Use]:
        """The uses of ``name`` on 1-based lines ``first..last``."""
        return [u for u in self.uses if u.name == name and first <= u.line <= last]

    def names(self, first: int = 1, last: int = 1 << 30) -> set[str]:
        """The names used on lines ``first..last``, imports left out."""
        return {u.name for u in self.uses if first <= u.line <= last and u.kind != "import"}


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node.text else ""


def _word(node: Any) -> str:
    """The word a receiver node stands for: an identifier's text, a member's last part, the
    callee's name of ``Session()`` when it is capitalised (a constructor), else ``"?"``."""
    if node.type in _SELF_WORDS or node.type.endswith("identifier") or node.type in {"self", "this"}:
        return _text(node)
    if node.type in _MEMBER and node.named_child_count:
        return _word(node.named_children[-1])
    if node.type in _CALLS and node.named_child_count:
        callee = _word(node.named_children[0])
        return callee if callee[:1].isupper() else "?"
    return "?"


def _classify(node: Any) -> tuple[str, str, bool] | None:
    """``(receiver, kind, plain)`` of an identifier node (:class:`Use`), or ``None`` when it names a definition, a
    keyword argument or a field being declared (no use)."""
    parent = node.parent
    if parent is None:
        return "", "use", False
    outer, receiver, kind, plain = node, "", "use", False
    if parent.type in _MEMBER and parent.named_children[0] != node:
        before = node.prev_named_sibling
        receiver, outer = (_word(before) if before is not None else "?"), parent
        plain = before is not None and before.type.endswith("identifier") and parent.type != "field_expression"
    elif parent.type in _DEFINES and parent.child_by_field_name(_DEFINES[parent.type]) == node:
        return None
    if parent.type == "method_invocation" and parent.child_by_field_name("name") == node:
        kind = "call"
    holder = outer.parent
    if holder is not None and holder.type in _CALLS and holder.named_children[0] == outer:
        kind = "call"
    up = node.parent
    while up is not None:
        if up.type in _IMPORTS:
            return receiver, "import", plain
        up = up.parent
    return receiver, kind, plain


def _binds(node: Any) -> bool:
    """Whether identifier ``node`` binds a local name (a parameter, an assignment's target)."""
    parent = node.parent
    if parent is None or node.type != "identifier" or parent.child_by_field_name("type") == node:
        return False
    if "parameter" in parent.type or parent.type.endswith("pattern"):  # (**kwargs, a, b = ...)
        return True
    if parent.type == "expression_list" and parent.parent is not None:  # Go: a, err := f()
        parent, node = parent.parent, parent
    return parent.type in _BINDS and parent.named_child_count > 0 and parent.named_children[0] == node


@lru_cache(maxsize=2048)
def uses_in(content: str, language: str) -> Uses:
    """The uses of names in ``content`` (a chunk in ``language``): every identifier outside
    comments and strings that is not a definition's name; no uses for a language without a grammar.
    Lines are :func:`codeask.lines.split_lines` lines, 1-based."""
    parser = parser_for(language)
    if parser is None or not content:
        return Uses((), frozenset())
    tree = parser.parse("\n".join(split_lines(content)).encode("utf-8", "surrogatepass"))
    out: list[Use] = []
    bound: set[str] = set()
    for node in iter_named(tree.root_node):
        if not (node.type.endswith("identifier") or node.type == "constant") or node.named_child_count:
            continue
        name = _text(node)
        if _binds(node):
            bound.add(name)
        found = _classify(node)
        if found is not None:
            out.append(Use(name, found[0], node.start_point.row + 1, found[1], found[2]))
    return Uses(tuple(out), frozenset(bound))
