"""Helpers shared by the command-line modules (:mod:`codeask.cli`, :mod:`codeask.eval.cli`,
:mod:`codeask.publish`), kept here so that none of them imports another.

:class:`CLIError` is the failure :func:`codeask.cli.main` reports as one line on stderr with exit
code 1; :func:`positive_int` is the argparse type of every count flag (a bad value exits 2 with the
subcommand's usage); :class:`Parser` is the argument parser whose usage errors are one line;
:func:`stderr_console` is where progress and notes go, so that stdout holds only the answer or the
``--json`` object; :class:`IndexProgress` reports both indexing phases there.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from codeask.counts import as_positive_int

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["CLIError", "IndexProgress", "Parser", "UsageError", "folder_arg", "positive_int", "stderr_console"]


class CLIError(Exception):
    """A failure reported as one line on stderr, exit code 1."""


class UsageError(CLIError):
    """A bad argument found after parsing (e.g. a line range past the end of the file): reported as
    ``codeask COMMAND: error: MESSAGE (codeask COMMAND --help shows the usage)``, exit code 2."""

    def __init__(self, command: str, message: str):
        super().__init__(message)
        self.command = command


class Parser(argparse.ArgumentParser):
    """An ``argparse.ArgumentParser`` whose usage errors are one line on stderr (``codeask ask: error:
    the question is empty (codeask ask --help shows the usage)``) and exit code 2, instead of
    argparse's usage block followed by the error. Subparsers inherit the class."""

    def error(self, message: str):  # type: ignore[override]  # argparse declares NoReturn
        """Print ``message`` as one line naming the (sub)command, then exit with code 2."""
        self.exit(2, f"{self.prog}: error: {message} ({self.prog} --help shows the usage)\n")


def positive_int(value: str) -> int:
    """argparse type of every count flag: :func:`codeask.counts.as_positive_int` (digits only,
    at least 1).

    Raises ``argparse.ArgumentTypeError`` (argparse turns it into a usage error, exit code 2) for
    anything else (``abc``, ``0``, ``-3``, ``+5``, ``1_000``).
    """
    try:
        return as_positive_int(None, value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def folder_arg(value: str) -> Path:
    """argparse type of every workspace-folder argument: the path as given.

    Raises ``argparse.ArgumentTypeError`` (exit code 2) for an empty or blank argument, which
    ``Path`` would silently turn into the current folder (``codeask ask "" question`` indexed the
    shell's working directory).
    """
    if not value.strip():
        raise argparse.ArgumentTypeError("the folder argument is empty")
    return Path(value)


def stderr_console() -> Console:
    """A rich console writing to stderr (rich is imported on first use: it is slow to import)."""
    from rich.console import Console

    return Console(stderr=True)


class IndexProgress:
    """Progress of both indexing phases on stderr.

    On a terminal: rich bars (files, then chunks, with ETA). Otherwise (a log, CI, an editor's
    output panel): plain lines, one when a phase with work starts, then at most one every
    ``interval`` seconds (``$CODEASK_PROGRESS_SECONDS``, default 10), and one when it ends, e.g.
    ``codeask progress: embedding chunks: 512/3,000 (17%), 41.2 chunks/s, ETA 60 s``.

    Args:
        enabled: ``False`` shows nothing.
        interval: seconds between plain lines (default ``$CODEASK_PROGRESS_SECONDS`` or 10).
        terminal_only: show the bars on a terminal but no plain lines elsewhere (``--json``: see
            :meth:`for_command`).
    """

    _UNITS: ClassVar[dict[str, tuple[str, str]]] = {
        "index": ("indexing files", "files"),
        "embed": ("embedding chunks", "chunks"),
    }

    def __init__(self, enabled: bool, *, interval: float | None = None, terminal_only: bool = False):
        self.tty = sys.stderr.isatty()
        self.enabled = enabled and (self.tty or not terminal_only)
        if interval is None:
            try:
                interval = float(os.environ.get("CODEASK_PROGRESS_SECONDS", "10"))
            except ValueError:
                interval = 10.0
        self.interval = interval
        self._bar = None
        self._tasks: dict[str, Any] = {}
        self._started: dict[str, float] = {}
        self._last_line: dict[str, float] = {}
        self._finished: set[str] = set()
        self._previous = time.monotonic()

    @classmethod
    def for_command(cls, json_output: bool) -> IndexProgress:
        """A command's indexing progress on stderr: rich bars when stderr is a terminal, with or without
        ``--json`` (stdout keeps only the answer or the one JSON object); otherwise plain lines, and
        none with ``--json`` (a program reading the JSON usually captures stderr too)."""
        return cls(True, terminal_only=json_output)

    def __enter__(self):
        if self.enabled and self.tty:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=stderr_console(),
                transient=True,
            )
            self._bar.__enter__()
        return self

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.__exit__(*exc)

    def __call__(self, p) -> None:
        if not self.enabled:
            return
        if self._bar is None:
            self._plain(p)
            return
        label = {"scan": "listing files", "index": "indexing files", "embed": "embedding chunks"}.get(p.phase, p.phase)
        task = self._tasks.get(p.phase)
        if task is None:
            task = self._tasks[p.phase] = self._bar.add_task(label, total=p.total)
        self._bar.update(task, completed=p.done, total=max(p.total, p.done))

    def _plain(self, p) -> None:
        """One plain line for report ``p`` when its phase starts, every ``interval`` s, and at its end.

        A phase's rate counts from the previous report of any phase (its first report comes after
        its first batch), or from the start of the command."""
        now = time.monotonic()
        previous, self._previous = self._previous, now
        if p.phase not in self._UNITS or p.total <= 0 or p.phase in self._finished:
            return
        first = p.phase not in self._started
        if first:
            self._started[p.phase] = previous
        finished = p.done >= p.total
        if first or finished or now - self._last_line[p.phase] >= self.interval:
            self._last_line[p.phase] = now
            if finished:
                self._finished.add(p.phase)
            self._line(p, now)

    def _line(self, p, now: float) -> None:
        label, unit = self._UNITS[p.phase]
        elapsed = now - self._started[p.phase]
        parts = [f"codeask progress: {label}: {p.done:,}/{p.total:,} ({p.percent}%)"]
        if p.done and elapsed > 0:
            parts.append(f"{p.done / elapsed:.1f} {unit}/s")
        if p.done >= p.total:
            parts.append(f"done in {elapsed:.1f} s")
        elif p.eta_seconds is not None:
            parts.append(f"ETA {p.eta_seconds:.0f} s")
        print(", ".join(parts), file=sys.stderr, flush=True)
