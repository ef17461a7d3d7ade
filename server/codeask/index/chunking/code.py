"""Code chunking with tree-sitter: definitions become atoms.

The file is parsed and its top-level named nodes are turned into atoms
(:class:`.packing.Atom`: a row range, a scope and an optional claim, i.e. the
qualified symbol the atom defines):

* nodes sharing a row are merged into one item; blank lines after an item
  belong to it; the lines after the last node belong to the last item;
* a run of comments (and Rust ``#[attr]``) ending directly above a definition
  is merged into that definition's item;
* an item that fits is one atom, claiming ``scope.name`` if it holds a
  definition (class, function, method, struct, impl, ...);
* an item that does not fit is *expanded*: its main node's named children
  (with bodies such as ``block`` / ``class_body`` / ``declaration_list``
  flattened) are atomised recursively.  Expanding a definition makes its
  qualified name the new scope and turns the lines before its first inner
  child (signature, decorators, comments) into a header atom claiming that
  name.  A node without usable children is cut into line windows.

Parsers are cached per thread (``threading.local``) and languages per process
(behind a lock), so this may run in worker threads.

Which nodes are definitions, and their names, come from the node-type tables below
rather than from tree-sitter tags queries (``tags.scm``, as Aider's repo map uses):
measured for issue 13 with the queries the official grammar wheels ship
(tree-sitter-python, -javascript, -typescript, -go, -rust, -java, -c, -cpp, -ruby,
-php, -c-sharp, -lua; tree-sitter-language-pack ships none, and 10 of our 23
grammars have no query at all), tags left 7 of the 84 language samples of
``tests/test_chunk.py`` with a wrong symbol: the queries do not capture Java
constructors, C++ namespaces, Rust ``impl`` blocks or TypeScript type aliases, and
name Go methods and Lua ``M.foo`` without their receiver. On Python they find the
same definitions as the tables (18,248 of the 18,294 ``ast`` definitions of the
requests, flask, pytest and sphinx sdists, exact ranges, both ways), and
``bench/spans.py`` gave identical numbers.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from codeask.imports import IMPORT_LOCK, load
from codeask.index.chunking.languages import TREE_SITTER_LANGUAGES
from codeask.index.chunking.node_types import CONTAINERS, DEF_TYPES, IDENT_TYPES, VALUE_DEFS, WRAPPERS
from codeask.index.chunking.packing import Atom, Ctx, Span, pack, window_atoms

__all__ = ["code_chunks", "iter_named", "named_definition", "node_rows", "parser_for"]

# tree-sitter nodes are typed ``Any`` here: the bindings ship no stable stubs for Node.
Node = Any

_lang_lock = IMPORT_LOCK  # loading a grammar imports its Python binding: one lock for all first imports
_languages: dict[str, object] = {}
_broken: set[str] = set()
_tls = threading.local()


def parser_for(language: str) -> Any:
    """Return a tree-sitter ``Parser`` for ``language`` (cached per thread), or None if it has no grammar."""
    ts_name = TREE_SITTER_LANGUAGES.get(language)
    if ts_name is None or ts_name in _broken:
        return None
    parsers = getattr(_tls, "parsers", None)
    if parsers is None:
        parsers = _tls.parsers = {}
    parser = parsers.get(ts_name)
    if parser is not None:
        return parser
    try:
        Parser = load("tree_sitter").Parser
        get_language = load("tree_sitter_language_pack").get_language

        with _lang_lock:
            lang = _languages.get(ts_name)
            if lang is None:
                lang = _languages[ts_name] = get_language(ts_name)  # type: ignore[arg-type]
        parser = Parser(lang)  # type: ignore[arg-type]
    except Exception:  # grammar missing / incompatible: fall back to windows
        with _lang_lock:
            _broken.add(ts_name)
        return None
    parsers[ts_name] = parser
    return parser


def _text(node: Node) -> str:
    t = node.text
    return t.decode("utf-8", "replace") if t is not None else ""


def _clean_name(name: str) -> str:
    name = name.strip()
    for stop in ("<", "(", "[", "\n", " ", "\t"):
        i = name.find(stop)
        if i > 0:
            name = name[:i]
    name = name.replace("::", ".").replace("->", ".").replace(":", ".").replace("\\", ".")
    return name.strip(".")


def _inner_def(node: Node) -> Node | None:
    """The definition wrapped by ``node`` (decorators, export, template...)."""
    if node.type not in WRAPPERS:
        return node
    if node.type in ("lexical_declaration", "variable_declaration"):
        decls = [c for c in node.named_children if c.type == "variable_declarator"]
        if len(decls) == 1:
            value = decls[0].child_by_field_name("value")
            if value is not None and value.type in VALUE_DEFS:
                return decls[0]
        return None
    for field in ("definition", "declaration"):
        inner = node.child_by_field_name(field)
        if inner is not None:
            return _inner_def(inner)
    for child in reversed(node.named_children):
        if child.type in DEF_TYPES:
            return _inner_def(child)
    return None


def _def_name(node: Node) -> str | None:
    """Name of the definition ``node`` (already unwrapped) or None."""
    t = node.type
    if t == "type_declaration":  # go: type X struct{...}
        specs = [c for c in node.named_children if c.type in ("type_spec", "type_alias")]
        if len(specs) != 1:
            return None
        node = specs[0]
    if t == "impl_item":
        ty = node.child_by_field_name("type")
        return _clean_name(_text(ty)) if ty is not None else None
    name = node.child_by_field_name("name")
    if name is not None:
        base = _clean_name(_text(name))
        if t == "method_declaration":  # go receiver: func (s *S) M()
            recv = node.child_by_field_name("receiver")
            if recv is not None:
                for ident in iter_named(recv):
                    if ident.type == "type_identifier":
                        return f"{_clean_name(_text(ident))}.{base}" if base else None
        return base or None
    decl = node.child_by_field_name("declarator")
    depth = 0
    while decl is not None and depth < 8:
        if decl.type in IDENT_TYPES:
            return _clean_name(_text(decl)) or None
        inner = decl.child_by_field_name("declarator")
        if inner is None:
            inner = decl.child_by_field_name("name")
        decl = inner
        depth += 1
    if t in ("struct_specifier", "class_specifier", "union_specifier", "enum_specifier"):
        return None  # anonymous
    for child in node.named_children[:4]:  # grammars without fields (kotlin, swift...)
        if child.type in IDENT_TYPES:
            return _clean_name(_text(child)) or None
    return None


def named_definition(node: Node) -> tuple[Node, str] | None:
    """``(definition, name)`` if ``node`` defines a named symbol, else ``None``. ``definition`` is the
    node inside a wrapper (decorators, ``export``, ``template<>``, ``const f = () => ...``); ``name``
    is unqualified by the enclosing definitions (``Foo``, or ``S.Foo`` for a Go method on ``S``)."""
    if node.type not in DEF_TYPES:
        return None
    inner = _inner_def(node)
    name = _def_name(inner) if inner is not None else None
    return (inner, name) if inner is not None and name else None


def iter_named(node: Node) -> Iterable[Node]:
    """Every named node under ``node`` (itself first), in document order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.named_children))


def _is_comment(node: Node) -> bool:
    t = node.type
    return "comment" in t or t in ("attribute_item", "decorator", "annotation")


def _is_text(node: Node) -> bool:
    """A comment, or a statement that is only a string (a Python docstring): prose, cut by lines."""
    if "comment" in node.type or node.type in ("string", "concatenated_string"):
        return True
    return node.type == "expression_statement" and node.named_child_count == 1 and _is_text(node.named_children[0])


@dataclass(slots=True)
class _Item:
    """Sibling nodes sharing rows (or a comment run merged into the definition below it)."""

    start: int  # 0-based row, inclusive
    end: int  # 0-based row, inclusive
    nodes: list[Node]
    def_node: Node | None  # the first node that defines a named symbol
    comment_only: bool  # every node is a comment / decorator / attribute


def node_rows(node: Node) -> tuple[int, int]:
    """0-based inclusive ``(first row, last row)`` of ``node`` (a node ending at column 0 ends on the row before)."""
    s = node.start_point.row
    e = node.end_point.row
    if e > s and node.end_point.column == 0:
        e -= 1
    return s, e


def _expand_children(node: Node) -> list[Node]:
    """Named children of ``node``, with body-like children flattened."""
    body = node.child_by_field_name("body")
    out: list[Node] = []
    first_inner = None  # index in ``out`` of the first child coming from a body
    stack = [(c, False) for c in reversed(node.named_children)]
    while stack:
        child, inner = stack.pop()
        if child.named_child_count and (child.type in CONTAINERS or (body is not None and child.id == body.id)):
            stack.extend((c, True) for c in reversed(child.named_children))
        else:
            if inner and first_inner is None:
                first_inner = len(out)
            out.append(child)
    # signature parts (name, parameters, modifiers...) before the body are
    # left to the header range
    return out[first_inner:] if first_inner else out


def _items(children: list[Node], lo: int, hi: int) -> list[_Item]:
    """Sibling nodes ``children`` clipped to rows lo..hi, grouped into items (nodes sharing a row
    are one item), each run of comments directly above a definition joined to it."""
    items: list[_Item] = []
    for child in children:
        if child.is_missing or child.start_byte == child.end_byte:
            continue
        s, e = node_rows(child)
        s, e = max(s, lo), min(e, hi)
        if s > hi or e < lo:
            continue
        is_def = child.type in DEF_TYPES and _inner_def(child) is not None
        if items and s <= items[-1].end:
            it = items[-1]
            it.end = max(it.end, e)
            it.nodes.append(child)
            if it.def_node is None and is_def:
                it.def_node = child
            it.comment_only = it.comment_only and _is_comment(child)
        else:
            items.append(_Item(s, e, [child], child if is_def else None, _is_comment(child)))
    merged: list[_Item] = []
    for it in reversed(items):
        if merged and it.comment_only and merged[-1].def_node is not None and merged[-1].start == it.end + 1:
            nxt = merged[-1]
            nxt.start = it.start
            nxt.nodes = it.nodes + nxt.nodes
            continue
        merged.append(it)
    merged.reverse()
    return merged


def _code_atoms(ctx: Ctx, children: list[Node], lo: int, hi: int, scope: str, header_claim: str | None) -> list[Atom]:
    """Atoms tiling rows lo..hi from sibling nodes ``children``: the lines before the first item,
    then each item (split when too large: :func:`_expand_item`) and the lines after it."""
    items = _items(children, lo, hi)
    if not items:
        return window_atoms(ctx, lo, hi, scope, header_claim)
    atoms: list[Atom] = []
    head = _heads_windows(ctx, items[0], lo, header_claim)
    if items[0].start > lo and not head:
        a, b = lo, items[0].start - 1
        if ctx.fits(a, b):
            atoms.append(Atom(a, b, scope, header_claim, False, False))
        else:
            atoms.extend(window_atoms(ctx, a, b, scope, header_claim))
    for k, it in enumerate(items):
        a, b = (lo if head and k == 0 else it.start), it.end
        tail_end = items[k + 1].start - 1 if k + 1 < len(items) else hi
        named = named_definition(it.def_node) if it.def_node is not None else None
        claim = (f"{scope}.{named[1]}" if scope else named[1]) if named is not None else None
        if head and k == 0:
            atoms.extend(window_atoms(ctx, a, b, scope, header_claim))
        elif ctx.fits(a, b):
            atoms.append(Atom(a, b, scope, claim, False, False))
        else:
            atoms.extend(_expand_item(ctx, it, a, b, scope, claim))
        if tail_end > b:  # blank / closing lines up to the next sibling
            if ctx.fits(b + 1, tail_end):
                atoms.append(Atom(b + 1, tail_end, scope, None, False, True))
            else:  # e.g. the text between escape sequences of a huge string
                atoms.extend(window_atoms(ctx, b + 1, tail_end, scope, None))
    return atoms


def _heads_windows(ctx: Ctx, first: _Item, lo: int, header_claim: str | None) -> bool:
    """Whether a definition's header (rows ``lo`` up to its first inner item: a signature, decorators)
    starts the line windows of its first item: the item is prose (a docstring, comments,
    :func:`_is_text`) too long for one chunk with the header, and the header is at most a quarter
    of a chunk. Otherwise the header is a chunk of its own and the definition's citation began below
    its ``def`` (flask's ``Flask.run``: its 8-line signature alone, 546-553, its docstring windowed
    from 554)."""
    header = first.start - lo
    return (
        header_claim is not None
        and 0 < header <= ctx.chunk_lines // 4
        and all(_is_text(node) for node in first.nodes)
        and not ctx.fits(lo, first.end)
    )


def _expand_item(ctx: Ctx, it: _Item, a: int, b: int, scope: str, claim: str | None) -> list[Atom]:
    """Atoms for an item too large to be one atom (rows a..b)."""
    def_node = it.def_node
    if def_node is not None:
        main = _inner_def(def_node) or def_node
    else:
        main = max(it.nodes, key=lambda n: n.end_point.row - n.start_point.row)
    new_scope = claim if claim is not None else scope
    kids = _expand_children(main)
    if not kids:
        return window_atoms(ctx, a, b, new_scope, None)
    lead = _decorations(ctx, a, main.start_point.row, kids[0].start_point.row)
    atoms = window_atoms(ctx, a, lead, new_scope, claim) if lead is not None else []
    return atoms + _code_atoms(ctx, kids, a if lead is None else lead + 1, b, new_scope, claim)


def _decorations(ctx: Ctx, a: int, def_row: int, body_row: int) -> int | None:
    """The last row of the decorators / comments (rows ``a`` up to the ``def`` line ``def_row``) that
    are windowed apart from a header too long for one chunk, so that a window begins at the ``def``
    line and holds the whole signature (rows up to ``body_row``); None when the header fits, when
    nothing precedes the ``def``, or when the signature alone does not fit. Otherwise flask's
    ``run_command`` (53 lines of click options, then a 10-line signature) was cut at its 7th
    parameter, and the window citing its body opened mid-signature."""
    if def_row <= a or ctx.fits(a, body_row - 1) or not ctx.fits(def_row, body_row - 1):
        return None
    return def_row - 1


def code_chunks(ctx: Ctx, root: Node, n: int) -> list[Span]:
    """Spans tiling rows ``0..n-1`` of a file whose parse tree is ``root``."""
    atoms = _code_atoms(ctx, list(root.named_children), 0, n - 1, "", None)
    return pack(ctx, atoms)
