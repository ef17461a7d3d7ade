"""The tree-sitter node types :mod:`codeask.query.uses` reads a chunk's uses by, per grammar: which
nodes reach a name through a receiver, call it, import it, bind it, define it or type it.

Tables only (node type names of the grammars of ``tree_sitter_language_pack``: Python, Go, Rust,
Java, C/C++, JavaScript/TypeScript), so the reader's functions stay short.
"""

from __future__ import annotations

__all__ = [
    "MEMBER",
    "CALLS",
    "IMPORTS",
    "BINDS",
    "DEFINES",
    "SELF_WORDS",
    "WRAPS",
    "TYPE_WRAPS",
    "CONSTRUCTS",
    "INFERRED",
    "FIELDS",
    "LITERALS",
    "CONTAINER_TYPES",
]

#: Nodes that reach a name through a receiver or qualifier (``a.b``, ``a->b``, ``a::b``): the
#: name is the last named child, the receiver the one before it.
MEMBER = (
    frozenset({"attribute", "member_expression", "selector_expression", "field_expression", "field_access"})
    | frozenset({"scoped_identifier", "scoped_type_identifier", "qualified_identifier", "qualified_type"})
    | frozenset({"method_invocation", "nested_identifier", "nested_type_identifier", "navigation_expression"})
    | frozenset({"method_reference"})  # Java's this::emit, Util::check: the method through its receiver
)  # values' members, then paths, then the rest
#: Nodes that call, instantiate or expand the node in their first named child.
CALLS = frozenset(
    {"call", "call_expression", "new_expression", "macro_invocation", "object_creation_expression", "composite_literal"}
)
#: Nodes whose subtree imports names.
IMPORTS = frozenset(
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
BINDS = frozenset(
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
DEFINES = {
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
    "pair": "key",
    "property_signature": "name",
    "type_binding": "name",  # Rust's Iterator<Item = S>: the trait's associated type, no project Item
}
SELF_WORDS = frozenset({"self", "this", "super", "cls", "Self"})
#: Nodes between a bound name and the declaration that types it (``*p``, ``p = ...``, ``as p``).
WRAPS = frozenset(
    {
        "pointer_declarator",
        "reference_declarator",
        "init_declarator",
        "expression_list",
        "as_pattern_target",
        "as_pattern",
        "variable_declarator",
    }
)
#: Nodes around a type or a constructed value that stand for it (``*T``, ``&T``, ``T<U>``, ``&T{}``).
TYPE_WRAPS = frozenset(
    {
        "pointer_type",
        "reference_type",
        "type",
        "type_annotation",
        "generic_type",
        "unary_expression",
        "reference_expression",
        "parenthesized_expression",
        "await",
        "await_expression",
    }
)
#: Nodes that construct a value of the type in their ``type``, ``name`` or ``constructor`` field.
CONSTRUCTS = frozenset({"composite_literal", "struct_expression", "new_expression", "object_creation_expression"})
#: Declared types that leave the type to the value (Java's ``var``, C++'s ``auto``).
INFERRED = frozenset({"var", "auto"})
#: ``(node, parent)`` types of a field's name whose declaration types it (Go's, C's, TypeScript's class field).
FIELDS = {("field_identifier", "field_declaration"), ("property_identifier", "public_field_definition")}
#: Literal values of a builtin type (a dict, list, set, tuple, string or number; Rust's array, Java's array
#: initializer): a variable bound to one holds no project class. Not JavaScript's ``object``, whose
#: methods are the project's (``const api = {get() {..}}``).
LITERALS = frozenset(
    {"dictionary", "list", "set", "tuple", "string", "concatenated_string", "integer", "float"}
    | {"list_comprehension", "dictionary_comprehension", "set_comprehension"}
    | {"array", "template_string", "number", "array_expression", "string_literal", "raw_string_literal"}
    | {"array_initializer", "interpreted_string_literal", "int_literal", "float_literal"}
)
#: Go composite literals' types that are builtins (``map[K]V{}``, ``[]T{}``, ``[n]T{}``).
CONTAINER_TYPES = frozenset({"map_type", "slice_type", "array_type", "implicit_length_array_type"})
