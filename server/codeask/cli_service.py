"""The :class:`~codeask.service.Service` a ``codeask`` command opens, and the list :func:`codeask.cli.main`
names its indexes from when a command fails."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeask.service import Service

__all__ = ["OPENED", "open_service"]


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
