"""The language server's state (:class:`CodeaskServer`): the :class:`~codeask.workspace.Workspace`
and its :class:`~codeask.lsp.indexing.IndexScheduler`, the request lanes, settings pulled from the
client, batched file changes, the status snapshot, and cancellation of running requests. The LSP
handlers over it live in :mod:`codeask.lsp.server`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from codeask import __version__
from codeask.index.chunk import TREE_SITTER_LANGUAGES, language_for
from codeask.index.watch import Watcher, is_relevant
from codeask.llm import CancelToken, cancel_scope, make_llm
from codeask.lsp.convert import (
    settings_from,
    uri_to_path,
)
from codeask.lsp.indexing import IndexScheduler
from codeask.lsp.tcp import Gate
from codeask.lsp.work import Lane, Reporter, post
from codeask.query.explain import ExplainCache
from codeask.query.pipeline import Cancelled
from codeask.settings import CONFIG_FILE
from codeask.workspace import Workspace

__all__ = ["CodeaskServer", "CodeaskProtocol", "REQUEST_SLOTS", "STOP_SECONDS"]

log = logging.getLogger("codeask.lsp")

_STATUS_WAIT = 0.03
#: Concurrent asks / explains / reindexes (each holds a thread; more wait for a slot).
REQUEST_SLOTS = 3
#: Seconds ``shutdown`` waits for indexing and requests to stop (then ``exit`` ends the process at once).
STOP_SECONDS = 1.5
#: Watched-file events are collected this long before one index update, seconds.
_CHANGE_BATCH_SECONDS = 0.3
#: Seconds an LLM hover may take (one attempt, no retries); then the related code is shown. A
#: hover is read while the pointer rests: a short explanation streams well within it on a hosted
#: model. Was ``hover.timeout``.
HOVER_LLM_TIMEOUT = 15.0


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
        """Handle one message; a ``$/cancelRequest`` also cancels the command's work. Over TCP, the
        :class:`~codeask.lsp.tcp.Gate` admits messages first (``initialize`` with the token)."""
        if self.codeask.gate is not None and not self.codeask.gate.admit(self, message):
            return
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
        self._ws: Workspace | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.init_settings: dict[str, Any] = {}
        self._warned: set[str] = set()
        self.stopping = threading.Event()
        self.shutdown_received = False
        self.cache = ExplainCache()
        self._scheduler: IndexScheduler | None = None
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
        #: Over TCP: the token and the served folders (:mod:`codeask.lsp.tcp`); ``None`` over stdio.
        self.gate: Gate | None = None

    # ------------------------------------------------------ the engine
    @property
    def ready(self) -> bool:
        """True once ``initialize`` has created the workspace and its index scheduler."""
        return self._ws is not None and self._scheduler is not None

    @property
    def ws(self) -> Workspace:
        """The :class:`Workspace` (created by ``initialize``).

        Raises:
            RuntimeError: before ``initialize``.
        """
        if self._ws is None:
            raise RuntimeError("the server is not initialized")
        return self._ws

    @ws.setter
    def ws(self, workspace: Workspace) -> None:
        self._ws = workspace

    @property
    def scheduler(self) -> IndexScheduler:
        """The :class:`IndexScheduler` of the workspace (created by ``initialize``).

        Raises:
            RuntimeError: before ``initialize``.
        """
        if self._scheduler is None:
            raise RuntimeError("the server is not initialized")
        return self._scheduler

    @scheduler.setter
    def scheduler(self, scheduler: IndexScheduler) -> None:
        self._scheduler = scheduler

    # ------------------------------------------------------------ client
    def serves(self, path: str) -> bool:
        """Whether ``path`` may be read and indexed: anywhere over stdio, inside the served folders
        over TCP (:meth:`Gate.serves <codeask.lsp.tcp.Gate.serves>`)."""
        return self.gate is None or self.gate.serves(path)

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
        for line in self.ws.warnings if self.ready else []:
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
                stats = await self.updates.run(functools.partial(self.ws.update_paths, paths))
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
        done = self.scheduler.stop(max(0.0, deadline - time.monotonic())) if self.ready else True
        for lane in (self.requests, self.hovers, self.updates, self.reads):
            done = lane.join(max(0.0, deadline - time.monotonic())) and done
        return done

    # ------------------------------------------------------------ status
    async def status(self) -> dict[str, Any]:
        """The workspace status plus the scheduler's state; while a write holds the index, the last
        snapshot (answered within ~30 ms) with ``"stale": true``, and without ``files`` /
        ``chunks_total`` / ``vectors_pending`` when no snapshot was read yet (the counts are not
        known: not zero). Before anything was indexed, no index is opened."""
        sched = self.scheduler.snapshot()
        if not self.scheduler.started and not self.scheduler.keyword_ready():
            out: dict[str, Any] = {"files": 0, "chunks_total": 0, "vectors_pending": 0, "index_dir": None, "roots": []}
        else:
            if self._status_task is None or self._status_task.done():
                self._status_task = asyncio.ensure_future(self.reads.run(self.ws.status))
            done, _ = await asyncio.wait({self._status_task}, timeout=_STATUS_WAIT)
            if done and self._status_task.exception() is None:
                self._status = self._status_task.result()
                out = dict(self._status)
            else:
                # The last snapshot, or no counts at all before the first one: a zero here would be
                # shown as "0 files" while an existing index is being opened.
                out = dict(self._status) or {"index_dir": None}
                out["stale"] = True
        llm = self.ws.settings.resolved_llm()
        out["llm"] = llm.describe() if llm else None
        out.update(sched)
        watcher = self.watcher
        out["watch"] = {"mode": watcher.mode, "warning": watcher.warning} if watcher is not None else None
        return out

    # ------------------------------------------------------------- hover
    def hover_llm(self):
        """The LLM for hovers (``hover.llm`` on): :data:`HOVER_LLM_TIMEOUT` seconds, one attempt, or ``None``."""
        s = self.ws.settings
        resolved = s.resolved_llm()
        if not s.hover.llm or resolved is None:
            return None
        options = s.llm.model_copy(update={"timeout": min(s.llm.timeout, HOVER_LLM_TIMEOUT), "max_retries": 0})
        return make_llm(resolved, options)

    def hover_target(self, uri: str) -> str | None:
        """The path of a document hovers are offered for: a ``file:`` URI inside a root, in a
        language codeask chunks by syntax, not ignored; else ``None``."""
        path = uri_to_path(uri)
        if path is None or not self.ready or language_for(path) not in TREE_SITTER_LANGUAGES:
            return None
        return path if is_relevant(self.ws, os.path.abspath(path)) else None
