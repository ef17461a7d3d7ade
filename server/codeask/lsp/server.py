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
* ``codeask.status`` ``[]`` -> ``{"indexing", "indexed", "read_only", "files", "chunks_total",
  "vectors_pending", "index_dir", "llm", "watch": {"mode": "native" | "polling" | "off", "warning"}, ...}``
  (answered from the last snapshot when the index is busy).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any, NoReturn

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from codeask import __version__
from codeask.imports import start_preload
from codeask.index.chunk import TREE_SITTER_LANGUAGES, language_for
from codeask.index.watch import Watcher, is_relevant
from codeask.llm import CancelToken, LLMError, cancel_scope, make_llm
from codeask.lsp.convert import (
    selection_lines,
    settings_from,
    source_locations,
    uri_to_path,
    word_at,
    word_range,
)
from codeask.lsp.indexing import IndexScheduler
from codeask.lsp.watched import is_watched, watchers_for
from codeask.lsp.work import Lane, Reporter, post
from codeask.query.explain import ExplainCache, explain, make_span, symbol_span
from codeask.query.pipeline import Cancelled
from codeask.settings import CONFIG_FILE
from codeask.workspace import Workspace, project_root_of

__all__ = ["CodeaskServer", "make_server", "run", "COMMANDS"]

log = logging.getLogger("codeask.lsp")

COMMANDS = ["codeask.ask", "codeask.explain", "codeask.reindex", "codeask.status"]
_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_STATUS_WAIT = 0.03
#: Concurrent asks / explains / reindexes (each holds a thread; more wait for a slot).
REQUEST_SLOTS = 3
#: Seconds ``shutdown`` waits for indexing and requests to stop (then ``exit`` ends the process at once).
STOP_SECONDS = 1.5
#: Debounce of hovers without the LLM, seconds (a mouse sweep runs only the hover it rests on).
_CHEAP_HOVER_DELAY = 0.1
#: Watched-file events are collected this long before one index update, seconds.
_CHANGE_BATCH_SECONDS = 0.3


class CodeaskProtocol(LanguageServerProtocol):
    """pygls' protocol, telling the server about ``$/cancelRequest`` first.

    pygls cancels the request's own future; a ``workspace/executeCommand`` runs the command handler
    as a separate task, which that does not reach, so the server cancels the command's work itself
    (:meth:`CodeaskServer.cancel_request`).
    """

    def __init__(self, server: CodeaskServer, converter):
        super().__init__(server, converter)
        self.codeask = server

    def handle_message(self, message):
        """Handle one message; a ``$/cancelRequest`` also cancels the command's work."""
        if getattr(message, "method", None) == lsp.CANCEL_REQUEST:
            self.codeask.cancel_request(getattr(message.params, "id", None))
        super().handle_message(message)


class CodeaskServer(LanguageServer):
    """pygls server holding the :class:`Workspace`, its :class:`IndexScheduler`, the request lanes
    and the change source (the client's file watcher, else ``watchfiles``)."""

    def __init__(self) -> None:
        # Full sync: pygls applies incremental edits on ``str.splitlines()`` lines, which also end at a
        # form feed or U+2028, so an edit below one lands on the wrong line of its buffer copy.
        super().__init__(
            "codeask",
            __version__,
            protocol_cls=CodeaskProtocol,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Full,
        )
        self.ws: Workspace | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.init_settings: dict[str, Any] = {}
        self._warned: set[str] = set()
        self.stopping = threading.Event()
        self.shutdown_received = False
        self.cache = ExplainCache()
        self.scheduler: IndexScheduler | None = None
        self.watcher: Watcher | None = None
        self.client_watches = False
        self.requests = Lane("request", REQUEST_SLOTS)
        self.hovers = Lane("hover", 1)
        self.reads = Lane("status", 1)
        self.updates = Lane("update", 1)
        self._tokens: set[CancelToken] = set()
        self._cancels: dict[Any, Any] = {}
        self._hover_seq = 0
        self._hover_token: CancelToken | None = None
        self._changed: set[str] = set()
        self._update_task: asyncio.Task | None = None
        self._watched_roots: list[str] = []
        self._status: dict[str, Any] = {}
        self._status_task: asyncio.Task | None = None
        self.no_folder_said = False

    # ------------------------------------------------------------ client
    def caps(self, *path: str) -> Any:
        """A nested client capability (``None`` when absent)."""
        value: Any = self.client_capabilities
        for name in path:
            value = getattr(value, name, None) if value is not None else None
        return value

    def show(self, message: str, kind: lsp.MessageType = lsp.MessageType.Error) -> None:
        """``window/showMessage`` from any thread (nothing once the server is stopping)."""
        if self.stopping.is_set():
            log.info("not shown while stopping: %s", message)
            return
        post(self.loop, self.window_show_message, lsp.ShowMessageParams(type=kind, message=message))

    def reporter(self, title: str) -> Reporter:
        """Work-done progress titled ``title`` (does nothing for clients without the capability)."""
        return Reporter(self, title, enabled=bool(self.caps("window", "work_done_progress")))

    def position_encoding(self) -> str:
        """The negotiated ``PositionEncodingKind`` (``"utf-16"`` unless the client offered another)."""
        encoding = getattr(self.workspace, "position_encoding", None) or lsp.PositionEncodingKind.Utf16
        return str(getattr(encoding, "value", encoding))

    def buffer_text(self, uri: str) -> str | None:
        """The editor's (possibly unsaved) text of an open document."""
        doc = self.workspace.text_documents.get(uri)
        return doc.source if doc is not None else None

    async def run_request(self, title: str | None, fn, *, lane: Lane | None = None, token: CancelToken | None = None):
        """Run ``fn(cancelled, progress)`` in a slot of ``lane`` (the request lane by default).

        ``$/cancelRequest`` (or ``shutdown``) sets ``cancelled()`` (the pipeline stops at its next step)
        and cancels ``token``, which closes the LLM stream under way at once.
        """
        flag = threading.Event()
        token = token or CancelToken()

        def cancelled() -> bool:
            return flag.is_set() or token.cancelled or self.stopping.is_set()

        def cancel() -> None:
            flag.set()
            token.cancel()

        reporter = self.reporter(title or "") if title else None

        def work():
            if reporter is not None:
                reporter.begin("starting", None)
            try:
                with cancel_scope(token):
                    return fn(cancelled, (lambda step: reporter.report(step)) if reporter else (lambda step: None))
            finally:
                if reporter is not None:
                    reporter.end("cancelled" if cancelled() else "done")

        msg_id = self.protocol.msg_id
        if msg_id is not None:
            self._cancels[msg_id] = cancel
        self._tokens.add(token)
        try:
            return await (lane or self.requests).run(work, on_cancel=cancel)
        finally:
            self._tokens.discard(token)
            if msg_id is not None:
                self._cancels.pop(msg_id, None)

    def cancel_request(self, msg_id: Any) -> None:
        """``$/cancelRequest`` for ``msg_id``: stop its work (pipeline flag, LLM stream) now."""
        cancel = self._cancels.pop(msg_id, None)
        if cancel is not None:
            cancel()

    # ---------------------------------------------------------- settings
    async def pull_settings(self, pushed: Any = None) -> None:
        """``initializationOptions`` (the client's user-scoped settings: trusted) overlaid by
        ``workspace/configuration`` section ``codeask`` (or, for clients that cannot be asked, the
        pushed ``didChangeConfiguration`` settings), which may hold workspace-scoped values and so
        is untrusted: endpoints, keys, provider and model paths from it are ignored with a warning."""
        scoped: dict[str, Any] = {}
        if self.caps("workspace", "configuration"):
            try:
                items = await self.workspace_configuration_async(
                    lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="codeask")])
                )
                scoped = settings_from(items[0] if items else None)
            except Exception as exc:
                log.warning("workspace/configuration failed: %s", exc)
        elif pushed is not None:
            scoped = settings_from(pushed)
        if (
            await self.reads.run(lambda: self.ws.reconfigure(dict(self.init_settings), scoped))
            and self.scheduler.started
        ):
            self.scheduler.request()
        self.cache.clear()  # another model or template may explain differently
        self.show_settings_warnings()

    def show_settings_warnings(self) -> None:
        """Show each settings warning (an ignored workspace value) once per session."""
        for line in self.ws.warnings if self.ws else []:
            if line not in self._warned:
                self._warned.add(line)
                log.warning("settings: %s", line)
                self.show(f"codeask: {line}", lsp.MessageType.Warning)

    # ---------------------------------------------------------- indexing
    def start_indexing_if_configured(self) -> None:
        """Apply ``index_on_startup`` (runs in a worker thread: reads each root's manifest).

        ``auto`` indexes at start only when a root already has an index or a ``.codeask.toml``;
        ``always`` does; ``never`` waits for the first question.
        """
        ws = self.ws
        existing = self.scheduler.keyword_ready()
        mode = ws.settings.index_on_startup
        configured = any((Path(root) / CONFIG_FILE).is_file() for root in list(ws.indexes))
        if mode == "always" or (mode == "auto" and (existing or configured)):
            self.scheduler.request()
        else:
            log.info("not indexing at start (index_on_startup=%s): the first question starts it", mode)

    def on_synced(self) -> None:
        """After each full index: watch the roots with ``watchfiles`` unless the client watches files."""
        if self.client_watches or self.stopping.is_set():
            return
        roots = sorted(self.ws.indexes)
        if self.watcher is not None and roots == self._watched_roots:
            return
        if self.watcher is not None:
            self.watcher.stop()
        self._watched_roots = roots
        self.watcher = Watcher(
            self.ws,
            on_update=lambda s: log.info("watcher: %d changed, %d removed", s.files_changed, s.files_removed),
            on_error=lambda exc: log.error("updating the index failed: %s", exc),
            on_fallback=lambda warning: self.show(f"codeask: {warning}", lsp.MessageType.Warning),
        ).start()

    def wait_for_keywords(self, cancelled, progress) -> None:
        """Block (in a request thread) until keyword search has an index, starting indexing if it
        has not started; reports the index's phase as the request's progress.

        Raises:
            Cancelled: the request was cancelled meanwhile.
        """
        scheduler = self.scheduler
        if not scheduler.started:
            scheduler.request()
        while not scheduler.keyword_ready():
            if cancelled():
                raise Cancelled("cancelled while waiting for the index")
            progress(f"waiting for the keyword index ({scheduler.phase.message})")
            time.sleep(0.1)

    async def changed(self, paths: list[str]) -> None:
        """Queue changed paths for one coalesced index update (never raises)."""
        if not self.scheduler.started or self.stopping.is_set():
            return  # not indexed yet: the first index reads everything anyway
        self._changed.update(paths)
        if self._update_task is None or self._update_task.done():
            self._update_task = asyncio.ensure_future(self._apply_changes())

    async def _apply_changes(self) -> None:
        while self._changed and not self.stopping.is_set():
            await asyncio.sleep(_CHANGE_BATCH_SECONDS)
            paths, self._changed = sorted(self._changed), set()
            try:
                stats = await self.updates.run(lambda paths=paths: self.ws.update_paths(paths))
                log.info("file events: %d changed, %d removed", stats.files_changed, stats.files_removed)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.exception("updating %d changed paths failed", len(paths))
                self.show(f"codeask: updating the index failed: {exc}")

    def stop_all(self, timeout: float = STOP_SECONDS) -> bool:
        """Stop in order: no new work, cancel requests and LLM calls, stop the watcher, then the index
        thread; waits up to ``timeout`` seconds in all. True when every thread has ended."""
        self.stopping.set()
        for token in list(self._tokens):
            token.cancel()
        if self._hover_token is not None:
            self._hover_token.cancel()
        deadline = time.monotonic() + timeout
        if self.watcher is not None:
            self.watcher.stop(timeout)
        done = self.scheduler.stop(max(0.0, deadline - time.monotonic())) if self.scheduler else True
        for lane in (self.requests, self.hovers, self.updates, self.reads):
            done = lane.join(max(0.0, deadline - time.monotonic())) and done
        return done

    # ------------------------------------------------------------ status
    async def status(self) -> dict[str, Any]:
        """The workspace status plus the scheduler's state; while a write holds the index, the last
        snapshot (answered within ~30 ms). Before anything was indexed, no index is opened."""
        sched = self.scheduler.snapshot()
        if not self.scheduler.started and not self.scheduler.keyword_ready():
            out = {"files": 0, "chunks_total": 0, "vectors_pending": 0, "index_dir": None, "roots": []}
        else:
            if self._status_task is None or self._status_task.done():
                self._status_task = asyncio.ensure_future(self.reads.run(self.ws.status))
            done, _ = await asyncio.wait({self._status_task}, timeout=_STATUS_WAIT)
            if done and self._status_task.exception() is None:
                self._status = self._status_task.result()
                out = dict(self._status)
            else:
                out = dict(self._status) or {"files": 0, "chunks_total": 0, "vectors_pending": 0, "index_dir": None}
                out["stale"] = True
        llm = self.ws.settings.resolved_llm()
        out["llm"] = llm.describe() if llm else None
        out.update(sched)
        watcher = self.watcher
        out["watch"] = {"mode": watcher.mode, "warning": watcher.warning} if watcher is not None else None
        return out

    # ------------------------------------------------------------- hover
    def hover_llm(self):
        """The LLM for hovers (``hover.llm`` on): ``hover.timeout`` seconds, one attempt, or ``None``."""
        s = self.ws.settings
        resolved = s.resolved_llm()
        if not s.hover.llm or resolved is None:
            return None
        options = s.llm.model_copy(update={"timeout": min(s.llm.timeout, s.hover.timeout), "max_retries": 0})
        return make_llm(resolved, options)

    def hover_target(self, uri: str) -> str | None:
        """The path of a document hovers are offered for: a ``file:`` URI inside a root, in a
        language codeask chunks by syntax, not ignored; else ``None``."""
        path = uri_to_path(uri)
        if path is None or self.ws is None or language_for(path) not in TREE_SITTER_LANGUAGES:
            return None
        return path if is_relevant(self.ws, os.path.abspath(path)) else None


def make_server() -> CodeaskServer:
    """A :class:`CodeaskServer` with the LSP features and the ``codeask.*`` commands (:data:`COMMANDS`)
    registered, each handler wrapped by :func:`guard` (hover by :func:`quiet`)."""
    server = CodeaskServer()

    @server.feature(lsp.INITIALIZE)
    @guard
    def initialize(ls: CodeaskServer, params: lsp.InitializeParams):
        """Answer ``initialize``: create the :class:`Workspace` for the workspace folders (no index
        is opened and nothing heavy is imported here)."""
        ls.loop = asyncio.get_running_loop()
        start_preload()  # heavy imports in one thread, before any worker needs them
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
        ls.scheduler = IndexScheduler(
            ls.ws,
            reporter=ls.reporter,
            show=lambda message, error: ls.show(message, lsp.MessageType.Error if error else lsp.MessageType.Info),
            on_synced=ls.on_synced,
        )
        # An index from an earlier run answers at once (its manifest is a small SQLite file).
        if any(index.manifest.count() > 0 for index in list(ls.ws.indexes.values())):
            ls.scheduler.mark_existing()

    @server.feature(lsp.INITIALIZED)
    @guard
    async def initialized(ls: CodeaskServer, params: lsp.InitializedParams):
        """Handle ``initialized``: pull settings, choose the change source, index if configured."""
        try:
            await ls.pull_settings()
        except Exception as exc:
            ls.show(f"codeask: settings: {exc}")
        if ls.caps("workspace", "did_change_watched_files", "dynamic_registration"):
            options = lsp.DidChangeWatchedFilesRegistrationOptions(watchers=watchers_for(ls.ws))
            reg = lsp.Registration(
                id="codeask-watch", method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options
            )
            try:
                await ls.client_register_capability_async(lsp.RegistrationParams(registrations=[reg]))
                ls.client_watches = True
            except Exception as exc:  # then watchfiles is the change source
                log.warning("registering file watchers failed: %s", exc)
        await ls.reads.run(ls.start_indexing_if_configured)

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
        """Handle ``workspace/didChangeWorkspaceFolders``: remove and add roots, then index (if the
        workspace was indexed already)."""
        for folder in params.event.removed:
            if path := uri_to_path(folder.uri):
                await ls.reads.run(lambda path=path: ls.ws.remove_root(path))
        for folder in params.event.added:
            if (path := uri_to_path(folder.uri)) and Path(path).is_dir():
                await ls.reads.run(lambda path=path: ls.ws.add_root(path))
        if ls.scheduler.started:
            ls.scheduler.request()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    @guard
    async def did_open(ls: CodeaskServer, params: lsp.DidOpenTextDocumentParams):
        """Handle ``textDocument/didOpen``: with no workspace folder (``rootUri`` null, single-file
        mode), serve the opened file's project, or say once that no folder is open."""
        if ls.ws is None or ls.ws.indexes or not (path := uri_to_path(params.text_document.uri)):
            return
        root = await ls.reads.run(lambda: project_root_of(path))
        if root is None:
            if not ls.no_folder_said:
                ls.no_folder_said = True
                ls.show(
                    f"codeask: no workspace folder is open and {path} is in no project (no .git or project "
                    "file above it): open a folder to index it and ask questions",
                    lsp.MessageType.Warning,
                )
            return
        await ls.reads.run(lambda: ls.ws.add_root(root))
        ls.show(
            f"codeask: no workspace folder is open: indexing {root}, the project of {Path(path).name}",
            lsp.MessageType.Info,
        )
        ls.scheduler.request()

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    @guard
    async def did_save(ls: CodeaskServer, params: lsp.DidSaveTextDocumentParams):
        """Handle ``textDocument/didSave``: only for a file no change source covers (the client
        watches known file types; ``watchfiles`` sees everything), so no change is read twice."""
        path = uri_to_path(params.text_document.uri)
        if path and ls.client_watches and not is_watched(path) and is_relevant(ls.ws, os.path.abspath(path)):
            await ls.changed([path])

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @guard
    async def did_change_watched(ls: CodeaskServer, params: lsp.DidChangeWatchedFilesParams):
        """Handle ``workspace/didChangeWatchedFiles`` (the change source when the client watches):
        changes to ignored or non-indexed paths are dropped before any file is read."""
        paths = {p for c in params.changes if (p := uri_to_path(c.uri)) and is_relevant(ls.ws, os.path.abspath(p))}
        if paths:
            await ls.changed(sorted(paths))

    @server.feature(lsp.SHUTDOWN)
    @guard
    async def shutdown(ls: CodeaskServer, params: None):
        """Answer ``shutdown``: cancel requests, stop the watcher and the index thread in order."""
        ls.shutdown_received = True
        await Lane("stop", 1, imports=False).run(ls.stop_all)

    @server.feature(lsp.EXIT)
    def exit_(ls: CodeaskServer, params: None):
        """Handle ``exit``: stop taking work (pygls then ends the loop)."""
        ls.stopping.set()

    @server.command("codeask.status")
    @command_guard
    async def status(ls: CodeaskServer, *args):
        """Answer ``workspace/executeCommand`` ``codeask.status``."""
        return await ls.status()

    @server.command("codeask.reindex")
    @command_guard
    async def reindex(ls: CodeaskServer, *args):
        """Answer ``workspace/executeCommand`` ``codeask.reindex``: index now (coalesced with a run
        under way) -> ``IndexStats.to_json()``."""
        stats = await ls.run_request(None, lambda cancelled, progress: ls.scheduler.run_now(cancelled))
        return stats.to_json()

    @server.command("codeask.ask")
    @command_guard
    async def ask(ls: CodeaskServer, *args):
        """Answer ``workspace/executeCommand`` ``codeask.ask`` (``ValueError`` without a question).
        Before the first index has its keyword phase, the ask starts indexing and waits for it."""
        opts = args[0] if args and isinstance(args[0], dict) else {"question": " ".join(str(a) for a in args)}
        question = str(opts.get("question") or "").strip()
        if not question:
            raise ValueError("codeask.ask: no question")
        if not ls.ws.indexes:
            raise ValueError("codeask.ask: no workspace folder is open: open a folder (or a file inside a project)")
        kwargs = {k: opts.get(k) for k in ("top_k", "max_files")}
        no_llm = bool(opts.get("no_llm"))

        def run(cancelled, progress):
            ls.wait_for_keywords(cancelled, progress)
            try:
                return ls.ws.ask(question, no_llm=no_llm, cancelled=cancelled, progress=progress, **kwargs).to_json()
            except LLMError as exc:  # no usable LLM at all: the sources, with the error
                if cancelled():
                    raise Cancelled("cancelled") from exc
                out = ls.ws.ask(question, no_llm=True, cancelled=cancelled, progress=progress, **kwargs).to_json()
                out["error"] = str(exc)
                return out

        result = await ls.run_request("codeask: asking", run)
        if result.get("error"):
            ls.show(f"codeask: LLM error: {result['error']}")
        result["locations"] = source_locations(result["sources"], ls.position_encoding())
        return result

    @server.command("codeask.explain")
    @command_guard
    async def explain_command(ls: CodeaskServer, uri: str, rng: Any, *rest):
        """Answer ``workspace/executeCommand`` ``codeask.explain`` (waits for the keyword index too)."""
        path = uri_to_path(uri)
        if path is None:
            raise ValueError(f"codeask.explain: not a file: URI: {uri!r}")
        start, end = selection_lines(rng)
        text = ls.buffer_text(uri)

        def run(cancelled, progress):
            ls.wait_for_keywords(cancelled, progress)
            span = make_span(ls.ws, path, start, end, text=text)
            return explain(ls.ws, span, cancelled=cancelled, progress=progress, cache=ls.cache)

        result = await ls.run_request("codeask: explaining", run)
        if result.error:
            ls.show(f"codeask: LLM error: {result.error}")
        out = result.to_json()
        out["locations"] = source_locations(out["sources"], ls.position_encoding())
        return out

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    @quiet
    async def hover(ls: CodeaskServer, params: lsp.HoverParams):
        """Answer ``textDocument/hover``: for the symbol under the cursor (its definition, see
        :func:`~codeask.query.explain.symbol_span`) the related code as links (no LLM), or with
        ``hover.llm`` a short LLM explanation; ``None`` outside indexed code. The range is the word's."""
        if ls.ws is None or ls.stopping.is_set() or not ls.ws.settings.hover.enabled:
            return None
        uri, pos = params.text_document.uri, params.position
        path = ls.hover_target(uri)
        if path is None or not ls.scheduler.keyword_ready():
            return None  # a hover never starts indexing
        text = ls.buffer_text(uri)
        shown = text
        if shown is None:
            try:
                shown = Path(path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                shown = None
        word = word_at(shown, pos.line, pos.character, ls.position_encoding()) if shown is not None else ""
        if not _WORD.match(word or ""):
            return None
        settings = ls.ws.settings.hover
        # The newest hover wins: an older one still waiting returns nothing, one running is cancelled.
        ls._hover_seq += 1
        seq = ls._hover_seq
        if ls._hover_token is not None:
            ls._hover_token.cancel()
        await asyncio.sleep(settings.delay_ms / 1000 if settings.llm else _CHEAP_HOVER_DELAY)
        if seq != ls._hover_seq:
            return None
        token = ls._hover_token = CancelToken()
        llm = ls.hover_llm()

        def run(cancelled, progress):
            if cancelled():
                return None
            span = symbol_span(ls.ws, path, pos.line + 1, word, text=text)
            if span is None or cancelled():
                return None
            return explain(ls.ws, span, brief=True, llm=llm, no_llm=llm is None, cancelled=cancelled, cache=ls.cache)

        try:
            got = await ls.run_request(None, run, lane=ls.hovers, token=token)
        except Cancelled:
            return None
        if got is None:
            return None
        markdown = got.markdown
        if got.error:
            log.warning("hover LLM: %s", got.error)
            markdown = markdown.split("\n\n> **LLM error:**", 1)[0]
        return lsp.Hover(
            contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=markdown),
            range=word_range(shown, pos.line, pos.character, ls.position_encoding()),
        )

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
        command = lsp.Command(
            title="Explain selection", command="codeask.explain", arguments=[params.text_document.uri, r]
        )
        return [lsp.CodeAction(title="Explain selection", kind=lsp.CodeActionKind.Refactor, command=command)]

    return server


def guard(fn, *, command: bool = False):
    """Log and show an unexpected error of a handler (the request then fails; the server lives).

    A ``command`` handler cancelled as a task (only the event loop's teardown at the end of input does
    that: ``$/cancelRequest`` stops a command's work through :meth:`CodeaskServer.cancel_request`)
    returns ``None``: pygls runs commands inside its ``workspace/executeCommand`` generator, which
    would log a cancelled task's ``CancelledError`` as an error with a traceback.
    """
    name = fn.__name__

    if asyncio.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def guarded(ls, *args, **kwargs):
            try:
                return await fn(ls, *args, **kwargs)
            except asyncio.CancelledError:
                if command:
                    log.info("%s cancelled: the server is stopping", name)
                    return None
                raise
            except Cancelled:
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


def command_guard(fn):
    """:func:`guard` for a ``workspace/executeCommand`` handler."""
    return guard(fn, command=True)


def quiet(fn):
    """For passive features (hover): an error is logged and the answer is ``None``, never a popup."""

    @functools.wraps(fn)
    async def quieted(ls, *args, **kwargs):
        try:
            return await fn(ls, *args, **kwargs)
        except (asyncio.CancelledError, Cancelled):
            raise
        except Exception:
            log.exception("%s failed", fn.__name__)
            return None

    return quieted


def run(tcp: str | None = None) -> NoReturn:
    """Serve over stdio (or ``HOST:PORT`` TCP) until ``exit`` or the end of input, then end the
    process: exit code 0 after a ``shutdown``, else 1 (``exit`` without ``shutdown``, or a bare end
    of input). Never returns.

    Work is stopped in order first (:meth:`CodeaskServer.stop_all`: requests and LLM streams
    cancelled, watcher and index thread stopped between commits). The process then ends with
    ``os._exit``: the interpreter's own teardown of native thread pools (ONNX Runtime, LanceDB's
    runtime) takes 2-3 s on this machine and aborts with a signal when a thread is still inside
    native code; nothing is left to flush by then (every commit is atomic, logs are flushed).
    """
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    logging.getLogger("codeask").setLevel(logging.INFO)
    # Indexing threads run Python code (chunking, row building): hand the GIL back to the event
    # loop sooner than the default 5 ms so that requests stay fast while indexing.
    sys.setswitchinterval(0.001)
    server = make_server()
    try:
        if tcp:
            host, _, port = tcp.rpartition(":")
            server.start_tcp(host or "127.0.0.1", int(port))
        else:
            server.start_io()
    except (SystemExit, KeyboardInterrupt):
        pass
    code = 0 if server.shutdown_received else 1
    if not server.stop_all(timeout=0.5 if server.shutdown_received else STOP_SECONDS):
        log.info("work still running at exit; ending the process")
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # stdout is closed after ``exit``
            pass
    os._exit(code)
