"""The tree-sitter node types the code chunker (:mod:`codeask.index.chunking.code`) acts on, across
the grammars of :mod:`codeask.index.chunking.languages`: definitions, their wrappers, the bodies
flattened when a definition is split, names, and values that define functions."""

from __future__ import annotations

__all__ = ["DEF_TYPES", "WRAPPERS", "CONTAINERS", "IDENT_TYPES", "VALUE_DEFS"]

#: Node types that define a named symbol.
DEF_TYPES = frozenset(
    {
        # python / starlark
        "function_definition",
        "class_definition",
        "decorated_definition",
        # javascript / typescript
        "function_declaration",
        "generator_function_declaration",
        "class_declaration",
        "abstract_class_declaration",
        "method_definition",
        "interface_declaration",
        "type_alias_declaration",
        "enum_declaration",
        "internal_module",
        "module",
        "function_signature",
        "abstract_method_signature",
        "export_statement",
        "lexical_declaration",
        "variable_declaration",
        # go
        "method_declaration",
        "type_declaration",
        # rust
        "function_item",
        "struct_item",
        "enum_item",
        "union_item",
        "impl_item",
        "trait_item",
        "mod_item",
        "macro_definition",
        "function_signature_item",
        # java / c# / kotlin / scala / swift / dart
        "record_declaration",
        "constructor_declaration",
        "annotation_type_declaration",
        "struct_declaration",
        "namespace_declaration",
        "file_scoped_namespace_declaration",
        "property_declaration",
        "object_declaration",
        "companion_object",
        "object_definition",
        "trait_definition",
        "protocol_declaration",
        "extension_declaration",
        "destructor_declaration",
        "operator_declaration",
        "delegate_declaration",
        "event_declaration",
        "indexer_declaration",
        "secondary_constructor",
        "class_specifier_declaration",
        "mixin_declaration",
        # c / c++
        "struct_specifier",
        "class_specifier",
        "union_specifier",
        "enum_specifier",
        "namespace_definition",
        "template_declaration",
        "type_definition",
        # ruby
        "class",
        "singleton_class",
        "method",
        "singleton_method",
        # php
        "trait_declaration",  # (and namespace_definition, listed under c / c++)
        # lua / bash
        "local_function",
        "function_definition_statement",
    }
)

#: Wrappers whose symbol (and body) is that of an inner definition.
WRAPPERS = frozenset(
    {"decorated_definition", "export_statement", "template_declaration", "lexical_declaration", "variable_declaration"}
)

#: Children flattened into their parent when a node is expanded.
CONTAINERS = frozenset(
    {
        "block",
        "body_statement",
        "class_body",
        "declaration_list",
        "field_declaration_list",
        "compound_statement",
        "statement_block",
        "statement_list",
        "interface_body",
        "enum_body",
        "enum_class_body",
        "object_type",
        "function_body",
        "template_body",
        "do_block",
        "block_body",
        "enum_member_declaration_list",
        "enum_variant_list",
        "annotation_type_body",
        "record_body",
        "constructor_body",
        "protocol_body",
        "suite",
    }
)

#: Node types that hold a definition's name.
IDENT_TYPES = frozenset(
    {
        "identifier",
        "simple_identifier",
        "type_identifier",
        "constant",
        "name",
        "field_identifier",
        "property_identifier",
        "namespace_identifier",
        "qualified_identifier",
        "scoped_identifier",
        "scoped_type_identifier",
        "scope_resolution",
        "dot_index_expression",
        "method_index_expression",
        "word",
        "destructor_name",
        "operator_name",
        "qualified_name",
        "private_property_identifier",
    }
)

#: Values that define a function or class when assigned (``const f = () => ...``).
VALUE_DEFS = frozenset(
    {"arrow_function", "function_expression", "function", "class", "generator_function", "class_expression"}
)
