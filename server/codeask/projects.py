"""Which project a file belongs to, for a client that opened a file but no workspace folder."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["project_root_of", "VCS_MARKERS"]

#: Entries that make a folder a version-controlled project root.
VCS_MARKERS = (".git", ".hg", ".svn", ".jj")


def project_root_of(path: Path | str) -> Path | None:
    """The project a file belongs to, for a client that opened no workspace folder: the nearest
    folder above ``path`` holding a VCS folder (:data:`VCS_MARKERS`), else the nearest holding a
    project file (:data:`codeask.index.walk.PROJECT_MARKERS`: ``pyproject.toml``, ``package.json``,
    ...). The user's home folder and the file-system root are never chosen (a dotfiles repository
    in ``~`` must not make the whole home folder a workspace). ``None`` when there is none.
    """
    from codeask.index.walk import PROJECT_MARKERS

    start = Path(os.path.abspath(path))
    folders = [p for p in (start if start.is_dir() else start.parent, *start.parents)]
    never = {Path(os.path.abspath(Path.home())), Path(start.anchor)}
    candidates = [f for f in folders if f not in never]
    for markers in (VCS_MARKERS, PROJECT_MARKERS):
        for folder in candidates:
            if any((folder / m).exists() for m in markers):
                return folder
    return None
