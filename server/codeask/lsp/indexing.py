"""The language server's index scheduler: when indexing runs, in which thread, and how it stops.

One thread (``codeask-index``) runs every full index of the workspace, in two phases: phase 1
(files -> chunks -> rows with the full-text index: keyword search works) then phase 2 (vectors),
in the order :func:`codeask.index.phases.run_phases` keeps for every driver; this module adds when
runs happen and their hooks. Each phase reports work-done progress (``codeask: indexing``,
``codeask: embedding``).

* **Coalescing**: :meth:`IndexScheduler.request` while a run is under way marks one more run; any
  number of requests made meanwhile become that one run.
* **Another writer**: when another process holds a root's write lock (``codeask index`` in a
  terminal), the run waits and retries that root every ``retry_seconds``; :attr:`IndexScheduler.lock_holder`
  names the holder (pid and command) for ``codeask.status``. When the other process is done the
  run goes on by itself and picks up what it wrote.
* **Keyword phase**: :meth:`IndexScheduler.keyword_ready` is true once phase 1 has finished once
  in this process (or the index had files when the server started); a question asked before
  waits for it (see the ``codeask.ask`` handler).
* **Stopping in order**: :meth:`IndexScheduler.stop` sets the stop flag, which the engine checks
  between batches of files and of embeddings (each commit is atomic: nothing is left half
  written), then joins the thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from codeask.imports import wait_preloaded
from codeask.index.engine import IndexLocked, IndexReadOnly, IndexStats, Progress
from codeask.index.phases import Phase, PhaseHooks

__all__ = ["IndexScheduler", "IndexPhase", "IndexState", "SchedulerStatus"]

log = logging.getLogger(__name__)


#: The scheduler's state (see :attr:`IndexPhase.state`).
IndexState = Literal["not-indexed", "waiting", "indexing", "embedding", "ready", "read-only", "failed", "stopped"]


class SchedulerStatus(TypedDict):
    """:meth:`IndexScheduler.snapshot`, merged into ``codeask.status``: ``indexing`` (a run is wanted
    or under way), the phase's state and message, and the process holding the index lock (``None``
    unless ``waiting``)."""

    indexing: bool
    index_state: IndexState
    index_message: str
    lock_holder: str | None


@dataclass
class IndexPhase:
    """What the scheduler is doing, for ``codeask.status`` (``state``, a human ``message``,
    ``done``/``total`` files of phase 1 or chunks of phase 2)."""

    state: IndexState = "not-indexed"
    """``not-indexed`` (nothing asked for yet), ``waiting`` (another process holds the lock),
    ``indexing`` (phase 1), ``embedding`` (phase 2), ``ready``, ``read-only`` (searched as it is),
    ``failed``, ``stopped``."""
    message: str = "not indexed yet"
    done: int = 0
    total: int = 0


class IndexScheduler:
    """Owns the indexing of a :class:`~codeask.workspace.Workspace` in a language server.

    Args:
        workspace: the workspace to index.
        reporter: ``reporter(title)`` -> a :class:`~codeask.lsp.work.Reporter` (work-done progress).
        show: ``show(message, error)`` -> a message to the user (only for failures, and for the
            start and end of indexing when the client has no work-done progress).
        on_synced: called in the index thread after each complete run (e.g. to start watching).
        retry_seconds: pause between attempts while another process holds the lock, seconds.
    """

    def __init__(
        self,
        workspace,
        *,
        reporter: Callable[[str], Any],
        show: Callable[[str, bool], None],
        on_synced: Callable[[], None] | None = None,
        retry_seconds: float = 1.0,
    ):
        self.ws = workspace
        self._reporter = reporter
        self._show = show
        self._on_synced = on_synced
        self.retry_seconds = retry_seconds
        self.phase = IndexPhase()
        self.lock_holder: str | None = None
        self._wanted = threading.Event()
        self._stop = threading.Event()
        self._keyword = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._requested = False
        self.last_stats = IndexStats()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ state
    @property
    def indexing(self) -> bool:
        """A run is wanted or under way."""
        return not self._idle.is_set() or self._wanted.is_set()

    @property
    def started(self) -> bool:
        """Indexing was requested at least once in this process."""
        return self._requested

    @property
    def stopping(self) -> bool:
        """:meth:`stop` was called."""
        return self._stop.is_set()

    def keyword_ready(self) -> bool:
        """Keyword search has something to search: phase 1 finished once (or the index existed)."""
        return self._keyword.is_set()

    def mark_existing(self) -> None:
        """The index already has files (from an earlier run): questions need not wait for phase 1."""
        self._keyword.set()
        if self.phase.state == "not-indexed":
            self.phase = IndexPhase("ready", "indexed earlier; not brought up to date yet")

    def snapshot(self) -> SchedulerStatus:
        """``{"indexing", "index_state", "index_message", "lock_holder"}`` for ``codeask.status``."""
        phase = self.phase
        return {
            "indexing": self.indexing,
            "index_state": phase.state,
            "index_message": phase.message,
            "lock_holder": self.lock_holder,
        }

    # ---------------------------------------------------------------- control
    def request(self) -> None:
        """Index (again) soon; requests made while a run is under way become one more run."""
        if self._stop.is_set():
            return
        with self._lock:
            self._requested = True
            self._wanted.set()
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="codeask-index", daemon=True)
                self._thread.start()

    def run_now(self, cancelled: Callable[[], bool] = lambda: False) -> IndexStats:
        """Request a run, block until the scheduler is idle again and return that run's
        :class:`IndexStats` (``codeask.reindex``); returns early when stopped or ``cancelled()``."""
        self.request()
        while not self._stop.is_set() and not cancelled():
            if not self._wanted.is_set() and self._idle.wait(0.1) and not self._wanted.is_set():
                break
        return self.last_stats

    def stop(self, timeout: float) -> bool:
        """Stop after the current batch and wait up to ``timeout`` seconds; True when the thread ended."""
        self._stop.set()
        self._wanted.set()  # wake the thread if it waits for work
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)
        return not thread.is_alive()

    # ------------------------------------------------------------------ thread
    def _loop(self) -> None:
        wait_preloaded()  # never the first import of a heavy module here (codeask.imports)
        while True:
            self._wanted.wait()
            if self._stop.is_set():
                break
            self._idle.clear()
            self._wanted.clear()
            try:
                self._run()
            except IndexReadOnly as exc:  # searched as it is: not an error of the index
                self.phase = IndexPhase("read-only", str(exc))
                self._keyword.set()
                self._show(f"codeask: {exc}", False)
            except Exception as exc:
                log.exception("indexing failed")
                self.phase = IndexPhase("failed", f"indexing failed: {exc}")
                self._keyword.set()  # questions answer from what there is, with the error in status
                self._show(f"codeask: indexing failed: {exc}", True)
            finally:
                self._idle.set()
        self.phase = IndexPhase("stopped", "stopped")
        with self._lock:
            self._thread = None

    def _run(self) -> None:
        ws = self.ws
        stop = self._stop.is_set
        reporters: dict[Phase, Any] = {}

        def begin(phase: Phase, total: int) -> None:
            if phase == "keywords":
                reporter = reporters[phase] = self._reporter("codeask: indexing")
                if not reporter.enabled:
                    self._show(f"codeask: indexing {len(ws.indexes)} folder(s)...", False)
                self.phase = IndexPhase("indexing", "scanning files")
                reporter.begin("scanning files", 0)
            else:
                reporter = reporters[phase] = self._reporter("codeask: embedding")
                self.phase = IndexPhase("embedding", f"0/{total} chunks embedded", 0, total)
                reporter.begin(f"0/{total} chunks embedded", 0)

        def end(phase: Phase, finished: bool) -> None:
            self.lock_holder = None
            done = "keyword search ready" if phase == "keywords" else "vectors ready"
            reporters[phase].end(done if not stop() else "stopped")
            if phase == "keywords" and finished:
                self._keyword.set()

        def report(p: Progress) -> None:
            if p.phase == "embed":
                eta = f" (~{p.eta_seconds:.0f}s left)" if p.eta_seconds is not None else ""
                self.phase = IndexPhase("embedding", p.message + eta, p.done, p.total)
                reporters["vectors"].report(p.message + eta, p.percent)
            else:
                self.phase = IndexPhase("indexing", f"{p.phase}: {p.message}", p.done, p.total)
                reporters["keywords"].report(f"{p.phase}: {p.message}", p.percent)

        def locked(exc: IndexLocked) -> bool:
            """Another process writes a root: say who, wait ``retry_seconds``, try that root again."""
            if self.lock_holder != str(exc):
                log.info("%s; retrying every %gs", exc, self.retry_seconds)
            self.lock_holder = str(exc)
            self.phase = IndexPhase("waiting", f"waiting: {exc}")
            reporters["vectors" if "vectors" in reporters else "keywords"].report(f"waiting: {exc}", None)
            return not self._stop.wait(self.retry_seconds)

        hooks = PhaseHooks(begin=begin, end=end, locked=locked)
        stats = ws.index(progress=report, should_stop=stop, wait=False, hooks=hooks)
        if stop():
            return
        self.last_stats = stats
        self.phase = IndexPhase("ready", f"ready: {stats.files_seen} files")
        if not reporters["keywords"].enabled:
            self._show(f"codeask: index ready: {stats.files_seen} files, {stats.chunks_total} chunks", False)
        if self._on_synced is not None:
            self._on_synced()
