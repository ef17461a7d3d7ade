"""The symbol graph's raw names: per chunk, the names it defines and the names it references.

One tree-sitter query per language (:data:`QUERIES`) runs over the parse tree the chunker already
made, in C; each capture is then assigned to the chunk holding its row. ``@def`` captures are the
names of definitions (functions, methods, classes, structs, types, traits, constants, macros, a
module's top-level variables);
``@ref`` captures are the names a chunk calls or instantiates (``f()``, ``obj.f()``, ``new X``,
``X{}``), the method values it passes (Go's ``http.HandlerFunc(mx.routeHTTP)``, Rust's
``.map(Self::parse)``, JavaScript's ``on(this.handle)``), a name a Rust macro's tokens call
(``assert!(CommandSet::new(..))``: a name before a parenthesised token tree; JavaScript's
``#private`` methods keep their ``#``), the types it takes (type identifiers), the constants it reads (``ALL_CAPS`` names) and
the names it imports. A chunk's own definitions are not among its references.

Names are stored unresolved (the last part: ``send``, not ``Session.send``): they are a function
of the chunk's lines alone, so a chunk row kept by an unchanged ``id`` keeps correct names, and a
moved file's rows carry the same names. Resolving a reference to a definition (same file, imports,
how many files define the name) happens when the graph is read (:mod:`codeask.query.graph`).

Languages without a query (and files the chunker windows) get no names: they are still indexed,
just not part of the graph.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from typing import Any

from codeask.imports import IMPORT_LOCK, load
from codeask.index.chunking.languages import TREE_SITTER_LANGUAGES

__all__ = ["GRAPH_VERSION", "QUERIES", "MAX_REFS", "Names", "chunk_names"]

#: Bumped whenever the queries below capture other names: the index meta records it
#: (:mod:`codeask.index.meta`), so the next run over an index written by older queries reads every
#: file again instead of keeping their edges for every file that does not change (its vectors are
#: kept; :func:`codeask.index.meta.reread_if_stale`). 2: a Rust macro's calls and
#: JavaScript's ``#private`` methods; 3: Java's method references (``Util::checkArgument``); 4: a
#: JavaScript/TypeScript module's top-level ``const``/``let`` (ky's ``export const stop = Symbol('stop')``,
#: ``export const requestMethods = [..] as const``), as Python's module-level assignments are.
GRAPH_VERSION = "4"

#: Most distinct references kept per chunk (first occurrences): a 60-line chunk rarely has more;
#: the cap bounds a generated chunk's row.
MAX_REFS = 64

#: Constants a chunk reads: ``ALL_CAPS`` words of its lines (a regular expression over the text,
#: not a query predicate: tree-sitter's Python binding runs ``#match?`` in Python for every
#: identifier, a third of the extraction's time on the sphinx sdist).
_CONSTANT = re.compile(r"\b[A-Z][A-Z0-9_]{2,}\b")

_PYTHON = """
(function_definition name: (identifier) @def)
(class_definition name: (identifier) @def)
(module (assignment left: (identifier) @def))
(module (expression_statement (assignment left: (identifier) @def)))
(call function: (identifier) @ref)
(call function: (attribute attribute: (identifier) @ref))
(class_definition superclasses: (argument_list (identifier) @ref))
(type (identifier) @ref)
(import_from_statement name: (dotted_name (identifier) @ref .))
(aliased_import name: (dotted_name (identifier) @ref .))
"""

_JS_COMMON = """
(function_declaration name: (identifier) @def)
(generator_function_declaration name: (identifier) @def)
(method_definition name: [(property_identifier) (private_property_identifier)] @def)
(variable_declarator name: (identifier) @def value: [(arrow_function) (function_expression)])
(program (lexical_declaration (variable_declarator name: (identifier) @def)))
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @def))))
(call_expression function: (identifier) @ref)
(call_expression function: (member_expression property: [(property_identifier) (private_property_identifier)] @ref))
(new_expression constructor: (identifier) @ref)
(arguments (member_expression property: (property_identifier) @ref))
(import_specifier name: (identifier) @ref)
"""

_JAVASCRIPT = (
    _JS_COMMON
    + """
(class_declaration name: (identifier) @def)
(class_heritage (identifier) @ref)
"""
)

_TYPESCRIPT = (
    _JS_COMMON
    + """
(class_declaration name: (type_identifier) @def)
(abstract_class_declaration name: (type_identifier) @def)
(interface_declaration name: (type_identifier) @def)
(type_alias_declaration name: (type_identifier) @def)
(enum_declaration name: (identifier) @def)
(extends_clause value: (identifier) @ref)
(type_identifier) @ref
"""
)

_GO = """
(function_declaration name: (identifier) @def)
(method_declaration name: (field_identifier) @def)
(type_spec name: (type_identifier) @def)
(const_spec name: (identifier) @def)
(call_expression function: (identifier) @ref)
(call_expression function: (selector_expression field: (field_identifier) @ref))
(argument_list (selector_expression field: (field_identifier) @ref))
(type_identifier) @ref
"""

_RUST = """
(function_item name: (identifier) @def)
(function_signature_item name: (identifier) @def)
(struct_item name: (type_identifier) @def)
(enum_item name: (type_identifier) @def)
(union_item name: (type_identifier) @def)
(trait_item name: (type_identifier) @def)
(type_item name: (type_identifier) @def)
(const_item name: (identifier) @def)
(static_item name: (identifier) @def)
(macro_definition name: (identifier) @def)
(call_expression function: (identifier) @ref)
(call_expression function: (field_expression field: (field_identifier) @ref))
(call_expression function: (scoped_identifier name: (identifier) @ref))
(arguments (scoped_identifier name: (identifier) @ref))
(scoped_identifier path: (identifier) @ref)
(macro_invocation macro: (identifier) @ref)
(token_tree (identifier) @ref . (token_tree))
(type_identifier) @ref
"""

_JAVA = """
(class_declaration name: (identifier) @def)
(interface_declaration name: (identifier) @def)
(enum_declaration name: (identifier) @def)
(record_declaration name: (identifier) @def)
(method_declaration name: (identifier) @def)
(constructor_declaration name: (identifier) @def)
(method_invocation name: (identifier) @ref)
(method_reference (identifier) @ref .)
(type_identifier) @ref
"""

_C = """
(function_declarator declarator: (identifier) @def)
(struct_specifier name: (type_identifier) @def body: (_))
(union_specifier name: (type_identifier) @def body: (_))
(enum_specifier name: (type_identifier) @def body: (_))
(type_definition declarator: (type_identifier) @def)
(preproc_def name: (identifier) @def)
(preproc_function_def name: (identifier) @def)
(call_expression function: (identifier) @ref)
(call_expression function: (field_expression field: (field_identifier) @ref))
(type_identifier) @ref
"""

_CPP = (
    _C
    + """
(class_specifier name: (type_identifier) @def body: (_))
(function_declarator declarator: (field_identifier) @def)
(function_declarator declarator: (qualified_identifier name: (identifier) @def))
(namespace_definition name: (namespace_identifier) @def)
(call_expression function: (qualified_identifier name: (identifier) @ref))
(new_expression type: (type_identifier) @ref)
"""
)

#: Graph queries by tree-sitter grammar name (:data:`TREE_SITTER_LANGUAGES` values).
QUERIES: dict[str, str] = {
    "python": _PYTHON,
    "javascript": _JAVASCRIPT,
    "typescript": _TYPESCRIPT,
    "tsx": _TYPESCRIPT,
    "go": _GO,
    "rust": _RUST,
    "java": _JAVA,
    "c": _C,
    "cpp": _CPP,
    "cuda": _CPP,
}

_queries: dict[str, Any] = {}
_broken: set[str] = set()

Names = tuple[tuple[str, ...], tuple[str, ...]]


def _query(ts_name: str) -> Any:
    """The compiled query of grammar ``ts_name`` (cached per process), or None (no query, or it
    does not compile against the installed grammar)."""
    if ts_name in _broken or ts_name not in QUERIES:
        return None
    with IMPORT_LOCK:
        query = _queries.get(ts_name)
        if query is None:
            try:
                language = load("tree_sitter_language_pack").get_language(ts_name)
                query = _queries[ts_name] = load("tree_sitter").Query(language, QUERIES[ts_name])
            except Exception:  # a grammar whose node names differ: no graph for it
                _broken.add(ts_name)
                return None
    return query


def chunk_names(language: str, root: Any, lines: Sequence[str], starts: Sequence[int]) -> list[Names]:
    """``(defines, refs)`` of each chunk of a parsed file.

    Args:
        language: the file's language (:func:`~codeask.index.chunking.languages.language_for`).
        root: the tree-sitter root node of the file (parsed from ``lines`` joined with ``\\n``).
        lines: the file's lines.
        starts: each chunk's first row (0-based), ascending; chunk ``i`` holds rows
            ``starts[i]..starts[i+1]-1``.

    Returns:
        One ``(defines, refs)`` per chunk, names in order of first occurrence (calls, types and
        imports, then ``ALL_CAPS`` constants), no name in both, at most :data:`MAX_REFS`
        references; empty tuples for a language without a query.
    """
    ts_name = TREE_SITTER_LANGUAGES.get(language)
    query = _query(ts_name) if ts_name else None
    if query is None or not starts:
        return [((), ())] * len(starts)
    captures = load("tree_sitter").QueryCursor(query).captures(root)
    defines: list[dict[str, None]] = [{} for _ in starts]
    refs: list[dict[str, None]] = [{} for _ in starts]
    for kind, table in (("def", defines), ("ref", refs)):
        for node in sorted(captures.get(kind, ()), key=lambda n: n.start_byte):
            text = node.text
            if text:
                i = bisect.bisect_right(starts, node.start_point.row) - 1
                table[max(i, 0)][text.decode("utf-8", "replace")] = None
    ends = [*starts[1:], len(lines)]
    out: list[Names] = []
    for own, used, a, b in zip(defines, refs, starts, ends):
        used.update(dict.fromkeys(_CONSTANT.findall("\n".join(lines[a:b]))))
        kept = [name for name in used if name not in own][:MAX_REFS]
        out.append((tuple(own), tuple(kept)))
    return out
