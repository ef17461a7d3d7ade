"""What the editor sees of indexing: :class:`ProgressEvents`, the language server's
:class:`~codeask.service.IndexEvents` for the service's index scheduler.

Each phase reports work-done progress (``codeask: indexing``, ``codeask: embedding``); a client
without that capability is told the start and end of indexing with ``window/showMessage``. Failures
are shown; waiting for another process's lock is reported as progress. After each complete run
``synced`` is told (the server then starts watching, see
:meth:`~codeask.lsp.session.CodeaskServer.on_synced`). Every method runs in the index thread.
"""

from __future__ import annotations

from collections.abc import Callable

from codeask.lsp.work import Reporter
from codeask.service import IndexStats, Phase, Progress

__all__ = ["ProgressEvents"]

_TITLES: dict[Phase, str] = {"keywords": "codeask: indexing", "vectors": "codeask: embedding"}


class ProgressEvents:
    """:class:`~codeask.service.IndexEvents` as LSP work-done progress.

    Args:
        reporter: ``reporter(title)`` -> a :class:`~codeask.lsp.work.Reporter`.
        show: ``show(message, error)``: a message to the user.
        on_synced: called after each complete run, with its stats.
    """

    def __init__(
        self,
        reporter: Callable[[str], Reporter],
        show: Callable[[str, bool], None],
        on_synced: Callable[[IndexStats], None],
    ):
        self._reporter = reporter
        self._show = show
        self._on_synced = on_synced
        self._reporters: dict[Phase, Reporter] = {}

    def begin(self, phase: Phase, total: int) -> None:
        """A phase starts: its progress begins (``total``: roots, or chunks to embed)."""
        reporter = self._reporters[phase] = self._reporter(_TITLES[phase])
        if phase == "keywords":
            if not reporter.enabled:
                self._show(f"codeask: indexing {total} folder(s)...", False)
            reporter.begin("scanning files", 0)
        else:
            reporter.begin(f"0/{total} chunks embedded", 0)

    def report(self, progress: Progress) -> None:
        """Progress of the phase under way (the embedding's with its estimate of the time left)."""
        if progress.phase == "embed":
            eta = f" (~{progress.eta_seconds:.0f}s left)" if progress.eta_seconds is not None else ""
            self._report("vectors", progress.message + eta, progress.percent)
        else:
            self._report("keywords", f"{progress.phase}: {progress.message}", progress.percent)

    def _report(self, phase: Phase, message: str, percent: int | None) -> None:
        reporter = self._reporters.get(phase)
        if reporter is not None:
            reporter.report(message, percent)

    def end(self, phase: Phase, finished: bool) -> None:
        """A phase ends (``finished``: not stopped)."""
        reporter = self._reporters.get(phase)
        if reporter is not None:
            done = "keyword search ready" if phase == "keywords" else "vectors ready"
            reporter.end(done if finished else "stopped")

    def waiting(self, message: str) -> None:
        """Another process holds a root's lock: said in the latest progress."""
        phase: Phase = "vectors" if "vectors" in self._reporters else "keywords"
        self._report(phase, message, None)

    def failed(self, message: str, error: bool) -> None:
        """A run ended in an error (or on a read-only index, ``error`` false): shown."""
        self._show(message, error)

    def synced(self, stats: IndexStats) -> None:
        """A run completed: said when there is no progress, then ``on_synced(stats)``."""
        keywords = self._reporters.get("keywords")
        if keywords is None or not keywords.enabled:
            self._show(f"codeask: index ready: {stats.files_indexed} files, {stats.chunks_total} chunks", False)
        self._on_synced(stats)
