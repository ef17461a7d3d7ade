"""Helpers shared by the command-line modules (:mod:`codeask.cli`, :mod:`codeask.eval.cli`,
:mod:`codeask.publish`), kept here so that none of them imports another.

:class:`CLIError` is the failure :func:`codeask.cli.main` reports as one line on stderr with exit
code 1; :func:`positive_int` is the argparse type of every count flag (a bad value exits 2 with the
subcommand's usage); :func:`stderr_console` is where progress and notes go, so that stdout holds
only the answer or the ``--json`` object.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from codeask.counts import as_positive_int

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["CLIError", "positive_int", "stderr_console"]


class CLIError(Exception):
    """A failure reported as one line on stderr, exit code 1."""


def positive_int(value: str) -> int:
    """argparse type of every count flag: :func:`codeask.counts.as_positive_int` (digits only,
    at least 1).

    Raises ``argparse.ArgumentTypeError`` (argparse turns it into a usage error, exit code 2) for
    anything else (``abc``, ``0``, ``-3``, ``+5``, ``1_000``).
    """
    try:
        return as_positive_int("the value", value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def stderr_console() -> Console:
    """A rich console writing to stderr (rich is imported on first use: it is slow to import)."""
    from rich.console import Console

    return Console(stderr=True)
