"""The codeask language server (pygls 2): ``codeask serve [--tcp HOST:PORT]``.

Handlers are thin: each converts LSP types, runs :class:`~codeask.workspace.Workspace` or
:mod:`codeask.query.explain` in a worker thread (the event loop never blocks: any request is
answered while indexing runs) and converts the result back (1-based lines -> 0-based ranges,
``file:///abs/path`` locations).

Commands (``workspace/executeCommand``):

* ``codeask.ask`` ``[question]`` or ``[{"question", "top_k"?, "max_files"?, "no_llm"?}]`` ->
  ``Answer.to_json()`` plus ``locations`` (LSP Location[] of the sources);
* ``codeask.explain`` ``[uri, range]`` -> ``{"markdown", "sources", "locations"}``;
* ``codeask.reindex`` ``[]`` -> ``IndexStats.to_json()``;
* ``codeask.status`` ``[]`` -> ``{"indexing", "files", "chunks_total", "vectors_pending",
  "index_dir", "llm", ...}`` (answered from the last snapshot when the index is busy).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import sys
import threading
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from codeask import __version__
from codeask.index.engine import IndexLocked, IndexStats, Progress
from codeask.index.watch import Watcher
from codeask.llm import LLMError
from codeask.lsp.convert import (
    last_line, lsp_range, merge, selection_lines, settings_from, source_locations, uri_to_path, word_at,
)
from codeask.lsp.work import Reporter, in_thread
from codeask.query.explain import ExplainCache, enclosing_chunk, explain, make_span
from codeask.query.pipeline import Cancelled
from codeask.workspace import Workspace

__all__ = ["CodeaskServer", "make_server", "run", "COMMANDS"]

log = logging.getLogger("codeask.lsp")

COMMANDS = ["codeask.ask", "codeask.explain", "codeask.reindex", "codeask.status"]
_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_STATUS_WAIT = 0.03


class CodeaskServer(LanguageServer):
    """pygls server holding the :class:`Workspace`, the indexing thread and the watcher."""

    def __init__(self) -> None:
        # Full sync: pygls applies incremental edits on ``str.splitlines()`` lines, which also end at a
        # form feed or U+2028, so an edit below one lands on the wrong line of its buffer copy.
        super().__init__("codeask", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Full)
        self.ws: Workspace | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.init_settings: dict[str, Any] = {}
        self.indexing = False
        self.stopping = threading.Event()
        self.cache = ExplainCache()
        self.watcher: Watcher | None = None
        self._watched_roots: list[str] = []
        self._index_lock = threading.Lock()
        self._sched_lock = threading.Lock()
        self._index_wanted = False
        self._index_thread: threading.Thread | None = None
        self._status: dict[str, Any] = {}
        self._status_task: asyncio.Task | None = None

    # ------------------------------------------------------------ client
    def caps(self, *path: str) -> Any:
        """A nested client capability (``None`` when absent)."""
        value: Any = self.client_capabilities
        for name in path:
            value = getattr(value, name, None) if value is not None else None
        return value

    def show(self, message: str, kind: lsp.MessageType = lsp.MessageType.Error) -> None:
        """``window/showMessage`` from any thread."""
        params = lsp.ShowMessageParams(type=kind, message=message)
        if self.loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self.window_show_message(params)
        else:
            self.loop.call_soon_threadsafe(self.window_show_message, params)

    def position_encoding(self) -> str:
        """The negotiated ``PositionEncodingKind`` (``"utf-16"`` unless the client offered another)."""
        encoding = getattr(self.workspace, "position_encoding", None) or lsp.PositionEncodingKind.Utf16
        return str(getattr(encoding, "value", encoding))

    def buffer_text(self, uri: str) -> str | None:
        """The editor's (possibly unsaved) text of an open document."""
        doc = self.workspace.text_documents.get(uri)
        return doc.source if doc is not None else None

    async def run_request(self, title: str | None, fn):
        """Run ``fn(cancelled, progress)`` in a thread; ``$/cancelRequest`` sets ``cancelled()``
        (pygls cancels the request's future; the thread stops at its next step)."""
        request = self.protocol._request_futures.get(self.protocol.msg_id)
        flag = threading.Event()

        def cancelled() -> bool:
            return flag.is_set() or self.stopping.is_set() or (request is not None and request.cancelled())

        reporter = Reporter(self, title or "", enabled=bool(title and self.caps("window", "work_done_progress")))

        def work():
            reporter.begin("starting", None)
            try:
                return fn(cancelled, lambda step: reporter.report(step))
            finally:
                reporter.end("cancelled" if cancelled() else "done")

        try:
            return await in_thread(work)
        except asyncio.CancelledError:
            flag.set()
            raise

    # ---------------------------------------------------------- settings
    async def pull_settings(self, pushed: Any = None) -> None:
        """``initializationOptions`` overlaid by ``workspace/configuration`` section ``codeask``
        (or, for clients that cannot be asked, the pushed ``didChangeConfiguration`` settings)."""
        editor = dict(self.init_settings)
        if self.caps("workspace", "configuration"):
            try:
                items = await self.workspace_configuration_async(
                    lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="codeask")])
                )
                editor = merge(editor, settings_from(items[0] if items else None))
            except Exception as exc:
                log.warning("workspace/configuration failed: %s", exc)
        elif pushed is not None:
            editor = merge(editor, settings_from(pushed))
        if await in_thread(self.ws.reconfigure, editor):
            self.request_index()

    # ---------------------------------------------------------- indexing
    def request_index(self) -> None:
        """Index (again) in the background thread; coalesces requests made while it runs."""
        with self._sched_lock:
            self._index_wanted = True
            if self._index_thread is None:
                self._index_thread = threading.Thread(target=self._index_loop, name="codeask-index", daemon=True)
                self._index_thread.start()

    def _index_loop(self) -> None:
        while not self.stopping.is_set():
            with self._sched_lock:
                if not self._index_wanted:
                    self._index_thread = None
                    return
                self._index_wanted = False
            self.index_now()
            self.restart_watcher()
        with self._sched_lock:
            self._index_thread = None

    def index_now(self) -> IndexStats:
        """Both phases with work-done progress (or showMessage at start and end); never raises."""
        with self._index_lock:
            self.indexing = True
            try:
                return self._index()
            except IndexLocked as exc:
                self.show(f"codeask: {exc}")
            except Exception as exc:
                log.exception("indexing failed")
                self.show(f"codeask: indexing failed: {exc}")
            finally:
                self.indexing = False
        return IndexStats()

    def _index(self) -> IndexStats:
        ws = self.ws
        progress = bool(self.caps("window", "work_done_progress"))
        if not progress:
            self.show(f"codeask: indexing {len(ws.indexes)} folder(s)...", lsp.MessageType.Info)
        stop = self.stopping.is_set
        phase1 = Reporter(self, "codeask: indexing", enabled=progress)
        phase1.begin("scanning files", 0)

        def report1(p: Progress) -> None:
            phase1.report(f"{p.phase}: {p.message}", p.percent)

        try:
            stats = ws.index(progress=report1, embed=False, should_stop=stop, wait=False)
        finally:
            phase1.end("keyword search ready")
        pending = ws.vectors_pending()
        if pending and not stop():
            phase2 = Reporter(self, "codeask: embedding", enabled=progress)
            phase2.begin(f"0/{pending} chunks embedded", 0)

            def report2(p: Progress) -> None:
                eta = f" (~{p.eta_seconds:.0f}s left)" if p.eta_seconds is not None else ""
                phase2.report(p.message + eta, p.percent)

            try:
                stats.chunks_embedded += ws.embed_pending(progress=report2, should_stop=stop, wait=False)
            finally:
                phase2.end("vectors ready")
        stats.vectors_pending = ws.vectors_pending()
        stats.chunks_total = sum(i.store.count() for i in list(ws.indexes.values()))
        if not progress:
            self.show(
                f"codeask: index ready: {stats.files_seen} files, {stats.chunks_total} chunks", lsp.MessageType.Info
            )
        return stats

    def restart_watcher(self) -> None:
        """Watch the current roots for changes made outside the editor (after the first index)."""
        roots = sorted(self.ws.indexes)
        if self.stopping.is_set() or (self.watcher is not None and roots == self._watched_roots):
            return
        if self.watcher is not None:
            self.watcher.stop()
        self._watched_roots = roots
        self.watcher = Watcher(
            self.ws,
            on_update=lambda s: log.info("watcher: %d changed, %d removed", s.files_changed, s.files_removed),
            on_error=lambda exc: self.show(f"codeask: updating the index failed: {exc}"),
        ).start()

    def update(self, paths: list[str]) -> None:
        """Re-index saved / changed / deleted files; never raises."""
        try:
            self.ws.update_paths(paths)
        except Exception as exc:
            log.exception("update of %s failed", paths)
            self.show(f"codeask: updating the index failed: {exc}")

    def stop_all(self, timeout: float = 3.0) -> None:
        """Set ``stopping``, stop the watcher and wait up to ``timeout`` seconds for the indexing thread."""
        self.stopping.set()
        if self.watcher is not None:
            self.watcher.stop()
        thread = self._index_thread
        if thread is not None:
            thread.join(timeout)

    # ------------------------------------------------------------ status
    async def status(self) -> dict[str, Any]:
        """The workspace status; while a write holds the index, the last snapshot (< 100 ms)."""
        if self._status_task is None or self._status_task.done():
            self._status_task = asyncio.ensure_future(in_thread(self.ws.status))
        done, _ = await asyncio.wait({self._status_task}, timeout=_STATUS_WAIT)
        if done and self._status_task.exception() is None:
            self._status = self._status_task.result()
            out = dict(self._status)
        else:
            out = dict(self._status) or {"files": 0, "chunks_total": 0, "vectors_pending": 0, "index_dir": None}
            out["stale"] = True
        llm = self.ws.settings.resolved_llm()
        out["llm"] = llm.describe() if llm else None
        out["indexing"] = self.indexing
        return out


def make_server() -> CodeaskServer:
    """A :class:`CodeaskServer` with the LSP features and the ``codeask.*`` commands (:data:`COMMANDS`)
    registered, each handler wrapped by :func:`guard`."""
    server = CodeaskServer()

    @server.feature(lsp.INITIALIZE)
    @guard
    def initialize(ls: CodeaskServer, params: lsp.InitializeParams):
        """Answer ``initialize``: create the :class:`Workspace` for the workspace folders."""
        ls.loop = asyncio.get_running_loop()
        ls.init_settings = settings_from(params.initialization_options)
        uris = [f.uri for f in params.workspace_folders or []]
        if not uris and params.root_uri:
            uris = [params.root_uri]
        roots = [p for u in uris if (p := uri_to_path(u)) and Path(p).is_dir()]
        if not uris and params.root_path and Path(params.root_path).is_dir():
            roots = [params.root_path]
        try:
            ls.ws = Workspace(roots, editor=ls.init_settings)
        except Exception as exc:  # a bad setting must not keep the server from starting
            log.exception("workspace settings")
            ls.show(f"codeask: {exc}")
            ls.ws = Workspace(roots)

    @server.feature(lsp.INITIALIZED)
    @guard
    async def initialized(ls: CodeaskServer, params: lsp.InitializedParams):
        """Handle ``initialized``: pull settings, register file watchers, start indexing."""
        try:
            await ls.pull_settings()
        except Exception as exc:
            ls.show(f"codeask: settings: {exc}")
        if ls.caps("workspace", "did_change_watched_files", "dynamic_registration"):
            watcher = lsp.FileSystemWatcher(glob_pattern="**/*")
            options = lsp.DidChangeWatchedFilesRegistrationOptions(watchers=[watcher])
            reg = lsp.Registration(id="codeask-watch", method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options)
            try:
                await ls.client_register_capability_async(lsp.RegistrationParams(registrations=[reg]))
            except Exception as exc:
                log.warning("registering file watchers failed: %s", exc)
        ls.request_index()

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @guard
    async def did_change_configuration(ls: CodeaskServer, params: lsp.DidChangeConfigurationParams):
        """Handle ``workspace/didChangeConfiguration``: reload the settings."""
        try:
            await ls.pull_settings(params.settings)
        except Exception as exc:
            ls.show(f"codeask: settings: {exc}")

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    @guard
    async def did_change_folders(ls: CodeaskServer, params: lsp.DidChangeWorkspaceFoldersParams):
        """Handle ``workspace/didChangeWorkspaceFolders``: remove and add roots, then index."""
        for folder in params.event.removed:
            if path := uri_to_path(folder.uri):
                await in_thread(ls.ws.remove_root, path)
        for folder in params.event.added:
            if (path := uri_to_path(folder.uri)) and Path(path).is_dir():
                await in_thread(ls.ws.add_root, path)
        ls.request_index()

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    @guard
    async def did_save(ls: CodeaskServer, params: lsp.DidSaveTextDocumentParams):
        """Handle ``textDocument/didSave``: re-index the saved file."""
        if path := uri_to_path(params.text_document.uri):
            await in_thread(ls.update, [path])

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @guard
    async def did_change_watched(ls: CodeaskServer, params: lsp.DidChangeWatchedFilesParams):
        """Handle ``workspace/didChangeWatchedFiles``: re-index the changed files."""
        paths = sorted({p for c in params.changes if (p := uri_to_path(c.uri))})
        if paths:
            await in_thread(ls.update, paths)

    @server.feature(lsp.SHUTDOWN)
    @guard
    async def shutdown(ls: CodeaskServer, params: None):
        """Answer ``shutdown``: stop the watcher and the indexing thread."""
        await in_thread(ls.stop_all)

    @server.command("codeask.status")
    @guard
    async def status(ls: CodeaskServer, *args):
        """Answer ``workspace/executeCommand`` ``codeask.status``."""
        return await ls.status()

    @server.command("codeask.reindex")
    @guard
    async def reindex(ls: CodeaskServer, *args):
        """Answer ``workspace/executeCommand`` ``codeask.reindex``."""
        return (await in_thread(ls.index_now)).to_json()

    @server.command("codeask.ask")
    @guard
    async def ask(ls: CodeaskServer, *args):
        """Answer ``workspace/executeCommand`` ``codeask.ask`` (``ValueError`` without a question)."""
        opts = args[0] if args and isinstance(args[0], dict) else {"question": " ".join(str(a) for a in args)}
        question = str(opts.get("question") or "").strip()
        if not question:
            raise ValueError("codeask.ask: no question")
        kwargs = {k: opts.get(k) for k in ("top_k", "max_files")}
        no_llm = bool(opts.get("no_llm"))

        def run(cancelled, progress):
            try:
                return ls.ws.ask(question, no_llm=no_llm, cancelled=cancelled, progress=progress, **kwargs).to_json()
            except LLMError as exc:  # no usable LLM at all: the sources, with the error
                out = ls.ws.ask(question, no_llm=True, cancelled=cancelled, progress=progress, **kwargs).to_json()
                out["error"] = str(exc)
                return out

        result = await ls.run_request("codeask: asking", run)
        if result.get("error"):
            ls.show(f"codeask: LLM error: {result['error']}")
        result["locations"] = source_locations(result["sources"], ls.position_encoding())
        return result

    @server.command("codeask.explain")
    @guard
    async def explain_command(ls: CodeaskServer, uri: str, rng: Any, *rest):
        """Answer ``workspace/executeCommand`` ``codeask.explain``."""
        path = uri_to_path(uri)
        if path is None:
            raise ValueError(f"codeask.explain: not a file: URI: {uri!r}")
        start, end = selection_lines(rng)
        text = ls.buffer_text(uri)

        def run(cancelled, progress):
            span = make_span(ls.ws, path, start, end, text=text)
            return explain(ls.ws, span, cancelled=cancelled, progress=progress, cache=ls.cache)

        result = await ls.run_request("codeask: explaining", run)
        if result.error:
            ls.show(f"codeask: LLM error: {result.error}")
        out = result.to_json()
        out["locations"] = source_locations(out["sources"], ls.position_encoding())
        return out

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    @guard
    async def hover(ls: CodeaskServer, params: lsp.HoverParams):
        """Answer ``textDocument/hover``: a brief explanation of the chunk under an identifier."""
        if ls.ws is None or not ls.ws.settings.hover.enabled:
            return None
        uri, pos = params.text_document.uri, params.position
        path = uri_to_path(uri)
        text = ls.buffer_text(uri)
        shown = text
        if shown is None and path:
            try:
                shown = Path(path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                shown = None
        word = word_at(shown, pos.line, pos.character, ls.position_encoding()) if shown is not None else ""
        if not _WORD.match(word or ""):
            return None

        def run(cancelled, progress):
            span = enclosing_chunk(ls.ws, path, pos.line + 1, text=text)
            if span is None:
                return None
            return span, explain(ls.ws, span, brief=True, cancelled=cancelled, cache=ls.cache)

        got = await ls.run_request(None, run)
        if got is None:
            return None
        span, result = got
        if result.error:
            ls.show(f"codeask: LLM error: {result.error}")
        end = lsp_range(span.start_line, span.end_line, last_line(span.text), ls.position_encoding())["end"]
        rng = lsp.Range(
            start=lsp.Position(line=span.start_line - 1, character=0),
            end=lsp.Position(line=end["line"], character=end["character"]),
        )
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=result.markdown), range=rng)

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.Refactor]),
    )
    @guard
    def code_action(ls: CodeaskServer, params: lsp.CodeActionParams):
        """Answer ``textDocument/codeAction``: an ``Explain selection`` refactor action."""
        r = params.range
        only = params.context.only
        if r.start == r.end or (only and not any(lsp.CodeActionKind.Refactor.startswith(k) for k in only)):
            return None
        args = [params.text_document.uri, ls.protocol._converter.unstructure(r)]
        command = lsp.Command(title="Explain selection", command="codeask.explain", arguments=args)
        return [lsp.CodeAction(title="Explain selection", kind=lsp.CodeActionKind.Refactor, command=command)]

    return server


def guard(fn):
    """Log and show an unexpected error of a handler (the request then fails; the server lives)."""
    name = fn.__name__

    if asyncio.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def guarded(ls, *args, **kwargs):
            try:
                return await fn(ls, *args, **kwargs)
            except (asyncio.CancelledError, Cancelled):
                raise
            except Exception as exc:
                log.exception("%s failed", name)
                ls.show(f"codeask: {name} failed: {exc}")
                raise

    else:

        @functools.wraps(fn)
        def guarded(ls, *args, **kwargs):
            try:
                return fn(ls, *args, **kwargs)
            except Exception as exc:
                log.exception("%s failed", name)
                ls.show(f"codeask: {name} failed: {exc}")
                raise

    return guarded


def run(tcp: str | None = None) -> int:
    """Serve over stdio (or ``HOST:PORT`` TCP) until ``exit``; 0 after a ``shutdown``, else 1."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("codeask").setLevel(logging.INFO)
    # Indexing threads run Python code (chunking, row building): hand the GIL back to the event
    # loop sooner than the default 5 ms so that requests stay fast while indexing.
    sys.setswitchinterval(0.001)
    server = make_server()
    code = 0
    try:
        if tcp:
            host, _, port = tcp.rpartition(":")
            server.start_tcp(host or "127.0.0.1", int(port))
        else:
            server.start_io()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        pass
    server.stop_all(timeout=2.0)
    if not getattr(server.protocol, "_shutdown", False):
        code = code or 1
    return code
