"""The service's index scheduler: when indexing runs, in which thread, and how it stops.

One thread (``codeask-index``) runs every full index of the workspace, in two phases: phase 1
(files -> chunks -> rows with the full-text index: keyword search works) then phase 2 (vectors),
in the order :func:`codeask.index.phases.run_phases` keeps for every driver; this module adds when
runs happen. What a front door shows of a run (LSP work-done progress, a log line) it gets through
:class:`IndexEvents`. :class:`codeask.service.Service` owns one scheduler; no door runs its own.

* **Coalescing**: :meth:`IndexScheduler.request` while a run is under way marks one more run; any
  number of requests made meanwhile become that one run.
* **Another writer**: when another process holds a root's write lock (``codeask index`` in a
  terminal), the run either waits and retries that root every ``retry_seconds``
  (``retry_locked``, the language server) or goes on without it and reads it as it is (the MCP
  server); :attr:`IndexScheduler.lock_holder` names the holder (pid and command).
* **Keyword phase**: :meth:`IndexScheduler.keyword_ready` is true once phase 1 has finished once
  in this process (or the index had files when the service started, or a run ended in an
  error): a question asked before waits for it.
* **Watching**: :meth:`IndexScheduler.watch` (or ``watch_after_run``: once the first run ends)
  keeps the index current with a :class:`~codeask.index.watch.Watcher`.
* **Stopping in order**: :meth:`IndexScheduler.stop` stops the watcher (no new updates), then sets
  the stop flag, which the engine checks between batches of files and of embeddings (each commit
  is atomic: nothing is left half written), then joins the thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from codeask.imports import wait_preloaded
from codeask.index.folders import IndexReadOnly
from codeask.index.lock import IndexLocked
from codeask.index.phases import Phase, PhaseHooks
from codeask.index.stats import IndexStats, Progress
from codeask.index.watch import Watcher
from codeask.query.pipeline import Cancelled
from codeask.workspace import Workspace

__all__ = ["IndexScheduler", "IndexActivity", "IndexEvents", "IndexPhase", "Progress", "Phase"]

log = logging.getLogger(__name__)

#: What the scheduler is doing (see :attr:`IndexPhase.activity`); the readiness every door reports
#: is derived from it and the index's counts (:meth:`codeask.service.Service.status`).
IndexActivity = Literal["idle", "waiting", "indexing", "embedding", "ready", "read-only", "failed", "stopped"]


@dataclass(frozen=True)
class IndexPhase:
    """What the scheduler is doing: ``activity``, a human ``message``, ``done``/``total`` files of
    phase 1 or chunks of phase 2.

    ``activity``: ``idle`` (nothing asked for yet), ``waiting`` (another process holds the lock),
    ``indexing`` (phase 1), ``embedding`` (phase 2), ``ready`` (the last run finished),
    ``read-only`` (searched as it is: the index cannot be written, or another process writes it),
    ``failed``, ``stopped``.
    """

    activity: IndexActivity = "idle"
    message: str = "not indexed yet"
    done: int = 0
    total: int = 0


class IndexEvents(Protocol):
    """What a front door is told of indexing (every method is called in the index thread).

    ``begin(phase, total)``/``end(phase, finished)`` around each phase (``total``: roots for
    ``keywords``, chunks waiting for vectors for ``vectors``); ``report(progress)`` as it goes;
    ``waiting(message)`` while another process holds a root's lock; ``failed(message, error)``
    when a run ends in an error (``error`` false for a read-only index, which is searched as it
    is); ``synced(stats)`` after each complete run.
    """

    def begin(self, phase: Phase, total: int) -> None: ...

    def report(self, progress: Progress) -> None: ...

    def end(self, phase: Phase, finished: bool) -> None: ...

    def waiting(self, message: str) -> None: ...

    def failed(self, message: str, error: bool) -> None: ...

    def synced(self, stats: IndexStats) -> None: ...


class NoEvents:
    """:class:`IndexEvents` that show nothing (a door without progress, such as the MCP server)."""

    def begin(self, phase: Phase, total: int) -> None:
        """Nothing."""

    def report(self, progress: Progress) -> None:
        """Nothing."""

    def end(self, phase: Phase, finished: bool) -> None:
        """Nothing."""

    def waiting(self, message: str) -> None:
        """Nothing."""

    def failed(self, message: str, error: bool) -> None:
        """Nothing."""

    def synced(self, stats: IndexStats) -> None:
        """Nothing."""


class IndexScheduler:
    """Runs the indexing of a :class:`~codeask.workspace.Workspace` in one background thread.

    Args:
        workspace: the workspace to index.
        events: what the door is told (:class:`IndexEvents`; default nothing).
        retry_locked: retry a root another process writes every ``retry_seconds`` (``True``), or
            go on without it and read it as it is (``False``).
        retry_seconds: pause between attempts while another process holds the lock, seconds.
    Attributes:
        watch_after_run: start a watcher once the first run ends (complete or failed), reporting
            its errors to ``watch_errors`` (the language server and the MCP server).
    """

    def __init__(
        self,
        workspace: Workspace,
        *,
        events: IndexEvents | None = None,
        retry_locked: bool = True,
        retry_seconds: float = 1.0,
    ):
        self.ws = workspace
        self.events: IndexEvents = events or NoEvents()
        self.retry_locked = retry_locked
        self.retry_seconds = retry_seconds
        self.watch_after_run = False
        self.watch_errors: Callable[[BaseException], None] | None = None
        self.watcher: Watcher | None = None
        self.phase = IndexPhase()
        self.lock_holder: str | None = None
        self.last_stats = IndexStats()
        self._wanted = threading.Event()
        self._stop = threading.Event()
        self._keyword = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._requested = False
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
        if self.phase.activity == "idle":
            self.phase = IndexPhase("ready", "indexed earlier; not brought up to date yet")

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
        :class:`IndexStats`; returns early when stopped or ``cancelled()``."""
        self.request()
        while not self._stop.is_set() and not cancelled():
            if not self._wanted.is_set() and self._idle.wait(0.1) and not self._wanted.is_set():
                break
        return self.last_stats

    def wait_searchable(
        self,
        timeout: float | None = None,
        cancelled: Callable[[], bool] | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> bool:
        """Wait until :meth:`keyword_ready`, requesting a run when none was; at most ``timeout``
        seconds (``None``: no limit), ``progress`` told what the index does every 0.1 s.

        Raises:
            Cancelled: ``cancelled()`` became true meanwhile.
        """
        if not self._requested:
            self.request()
        waited = 0.0
        while not self._keyword.wait(0.1):
            if cancelled is not None and cancelled():
                raise Cancelled("cancelled while waiting for the index")
            if progress is not None:
                progress(f"waiting for the keyword index ({self.phase.message})")
            waited += 0.1
            if timeout is not None and waited >= timeout:
                return False
        return True

    def watch(
        self,
        *,
        on_update: Callable[[IndexStats], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
        on_fallback: Callable[[str], None] | None = None,
        block: bool = False,
    ) -> None:
        """Watch every root and re-index what changes, in a thread, or with ``block`` in this one
        until :meth:`stop` (``OSError`` / ``RuntimeError`` when watching fails); a watcher started
        before is stopped first (the language server watches again when its roots change)."""
        if self.watcher is not None:
            self.watcher.stop()
        self.watcher = Watcher(self.ws, on_update=on_update, on_error=on_error, on_fallback=on_fallback)
        if block:
            self.watcher.run()
        else:
            self.watcher.start()

    def stop(self, timeout: float) -> bool:
        """Stop the watcher, then the run after its current batch, waiting up to ``timeout`` seconds
        for the thread; True when it ended."""
        if self.watcher is not None:
            self.watcher.stop()
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
            self._run_once()
            if self.watch_after_run and self.watcher is None and not self._stop.is_set():
                self._start_watching()
            self._idle.set()
        self.phase = IndexPhase("stopped", "stopped")
        with self._lock:
            self._thread = None

    def _run_once(self) -> None:
        try:
            self._run()
        except IndexReadOnly as exc:  # searched as it is: not an error of the index
            self.phase = IndexPhase("read-only", str(exc))
            self.events.failed(f"codeask: {exc}", False)
        except Exception as exc:
            log.exception("indexing failed")
            self.phase = IndexPhase("failed", f"indexing failed: {exc}")
            self.events.failed(f"codeask: indexing failed: {exc}", True)
        finally:
            self._keyword.set()  # questions answer from what there is, with any error in the status

    def _start_watching(self) -> None:
        try:
            self.watch(on_error=self.watch_errors)
        except Exception:
            log.exception("watching for changes failed to start")

    def _run(self) -> None:
        stop = self._stop.is_set
        skipped: list[str] = []
        hooks = PhaseHooks(begin=self._begin, end=self._end, locked=lambda exc: self._locked(exc, skipped))
        stats = self.ws.index(progress=self._report, should_stop=stop, wait=False, hooks=hooks)
        if stop():
            return
        self.last_stats = stats
        if skipped:
            self.phase = IndexPhase(
                "read-only", f"{skipped[0]}; reading the index as it is (that process keeps it current)"
            )
        else:
            self.phase = IndexPhase("ready", f"ready: {stats.files_indexed} files")
        self.events.synced(stats)

    def _begin(self, phase: Phase, total: int) -> None:
        if phase == "keywords":
            self.phase = IndexPhase("indexing", "scanning files")
        else:
            self.phase = IndexPhase("embedding", f"0/{total} chunks embedded", 0, total)
        self.events.begin(phase, total)

    def _end(self, phase: Phase, finished: bool) -> None:
        self.lock_holder = None
        if phase == "keywords" and finished:
            self._keyword.set()
        self.events.end(phase, finished)

    def _report(self, p: Progress) -> None:
        if p.phase == "embed":
            eta = f" (~{p.eta_seconds:.0f}s left)" if p.eta_seconds is not None else ""
            self.phase = IndexPhase("embedding", p.message + eta, p.done, p.total)
        else:
            self.phase = IndexPhase("indexing", f"{p.phase}: {p.message}", p.done, p.total)
        self.events.report(p)

    def _locked(self, exc: IndexLocked, skipped: list[str]) -> bool:
        """Another process writes a root: with ``retry_locked`` say who, wait ``retry_seconds`` and
        try that root again; else go on without it (read as it is: that process keeps it current)."""
        if not self.retry_locked:
            skipped.append(str(exc))
            return False
        if self.lock_holder != str(exc):
            log.info("%s; retrying every %gs", exc, self.retry_seconds)
        self.lock_holder = str(exc)
        self.phase = IndexPhase("waiting", f"waiting: {exc}")
        self.events.waiting(f"waiting: {exc}")
        return not self._stop.wait(self.retry_seconds)
