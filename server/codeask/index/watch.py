"""Following changes on disk with ``watchfiles``: debounced, coalesced, filtered.

``watchfiles`` (Rust ``notify``) groups events over a debounce window (300 ms by default) into one
set, so a branch switch touching 500 files arrives as one batch and becomes one
:meth:`~codeask.workspace.Workspace.update_paths` call. Ignored files (``.gitignore``, default
excludes, secrets) never trigger work, and neither does the index folder, which lives outside the
workspace anyway.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

import watchfiles

__all__ = ["Watcher", "is_relevant"]

log = logging.getLogger(__name__)


def is_relevant(workspace, path: str) -> bool:
    """Whether a change of ``path`` (absolute) can change the index of ``workspace``: inside a root,
    not in the index folder, not ignored (``.gitignore``, default excludes, secrets). A changed
    ``.gitignore`` / ``.codeaskignore`` counts unless it is in an ignored folder. Decided from the
    path alone (a deleted path cannot be read): no file is opened.
    """
    index = workspace.root_for(path)
    if index is None:
        return False
    p = Path(path)
    if index.index_dir == p or index.index_dir in p.parents:
        return False
    try:
        rel = p.relative_to(index.root).as_posix()
    except ValueError:
        return False
    if rel in (".", ""):
        return False
    if p.name in (".gitignore", ".codeaskignore"):  # rules changed, unless in an ignored folder
        parent = p.parent.relative_to(index.root).as_posix()
        return parent == "." or index.ignorer.reason(parent, is_dir=True) is None
    # Deleted paths cannot be stat'ed: check them as files; directories are checked as such.
    return index.ignorer.reason(rel, is_dir=p.is_dir()) is None


class Watcher:
    """Watches every root of a workspace and feeds changed paths to ``workspace.update_paths``.

    Args:
        workspace: a :class:`codeask.workspace.Workspace`.
        on_update: called with the :class:`IndexStats` of each batch that changed something.
        on_error: called with an exception raised while applying a batch (the watcher goes on).
        debounce_ms: quiet time that closes a batch, milliseconds.
    """

    def __init__(
        self,
        workspace,
        *,
        on_update: Callable | None = None,
        on_error: Callable[[BaseException], None] | None = None,
        debounce_ms: int = 300,
    ):
        self.workspace = workspace
        self.on_update = on_update
        self.on_error = on_error
        self.debounce_ms = debounce_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _relevant(self, change: watchfiles.Change, path: str) -> bool:
        return is_relevant(self.workspace, path)

    def run(self) -> None:
        """Block, applying batches, until :meth:`stop` is called."""
        roots = [str(i.root) for i in self.workspace.indexes.values()]
        if not roots:
            return
        for changes in watchfiles.watch(
            *roots,
            watch_filter=self._relevant,
            debounce=self.debounce_ms,
            step=50,
            stop_event=self._stop,
            yield_on_timeout=False,
            raise_interrupt=True,
        ):
            paths = sorted({path for _, path in changes})
            try:
                stats = self.workspace.update_paths(paths)
            except Exception as exc:  # one bad batch must not end the watcher
                log.exception("applying %d changed paths failed", len(paths))
                if self.on_error is not None:
                    self.on_error(exc)
                continue
            if self.on_update is not None and (stats.files_changed or stats.files_removed):
                self.on_update(stats)

    def start(self) -> Watcher:
        """Run in a daemon thread."""
        self._thread = threading.Thread(target=self.run, name="codeask-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching and wait for the thread (if started) to end."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
