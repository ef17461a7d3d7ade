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

2. **Code** (tree-sitter languages, see :data:`TREE_SITTER_LANGUAGES`;
   :mod:`.code`).  The
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

   Consecutive atoms of the *same scope* are then packed greedily
   (:mod:`.packing`) into
   chunks up to the limits; blank or closing lines after a group, and a
   tiny fragment (a header) before or after one, join it even when that
   runs up to 3 lines over ``chunk_lines``, rather than be chunks alone.  A chunk's ``symbol`` is the single claim among
   its atoms if there is exactly one, otherwise its scope.  So small
   top-level siblings are grouped, a large class becomes a ``Class`` header
   chunk plus ``Class.method`` chunks, and a 400-line function becomes
   windows (split at statement boundaries when possible) that all carry the
   function's symbol.  Parse errors do not matter for coverage; the
   (partial) tree is used as is.

3. **Markdown / reStructuredText** (:mod:`.docs`).  Headings (ATX ``#`` and setext for
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
from collections.abc import Sequence
from dataclasses import dataclass

from codeask.index.chunking.code import code_chunks, parser_for
from codeask.index.chunking.docs import doc_chunks, markdown_headings, rst_headings
from codeask.index.chunking.graph import Names, chunk_names
from codeask.index.chunking.languages import (
    KNOWN_EXTENSIONS,
    KNOWN_FILENAMES,
    TREE_SITTER_LANGUAGES,
    language_for,
)
from codeask.index.chunking.packing import Ctx, Span
from codeask.lines import split_lines

__all__ = [
    "KNOWN_EXTENSIONS",
    "KNOWN_FILENAMES",
    "TREE_SITTER_LANGUAGES",
    "CHUNK_LINES",
    "CHUNKING_VERSION",
    "MAX_CHUNK_CHARS",
    "Chunk",
    "chunk_text",
    "language_for",
]

#: Target chunk size, lines: a screenful, about one function or class of ordinary code; larger
#: definitions are split at inner definitions or windows. With :data:`MAX_CHUNK_CHARS` it keeps a
#: chunk within the embedding model's 256 tokens (``codeask.index.embed.MAX_TOKENS``) for most code.
#: Was ``index.chunk_lines``.
CHUNK_LINES = 60
#: Hard cap on a chunk, characters (a single longer line is a chunk of its own). Was ``index.max_chunk_chars``.
MAX_CHUNK_CHARS = 3000
#: Bumped whenever the same text is cut into other chunks: the index meta records it
#: (:mod:`codeask.index.meta`), so the next run over an index cut by an older release reads every
#: file again instead of keeping the old boundaries for every file that does not change (the
#: vectors of unchanged chunk texts are kept; the old rows are searched until then,
#: :func:`codeask.index.meta.reread_if_stale`). 2: a class header before a docstring that fills a
#: chunk joins it (:func:`.packing._merge_fragments`); 3: a definition's header (signature,
#: decorators) starts the line windows of a docstring too long for one chunk with it
#: (:func:`.code._heads_windows`); 4: the windows of decorators and a signature too long for one
#: chunk are cut at the ``def`` line (:func:`.code._decorations`).
CHUNKING_VERSION = "4"


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
    defines: tuple[str, ...] = ()  # names of the definitions it holds (graph.chunk_names)
    refs: tuple[str, ...] = ()  # names it calls, instantiates, reads, takes as types or imports


def _make_chunks(
    path: str, language: str, lines: Sequence[str], ranges: list[Span], names: Sequence[Names] | None = None
) -> list[Chunk]:
    out = []
    for k, (a, b, symbol) in enumerate(ranges):
        defines, refs = names[k] if names else ((), ())
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
                defines=defines,
                refs=refs,
            )
        )
    return out


def _valid(ranges: list[Span], n: int) -> bool:
    expect = 0
    for a, b, _ in ranges:
        if a != expect or b < a:
            return False
        expect = b + 1
    return expect == n


def chunk_text(
    path: str, text: str, *, chunk_lines: int = CHUNK_LINES, max_chunk_chars: int = MAX_CHUNK_CHARS
) -> list[Chunk]:
    """Split ``text`` (the content of ``path``) into line-range chunks.

    The language comes from :func:`language_for`.  Code in a tree-sitter
    language is split along definitions, Markdown / reST along headings and
    anything else into windows of ``chunk_lines`` lines.  Chunks are in file
    order, contiguous, non-overlapping and cover lines ``1..N`` with
    ``N == len(split_lines(text))``; none is longer than ``chunk_lines``
    lines (plus up to 3, above) or ``max_chunk_chars`` characters except a single over-long line,
    which is then a chunk by itself.  Code chunks carry the names they define
    and reference (:func:`.graph.chunk_names`).  Returns ``[]`` for text holding only
    whitespace (an empty file too): such a file is indexed with no chunk, so
    no blank row can be retrieved.
    """
    if not text.strip():
        return []
    lines = split_lines(text)
    n = len(lines)
    language = language_for(path)
    ctx = Ctx(lines, chunk_lines, max_chunk_chars)
    ranges: list[Span] | None = None
    tree = None
    try:
        if language == "markdown":
            ranges = doc_chunks(ctx, markdown_headings(lines), n)
        elif language == "rst":
            ranges = doc_chunks(ctx, rst_headings(lines), n)
        else:
            parser = parser_for(language)
            if parser is not None:
                tree = parser.parse("\n".join(lines).encode("utf-8", "surrogatepass"))
                ranges = code_chunks(ctx, tree.root_node, n)
    except RecursionError:
        ranges = None
    if ranges is None or not _valid(ranges, n):
        ranges = [Span(a, b, "") for a, b in ctx.windows(0, n - 1)]
    names = chunk_names(language, tree.root_node, lines, [a for a, _, _ in ranges]) if tree is not None else None
    return _make_chunks(path, language, lines, ranges, names)
