"""Pipeline stage 1: the files of a workspace root to index, and why the others are skipped.

* :func:`walk` lists the files under a root with ``os.scandir`` (iterative, never leaving the root),
  applying the rules of :class:`~codeask.index.ignore.Ignorer` (secret, ignored, excluded, build
  output) and counting every skipped entry by reason (see :data:`SKIP_REASONS`). It only lists and
  stats: nothing is read or hashed, so a restart with no changes costs one ``scandir`` per folder.
* :func:`codeask.index.filetext.read_text` reads one listed file, or says why it must be skipped
  (binary, too large, minified, gone, ...).

Skip reasons:

``ignored``            matched a ``.gitignore`` / ``.codeaskignore`` pattern
``excluded``           matched ``exclude`` (``.git/``, ``node_modules/``, ...),
                       a build-output folder (see below), or one of
                       codeask's own files (``.codeask.toml``, ``.codeaskignore``)
``secret``             matched ``secret_patterns``
``binary``             no text encoding explains the bytes (:func:`codeask.index.decode.decode`: a NUL
                       byte in the first 8 KiB that UTF-16/32 does not explain, or no legacy
                       encoding under the detector's confidence floor)
``too_large``          more than ``max_file_bytes`` bytes
``minified``           lines of code longer than ``MAX_LINE_LENGTH`` (1000) hold more than half the
                       characters (a line that is one long literal, base64 or hex, is not code)
``symlink_loop``       a symlink whose target was already reached (a loop or a duplicate path),
                       or a chain of links that never ends (ELOOP)
``outside_root``       a symlink whose real target is outside the root's real path
                       (a symlink whose target inside the root is secret counts as ``secret``)
``permission_denied``  a folder that cannot be listed, or a file that cannot be read
``vanished``           a broken symlink, or an entry deleted between listing and stat/read
``unreadable``         any other OS error, a non-regular file (FIFO, socket, device), or a
                       name that is not valid UTF-8

An ignored/excluded/secret *folder* counts once and is not descended into: files never seen are
not counted. With ``follow_symlinks=False`` symlinks are passed over without being counted.
"""

from __future__ import annotations

import collections
import heapq
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from pathspec import GitIgnoreSpec

from codeask.index.filetext import oserror_reason
from codeask.index.ignore import (
    CACHEDIR_TAG,
    CODEASKIGNORE,
    GITIGNORE,
    NEVER_WALKED,
    PROJECT_MARKERS,
    SOURCE_MARKERS,
    Chain,
    Ignorer,
    index_settings,
    is_secret,
)
from codeask.index.outputs import holds_artifacts
from codeask.settings import IndexSettings

# Ignorer, is_secret and the marker sets live in codeask.index.ignore; re-exported for callers.
__all__ = [
    "SKIP_REASONS",
    "GITIGNORE",
    "CODEASKIGNORE",
    "FileEntry",
    "WalkResult",
    "Ignorer",
    "walk",
    "entry_for",
    "file_entry",
    "PROJECT_MARKERS",
    "NEVER_WALKED",
    "is_secret",
]

SKIP_REASONS = (
    "ignored",
    "excluded",
    "secret",
    "binary",
    "too_large",
    "minified",
    "symlink_loop",
    "outside_root",
    "permission_denied",
    "vanished",
    "unreadable",
)


class FileEntry(NamedTuple):
    """One file to index (a named tuple: a walk builds one per file, 147k at 1M chunks).

    ``path`` is the workspace-relative POSIX path (``"src/requests/sessions.py"``); ``abs_path`` the
    absolute path (a ``str``: no ``Path`` object per listed file) as reached inside the root (a
    symlink inside the root keeps its link path); ``size`` (bytes) and ``mtime_ns`` are from the
    listing-time stat.
    """

    path: str
    abs_path: str
    size: int
    mtime_ns: int


@dataclass
class WalkResult:
    """What :func:`walk` found: ``files`` sorted by ``path``, ``skipped`` counts per reason."""

    files: list[FileEntry] = field(default_factory=list)
    skipped: collections.Counter[str] = field(default_factory=collections.Counter)


def _is_inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _secret_target(real: str, root_real: str, settings: IndexSettings, is_dir: bool = False) -> bool:
    """Whether a link's real target ``real`` inside the root is secret by its own path: a link named
    ``notes.txt`` to ``.env`` is as secret as ``.env``."""
    if real == root_real:
        return False
    target = Path(os.path.relpath(real, root_real)).as_posix()
    return is_secret(target + "/" if is_dir else target, settings)


def walk(root: Path, settings: IndexSettings, ignorer: Ignorer | None = None) -> WalkResult:
    """List the indexable files under ``root``.

    Args:
        root: the workspace folder.
        settings: its ``IndexSettings`` (patterns, ``follow_symlinks``).
        ignorer: an :class:`Ignorer` for this root to reuse (its compiled ignore files are kept
            and refreshed when they changed); a new one when ``None``.

    Returns:
        :class:`WalkResult`: ``files`` sorted by path; ``skipped`` counts entries by reason (see
        the module docstring). Real folders are walked before folders reached through symlinks,
        so a folder (or file) reachable both ways is listed under its real path and the symlink
        counts as ``symlink_loop``.

    Raises:
        NotADirectoryError: ``root`` is not an existing folder. Nothing is raised for a bad entry
        below the root: it is counted in ``skipped``.
    """
    settings = index_settings(settings)
    root_abs = os.path.abspath(os.fspath(root))
    if not os.path.isdir(root_abs):
        raise NotADirectoryError(f"not a folder: {root_abs}")
    ign = ignorer if ignorer is not None else Ignorer(Path(root_abs), settings)
    return _Walk(root_abs, settings, ign).run()


#: A folder to list: (rel_dir, abs_dir, real_dir, .gitignore chain of its parent, may be build
#: output: a build-output name in the root or beside a project file, not re-included).
_Folder = tuple[str, str, str, Chain, bool]


class _Walk:
    """One listing of a root (:func:`walk`): the folders still to list, and what was found."""

    def __init__(self, root_abs: str, settings: IndexSettings, ign: Ignorer):
        self.root_real = os.path.realpath(root_abs)
        self.settings = settings
        self.ign = ign
        self.files: list[FileEntry] = []
        self.skipped: collections.Counter[str] = collections.Counter()
        self.visited: set[str] = {self.root_real}
        # real folders of the regular files reached without a symlink, one per file (joined into
        # real paths only when a file was reached through a symlink too: the common walk builds no set)
        self.real_dirs: list[str] = []
        self.linked_files: list[tuple[FileEntry, str]] = []  # files reached through a symlink, real path
        self.codeask: GitIgnoreSpec | None = None
        self.stack: list[_Folder] = [("", root_abs, self.root_real, (), False)]
        self.deferred: list[_Folder] = []  # symlinked folders, listed after all real folders

    def run(self) -> WalkResult:
        """List every folder, then merge the files reached through symlinks."""
        while (folder := self._next_folder()) is not None:
            self._list(folder)
        return self._result()

    def _next_folder(self) -> _Folder | None:
        """The next folder to list: real folders first, then those reached through symlinks (a
        symlinked folder whose real path was listed already counts as ``symlink_loop``)."""
        if self.stack:
            return self.stack.pop()
        while self.deferred:
            item = heapq.heappop(self.deferred)
            if item[2] not in self.visited:
                self.visited.add(item[2])
                return item
            self.skipped["symlink_loop"] += 1
        return None

    def _list(self, folder: _Folder) -> None:
        """List one folder: skip it when it is build output or a cache, read its ignore files, then
        judge each entry (:meth:`_link`, :meth:`_entry`)."""
        rel_dir, abs_dir, real_dir, chain, maybe_output = folder
        try:
            with os.scandir(abs_dir) as it:
                entries = list(it)
        except OSError as exc:
            self.skipped[oserror_reason(exc)] += 1
            return
        names = {e.name for e in entries}
        if rel_dir and (
            CACHEDIR_TAG in names
            or (maybe_output and names.isdisjoint(SOURCE_MARKERS) and holds_artifacts(abs_dir, names))
        ):
            self.skipped["excluded"] += 1
            return
        project = not rel_dir or not PROJECT_MARKERS.isdisjoint(names)
        prefix = rel_dir + "/" if rel_dir else ""
        by_name = {e.name: e for e in entries if e.name in (GITIGNORE, CODEASKIGNORE)}
        spec = self.ign.entry_spec(prefix + GITIGNORE, by_name.get(GITIGNORE))
        if spec is not None:
            chain = chain + ((len(prefix), spec),)
        if not rel_dir:
            self.codeask = self.ign.entry_spec(CODEASKIGNORE, by_name.get(CODEASKIGNORE))
        for entry in entries:
            try:
                entry.name.encode("utf-8")
            except UnicodeEncodeError:
                self.skipped["unreadable"] += 1
                continue
            try:
                if entry.is_symlink():
                    self._link(entry, prefix + entry.name, chain, project)
                else:
                    self._entry(entry, prefix + entry.name, real_dir, chain, project)
            except OSError as exc:
                self.skipped[oserror_reason(exc)] += 1

    def _link(self, entry: os.DirEntry[str], rel: str, chain: Chain, project: bool) -> None:
        """A symlink: its target file listed, or its target folder queued, when it stays inside the
        root and is not secret by its own path; passed over with ``follow_symlinks`` off."""
        if not self.settings.follow_symlinks:
            return
        try:
            st = os.stat(entry.path)
        except OSError as exc:
            self.skipped[oserror_reason(exc)] += 1
            return
        is_dir = stat.S_ISDIR(st.st_mode)
        why, re_included = self.ign.decide(rel, is_dir, chain, self.codeask)
        if why is not None:
            self.skipped[why] += 1
            return
        real = os.path.realpath(entry.path)
        if not _is_inside(real, self.root_real):
            self.skipped["outside_root"] += 1
        elif _secret_target(real, self.root_real, self.settings, is_dir):
            self.skipped["secret"] += 1
        elif is_dir:
            output = project and entry.name in self.ign.build_outputs and not re_included
            heapq.heappush(self.deferred, (rel, entry.path, real, chain, output))
        elif stat.S_ISREG(st.st_mode):
            self.linked_files.append((FileEntry(rel, entry.path, st.st_size, st.st_mtime_ns), real))
        else:
            self.skipped["unreadable"] += 1

    def _entry(self, entry: os.DirEntry[str], rel: str, real_dir: str, chain: Chain, project: bool) -> None:
        """A real file (listed) or folder (queued), unless the ignore rules skip it."""
        is_dir = entry.is_dir(follow_symlinks=False)
        why, re_included = self.ign.decide(rel, is_dir, chain, self.codeask)
        if why is not None:
            self.skipped[why] += 1
            return
        if is_dir:
            real = real_dir + os.sep + entry.name
            if real in self.visited:
                self.skipped["symlink_loop"] += 1
                return
            self.visited.add(real)
            output = project and entry.name in self.ign.build_outputs and not re_included
            self.stack.append((rel, entry.path, real, chain, output))
            return
        st = entry.stat(follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            self.skipped["unreadable"] += 1
            return
        self.files.append(FileEntry(rel, entry.path, st.st_size, st.st_mtime_ns))
        self.real_dirs.append(real_dir)

    def _result(self) -> WalkResult:
        """The files sorted by path; a file reached through a symlink is listed only when its real
        path was not reached already (else it counts as ``symlink_loop``)."""
        files, linked = self.files, sorted(self.linked_files, key=lambda item: item[0].path)
        real_files = (
            {d + os.sep + f.path.rpartition("/")[2] for d, f in zip(self.real_dirs, files)} if linked else set()
        )
        for entry, real in linked:
            if real in real_files:
                self.skipped["symlink_loop"] += 1
                continue
            real_files.add(real)
            files.append(entry)
        files.sort(key=lambda f: f.path)
        return WalkResult(files=files, skipped=self.skipped)


def entry_for(root: Path, rel: str, settings: IndexSettings, ignorer: Ignorer) -> FileEntry | str:
    """One path checked by the rules :func:`walk` applies (live updates and file events use it).

    Args:
        root: the workspace folder as named; ``rel``: a workspace-relative POSIX path below it.
        settings: its ``IndexSettings``; ignorer: its :class:`Ignorer`.

    Returns:
        the file's :class:`FileEntry`, or why it is not indexed: ``"secret"``, ``"ignored"``,
        ``"excluded"`` (also a symlink with ``follow_symlinks`` off, as :func:`walk` passes over it),
        ``"outside_root"`` (a link whose real target leaves the root's real path),
        ``"symlink_loop"``, ``"vanished"`` (gone, or a folder), ``"permission_denied"``,
        ``"unreadable"`` (not a regular file, or a name that is not UTF-8). Never raises.
    """
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return "unreadable"
    reason = ignorer.reason(rel)
    if reason is not None:
        return reason
    return file_entry(root, rel, settings)


def file_entry(root: Path | str, rel: str, settings: IndexSettings) -> FileEntry | str:
    """:func:`entry_for` without the name rules (ignore files, secret and exclude patterns): the
    rules on links and kinds of file alone, for a path whose name was judged apart (explain).

    Returns:
        the file's :class:`FileEntry`, or ``"excluded"`` (a link with ``follow_symlinks`` off),
        ``"outside_root"``, ``"secret"`` (a link whose target's own path is secret), ``"symlink_loop"``, ``"vanished"`` (gone, or a folder),
        ``"permission_denied"``, ``"unreadable"`` (not a regular file, a name that is not UTF-8).
        Never raises.
    """
    settings = index_settings(settings)
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return "unreadable"
    root_abs = os.path.abspath(os.fspath(root))
    abs_path = os.path.join(root_abs, *rel.split("/"))
    try:
        root_real = os.path.realpath(root_abs, strict=True)
        real = os.path.realpath(abs_path, strict=True)
    except OSError as exc:
        return oserror_reason(exc)
    if real != os.path.join(root_real, *rel.split("/")):  # a link in the path
        if not settings.follow_symlinks:
            return "excluded"
        if not _is_inside(real, root_real):
            return "outside_root"
        if _secret_target(real, root_real, settings):
            return "secret"
    try:
        st = os.stat(abs_path)
    except OSError as exc:
        return oserror_reason(exc)
    if stat.S_ISDIR(st.st_mode):
        return "vanished"
    if not stat.S_ISREG(st.st_mode):
        return "unreadable"
    return FileEntry(rel, abs_path, st.st_size, st.st_mtime_ns)
