"""Following changes on disk with ``watchfiles``: debounced, coalesced, filtered.

``watchfiles`` (Rust ``notify``) groups events over a debounce window (300 ms by default) into one
set, so a branch switch touching 500 files arrives as one batch and becomes one
:meth:`~codeask.workspace.Workspace.update_paths` call. Ignored files (``.gitignore``, default
excludes, secrets) never trigger work, and neither does the index folder, which lives outside the
workspace anyway.

When the OS limit on file watches is reached (Linux inotify: ``fs.inotify.max_user_watches`` per
user, or ``fs.inotify.max_user_instances``), ``watchfiles`` raises ``OSError("OS file watch limit
reached ...")`` while adding watches, or reports it from its watch loop when a new folder cannot be
watched. The :class:`Watcher` then switches to ``watchfiles``' polling backend (``force_polling``)
and logs one warning naming the limit and how to raise it; :attr:`Watcher.mode` and
:attr:`Watcher.warning` report it (the language server puts them in its status).
"""

from __future__ import annotations

import errno
import logging
import threading
from collections.abc import Callable
from pathlib import Path

import watchfiles

__all__ = ["Watcher", "is_relevant", "watch_limit_warning"]

log = logging.getLogger(__name__)

#: Milliseconds between two scans of the tree once watching falls back to polling.
POLL_DELAY_MS = 1000


def _read_limit(path: str) -> str:
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return "unknown"


def watch_limit_warning(exc: BaseException) -> str | None:
    """The one-line warning for a ``watchfiles`` error caused by the OS limit on file watches, or
    ``None`` for any other error.

    ``watchfiles`` (Rust ``notify``) reports the limit as ``OSError("OS file watch limit reached ...
    MaxFilesWatch ...")`` (inotify_add_watch failed with ENOSPC) and a missing inotify instance
    (``fs.inotify.max_user_instances``, EMFILE) as "Too many open files".
    """
    text = str(exc)
    if "MaxFilesWatch" in text or "watch limit" in text or getattr(exc, "errno", None) == errno.ENOSPC:
        name = "max_user_watches"
    elif "Too many open files" in text or getattr(exc, "errno", None) == errno.EMFILE:
        name = "max_user_instances"
    else:
        return None
    current = _read_limit(f"/proc/sys/fs/inotify/{name}")
    # a user namespace (a container) may have a lower limit of its own
    user_ns = _read_limit(f"/proc/sys/user/max_inotify_{name.rsplit('_', 1)[-1]}")
    if user_ns.isdigit() and current.isdigit() and int(user_ns) < int(current):
        current += f", user.max_inotify_{name.rsplit('_', 1)[-1]} = {user_ns} in this user namespace"
    return (
        f"the OS limit on file watches is reached (fs.inotify.{name} = {current}); watching by polling "
        f"every {POLL_DELAY_MS / 1000:g} s instead. To raise it: sudo sysctl fs.inotify.{name}=524288 "
        f"(keep it with a line 'fs.inotify.{name}=524288' in /etc/sysctl.d/90-codeask.conf)"
    )


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
    rel = index.relative(p)  # under the root as named, or its real path (a symlinked root)
    if rel is None:
        return False
    if p.name in (".gitignore", ".codeaskignore"):  # rules changed, unless in an ignored folder
        parent = rel.rpartition("/")[0]
        return not parent or index.ignorer.reason(parent, is_dir=True) is None
    # Deleted paths cannot be stat'ed: check them as files; directories are checked as such.
    return index.ignorer.reason(rel, is_dir=p.is_dir()) is None


class Watcher:
    """Watches every root of a workspace and feeds changed paths to ``workspace.update_paths``.

    Args:
        workspace: a :class:`codeask.workspace.Workspace`.
        on_update: called with the :class:`IndexStats` of each batch that changed something.
        on_error: called with an exception raised while applying a batch (the watcher goes on), or
            with the error that ended watching.
        on_fallback: called once with the warning when the watch limit forces polling.
        debounce_ms: quiet time that closes a batch, milliseconds.

    Attributes:
        mode: ``"native"`` (OS events) or ``"polling"`` (after the watch limit was reached).
        warning: the watch-limit warning, or ``None``.
    """

    def __init__(
        self,
        workspace,
        *,
        on_update: Callable | None = None,
        on_error: Callable[[BaseException], None] | None = None,
        on_fallback: Callable[[str], None] | None = None,
        debounce_ms: int = 300,
    ):
        self.workspace = workspace
        self.on_update = on_update
        self.on_error = on_error
        self.on_fallback = on_fallback
        self.debounce_ms = debounce_ms
        self.mode = "native"
        self.warning: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _relevant(self, change: watchfiles.Change, path: str) -> bool:
        return is_relevant(self.workspace, path)

    def run(self) -> None:
        """Block, applying batches, until :meth:`stop` is called.

        Raises:
            OSError, RuntimeError: ``watchfiles`` failed for another reason than the watch limit
            (e.g. a root was deleted); the watch-limit error itself switches to polling.
        """
        roots = [str(i.root) for i in self.workspace.indexes.values()]
        if not roots:
            return
        while not self._stop.is_set():
            try:
                self._watch(roots)
                return
            except (OSError, RuntimeError) as exc:
                warning = watch_limit_warning(exc)
                if warning is None or self.mode == "polling":
                    raise
                self.mode, self.warning = "polling", warning
                log.warning("%s", warning)
                if self.on_fallback is not None:
                    self.on_fallback(warning)

    def _watch(self, roots: list[str]) -> None:
        """Apply batches from one ``watchfiles`` watcher until stopped.

        After a switch to polling, the first yield (a batch, or the empty set of the first timeout)
        means the poller has taken its first snapshot: changes made before it, while the native
        watcher was failing, are caught up with one incremental index run.
        """
        polling = self.mode == "polling"
        catch_up = polling
        for changes in watchfiles.watch(
            *roots,
            watch_filter=self._relevant,
            debounce=self.debounce_ms,
            step=50,
            stop_event=self._stop,
            rust_timeout=2 * POLL_DELAY_MS if polling else 5000,
            yield_on_timeout=polling,
            raise_interrupt=True,
            force_polling=polling,
            poll_delay_ms=POLL_DELAY_MS,
        ):
            try:
                if catch_up:
                    catch_up = False
                    stats = self.workspace.index()
                elif changes:
                    stats = self.workspace.update_paths(sorted({path for _, path in changes}))
                else:
                    continue
            except Exception as exc:  # one bad batch must not end the watcher
                log.exception("applying %d changed paths failed", len(changes))
                if self.on_error is not None:
                    self.on_error(exc)
                continue
            if self.on_update is not None and (stats.files_changed or stats.files_removed):
                self.on_update(stats)

    def start(self) -> Watcher:
        """Run in a daemon thread; an error that ends watching is logged and passed to ``on_error``."""
        self._thread = threading.Thread(target=self._run_logged, name="codeask-watch", daemon=True)
        self._thread.start()
        return self

    def _run_logged(self) -> None:
        try:
            self.run()
        except Exception as exc:  # the thread must not die silently
            log.exception("watching for changes stopped")
            self.mode = "off"
            if self.on_error is not None:
                self.on_error(exc)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching and wait for the thread (if started) to end."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
