"""The :class:`~codeask.service.Service` a ``codeask`` command opens, and the list :func:`codeask.cli.main`
names its indexes from when a command fails."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeask.service import Service

__all__ = ["OPENED", "folder_first", "open_service"]


#: The Service of the running command, to name its indexes in an error (cleared by ``main``).
OPENED: list[Service] = []


def open_service(paths: Sequence[Path], flags: dict[str, Any] | None = None, *, background_indexing: bool = False):
    """The command's :class:`~codeask.service.Service` (settings warnings printed on stderr). Phase 2
    embeds at this process's priority unless ``background_indexing`` (``watch``, which answers asks
    while it indexes): the user of a foreground command waits for exactly that work."""
    from codeask.service import Service

    service = Service(paths, flags=flags, background_indexing=background_indexing)
    OPENED.append(service)
    for line in service.warnings:
        print(f"codeask: warning: {line}", file=sys.stderr)
    return service


def folder_first(command: str, path: str | Path, other: str, argv: Sequence[str] = ()) -> None:
    """Refuse ``codeask COMMAND PATH OTHER`` given the other way round: ``path`` names no folder and
    ``other`` (the question, the symbol) does. Otherwise the command said only "workspace folder not
    found: /repo/how does the cache work". The command shown in order is ``argv`` (the CLI's
    arguments, flags and all) with the two swapped; without it, the command and the two alone.

    Raises:
        UsageError: ``path`` is no folder and ``other`` is one; the message shows the command in order.
    """
    from codeask.console import UsageError

    if not os.path.isdir(path) and os.path.isdir(other):
        words = list(argv)
        if str(path) in words and other in words:
            i, j = words.index(str(path)), words.index(other)
            words[i], words[j] = other, str(path)
        else:
            words = [command, other, str(path)]
        raise UsageError(
            command,
            f"{str(path)!r} is no folder and {other!r} is one: the folder comes first (codeask {shlex.join(words)})",
        )
