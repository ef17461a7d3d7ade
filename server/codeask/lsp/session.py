"""The language server's state (:class:`CodeaskServer`): the :class:`~codeask.service.Service` it
translates to, the request lanes, settings pulled from the client, batched file changes, the status
snapshot, and cancellation of running requests. The LSP handlers over it live in
:mod:`codeask.lsp.features`, :mod:`codeask.lsp.commands` and :mod:`codeask.lsp.hover`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from codeask import __version__
from codeask.llm import CancelToken, cancel_scope
from codeask.lsp.changes import ChangeBatch
from codeask.lsp.convert import settings_from
from codeask.lsp.indexing import ProgressEvents
from codeask.lsp.status import FIRST_STATUS_WAIT, STATUS_WAIT, StatusSnapshots, index_state, status_json
from codeask.lsp.tcp import Gate
from codeask.lsp.work import Lane, Reporter, post
from codeask.service import ExplainCache, IndexStats, Service
from codeask.settings import CONFIG_FILE

__all__ = ["CodeaskServer", "CodeaskProtocol", "REQUEST_SLOTS", "STOP_SECONDS"]

log = logging.getLogger("codeask.lsp")

#: Concurrent asks / explains / reindexes (each holds a thread; more wait for a slot).
REQUEST_SLOTS = 3
#: Seconds ``shutdown`` waits for indexing and requests to stop (then ``exit`` ends the process at once).
STOP_SECONDS = 1.5


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
        if self.codeask.gate is not None and not self.codeask.gate.admit(message, super().handle_message):
            return
        if getattr(message, "method", None) == lsp.CANCEL_REQUEST:
            self.codeask.cancel_request(getattr(message.params, "id", None))
        super().handle_message(message)


class CodeaskServer(LanguageServer):
    """pygls server holding the :class:`~codeask.service.Service` of the workspace folders, the
    request lanes and the change source (the client's file watcher, else ``watchfiles``)."""

    def __init__(self) -> None:
        # Full sync: pygls applies incremental edits on ``str.splitlines()`` lines, which also end at a
        # form feed or U+2028, so an edit below one lands on the wrong line of its buffer copy.
        super().__init__(
            "codeask",
            __version__,
            protocol_cls=CodeaskProtocol,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Full,
        )
        self._service: Service | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.init_settings: dict[str, Any] = {}
        self._warned: set[str] = set()
        self.stopping = threading.Event()
        self.shutdown_received = False
        self.cache = ExplainCache()
        self.client_watches = False
        self.requests = Lane("request", REQUEST_SLOTS)
        self.hovers = Lane("hover", 1)
        self.reads = Lane("status", 1)
        self.updates = Lane("update", 1)
        self.events = ProgressEvents(self.reporter, self._show_indexing, self.on_synced)
        self.changes = ChangeBatch(self.updates, self.stopping.is_set, self.show)
        self.snapshots = StatusSnapshots(self.reads)
        self._tokens: set[CancelToken] = set()
        self._cancels: dict[Any, Any] = {}
        self._watched_roots: list[str] = []
        self.no_folder_said = False
        #: Over TCP: the token and the served folders (:mod:`codeask.lsp.tcp`); ``None`` over stdio.
        self.gate: Gate | None = None

    # ------------------------------------------------------ the engine
    @property
    def ready(self) -> bool:
        """True once ``initialize`` has created the service."""
        return self._service is not None

    @property
    def service(self) -> Service:
        """The :class:`~codeask.service.Service` of the workspace folders (created by ``initialize``).

        Raises:
            RuntimeError: before ``initialize``.
        """
        if self._service is None:
            raise RuntimeError("the server is not initialized")
        return self._service

    def open_workspace(self, roots: list[str], init_settings: dict[str, Any]) -> None:
        """Create the :class:`~codeask.service.Service` of ``roots`` with the client's
        ``initializationOptions`` (a bad setting is shown and the defaults are used: the server still
        starts); an index from an earlier run answers at once (the service reads its manifest)."""
        self.init_settings = init_settings
        try:
            self._service = Service(roots, editor=init_settings, background_indexing=True)  # searches meanwhile
        except Exception as exc:
            log.exception("workspace settings")
            self.show(f"codeask: {exc}")
            self._service = Service(roots, background_indexing=True)

    def _show_indexing(self, message: str, error: bool) -> None:
        self.show(message, lsp.MessageType.Error if error else lsp.MessageType.Info)

    def say_no_folder(self, path: str) -> None:
        """Say once that no folder is open and ``path`` is in no project."""
        if not self.no_folder_said:
            self.no_folder_said = True
            self.show(
                f"codeask: no workspace folder is open and {path} is in no project (no .git or project "
                "file above it): open a folder to index it and ask questions",
                lsp.MessageType.Warning,
            )

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
        service = self.service
        if await self.reads.run(lambda: service.reconfigure(dict(self.init_settings), scoped)) and self.started:
            self.index_soon()
        self.cache.clear()  # another model or template may explain differently
        self.show_settings_warnings()

    def show_settings_warnings(self) -> None:
        """Show each settings warning (an ignored workspace value) once per session."""
        for line in self.service.warnings if self.ready else []:
            if line not in self._warned:
                self._warned.add(line)
                log.warning("settings: %s", line)
                self.show(f"codeask: {line}", lsp.MessageType.Warning)

    # ---------------------------------------------------------- indexing
    @property
    def started(self) -> bool:
        """Indexing was requested at least once in this process."""
        return self.ready and self.service.scheduler.started

    def index_soon(self) -> None:
        """Index (again) in the background, with work-done progress (:class:`ProgressEvents`); requests
        made while a run is under way become one more run."""
        self.service.start_indexing(self.events, retry_locked=True)

    def start_indexing_if_configured(self) -> None:
        """Apply ``index_on_startup`` (runs in a worker thread: reads each root's manifest).

        ``auto`` indexes at start only when a root already has an index or a ``.codeask.toml``;
        ``always`` does; ``never`` waits for the first question.
        """
        service = self.service
        mode = service.settings.index_on_startup
        configured = any((Path(root) / CONFIG_FILE).is_file() for root in service.roots)
        if mode == "always" or (mode == "auto" and (service.keyword_ready() or configured)):
            self.index_soon()
        else:
            log.info("not indexing at start (index_on_startup=%s): the first question starts it", mode)

    def on_synced(self, stats: IndexStats) -> None:
        """After each full index: watch the roots with ``watchfiles`` unless the client watches files
        (again when the roots changed)."""
        roots = sorted(self.service.roots)
        if self.client_watches or self.stopping.is_set() or roots == self._watched_roots:
            return
        self._watched_roots = roots
        self.service.watch(
            on_update=lambda s: log.info("watcher: %d changed, %d removed", s.files_changed, s.files_removed),
            on_error=lambda exc: log.error("updating the index failed: %s", exc),
            on_fallback=lambda warning: self.show(f"codeask: {warning}", lsp.MessageType.Warning),
        )

    def wait_for_keywords(self, cancelled, progress) -> None:
        """Block (in a request thread) until keyword search has an index, starting indexing if it
        has not started; reports the index's phase as the request's progress.

        Raises:
            Cancelled: the request was cancelled meanwhile.
        """
        if not self.started:
            self.index_soon()
        self.service.wait_searchable(cancelled=cancelled, progress=progress)

    async def changed(self, paths: list[str]) -> None:
        """Queue changed paths for one coalesced index update (never raises); nothing before the
        first index, which reads everything anyway."""
        if self.started:
            self.changes.add(self.service, paths)

    def stop_all(self, timeout: float = STOP_SECONDS) -> bool:
        """Stop in order: no new work, cancel requests and LLM calls, stop the watcher, then the index
        thread; waits up to ``timeout`` seconds in all. True when every thread has ended."""
        self.stopping.set()
        for token in list(self._tokens):
            token.cancel()
        deadline = time.monotonic() + timeout
        done = self.service.stop(timeout) if self.ready else True  # the watcher, then the index thread
        for lane in (self.requests, self.hovers, self.updates, self.reads):
            done = lane.join(max(0.0, deadline - time.monotonic())) and done
        return done

    # ------------------------------------------------------------ status
    async def status(self) -> dict[str, Any]:
        """``codeask.status``: the service's status (:func:`~codeask.lsp.status.status_json`) read
        within ~30 ms, else the last snapshot with ``"stale": true``; the first read while nothing is
        indexed waits up to :data:`~codeask.lsp.status.FIRST_STATUS_WAIT` s; before anything was
        indexed, no index is opened."""
        service = self.service
        stale = False
        if self.started or service.keyword_ready():
            first = self.snapshots.last is None and not service.scheduler.indexing
            got = await self.snapshots.read(service.status, FIRST_STATUS_WAIT if first else STATUS_WAIT)
            stale = not self.snapshots.fresh
        else:
            got = None
        return status_json(got, stale=stale, activity=self.activity())

    def activity(self) -> dict[str, Any]:
        """What runs now, read without touching an index: ``{"indexing", "index_state",
        "index_message", "lock_holder", "llm", "watch"}``."""
        scheduler = self.service.scheduler
        llm = self.service.settings.resolved_llm()
        watcher = scheduler.watcher
        return {
            "indexing": scheduler.indexing,
            "index_state": index_state(scheduler.phase.activity),
            "index_message": scheduler.phase.message,
            "lock_holder": scheduler.lock_holder,
            "llm": llm.describe() if llm else None,
            "watch": {"mode": watcher.mode, "warning": watcher.warning} if watcher is not None else None,
        }
