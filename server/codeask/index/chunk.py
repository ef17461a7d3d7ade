"""Split a source file into line-range chunks for indexing.

Every chunk is a contiguous range of whole lines; the chunks of a file are in
file order, never overlap and together cover every line ``1..N`` where
``N == len(split_lines(text))``.  Coverage is guaranteed *by construction*:
all splitting below only decides where the boundaries between consecutive
ranges go, it never decides whether a line is kept.

Algorithm
---------
1. **Lines.**  :func:`codeask.lines.split_lines` defines the lines: they end
   at ``\\n``, ``\\r\\n`` and ``\\r`` only, as in editors, git and the LSP
   specification (a form feed or U+2028 stays inside its line).  For parsing,
   the lines are re-joined with ``"\\n"`` so tree-sitter row numbers equal
   list indexes.

2. **Code** (tree-sitter languages, see :data:`TREE_SITTER_LANGUAGES`).  The
   file is parsed and its top-level named nodes are turned into *atoms*
   (a line range, a *scope* and an optional *claim*, i.e. the qualified
   symbol the atom defines):

   * nodes sharing a row are merged into one item; blank lines after an item
     belong to it; the lines after the last node belong to the last item;
   * a run of comments (and Rust ``#[attr]``) ending directly above a
     definition is merged into that definition's item;
   * an item that fits (``<= chunk_lines`` lines and ``<= max_chunk_chars``
     characters) is one atom, claiming ``scope.name`` if it holds a
     definition (class, function, method, struct, impl, ...);
   * an item that does not fit is *expanded*: its main node's named children
     (with bodies such as ``block`` / ``class_body`` / ``declaration_list``
     flattened) are atomised recursively.  Expanding a definition makes its
     qualified name the new scope and turns the lines before its first
     inner child (signature, decorators, comments) into a header atom
     claiming that name.  A node without usable children is cut into line
     windows.

   Consecutive atoms of the *same scope* are then packed greedily into
   chunks up to the limits.  A chunk's ``symbol`` is the single claim among
   its atoms if there is exactly one, otherwise its scope.  So small
   top-level siblings are grouped, a large class becomes a ``Class`` header
   chunk plus ``Class.method`` chunks, and a 400-line function becomes
   windows (split at statement boundaries when possible) that all carry the
   function's symbol.  Parse errors do not matter for coverage; the
   (partial) tree is used as is.

3. **Markdown / reStructuredText.**  Headings (ATX ``#`` and setext for
   Markdown; underlined / over-and-underlined titles for reST) build a
   section tree that goes through the same atom/packing machinery: a section
   that fits is one atom claiming its heading path (``"Guide > Install"``),
   a larger one is split into its intro plus its subsections, and a section
   still too long is windowed.

4. **Everything else**: line windows of ``chunk_lines`` lines (fewer if
   ``max_chunk_chars`` is reached first).  A single line longer than
   ``max_chunk_chars`` is a chunk of its own; nothing is ever dropped.

Parsers are cached per thread (``threading.local``) and languages per process
(behind a lock), so :func:`chunk_text` may be called from worker threads.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from dataclasses import dataclass
from typing import Iterable, Sequence

from codeask.imports import IMPORT_LOCK, load
from codeask.lines import split_lines

__all__ = ["Chunk", "language_for", "chunk_text", "TREE_SITTER_LANGUAGES", "KNOWN_EXTENSIONS", "KNOWN_FILENAMES"]


@dataclass(frozen=True)
class Chunk:
    """A contiguous range of lines of one file."""

    path: str  # workspace-relative POSIX path (given by the caller)
    language: str  # "python", "markdown", "text", ...
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    symbol: str  # enclosing definition, dotted ("Session.resolve_redirects"); "" if none
    content: str  # lines start_line..end_line joined with "\n"
    content_hash: str  # sha256 hex of content


# ---------------------------------------------------------------------------
# Language detection
# ---------------------------------------------------------------------------

_EXTENSIONS: dict[str, str] = {
    # python
    ".py": "python", ".pyi": "python", ".pyw": "python",
    # javascript / typescript
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    # systems
    ".go": "go", ".rs": "rust",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".hxx": "cpp", ".h++": "cpp", ".ipp": "cpp", ".inl": "cpp",
    ".cu": "cuda", ".cuh": "cuda",
    ".m": "objc", ".mm": "objc",
    ".zig": "zig",
    # jvm / .net
    ".java": "java", ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala", ".sc": "scala",
    ".groovy": "groovy", ".gradle": "groovy",
    ".cs": "c_sharp", ".fs": "fsharp", ".fsx": "fsharp",
    # scripting
    ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby",
    ".php": "php", ".phtml": "php",
    ".swift": "swift", ".lua": "lua", ".pl": "perl", ".pm": "perl", ".r": "r",
    ".sh": "bash", ".bash": "bash", ".zsh": "bash", ".ksh": "bash", ".fish": "fish",
    ".ps1": "powershell", ".psm1": "powershell",
    ".dart": "dart", ".ex": "elixir", ".exs": "elixir", ".erl": "erlang", ".hrl": "erlang",
    ".hs": "haskell", ".ml": "ocaml", ".mli": "ocaml", ".clj": "clojure", ".cljs": "clojure",
    ".el": "elisp", ".jl": "julia", ".nim": "nim", ".v": "v", ".sol": "solidity",
    ".vim": "vim", ".tcl": "tcl",
    # docs
    ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown", ".mkd": "markdown",
    ".rst": "rst", ".rest": "rst",
    ".txt": "text", ".tex": "latex", ".org": "org", ".adoc": "asciidoc",
    # data / config / web
    ".json": "json", ".jsonc": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml",
    ".ini": "ini", ".cfg": "ini", ".conf": "ini", ".properties": "properties",
    ".xml": "xml", ".html": "html", ".htm": "html", ".css": "css", ".scss": "scss",
    ".less": "css", ".vue": "vue", ".svelte": "svelte", ".astro": "astro",
    ".sql": "sql", ".graphql": "graphql", ".gql": "graphql", ".proto": "proto",
    ".tf": "hcl", ".hcl": "hcl", ".nix": "nix", ".cmake": "cmake", ".mk": "make",
    ".j2": "jinja", ".jinja": "jinja", ".jinja2": "jinja", ".csv": "csv", ".tsv": "tsv",
}

_FILENAMES: dict[str, str] = {
    "makefile": "make", "gnumakefile": "make", "dockerfile": "dockerfile",
    "containerfile": "dockerfile", "cmakelists.txt": "cmake", "rakefile": "ruby",
    "gemfile": "ruby", "podfile": "ruby", "vagrantfile": "ruby", "brewfile": "ruby",
    "jenkinsfile": "groovy", "build": "starlark", "build.bazel": "starlark",
    "workspace": "starlark", "justfile": "make", "sconstruct": "python",
    "sconscript": "python", ".bashrc": "bash", ".bash_profile": "bash",
    ".zshrc": "bash", ".profile": "bash", "go.mod": "gomod", "readme": "text",
    "license": "text", "copying": "text", ".gitignore": "gitignore",
    ".dockerignore": "gitignore", ".gitattributes": "gitattributes",
    "requirements.txt": "requirements", "pipfile": "toml", "cargo.lock": "toml",
}


def language_for(path: str) -> str:
    """Return the language name of ``path`` from its file name or extension.

    Well-known file names (``Makefile``, ``Dockerfile``, ``Gemfile``...) are
    recognised first, then ``Dockerfile.dev``-style prefixes, then the
    extension (case-insensitive).  Unknown files are ``"text"``.
    """
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    lower = name.lower()
    if lower in _FILENAMES:
        return _FILENAMES[lower]
    if lower.startswith(("dockerfile.", "containerfile.")):
        return "dockerfile"
    if lower.startswith(("makefile.",)):
        return "make"
    if lower.startswith("requirements") and lower.endswith(".txt"):
        return "requirements"
    _, ext = os.path.splitext(lower)
    if ext in _EXTENSIONS:
        return _EXTENSIONS[ext]
    if lower.endswith(".d.ts"):
        return "typescript"
    return "text"


# ---------------------------------------------------------------------------
# Tree-sitter plumbing
# ---------------------------------------------------------------------------

#: Extensions (lowercase, with the dot) and file names (lowercase) with a known language.
KNOWN_EXTENSIONS: frozenset[str] = frozenset(_EXTENSIONS)
KNOWN_FILENAMES: frozenset[str] = frozenset(_FILENAMES)

#: our language name -> tree-sitter-language-pack name, for structured chunking
TREE_SITTER_LANGUAGES: dict[str, str] = {
    "python": "python", "javascript": "javascript", "typescript": "typescript",
    "tsx": "tsx", "go": "go", "rust": "rust", "java": "java", "c": "c", "cpp": "cpp",
    "cuda": "cuda", "c_sharp": "csharp", "ruby": "ruby", "php": "php", "kotlin": "kotlin",
    "scala": "scala", "swift": "swift", "lua": "lua", "bash": "bash", "starlark": "starlark",
    "objc": "objc", "dart": "dart", "zig": "zig", "groovy": "groovy",
}

_lang_lock = IMPORT_LOCK  # loading a grammar imports its Python binding: one lock for all first imports
_languages: dict[str, object] = {}
_broken: set[str] = set()
_tls = threading.local()


def _parser_for(language: str):
    """Return a parser for ``language`` (cached per thread), or None."""
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


# Node types that define a named symbol.
_DEF_TYPES = frozenset(
    {
        # python / starlark
        "function_definition", "class_definition", "decorated_definition",
        # javascript / typescript
        "function_declaration", "generator_function_declaration", "class_declaration",
        "abstract_class_declaration", "method_definition", "interface_declaration",
        "type_alias_declaration", "enum_declaration", "internal_module", "module",
        "function_signature", "abstract_method_signature", "export_statement",
        "lexical_declaration", "variable_declaration",
        # go
        "method_declaration", "type_declaration",
        # rust
        "function_item", "struct_item", "enum_item", "union_item", "impl_item", "trait_item",
        "mod_item", "macro_definition", "function_signature_item",
        # java / c# / kotlin / scala / swift / dart
        "record_declaration", "constructor_declaration", "annotation_type_declaration",
        "struct_declaration", "namespace_declaration", "file_scoped_namespace_declaration",
        "property_declaration", "object_declaration", "companion_object",
        "object_definition", "trait_definition", "protocol_declaration",
        "extension_declaration", "destructor_declaration", "operator_declaration",
        "delegate_declaration", "event_declaration", "indexer_declaration",
        "secondary_constructor", "class_specifier_declaration", "mixin_declaration",
        # c / c++
        "struct_specifier", "class_specifier", "union_specifier", "enum_specifier",
        "namespace_definition", "template_declaration", "type_definition",
        # ruby
        "class", "singleton_class", "method", "singleton_method",
        # php
        "trait_declaration", "namespace_definition",
        # lua / bash
        "local_function", "function_definition_statement",
    }
)

# Wrappers whose symbol (and body) is that of an inner definition.
_WRAPPERS = frozenset(
    {"decorated_definition", "export_statement", "template_declaration", "lexical_declaration",
     "variable_declaration"}
)

# Children flattened into their parent when a node is expanded.
_CONTAINERS = frozenset(
    {
        "block", "body_statement", "class_body", "declaration_list", "field_declaration_list",
        "compound_statement", "statement_block", "statement_list", "interface_body",
        "enum_body", "enum_class_body", "object_type", "function_body", "template_body",
        "do_block", "block_body", "enum_member_declaration_list", "enum_variant_list",
        "annotation_type_body", "record_body", "constructor_body", "protocol_body",
        "suite",
    }
)

_IDENT_TYPES = frozenset(
    {
        "identifier", "simple_identifier", "type_identifier", "constant", "name",
        "field_identifier", "property_identifier", "namespace_identifier",
        "qualified_identifier", "scoped_identifier", "scoped_type_identifier",
        "scope_resolution", "dot_index_expression", "method_index_expression",
        "word", "destructor_name", "operator_name", "qualified_name", "private_property_identifier",
    }
)

_VALUE_DEFS = frozenset(
    {"arrow_function", "function_expression", "function", "class", "generator_function",
     "class_expression"}
)


def _text(node) -> str:
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


def _inner_def(node):
    """The definition wrapped by ``node`` (decorators, export, template...)."""
    if node.type not in _WRAPPERS:
        return node
    if node.type in ("lexical_declaration", "variable_declaration"):
        decls = [c for c in node.named_children if c.type == "variable_declarator"]
        if len(decls) == 1:
            value = decls[0].child_by_field_name("value")
            if value is not None and value.type in _VALUE_DEFS:
                return decls[0]
        return None
    for field in ("definition", "declaration"):
        inner = node.child_by_field_name(field)
        if inner is not None:
            return _inner_def(inner)
    for child in reversed(node.named_children):
        if child.type in _DEF_TYPES:
            return _inner_def(child)
    return None


def _def_name(node) -> str | None:
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
                for ident in _iter_named(recv):
                    if ident.type == "type_identifier":
                        return f"{_clean_name(_text(ident))}.{base}" if base else None
        return base or None
    decl = node.child_by_field_name("declarator")
    depth = 0
    while decl is not None and depth < 8:
        if decl.type in _IDENT_TYPES:
            return _clean_name(_text(decl)) or None
        inner = decl.child_by_field_name("declarator")
        if inner is None:
            inner = decl.child_by_field_name("name")
        decl = inner
        depth += 1
    if t in ("struct_specifier", "class_specifier", "union_specifier", "enum_specifier"):
        return None  # anonymous
    for child in node.named_children[:4]:  # grammars without fields (kotlin, swift...)
        if child.type in _IDENT_TYPES:
            return _clean_name(_text(child)) or None
    return None


def _iter_named(node) -> Iterable:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.named_children))


def _is_comment(node) -> bool:
    t = node.type
    return "comment" in t or t in ("attribute_item", "decorator", "annotation")


# ---------------------------------------------------------------------------
# Atoms and packing
# ---------------------------------------------------------------------------


class _Ctx:
    """Per-call state: lines, limits and a prefix sum of line lengths."""

    __slots__ = ("lines", "chunk_lines", "max_chars", "prefix")

    def __init__(self, lines: Sequence[str], chunk_lines: int, max_chars: int):
        self.lines = lines
        self.chunk_lines = max(1, chunk_lines)
        self.max_chars = max(1, max_chars)
        prefix = [0]
        acc = 0
        for line in lines:
            acc += len(line) + 1
            prefix.append(acc)
        self.prefix = prefix

    def chars(self, a: int, b: int) -> int:
        """Length of rows a..b (0-based, inclusive) joined with newlines."""
        return self.prefix[b + 1] - self.prefix[a] - 1

    def fits(self, a: int, b: int) -> bool:
        """Whether rows a..b (0-based, inclusive) obey both limits: at most ``chunk_lines`` lines and
        ``max_chars`` characters."""
        return b - a + 1 <= self.chunk_lines and self.chars(a, b) <= self.max_chars

    def windows(self, a: int, b: int) -> list[tuple[int, int]]:
        """Cut rows a..b into windows obeying both limits."""
        out = []
        start = a
        while start <= b:
            end = start
            limit = min(b, start + self.chunk_lines - 1)
            while end < limit and self.chars(start, end + 1) <= self.max_chars:
                end += 1
            out.append((start, end))
            start = end + 1
        return out


# An atom is a tuple (start_row, end_row, scope, claim, breaks_before, sticky):
# ``claim`` is the symbol it defines (or None); ``breaks_before`` forces a new
# group (line windows); ``sticky`` marks blank / closing lines after a node,
# which join the preceding group whatever its scope.
# A sticky tail may make a group overflow chunk_lines by this many lines (and
# never max_chunk_chars): it avoids chunks made of a lone "}" or blank lines.
def _slack(chunk_lines: int) -> int:
    return max(1, min(3, chunk_lines // 20))


def _pack(ctx: _Ctx, atoms: list) -> list[tuple[int, int, str]]:
    """Greedily group consecutive same-scope atoms; return (a, b, symbol)."""
    out: list[tuple[int, int, str]] = []
    cur: list = []

    def flush():
        if not cur:
            return
        claims = {c[3] for c in cur if c[3] is not None}
        symbol = next(iter(claims)) if len(claims) == 1 else cur[0][2]
        out.append((cur[0][0], cur[-1][1], symbol))
        cur.clear()

    for atom in atoms:
        if cur:
            if atom[5]:
                a = cur[0][0]
                if ctx.fits(a, atom[1]) or (
                    atom[1] - a < ctx.chunk_lines + _slack(ctx.chunk_lines)
                    and ctx.chars(a, atom[1]) <= ctx.max_chars
                ):
                    cur.append(atom)
                    continue
                flush()
            elif atom[2] != cur[0][2] or atom[4] or not ctx.fits(cur[0][0], atom[1]):
                flush()
        cur.append(atom)
    flush()
    return _merge_fragments(ctx, out)


def _merge_fragments(ctx: _Ctx, groups: list[tuple[int, int, str]]) -> list:
    """Merge tiny groups (a lone class header, a stray line) into a neighbour.

    Scope barriers can leave e.g. ``module Shop`` alone before its expanded
    class; such a fragment joins the next group (taking that group's symbol)
    or else the previous one, when the result still fits and the fragment's
    symbol is empty, equal to or an ancestor of the neighbour's symbol.
    """
    tiny = max(2, ctx.chunk_lines // 10)

    def compatible(frag: str, other: str) -> bool:
        return (
            not frag
            or frag == other
            or other.startswith(frag + ".")
            or other.startswith(frag + " > ")
        )

    out: list[tuple[int, int, str]] = []
    i = 0
    while i < len(groups):
        a, b, sym = groups[i]
        if b - a + 1 < tiny and len(groups) > 1:
            if (
                i + 1 < len(groups)
                and compatible(sym, groups[i + 1][2])
                and ctx.fits(a, groups[i + 1][1])
            ):
                groups[i + 1] = (a, groups[i + 1][1], groups[i + 1][2])
                i += 1
                continue
            if out and compatible(sym, out[-1][2]) and ctx.fits(out[-1][0], b):
                out[-1] = (out[-1][0], b, out[-1][2])
                i += 1
                continue
        out.append((a, b, sym))
        i += 1
    return out


def _window_atoms(ctx: _Ctx, a: int, b: int, scope: str, claim) -> list:
    return [(s, e, scope, claim, True, False) for s, e in ctx.windows(a, b)]


def _node_rows(node) -> tuple[int, int]:
    s = node.start_point.row
    e = node.end_point.row
    if e > s and node.end_point.column == 0:
        e -= 1
    return s, e


def _expand_children(node) -> list:
    """Named children of ``node``, with body-like children flattened."""
    body = node.child_by_field_name("body")
    out = []
    first_inner = None  # index in ``out`` of the first child coming from a body
    stack = [(c, False) for c in reversed(node.named_children)]
    while stack:
        child, inner = stack.pop()
        if child.named_child_count and (
            child.type in _CONTAINERS or (body is not None and child.id == body.id)
        ):
            stack.extend((c, True) for c in reversed(child.named_children))
        else:
            if inner and first_inner is None:
                first_inner = len(out)
            out.append(child)
    # signature parts (name, parameters, modifiers...) before the body are
    # left to the header range
    return out[first_inner:] if first_inner else out


def _code_atoms(ctx: _Ctx, children: list, lo: int, hi: int, scope: str, header_claim) -> list:
    """Atoms tiling rows lo..hi from sibling nodes ``children``."""
    items: list[list] = []  # [start, end, nodes, def_node_or_None, comment_only]
    for child in children:
        if child.is_missing or child.start_byte == child.end_byte:
            continue
        s, e = _node_rows(child)
        s = max(s, lo)
        e = min(e, hi)
        if s > hi or e < lo:
            continue
        is_def = child.type in _DEF_TYPES and _inner_def(child) is not None
        if items and s <= items[-1][1]:
            it = items[-1]
            it[1] = max(it[1], e)
            it[2].append(child)
            if it[3] is None and is_def:
                it[3] = child
            it[4] = it[4] and _is_comment(child)
        else:
            items.append([s, e, [child], child if is_def else None, _is_comment(child)])
    if not items:
        return _window_atoms(ctx, lo, hi, scope, header_claim)
    # attach comment runs directly above a definition
    merged: list[list] = []
    for it in reversed(items):
        if (
            merged
            and it[4]
            and merged[-1][3] is not None
            and merged[-1][0] == it[1] + 1
        ):
            nxt = merged[-1]
            nxt[0] = it[0]
            nxt[2] = it[2] + nxt[2]
            continue
        merged.append(it)
    merged.reverse()
    items = merged

    atoms: list = []
    if items[0][0] > lo:
        a, b = lo, items[0][0] - 1
        if ctx.fits(a, b):
            atoms.append((a, b, scope, header_claim, False, False))
        else:
            atoms.extend(_window_atoms(ctx, a, b, scope, header_claim))
    for k, it in enumerate(items):
        a = it[0]
        b = it[1]
        tail_end = items[k + 1][0] - 1 if k + 1 < len(items) else hi
        def_node = it[3]
        claim = None
        if def_node is not None:
            inner = _inner_def(def_node)
            name = _def_name(inner) if inner is not None else None
            if name:
                claim = f"{scope}.{name}" if scope else name
        if ctx.fits(a, b):
            atoms.append((a, b, scope, claim, False, False))
        else:
            atoms.extend(_expand_item(ctx, it, a, b, scope, claim))
        if tail_end > b:  # blank / closing lines up to the next sibling
            if ctx.fits(b + 1, tail_end):
                atoms.append((b + 1, tail_end, scope, None, False, True))
            else:  # e.g. the text between escape sequences of a huge string
                atoms.extend(_window_atoms(ctx, b + 1, tail_end, scope, None))
    return atoms


def _expand_item(ctx: _Ctx, it: list, a: int, b: int, scope: str, claim) -> list:
    """Atoms for an item too large to be one atom (rows a..b)."""
    def_node = it[3]
    if def_node is not None:
        main = _inner_def(def_node) or def_node
    else:
        main = max(it[2], key=lambda n: n.end_point.row - n.start_point.row)
    new_scope = claim if claim is not None else scope
    kids = _expand_children(main)
    if not kids:
        return _window_atoms(ctx, a, b, new_scope, None)
    return _code_atoms(ctx, kids, a, b, new_scope, claim)


def _code_chunks(ctx: _Ctx, root, n: int) -> list[tuple[int, int, str]]:
    atoms = _code_atoms(ctx, list(root.named_children), 0, n - 1, "", None)
    return _pack(ctx, atoms)


# ---------------------------------------------------------------------------
# Markdown / reStructuredText
# ---------------------------------------------------------------------------

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_RST_ADORN = re.compile(r"""^([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])\1{2,}[ \t]*$""")


def _markdown_headings(lines: Sequence[str]) -> list[tuple[int, int, str]]:
    """(start_row, level, title) for each Markdown heading."""
    out: list[tuple[int, int, str]] = []
    fence: str | None = None
    start = 0
    n = len(lines)
    if n and lines[0].strip() in ("---", "+++"):  # front matter
        marker = lines[0].strip()
        for i in range(1, n):
            if lines[i].strip() == marker:
                start = i + 1
                break
    prev_para = False  # previous line is a plain paragraph line
    for i in range(start, n):
        line = lines[i]
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            prev_para = False
            continue
        if m:
            fence = m.group(1)
            prev_para = False
            continue
        if not line.strip():
            prev_para = False
            continue
        m = _ATX.match(line)
        if m:
            out.append((i, len(m.group(1)), (m.group(2) or "").strip()))
            prev_para = False
            continue
        m = _SETEXT.match(line)
        if m and prev_para and not (out and out[-1][0] == i - 1):
            out.append((i - 1, 1 if m.group(1)[0] == "=" else 2, lines[i - 1].strip()))
            prev_para = False
            continue
        prev_para = not line.startswith(("    ", "\t")) and not line.lstrip().startswith(
            (">", "|", "<")
        )
    return out


def _rst_headings(lines: Sequence[str]) -> list[tuple[int, int, str]]:
    """(start_row, level, title) for each reStructuredText section title."""
    out: list[tuple[int, int, str]] = []
    styles: list[tuple[str, bool]] = []
    n = len(lines)
    i = 0
    while i < n:
        line = lines[i]
        # over- and underlined title
        m = _RST_ADORN.match(line)
        if (
            m
            and i + 2 < n
            and lines[i + 1].strip()
            and _RST_ADORN.match(lines[i + 2])
            and lines[i + 2].strip() == line.strip()
            and (i == 0 or not lines[i - 1].strip())
        ):
            style = (m.group(1), True)
            if style not in styles:
                styles.append(style)
            out.append((i, styles.index(style) + 1, lines[i + 1].strip()))
            i += 3
            continue
        # underlined title
        if (
            line.strip()
            and not line[0].isspace()
            and i + 1 < n
            and (i == 0 or not lines[i - 1].strip())
            and not _RST_ADORN.match(line)
        ):
            u = _RST_ADORN.match(lines[i + 1])
            if u and len(lines[i + 1].rstrip()) >= min(len(line.rstrip()), 4):
                style = (u.group(1), False)
                if style not in styles:
                    styles.append(style)
                out.append((i, styles.index(style) + 1, line.strip()))
                i += 2
                continue
        i += 1
    return out


def _section_atoms(
    ctx: _Ctx, heads: list[tuple[int, int, str]], lo: int, hi: int, scope: str,
    header_claim, depth: int,
) -> list:
    """Atoms tiling rows lo..hi given the headings inside (all deeper than ``depth``)."""
    if not heads:
        if ctx.fits(lo, hi):
            return [(lo, hi, scope, header_claim, False, False)]
        return _window_atoms(ctx, lo, hi, scope, header_claim)
    top = min(h[1] for h in heads)
    idx = [k for k, h in enumerate(heads) if h[1] == top]
    atoms: list = []
    first = heads[idx[0]][0]
    if first > lo:  # intro / preamble before the first section
        intro_heads = heads[: idx[0]]
        atoms.extend(_section_atoms(ctx, intro_heads, lo, first - 1, scope, header_claim, depth))
    for j, k in enumerate(idx):
        a = heads[k][0]
        b = heads[idx[j + 1]][0] - 1 if j + 1 < len(idx) else hi
        title = heads[k][2]
        path = f"{scope} > {title}" if scope else title
        sub_heads = heads[k + 1 : idx[j + 1] if j + 1 < len(idx) else len(heads)]
        if ctx.fits(a, b):
            atoms.append((a, b, scope, path, False, False))
            continue
        atoms.extend(_section_atoms(ctx, sub_heads, a, b, path, path, top))
    return atoms


def _doc_chunks(ctx: _Ctx, heads: list[tuple[int, int, str]], n: int) -> list[tuple[int, int, str]]:
    atoms = _section_atoms(ctx, heads, 0, n - 1, "", None, 0)
    return _pack(ctx, atoms)


# ---------------------------------------------------------------------------
# Public entry point
# ---------------------------------------------------------------------------


def _make_chunks(path: str, language: str, lines: Sequence[str], ranges) -> list[Chunk]:
    out = []
    for a, b, symbol in ranges:
        content = "\n".join(lines[a : b + 1])
        out.append(
            Chunk(
                path=path,
                language=language,
                start_line=a + 1,
                end_line=b + 1,
                symbol=symbol,
                content=content,
                content_hash=hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest(),
            )
        )
    return out


def _valid(ranges: list[tuple[int, int, str]], n: int) -> bool:
    expect = 0
    for a, b, _ in ranges:
        if a != expect or b < a:
            return False
        expect = b + 1
    return expect == n


def chunk_text(
    path: str, text: str, *, chunk_lines: int = 60, max_chunk_chars: int = 3000
) -> list[Chunk]:
    """Split ``text`` (the content of ``path``) into line-range chunks.

    The language comes from :func:`language_for`.  Code in a tree-sitter
    language is split along definitions, Markdown / reST along headings and
    anything else into windows of ``chunk_lines`` lines.  Chunks are in file
    order, contiguous, non-overlapping and cover lines ``1..N`` with
    ``N == len(split_lines(text))``; none is longer than ``chunk_lines``
    lines or ``max_chunk_chars`` characters except a single over-long line,
    which is then a chunk by itself.  Returns ``[]`` for empty text.
    """
    lines = split_lines(text)
    n = len(lines)
    if n == 0:
        return []
    language = language_for(path)
    ctx = _Ctx(lines, chunk_lines, max_chunk_chars)
    ranges: list[tuple[int, int, str]] | None = None
    try:
        if language == "markdown":
            ranges = _doc_chunks(ctx, _markdown_headings(lines), n)
        elif language == "rst":
            ranges = _doc_chunks(ctx, _rst_headings(lines), n)
        else:
            parser = _parser_for(language)
            if parser is not None:
                tree = parser.parse("\n".join(lines).encode("utf-8", "surrogatepass"))
                ranges = _code_chunks(ctx, tree.root_node, n)
    except RecursionError:
        ranges = None
    if ranges is None or not _valid(ranges, n):
        ranges = [(a, b, "") for a, b in ctx.windows(0, n - 1)]
    return _make_chunks(path, language, lines, ranges)
