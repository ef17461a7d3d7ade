"""What explain and hover explain: a :class:`Span` of one file.

A selection becomes a span with :func:`make_span`; a hover becomes the definition of the symbol under
the cursor with :func:`symbol_span` (found with tree-sitter in the file, else through the index, else
the definition around the cursor; :func:`enclosing_chunk` is the last resort).

What may be explained at all is decided once, by the indexer's own rules (:func:`explain_source`,
raising :class:`NotExplainable`): a secret file, a link out of its workspace folder, a binary,
too large or minified file is never read; nor are blank lines explained. What is read but must not
reach an LLM (an ignored or excluded file, a file outside every workspace folder) is
:func:`withheld_reason`'s; credentials inside the text are the content scan's
(:mod:`codeask.query.secrets`, through :func:`codeask.query.answer.safe_documents`).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeask.index.chunk import chunk_file, language_for
from codeask.index.chunking.symbols import Definition, definitions, statement_lines
from codeask.index.filetext import MAX_LINE_LENGTH, content_reason, read_text
from codeask.index.walk import file_entry, is_secret
from codeask.lines import split_lines
from codeask.query.names import COMMON_NAMES
from codeask.query.steps.priors import downweight_rule
from codeask.settings import IndexSettings

__all__ = [
    "Span",
    "NotExplainable",
    "explain_source",
    "make_span",
    "symbol_span",
    "enclosing_chunk",
    "withheld_reason",
]


@dataclass
class Span:
    """A piece of one file to explain: 1-based inclusive lines, the code, its symbol.

    ``definition`` is true when the span is exactly the definition of ``symbol`` (hover, or a
    selection that is one definition); otherwise ``symbol`` is the definition the span lies in."""

    path: str  # workspace-relative POSIX path ("" when outside every root)
    root: str  # absolute root ("" when outside every root)
    abs_path: str
    start_line: int
    end_line: int
    text: str
    symbol: str = ""
    language: str = "text"
    own_ids: set[str] = field(default_factory=set)
    root_label: str = ""  # the root's name in labels when the workspace has several roots
    definition: bool = False

    @property
    def display_path(self) -> str:
        """The path a user reads: workspace-relative (``root_label/`` first with several roots), the
        absolute path when outside every root."""
        return f"{self.root_label}/{self.path}" if self.root_label and self.path else self.path or self.abs_path

    @property
    def label(self) -> str:
        """``display_path:start-end`` (1-based lines), ``display_path:line`` for one line."""
        lines = f"{self.start_line}-{self.end_line}" if self.end_line != self.start_line else str(self.start_line)
        return f"{self.display_path}:{lines}"

    def to_json(self) -> dict[str, Any]:
        """``{"path", "root", "start_line", "end_line", "symbol", "definition"}`` (``path`` absolute when
        outside every root)."""
        return {
            "path": self.path or self.abs_path,
            "root": self.root,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "symbol": self.symbol,
            "definition": self.definition,
        }


class NotExplainable(ValueError):
    """A file or lines explain refuses: ``str(exc)`` says why in one line (it names the file as a
    user reads it), ``reason`` is the indexer's skip reason (:data:`codeask.index.walk.SKIP_REASONS`),
    ``"folder"`` or ``"blank"``."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def _refusal(reason: str, name: str, s: IndexSettings) -> str:
    return {
        "secret": f"{name} is a secret file (index.secret_patterns); codeask never reads it",
        "binary": f"{name} is a binary file (no text encoding decodes it); codeask reads text files only",
        "too_large": f"{name} is larger than index.max_file_bytes ({s.max_file_bytes:,} bytes); codeask does not read it",
        "minified": (
            f"{name} looks minified (lines longer than {MAX_LINE_LENGTH:,} characters "
            "hold most of it); codeask does not explain it"
        ),
        "outside_root": f"{name} is a link to a file outside its workspace folder; codeask does not read it",
        "excluded": f"{name} is reached through a symlink and index.follow_symlinks is off; codeask does not read it",
        "symlink_loop": f"{name} is a symlink loop",
        "vanished": f"file not found: {name}",
        "permission_denied": f"{name}: permission denied",
        "folder": f"{name} is a folder, not a file",
    }.get(reason, f"{name} is not a regular file; codeask does not read it")


def explain_source(workspace, abs_path: str, *, text: str | None = None) -> str:
    """The text explain reads for ``abs_path``: ``text`` (an editor's buffer) or the file on disk,
    decoded as the indexer decodes it (:func:`codeask.index.walk.read_text`, through
    :func:`codeask.index.decode.decode`: a BOM, else UTF-8, else the detected legacy encoding), after
    the indexer's rules:

    * inside a workspace folder, the rules on links and kinds of file
      (:func:`codeask.index.walk.file_entry`: a link whose target leaves the folder, a loop, a FIFO
      or device) and the secret-file patterns (:meth:`Ignorer.reason <codeask.index.walk.Ignorer.reason>`);
      outside every folder, the secret patterns matched against the whole absolute path
      (``~/.aws/credentials``) and the regular-file test;
    * then the content rules (binary, too large, minified: :func:`~codeask.index.walk.read_text`,
      or :func:`~codeask.index.walk.content_reason` for ``text``).

    Ignored and excluded files, and files outside every folder, are read: what is read of them is
    withheld from the LLM by :func:`withheld_reason`. With ``text``, a file missing on disk (an
    unsaved or deleted document) is explained from ``text``.

    Raises:
        NotExplainable: why the file is not read, in one line.
    """
    abs_path = os.path.abspath(abs_path)
    index = workspace.root_for(abs_path)
    settings = (index.settings if index is not None else workspace.settings).index  # as the indexer reads it
    rel = (index.relative(abs_path) or "") if index is not None else ""
    name = rel or abs_path
    if os.path.isdir(abs_path):
        raise NotExplainable(_refusal("folder", name, settings), "folder")
    if index is not None and rel:
        entry = file_entry(index.root, rel, settings)
        reason = entry if isinstance(entry, str) else None
        if reason == "vanished" and text is not None:
            reason = None
        if reason is None and index.ignorer.reason(rel) == "secret":
            reason = "secret"
    elif is_secret(Path(abs_path).as_posix().lstrip("/"), settings):
        reason = "secret"
    else:
        try:
            reason = None if stat.S_ISREG(os.stat(abs_path).st_mode) else "unreadable"
        except FileNotFoundError:
            reason = None if text is not None else "vanished"
        except OSError as exc:
            reason = "permission_denied" if isinstance(exc, PermissionError) else "unreadable"
    if reason is None:
        if text is not None:
            reason = content_reason(text, settings)
        else:
            got = read_text(abs_path, settings)
            if not isinstance(got, str):
                return got.text
            reason = got
    if reason is not None:
        raise NotExplainable(_refusal(reason, name, settings), reason)
    assert text is not None
    return text


def _disk_text(workspace, abs_path: str) -> str | None:
    """The file's text as :func:`explain_source` reads it, or ``None`` when it is not read."""
    try:
        return explain_source(workspace, abs_path)
    except NotExplainable:
        return None


def _rows(index, rel: str) -> list[dict]:
    try:
        return index.store.rows_for_path(rel)
    except Exception:  # an index being created: no rows yet
        return []


def _chunk_at(abs_path: str, text: str, line: int):
    for chunk in chunk_file(Path(abs_path).name, text):
        if chunk.start_line <= line <= chunk.end_line:
            return chunk
    return None


def make_span(
    workspace, abs_path: str, start_line: int, end_line: int, *, text: str | None = None, symbol: str = ""
) -> Span:
    """The span of ``abs_path`` lines ``start_line..end_line`` (1-based inclusive), its code taken
    from ``text`` (an editor buffer) or the file on disk. Its symbol is ``symbol`` when given (the
    span is then that definition), else the innermost definition holding the whole span (tree-sitter),
    else none for module-level code between definitions (a constant's line), else the symbol of the
    indexed chunk holding it.

    Raises:
        NotExplainable: the file is not read (:func:`explain_source`), or the lines are blank.
    """
    abs_path = os.path.abspath(abs_path)  # as the editor named it (a symlinked root stays the link)
    source = explain_source(workspace, abs_path, text=text)
    index = workspace.root_for(abs_path)
    rel = (index.relative(abs_path) or "") if index is not None else ""
    if end_line < start_line:
        start_line, end_line = end_line, start_line
    span = Span(
        path=rel,
        root=str(index.root) if index else "",
        abs_path=abs_path,
        start_line=start_line,
        end_line=end_line,
        text="\n".join(split_lines(source)[max(0, start_line - 1) : max(0, end_line)]),
        language=language_for(abs_path),
        root_label=workspace.root_labels().get(str(index.root), "") if index is not None else "",
        symbol=symbol,
        definition=bool(symbol),
    )
    if not span.text.strip():
        what = f"{span.label} holds only blank lines"
        if not source.strip():
            what = f"{span.display_path} is empty" if not source else f"{span.display_path} holds only blank lines"
        raise NotExplainable(f"nothing to explain: {what}", "blank")
    if index is not None:
        inside = [r for r in _rows(index, rel) if r["start_line"] <= end_line and r["end_line"] >= start_line]
        span.own_ids = {r["id"] for r in inside}
    defs = definitions(source, span.language) if not span.symbol else []
    around = [d for d in defs if d.start_line <= start_line and d.end_line >= end_line]
    if around:
        span.symbol = around[-1].symbol
        span.definition = (around[-1].start_line, around[-1].end_line) == (start_line, end_line)
    elif defs and not any(d.start_line <= end_line and d.end_line >= start_line for d in defs):
        return span  # module-level code (``LIMIT_MS = 500``): not its chunk's function's name
    if not span.symbol and index is not None:
        containing = [r for r in _rows(index, rel) if r["start_line"] <= start_line and r["end_line"] >= end_line]
        span.symbol = containing[0]["symbol"] if containing else ""
    if not span.symbol and source:
        chunk = _chunk_at(abs_path, source, start_line)
        span.symbol = chunk.symbol if chunk is not None else ""
    return span


def enclosing_chunk(workspace, abs_path: str, line: int, *, text: str | None = None) -> Span | None:
    """The chunk containing 1-based ``line``: the indexed chunk when the file on disk is what the
    editor shows, else (an unsaved buffer, or a file not indexed yet) a chunk of the buffer text;
    ``None`` when no chunk holds the line.

    Raises:
        NotExplainable: the file is not read (:func:`explain_source`).
    """
    abs_path = os.path.abspath(abs_path)
    source = explain_source(workspace, abs_path, text=text)
    disk = source if text is None else _disk_text(workspace, abs_path)
    index = workspace.root_for(abs_path)
    if index is not None and (text is None or text == disk):
        for row in _rows(index, index.relative(abs_path) or ""):
            if row["start_line"] <= line <= row["end_line"]:
                return make_span(workspace, abs_path, row["start_line"], row["end_line"], text=source)
    chunk = _chunk_at(abs_path, source, line)
    if chunk is None:
        return None
    return make_span(workspace, abs_path, chunk.start_line, chunk.end_line, text=source)


def _definition_span(workspace, abs_path: str, d: Definition, text: str | None) -> Span:
    return make_span(workspace, abs_path, d.start_line, d.end_line, text=text, symbol=d.symbol)


def _indexed_definition(workspace, name: str) -> Span | None:
    """The definition of ``name`` elsewhere in the workspace: among the keyword hits for ``name``
    (code before tests and docs, then keyword rank), the first whose file defines ``name`` within
    the hit's lines (tree-sitter), as the whole definition."""
    settings = workspace.settings
    downweighted = downweight_rule(settings.retrieval)
    found = []
    for index in list(workspace.indexes.values()):
        try:
            hits = index.store.keyword_search(name, 20)
        except Exception:  # an index being created
            continue
        for rank, hit in enumerate(hits):
            if name in hit.content and not is_secret(hit.path, settings.index):
                found.append((downweighted(hit.path), rank, str(index.root), hit))
    parsed: dict[str, list[Definition]] = {}
    for _, _, root, hit in sorted(found, key=lambda t: (t[0], t[1])):
        abs_path = str(Path(root) / hit.path)
        if abs_path not in parsed:
            parsed[abs_path] = definitions(_disk_text(workspace, abs_path) or "", language_for(abs_path))
        for d in reversed(parsed[abs_path]):  # innermost first
            if d.name == name and d.start_line <= hit.end_line and d.end_line >= hit.start_line:
                return _definition_span(workspace, abs_path, d, None)
    return None


def _named(defs: list[Definition], word: str) -> list[Definition]:
    """The definitions named ``word``; when none is, those named ``#word``: an editor's word stops at a
    JavaScript/TypeScript private name's ``#`` (``this.#fetch()``), which is part of the name."""
    exact = [d for d in defs if d.name == word]
    return exact or [d for d in defs if d.name == f"#{word}"]


def symbol_span(workspace, abs_path: str, line: int, word: str, *, text: str | None = None) -> Span | None:
    """What a hover on ``word`` at 1-based ``line`` of ``abs_path`` explains (``text``: the editor's
    buffer, else the file on disk), the first that exists of:

    1. the definition whose name is under the cursor (``def rebuild_proxies`` -> that method);
    2. a definition of ``word`` in the same file, the one sharing most of the cursor's scope
       (``self.rebuild_proxies(...)`` inside ``Session`` -> ``Session.rebuild_proxies``);
    3. a definition of ``word`` elsewhere in the index (code before tests and docs);
    4. the innermost definition around the cursor (a local variable: the function it lives in);
    5. the module-level statement around the cursor (``DEFAULT_POOLSIZE = 10``: that line, not the
       chunk of constants and functions it was packed with);
    6. the chunk around the cursor (:func:`enclosing_chunk`).

    Definitions are found with tree-sitter (:func:`codeask.index.chunking.symbols.definitions`);
    ``None`` when nothing holds the line.

    Raises:
        NotExplainable: the file is not read (:func:`explain_source`).
    """
    abs_path = os.path.abspath(abs_path)
    source = explain_source(workspace, abs_path, text=text)
    defs = definitions(source, language_for(abs_path))
    named = _named(defs, word)
    on_name = [d for d in named if d.name_line == line]
    if on_name:
        return _definition_span(workspace, abs_path, on_name[-1], source)
    around = [d for d in defs if d.contains(line)]
    if named:
        scope = around[-1].symbol.split(".") if around else []

        def shared(d: Definition) -> int:
            parts = d.symbol.split(".")[:-1]
            n = 0
            while n < min(len(parts), len(scope)) and parts[n] == scope[n]:
                n += 1
            return n

        return _definition_span(workspace, abs_path, max(named, key=shared), source)
    common = len(word) < 3 or word in COMMON_NAMES  # self, len, return: no definition to look for
    elsewhere = None if common else _indexed_definition(workspace, word)
    if elsewhere is not None:
        return elsewhere
    if around:
        return _definition_span(workspace, abs_path, around[-1], source)
    statement = statement_lines(source, language_for(abs_path), line)
    if statement is not None:
        return make_span(workspace, abs_path, *statement, text=source)
    return enclosing_chunk(workspace, abs_path, line, text=text)


def withheld_reason(workspace, span: Span) -> str | None:
    """Why ``span`` must not be sent to an LLM, or ``None``.

    Inside a root, a file the walker would not index (a secret, ignored by ``.gitignore`` /
    ``.codeaskignore``, or a default exclude) is withheld. A file outside every root is withheld
    unless the trusted setting ``llm.send_outside_roots`` allows it; even then the secret patterns
    are matched against its whole absolute path, so ``~/.env`` or ``~/.aws/credentials`` stay home.
    """
    if span.path and span.root:
        index = workspace.indexes.get(span.root)
        reason = index.ignorer.reason(span.path) if index is not None else None
        if reason is None and is_secret(span.path, workspace.settings.index):
            reason = "secret"
    elif is_secret(Path(span.abs_path).as_posix().lstrip("/"), workspace.settings.index):
        reason = "secret"
    elif not workspace.settings.llm.send_outside_roots:
        reason = "outside"
    return {
        None: None,
        "secret": "a secret file",
        "ignored": "an ignored file",
        "excluded": "an excluded file",
        "outside": "a file outside every workspace folder (set llm.send_outside_roots in trusted settings to allow it)",
    }.get(reason, reason)
