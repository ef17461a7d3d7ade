"""Explain a selection of code, grounded in related code from the index (LSP-independent).

The related code is found three ways and fused with reciprocal rank fusion (the retriever's
:func:`~codeask.query.steps.retrieve.fuse`):

* definitions it uses: every distinctive identifier of the selection, searched by keyword (a hit
  whose symbol *is* that identifier ranks first);
* places that use it: the enclosing symbol's name, searched by keyword;
* a dense search with the selection text (when the index has vectors).

The chunk(s) the selection itself lies in are excluded. With an LLM the ``explain`` template gets
the selection and the related documents; without one (or when it fails) the markdown lists the
related locations as links.

Hover uses :func:`enclosing_chunk` (the indexed chunk containing a line, or for an unsaved buffer
the chunk of the buffer text) and :func:`explain` with ``brief=True``; answers are cached by the
hash of the explained code (:class:`ExplainCache`).
"""

from __future__ import annotations

import hashlib
import keyword
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeask.index.chunk import chunk_text, language_for
from codeask.index.walk import is_secret
from codeask.lines import split_lines
from codeask.llm import LLM, LLMError
from codeask.query.answer import Source, Templates, Withheld, fence, render_documents, safe_documents
from codeask.query.pipeline import Cancelled, Document
from codeask.query.steps.retrieve import fuse
from codeask.uris import markdown_link

if TYPE_CHECKING:
    from codeask.index.store import Hit

__all__ = ["Explanation", "Span", "explain", "enclosing_chunk", "identifiers", "ExplainCache", "withheld_reason"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COMMON = (
    set(keyword.kwlist)
    | set(keyword.softkwlist)
    | {
        "self",
        "cls",
        "None",
        "True",
        "False",
        "print",
        "len",
        "str",
        "int",
        "dict",
        "list",
        "set",
        "tuple",
        "range",
        "return",
        "const",
        "let",
        "var",
        "function",
        "this",
        "new",
        "null",
        "undefined",
        "true",
        "false",
        "void",
        "public",
        "private",
        "static",
        "func",
        "err",
        "nil",
        "fn",
        "mut",
        "impl",
        "pub",
        "use",
        "the",
        "and",
        "for",
        "args",
        "kwargs",
        "isinstance",
        "super",
        "object",
        "type",
        "bool",
        "float",
        "sum",
        "min",
        "max",
        "enumerate",
        "zip",
    }
)
_MAX_IDENTS = 8
_PER_SEARCH = 20
_MAX_RELATED = 6


@dataclass
class Span:
    """A piece of one file to explain: 1-based inclusive lines, the code, its enclosing symbol."""

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

    @property
    def label(self) -> str:
        """``path:start-end`` (1-based lines; ``root_label/`` first with several roots; the file name
        when outside every root)."""
        path = f"{self.root_label}/{self.path}" if self.root_label and self.path else self.path
        return f"{path or Path(self.abs_path).name}:{self.start_line}-{self.end_line}"


@dataclass
class Explanation:
    """What ``codeask.explain`` returns: the markdown and the related sources (best first)."""

    markdown: str
    sources: list[Source]
    llm: str | None = None
    error: str | None = None
    cached: bool = False
    withheld: list[Withheld] = field(default_factory=list)
    """Text kept from the LLM (the selection or related code: secret files, credential lines)."""
    warnings: list[str] = field(default_factory=list)
    """Settings warnings: ignored workspace values, templates the sandbox refused."""

    def to_json(self) -> dict[str, Any]:
        """``{"markdown", "sources", "llm", "withheld"}``, plus ``error`` when set (``cached`` is left
        out)."""
        out = {
            "markdown": self.markdown,
            "sources": [asdict(s) for s in self.sources],
            "llm": self.llm,
            "withheld": [w.to_json() for w in self.withheld],
            "warnings": list(self.warnings),
        }
        if self.error:
            out["error"] = self.error
        return out


def identifiers(text: str, limit: int = _MAX_IDENTS) -> list[str]:
    """Distinctive identifiers of ``text`` (no keywords, builtins or 1-2 letter names), longest
    and rarest first, at most ``limit``."""
    counts: dict[str, int] = {}
    order: dict[str, int] = {}
    for i, m in enumerate(_IDENT.finditer(text)):
        word = m.group(0)
        if word in _COMMON or len(word) < 3:
            continue
        counts[word] = counts.get(word, 0) + 1
        order.setdefault(word, i)
    ranked = sorted(counts, key=lambda w: (-len(w) * (1 + ("_" in w or any(c.isupper() for c in w[1:]))), order[w]))
    return ranked[:limit]


def _lines(text: str, start: int, end: int) -> str:
    lines = split_lines(text)
    return "\n".join(lines[max(0, start - 1) : max(0, end)])


def _read(abs_path: str) -> str | None:
    try:
        return Path(abs_path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def make_span(workspace, abs_path: str, start_line: int, end_line: int, *, text: str | None = None) -> Span:
    """The span of ``abs_path`` lines ``start_line..end_line`` (1-based inclusive), its code taken
    from ``text`` (an editor buffer) or the file on disk, with the enclosing chunk's symbol."""
    abs_path = os.path.abspath(abs_path)  # as the editor named it (a symlinked root stays the link)
    index = workspace.root_for(abs_path)
    rel = (index.relative(abs_path) or "") if index is not None else ""
    source = text if text is not None else (_read(abs_path) or "")
    if end_line < start_line:
        start_line, end_line = end_line, start_line
    selection = _lines(source, start_line, end_line)
    span = Span(
        path=rel,
        root=str(index.root) if index else "",
        abs_path=abs_path,
        start_line=start_line,
        end_line=end_line,
        text=selection,
        language=language_for(abs_path),
        root_label=workspace.root_labels().get(str(index.root), "") if index is not None else "",
    )
    if index is not None:
        rows = _rows(index, rel)
        inside = [r for r in rows if r["start_line"] <= end_line and r["end_line"] >= start_line]
        span.own_ids = {r["id"] for r in inside}
        containing = [r for r in inside if r["start_line"] <= start_line and r["end_line"] >= end_line]
        pick = containing[0] if containing else (inside[0] if inside else None)
        if pick is not None:
            span.symbol = pick["symbol"]
    if not span.symbol and source:
        chunk = _chunk_at(abs_path, source, start_line, workspace)
        if chunk is not None:
            span.symbol = chunk.symbol
    return span


def _rows(index, rel: str) -> list[dict]:
    try:
        return index.store.rows_for_path(rel)
    except Exception:  # an index being created: no rows yet
        return []


def _chunk_at(abs_path: str, text: str, line: int, workspace):
    s = workspace.settings.index
    for chunk in chunk_text(Path(abs_path).name, text, chunk_lines=s.chunk_lines, max_chunk_chars=s.max_chunk_chars):
        if chunk.start_line <= line <= chunk.end_line:
            return chunk
    return None


def enclosing_chunk(workspace, abs_path: str, line: int, *, text: str | None = None) -> Span | None:
    """The chunk containing 1-based ``line``: the indexed chunk when the file on disk is what the
    editor shows, else (an unsaved buffer, or a file not indexed yet) a chunk of the buffer text."""
    abs_path = os.path.abspath(abs_path)
    disk = _read(abs_path)
    source = text if text is not None else disk
    if source is None:
        return None
    index = workspace.root_for(abs_path)
    if index is not None and (text is None or text == disk):
        rel = index.relative(abs_path) or ""
        for row in _rows(index, rel):
            if row["start_line"] <= line <= row["end_line"]:
                return make_span(workspace, abs_path, row["start_line"], row["end_line"], text=source)
    chunk = _chunk_at(abs_path, source, line, workspace)
    if chunk is None:
        return None
    span = make_span(workspace, abs_path, chunk.start_line, chunk.end_line, text=source)
    span.symbol = span.symbol or chunk.symbol
    return span


def related(workspace, span: Span, *, limit: int = _MAX_RELATED) -> list[Document]:
    """Related code for ``span`` (definitions it uses, places that use it, similar code), best first,
    without the span's own chunks or anything overlapping the span in its own file."""
    idents = identifiers(span.text)
    usage = span.symbol.rsplit(".", 1)[-1] if span.symbol else ""
    vector = None
    if span.text.strip() and any(i.store.has_vectors() for i in list(workspace.indexes.values())):
        vector = workspace.embedder().embed_query(span.text[:4000])
    rankings: list[tuple[float, str, list[Hit]]] = []
    for index in list(workspace.indexes.values()):
        store, root = index.store, str(index.root)
        for ident in idents:
            hits = store.keyword_search(ident, _PER_SEARCH)
            # The definition of ``ident`` first.
            hits.sort(key=lambda h: 0 if h.symbol.rsplit(".", 1)[-1] == ident else 1)
            rankings.append((1.0, root, hits))
        if usage:
            rankings.append((1.0, root, store.keyword_search(usage, _PER_SEARCH)))
        if vector is not None:
            rankings.append((1.0, root, store.vector_search(vector, _PER_SEARCH)))

    def own(root: str, hit: Hit) -> bool:
        if hit.id in span.own_ids:
            return True
        return (
            root == span.root
            and hit.path == span.path
            and hit.start_line <= span.end_line
            and hit.end_line >= span.start_line
        )

    rankings = [(w, r, [h for h in hits if not own(r, h)]) for w, r, hits in rankings]
    s = workspace.settings
    fused = fuse(rankings, rrf_k=s.retrieval.rrf_k, downweighted=lambda p: False, factor=1.0)
    docs: list[Document] = []
    labels = workspace.root_labels()
    for score, _, root, hit in fused:
        if is_secret(hit.path, s.index):
            continue
        docs.append(
            Document(
                path=hit.path,
                root=root,
                start_line=hit.start_line,
                end_line=hit.end_line,
                symbol=hit.symbol,
                language=hit.language,
                content=hit.content,
                score=score,
                id=hit.id,
                root_label=labels.get(root, ""),
            )
        )
        if len(docs) >= limit:
            break
    return docs


def related_markdown(span: Span, documents: list[Document]) -> str:
    """The answer without an LLM: the related locations as markdown links."""
    head = f"**{span.symbol or span.label}**" if span.symbol else f"`{span.label}`"
    if not documents:
        return f"{head}: no related code found in the index."
    lines = [f"Related code for {head} (`{span.label}`):", ""]
    for i, d in enumerate(documents, 1):
        symbol = f" `{d.symbol}`" if d.symbol else ""
        lines.append(f"{i}. {markdown_link(f'{d.label}:{d.start_line}-{d.end_line}', d.uri)}{symbol}")
    return "\n".join(lines)


class ExplainCache:
    """LLM explanations by hash of (code, brief, model); small LRU, thread-safe."""

    def __init__(self, size: int = 256):
        self._size = size
        self._data: OrderedDict[str, Explanation] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(span: Span, brief: bool, llm: str | None) -> str:
        """sha256 hex (64 characters) of the model, ``brief``, the path and the code text."""
        return hashlib.sha256(f"{llm}\0{int(brief)}\0{span.path}\0{span.text}".encode()).hexdigest()

    def get(self, key: str) -> Explanation | None:
        """The explanation cached under ``key`` (now most recently used), or ``None``."""
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
            return None

    def put(self, key: str, value: Explanation) -> None:
        """Store ``value`` under ``key``; the least recently used entries beyond ``size`` (default 256)
        are dropped."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self._size:
                self._data.popitem(last=False)


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


def explain(
    workspace,
    span: Span,
    *,
    brief: bool = False,
    no_llm: bool = False,
    cancelled: Callable[[], bool] | None = None,
    progress: Callable[[str], None] | None = None,
    cache: ExplainCache | None = None,
    llm: LLM | None = None,
) -> Explanation:
    """Explain ``span`` with the LLM (``explain`` template), grounded in :func:`related` code.

    ``llm`` replaces the workspace's LLM (the language server's hover uses one with a short timeout
    and no retries). The reply is streamed, so a :class:`codeask.llm.CancelToken` in scope closes it.
    LLM failures never lose the related code: the markdown then lists it, with ``error`` set.

    Raises:
        Cancelled: ``cancelled()`` became true between steps.
    """

    def step(name: str) -> None:
        if cancelled is not None and cancelled():
            raise Cancelled(f"cancelled before {name}")
        if progress is not None:
            progress(name)

    step("retrieve")
    documents = related(workspace, span)
    sources = [Source.from_document(d) for d in documents]
    withheld: list[Withheld] = []
    error: str | None = None
    if no_llm:
        llm = None
    elif llm is None:
        try:
            llm = workspace.llm()
        except LLMError as exc:
            error = str(exc)
    reason = withheld_reason(workspace, span)
    if llm is None or reason:
        markdown = related_markdown(span, documents)
        if error:
            markdown += f"\n\n> **LLM error:** {error}"
        elif reason and llm is not None:
            markdown += f"\n\n> Not sent to the LLM: {reason}."
            withheld.append(
                Withheld(span.path or span.abs_path, span.root, span.start_line, span.end_line, "withheld", reason)
            )
        return Explanation(markdown, sources, llm=None, error=error, withheld=withheld)
    selection = Document(
        path=span.path or Path(span.abs_path).name,
        root=span.root,
        start_line=span.start_line,
        end_line=span.end_line,
        symbol=span.symbol,
        language=span.language,
        content=span.text,
    )
    clean = safe_documents([selection], workspace.settings, withheld)
    if not clean:  # a private key: nothing of it goes out
        markdown = related_markdown(span, documents) + "\n\n> Not sent to the LLM: it holds credentials."
        return Explanation(markdown, sources, llm=None, withheld=withheld)
    selection = clean[0]
    documents = safe_documents(documents, workspace.settings, withheld)
    key = ExplainCache.key(span, brief, llm.describe())
    if cache is not None and (hit := cache.get(key)) is not None:
        return Explanation(hit.markdown, sources, llm=hit.llm, cached=True, withheld=hit.withheld)
    step("explain")
    templates = Templates(workspace.settings)
    prompt = templates.render(
        "explain",
        path=span.label.rsplit(":", 1)[0] if span.path else span.abs_path,
        start_line=span.start_line,
        end_line=span.end_line,
        symbol=span.symbol,
        language=span.language,
        selection=fence(selection.content),
        documents=render_documents(templates, documents),
        brief=brief,
    )
    try:
        # Streamed: a cancelled hover or explain closes the stream (codeask.llm.CancelToken).
        text = "".join(
            llm.stream(prompt, system=templates.system, max_tokens=200 if brief else workspace.settings.llm.max_tokens)
        ).strip()
    except LLMError as exc:
        markdown = related_markdown(span, documents) + f"\n\n> **LLM error:** {exc}"
        return Explanation(markdown, sources, llm=llm.describe(), error=str(exc), withheld=withheld)
    links = "\n".join(
        f"{i}. {markdown_link(f'{s.label or s.path}:{s.start_line}-{s.end_line}', s.uri)}"
        for i, s in enumerate(sources, 1)
    )
    markdown = f"{text}\n\nRelated:\n{links}\n" if links else text
    warnings = list(dict.fromkeys([*workspace.warnings, *templates.warnings]))
    result = Explanation(markdown, sources, llm=llm.describe(), withheld=withheld, warnings=warnings)
    if cache is not None:
        cache.put(key, result)
    return result
