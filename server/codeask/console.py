"""Helpers shared by the command-line modules (:mod:`codeask.cli`, :mod:`codeask.eval.cli`,
:mod:`codeask.publish`), kept here so that none of them imports another.

:class:`CLIError` is the failure :func:`codeask.cli.main` reports as one line on stderr with exit
code 1; :func:`positive_int` is the argparse type of every count flag (a bad value exits 2 with the
subcommand's usage); :class:`Parser` is the argument parser whose usage errors are one line;
:func:`stderr_console` is where progress and notes go, so that stdout holds
only the answer or the ``--json`` object.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["CLIError", "Parser", "folder_arg", "positive_int", "stderr_console"]


class CLIError(Exception):
    """A failure reported as one line on stderr, exit code 1."""


class Parser(argparse.ArgumentParser):
    """An ``argparse.ArgumentParser`` whose usage errors are one line on stderr (``codeask ask: error:
    the question is empty (codeask ask --help shows the usage)``) and exit code 2, instead of
    argparse's usage block followed by the error. Subparsers inherit the class."""

    def error(self, message: str):  # type: ignore[override]  # argparse declares NoReturn
        """Print ``message`` as one line naming the (sub)command, then exit with code 2."""
        self.exit(2, f"{self.prog}: error: {message} ({self.prog} --help shows the usage)\n")


def positive_int(value: str) -> int:
    """argparse type: an integer >= 1.

    Raises ``argparse.ArgumentTypeError`` (argparse turns it into a usage error, exit code 2) for
    text that is not an integer or an integer below 1.
    """
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {n}")
    return n


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
