"""The file watchers the server registers with a client (``workspace/didChangeWatchedFiles``).

Only files with a known language are watched: one glob for the chunker's extensions and one for
its well-known file names (:data:`codeask.service.KNOWN_EXTENSIONS`, ``KNOWN_FILENAMES``),
plus the ignore files whose change re-reads the rules. LSP globs cannot exclude folders, so
deletions are watched on ``**/*`` (a removed folder arrives as one event for the folder), and every
event is checked against the ignore rules (:meth:`codeask.service.Service.is_relevant`) before any file
is read: ``node_modules/`` churn costs a path match, nothing more. A saved file outside these globs
(an unknown extension) is updated from ``didSave`` instead (:func:`is_watched`).
"""

from __future__ import annotations

import os

from lsprotocol import types as lsp

from codeask.service import KNOWN_EXTENSIONS, KNOWN_FILENAMES

__all__ = ["watchers_for", "watched_globs", "is_watched"]

_IGNORE_FILES = frozenset({".gitignore", ".codeaskignore"})


def _names() -> list[str]:
    names = set(KNOWN_FILENAMES) | _IGNORE_FILES
    # Clients match globs case-sensitively: ``Makefile``, ``Dockerfile`` as they are usually written.
    return sorted(names | {n.capitalize() for n in names if not n.startswith(".")})


def watched_globs() -> list[str]:
    """The glob patterns of indexed files: ``**/*.{py,ts,...}`` and ``**/{Makefile,...}``."""
    extensions = sorted({ext.lstrip(".") for ext in KNOWN_EXTENSIONS})
    return ["**/*.{" + ",".join(extensions) + "}", "**/{" + ",".join(_names()) + "}"]


def is_watched(path: str) -> bool:
    """Whether a change of ``path`` reaches the server through :func:`watchers_for` (create/change)."""
    name = os.path.basename(path)
    ext = os.path.splitext(name)[1]
    return ext in KNOWN_EXTENSIONS or name in _IGNORE_FILES or name.lower() in KNOWN_FILENAMES


def watchers_for() -> list[lsp.FileSystemWatcher]:
    """File system watchers: create/change/delete of indexed files, and deletions of anything
    (folders included)."""
    every = lsp.WatchKind.Create | lsp.WatchKind.Change | lsp.WatchKind.Delete
    watchers = [lsp.FileSystemWatcher(glob_pattern=glob, kind=every) for glob in watched_globs()]
    watchers.append(lsp.FileSystemWatcher(glob_pattern="**/*", kind=lsp.WatchKind.Delete))
    return watchers
