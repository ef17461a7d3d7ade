"""Pipeline stage 1: which files of a workspace get indexed, and why the others are skipped.

Three pieces:

* :class:`Ignorer` decides from the path (never the contents) whether a path is a ``"secret"``
  (``secret_patterns`` + ``extra_secret_patterns``), ``"ignored"`` (``.gitignore`` files at any
  depth and ``<root>/.codeaskignore``) or ``"excluded"`` (``exclude`` + ``extra_exclude``, and
  build-output folders), checked in that order: a secret is never indexed even if a ``!pattern``
  re-includes it, and a ``!pattern`` in the user's ignore files re-includes a default exclude
  (VCS metadata folders, :data:`NEVER_WALKED`, excepted). All patterns use gitignore syntax
  (``pathspec``); git itself is never called, so plain folders behave like repositories.
* Build-output folders: a folder named in ``build_outputs`` (``build``, ``dist``, ``coverage``, ...)
  is excluded only where it is output: directly in the root, or beside a project file
  (:data:`PROJECT_MARKERS`) of a nested project, and only when it holds no ``__init__.py`` or
  project file itself (so coverage.py's ``coverage/`` package and ``src/build/rules.py`` are
  indexed). A folder holding a ``CACHEDIR.TAG`` (https://bford.info/cachedir/) is excluded
  whatever its name.
* :func:`walk` lists the files under a root with ``os.scandir`` (iterative, never leaving the root)
  and counts every skipped entry by reason (see :data:`SKIP_REASONS`).
* :func:`read_text` reads one listed file, or says why it must be skipped (binary, too large,
  minified, gone, ...).

Skip reasons:

``ignored``            matched a ``.gitignore`` / ``.codeaskignore`` pattern
``excluded``           matched ``exclude`` / ``extra_exclude`` (``.git/``, ``node_modules/``, ...),
                       a build-output folder (see below), or one of
                       codeask's own files (``.codeask.toml``, ``.codeaskignore``)
``secret``             matched ``secret_patterns`` / ``extra_secret_patterns``
``binary``             NUL byte in the first 8 KiB
``too_large``          more than ``max_file_bytes`` bytes
``minified``           lines longer than ``max_line_length`` hold more than half the characters
``symlink_loop``       a symlink whose target was already reached (a loop or a duplicate path),
                       or a chain of links that never ends (ELOOP)
``outside_root``       a symlink whose real target is outside the root's real path
``permission_denied``  a folder that cannot be listed, or a file that cannot be read
``vanished``           a broken symlink, or an entry deleted between listing and stat/read
``unreadable``         any other OS error, a non-regular file (FIFO, socket, device), or a
                       name that is not valid UTF-8

An ignored/excluded/secret *folder* counts once and is not descended into: files never seen are
not counted. With ``follow_symlinks=False`` symlinks are passed over without being counted.
"""

from __future__ import annotations

import collections
import errno
import functools
import hashlib
import heapq
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pathspec import GitIgnoreSpec

from codeask.lines import split_lines
from codeask.settings import IndexSettings

__all__ = [
    "SKIP_REASONS",
    "GITIGNORE",
    "CODEASKIGNORE",
    "FileEntry",
    "WalkResult",
    "FileText",
    "Ignorer",
    "walk",
    "read_text",
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

GITIGNORE = ".gitignore"
CODEASKIGNORE = ".codeaskignore"

#: Folders no ignore file can re-include: version-control metadata (a remote URL in ``.git/config``
#: may hold a token) and codeask's own folder.
NEVER_WALKED = (".git/", ".hg/", ".svn/", ".jj/", ".codeask/")

#: Files that mark a project root: a build-output folder name beside one of them is build output.
PROJECT_MARKERS = frozenset(
    {
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "package.json",
        "Cargo.toml",
        "go.mod",
        "pom.xml",
        "build.gradle",
        "build.gradle.kts",
        "CMakeLists.txt",
        "meson.build",
        "composer.json",
        "Gemfile",
        "mix.exs",
        "pubspec.yaml",
        "Package.swift",
        "build.sbt",
        "deno.json",
    }
)
#: Files that make a folder a source package rather than build output.
SOURCE_MARKERS = PROJECT_MARKERS | {"__init__.py"}
#: The Cache Directory Tagging Specification's tag file: its folder is never source.
CACHEDIR_TAG = "CACHEDIR.TAG"

#: Bytes inspected for a NUL byte to call a file binary.
BINARY_SNIFF_BYTES = 8192

_UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class FileEntry:
    """One file to index.

    ``path`` is the workspace-relative POSIX path (``"src/requests/sessions.py"``); ``abs_path`` the
    absolute path as reached inside the root (a symlink inside the root keeps its link path);
    ``size`` (bytes) and ``mtime_ns`` are from the listing-time stat.
    """

    path: str
    abs_path: Path
    size: int
    mtime_ns: int


@dataclass
class WalkResult:
    """What :func:`walk` found: ``files`` sorted by ``path``, ``skipped`` counts per reason."""

    files: list[FileEntry] = field(default_factory=list)
    skipped: collections.Counter[str] = field(default_factory=collections.Counter)


@dataclass(frozen=True)
class FileText:
    """A file's decoded ``text`` (UTF-8, BOM stripped, invalid bytes as U+FFFD), the sha256 hex
    ``content_hash`` of its raw bytes and its ``size`` in bytes."""

    text: str
    content_hash: str
    size: int


def _index_settings(settings: Any) -> IndexSettings:
    """Accept the full ``Settings`` too (``settings.index``)."""
    index = getattr(settings, "index", None)
    return index if isinstance(index, IndexSettings) else settings


def _compile(lines: Iterable[str]) -> GitIgnoreSpec | None:
    """A gitignore spec from pattern lines, or ``None`` when there are no patterns.

    A line pathspec cannot compile is dropped rather than failing the whole file.
    """
    lines = list(lines)
    if not any(line.strip() and not line.startswith("#") for line in lines):
        return None
    try:
        return GitIgnoreSpec.from_lines(lines)
    except Exception:
        good = []
        for line in lines:
            try:
                GitIgnoreSpec.from_lines([line])
            except Exception:
                continue
            good.append(line)
        return GitIgnoreSpec.from_lines(good) if good else None


@functools.lru_cache(maxsize=64)
def _compile_cached(patterns: tuple[str, ...]) -> GitIgnoreSpec | None:
    return _compile(patterns)


def _secret_spec(settings: IndexSettings) -> GitIgnoreSpec | None:
    return _compile_cached(tuple(settings.secret_patterns) + tuple(settings.extra_secret_patterns))


def _exclude_spec(settings: IndexSettings) -> GitIgnoreSpec | None:
    return _compile_cached(tuple(settings.exclude) + tuple(settings.extra_exclude))


def _never_spec() -> GitIgnoreSpec | None:
    return _compile_cached(NEVER_WALKED)


def _is_output_folder(name: str, parent_names: Iterable[str] | None, own_names: Iterable[str], outputs) -> bool:
    """Whether folder ``name`` holds build output (see the module docstring).

    ``parent_names``: the names in its parent folder, ``None`` when the parent is the root (a
    build-output name there is always output); ``own_names``: the names inside it.
    """
    own = set(own_names)
    if CACHEDIR_TAG in own:
        return True
    if name not in outputs or own & SOURCE_MARKERS:
        return False
    return parent_names is None or not PROJECT_MARKERS.isdisjoint(parent_names)


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _normalize_rel(rel_path: str, is_dir: bool) -> tuple[str, bool]:
    rel = str(rel_path).replace("\\", "/")
    while rel.startswith("./"):
        rel = rel[2:]
    rel = rel.lstrip("/")
    if rel.endswith("/"):
        is_dir = True
        rel = rel.rstrip("/")
    if rel == ".":
        rel = ""
    return rel, is_dir


def _spec_matches_path_or_parent(spec: GitIgnoreSpec | None, rel: str, is_dir: bool) -> bool:
    """Whether ``spec`` matches ``rel`` or any of its parent folders (as folders)."""
    if spec is None or not rel:
        return False
    parts = rel.split("/")
    for i in range(1, len(parts) + 1):
        sub = "/".join(parts[:i])
        last = i == len(parts)
        if spec.match_file(sub if last and not is_dir else sub + "/"):
            return True
    return False


def is_secret(rel_path: str, settings: IndexSettings) -> bool:
    """Whether workspace-relative ``rel_path`` (or one of its parent folders) matches
    ``secret_patterns`` + ``extra_secret_patterns``. A trailing ``/`` marks a folder.

    Path-only (never reads the file); never raises. Use it before anything goes to an LLM.
    """
    settings = _index_settings(settings)
    rel, is_dir = _normalize_rel(rel_path, False)
    return _spec_matches_path_or_parent(_secret_spec(settings), rel, is_dir)


#: codeask's own files (settings and ignore rules), never indexed whatever ``index.exclude`` says.
OWN_FILES = frozenset({".codeask.toml", CODEASKIGNORE})

# (prefix length of the folder holding the .gitignore, its spec), outermost first
_Chain = tuple[tuple[int, GitIgnoreSpec], ...]


class Ignorer:
    """Decides, for one root, whether a path is excluded, ignored or secret, from the path alone.

    * ``secret``: ``secret_patterns + extra_secret_patterns`` match the path or a parent folder
      (checked first: nothing re-includes a secret);
    * ``ignored``: ``.gitignore`` files at any depth, each relative to its own folder (the deepest
      matching file wins, ``!`` negates, ``/x`` anchors, ``x/`` matches folders only), and
      ``<root>/.codeaskignore`` (same syntax, relative to the root), which takes precedence over
      every ``.gitignore`` so it can also re-include with ``!``. As in git, nothing below an ignored
      folder can be re-included;
    * ``excluded``: :data:`NEVER_WALKED` (always), else, unless an ignore file's ``!pattern``
      re-included the path, ``exclude + extra_exclude`` or a build-output folder.

    Ignore files are compiled once and re-read lazily when their mtime/size/inode changes (or
    after :meth:`refresh`); a missing or unreadable ignore file counts as empty.
    """

    def __init__(self, root: Path, settings: IndexSettings) -> None:
        """``root``: the workspace folder; ``settings``: its ``IndexSettings``. Never raises."""
        self.root = Path(os.path.abspath(os.fspath(root)))
        self._root_str = str(self.root)
        self.settings = _index_settings(settings)
        self._secret = _secret_spec(self.settings)
        self._exclude = _exclude_spec(self.settings)
        self._never = _never_spec()
        self.build_outputs = frozenset(self.settings.build_outputs)
        # workspace-relative ignore-file path -> ((mtime_ns, size, ino), spec or None)
        self._files: dict[str, tuple[tuple[int, int, int], GitIgnoreSpec | None]] = {}

    def refresh(self) -> None:
        """Forget every compiled ignore file; the next check re-reads them."""
        self._files.clear()

    # -- ignore files ---------------------------------------------------------------------

    def _load(self, rel_file: str, st: os.stat_result | None) -> GitIgnoreSpec | None:
        """The compiled spec of ignore file ``rel_file`` whose stat is ``st`` (``None``: absent)."""
        if st is None or not stat.S_ISREG(st.st_mode):
            self._files.pop(rel_file, None)
            return None
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        cached = self._files.get(rel_file)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            with open(os.path.join(self._root_str, rel_file), "rb") as fh:
                raw = fh.read()
        except OSError:
            spec = None
        else:
            spec = _compile(split_lines(raw.decode("utf-8", errors="replace").lstrip("\ufeff")))
        self._files[rel_file] = (stamp, spec)
        return spec

    def _stat_load(self, rel_file: str) -> GitIgnoreSpec | None:
        try:
            st = os.stat(os.path.join(self._root_str, rel_file))
        except (OSError, ValueError):
            st = None
        return self._load(rel_file, st)

    def _entry_spec(self, rel_file: str, entry: os.DirEntry[str] | None) -> GitIgnoreSpec | None:
        """Like :meth:`_stat_load` with the stat taken from a directory listing entry."""
        if entry is None:
            return self._load(rel_file, None)
        try:
            st = entry.stat()
        except OSError:
            st = None
        return self._load(rel_file, st)

    # -- matching -------------------------------------------------------------------------

    def _decide(self, rel: str, is_dir: bool, chain: _Chain, codeask: GitIgnoreSpec | None) -> tuple[str | None, bool]:
        """``(reason, re_included)`` for ``rel`` itself, its parent folders being known not to be
        skipped; ``re_included``: a user's ``!pattern`` matched it (no default exclude applies)."""
        path = rel + "/" if is_dir else rel
        if self._secret is not None and self._secret.match_file(path):
            return "secret", False
        if self._never is not None and self._never.match_file(path):
            return "excluded", False
        if not is_dir and rel.rpartition("/")[2] in OWN_FILES:
            return "excluded", False
        include = codeask.check_file(path).include if codeask is not None else None
        if include is None:
            for prefix_len, spec in reversed(chain):
                include = spec.check_file(path[prefix_len:]).include
                if include is not None:
                    break
        if include is not None:
            return ("ignored" if include else None), not include
        if self._exclude is not None and self._exclude.match_file(path):
            return "excluded", False
        return None, False

    def _entry_reason(self, rel: str, is_dir: bool, chain: _Chain, codeask: GitIgnoreSpec | None) -> str | None:
        """Reason for ``rel`` itself from its path (build-output folders are decided by the caller)."""
        return self._decide(rel, is_dir, chain, codeask)[0]

    def _output_folder(self, rel_dir: str) -> bool:
        """Whether folder ``rel_dir`` (not re-included by an ignore file) holds build output."""
        parent, _, name = rel_dir.rpartition("/")
        folder = os.path.join(self._root_str, rel_dir)
        if name not in self.build_outputs:
            return os.path.exists(os.path.join(folder, CACHEDIR_TAG))
        parent_names = _listdir(os.path.join(self._root_str, parent)) if parent else None
        return _is_output_folder(name, parent_names, _listdir(folder), self.build_outputs)

    def reason(self, rel_path: str, is_dir: bool = False) -> str | None:
        """``"secret"``, ``"excluded"``, ``"ignored"`` or ``None`` (index it) for a path.

        ``rel_path`` is workspace-relative POSIX (a trailing ``/`` also marks a folder); parent
        folders are checked too (a file in an ignored folder is ``"ignored"``). The root itself
        is never skipped. Ignore files are re-read if they changed. Never raises.
        """
        rel, is_dir = _normalize_rel(rel_path, is_dir)
        if not rel:
            return None
        if _spec_matches_path_or_parent(self._secret, rel, is_dir):
            return "secret"
        codeask = self._stat_load(CODEASKIGNORE)
        root_spec = self._stat_load(GITIGNORE)
        chain: _Chain = ((0, root_spec),) if root_spec is not None else ()
        parts = rel.split("/")
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            last = i == len(parts)
            folder = is_dir if last else True
            why, re_included = self._decide(sub, folder, chain, codeask)
            if why is None and folder and not re_included and self._output_folder(sub):
                why = "excluded"
            if why is not None:
                return why
            if not last:
                spec = self._stat_load(sub + "/" + GITIGNORE)
                if spec is not None:
                    chain = chain + ((len(sub) + 1, spec),)
        return None


def _is_inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _oserror_reason(exc: OSError) -> str:
    if isinstance(exc, PermissionError):
        return "permission_denied"
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return "vanished"
    if exc.errno == errno.ELOOP:
        return "symlink_loop"
    return "unreadable"


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
    settings = _index_settings(settings)
    root_abs = os.path.abspath(os.fspath(root))
    if not os.path.isdir(root_abs):
        raise NotADirectoryError(f"not a folder: {root_abs}")
    root_real = os.path.realpath(root_abs)
    ign = ignorer if ignorer is not None else Ignorer(Path(root_abs), settings)
    follow = settings.follow_symlinks

    files: list[FileEntry] = []
    skipped: collections.Counter[str] = collections.Counter()
    visited: set[str] = {root_real}
    real_files: set[str] = set()  # real paths of regular files reached without a symlink
    linked_files: list[tuple[FileEntry, str]] = []  # files reached through a symlink, real path
    codeask: GitIgnoreSpec | None = None

    outputs = ign.build_outputs
    # (rel_dir, abs_dir, real_dir, .gitignore chain of the parent folder, may be build output:
    # a build-output name in the root or beside a project file, not re-included)
    stack: list[tuple[str, str, str, _Chain, bool]] = [("", root_abs, root_real, (), False)]
    # symlinked folders, walked after all real folders: (rel, abs, real, parent chain, output?)
    deferred: list[tuple[str, str, str, _Chain, bool]] = []

    while stack or deferred:
        if not stack:
            item = heapq.heappop(deferred)
            if item[2] in visited:
                skipped["symlink_loop"] += 1
                continue
            visited.add(item[2])
            stack.append(item)
            continue
        rel_dir, abs_dir, real_dir, chain, maybe_output = stack.pop()
        try:
            with os.scandir(abs_dir) as it:
                entries = list(it)
        except OSError as exc:
            skipped[_oserror_reason(exc)] += 1
            continue
        names = {e.name for e in entries}
        if rel_dir and (CACHEDIR_TAG in names or (maybe_output and names.isdisjoint(SOURCE_MARKERS))):
            skipped["excluded"] += 1
            continue
        project = not rel_dir or not PROJECT_MARKERS.isdisjoint(names)

        prefix = rel_dir + "/" if rel_dir else ""
        by_name = {e.name: e for e in entries if e.name in (GITIGNORE, CODEASKIGNORE)}
        spec = ign._entry_spec(prefix + GITIGNORE, by_name.get(GITIGNORE))
        if spec is not None:
            chain = chain + ((len(prefix), spec),)
        if not rel_dir:
            codeask = ign._entry_spec(CODEASKIGNORE, by_name.get(CODEASKIGNORE))

        for entry in entries:
            name = entry.name
            rel = prefix + name
            try:
                name.encode("utf-8")
            except UnicodeEncodeError:
                skipped["unreadable"] += 1
                continue
            try:
                if entry.is_symlink():
                    if not follow:
                        continue
                    try:
                        st = os.stat(entry.path)
                    except OSError as exc:
                        skipped[_oserror_reason(exc)] += 1
                        continue
                    is_dir = stat.S_ISDIR(st.st_mode)
                    why, re_included = ign._decide(rel, is_dir, chain, codeask)
                    if why is not None:
                        skipped[why] += 1
                        continue
                    real = os.path.realpath(entry.path)
                    if not _is_inside(real, root_real):
                        skipped["outside_root"] += 1
                    elif is_dir:
                        output = project and name in outputs and not re_included
                        heapq.heappush(deferred, (rel, entry.path, real, chain, output))
                    elif stat.S_ISREG(st.st_mode):
                        linked_files.append((FileEntry(rel, Path(entry.path), st.st_size, st.st_mtime_ns), real))
                    else:
                        skipped["unreadable"] += 1
                    continue

                is_dir = entry.is_dir(follow_symlinks=False)
                why, re_included = ign._decide(rel, is_dir, chain, codeask)
                if why is not None:
                    skipped[why] += 1
                    continue
                if is_dir:
                    real = real_dir + os.sep + name
                    if real in visited:
                        skipped["symlink_loop"] += 1
                        continue
                    visited.add(real)
                    stack.append((rel, entry.path, real, chain, project and name in outputs and not re_included))
                    continue
                st = entry.stat(follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode):
                    skipped["unreadable"] += 1
                    continue
                files.append(FileEntry(rel, Path(entry.path), st.st_size, st.st_mtime_ns))
                real_files.add(real_dir + os.sep + name)
            except OSError as exc:
                skipped[_oserror_reason(exc)] += 1

    linked_files.sort(key=lambda item: item[0].path)
    for entry_, real in linked_files:
        if real in real_files:
            skipped["symlink_loop"] += 1
            continue
        real_files.add(real)
        files.append(entry_)
    files.sort(key=lambda f: f.path)
    return WalkResult(files=files, skipped=skipped)


def _minified(text: str, max_line_length: int) -> bool:
    """Whether lines longer than ``max_line_length`` hold more than half of the characters."""
    if len(text) <= max_line_length:
        return False
    long_chars = 0
    for line in split_lines(text):
        if len(line) > max_line_length:
            long_chars += len(line)
    return long_chars * 2 > len(text)


def read_text(abs_path: Path, settings: IndexSettings) -> FileText | str:
    """Read and decode one file for indexing.

    Returns:
        :class:`FileText`, or a skip reason: ``"too_large"`` (over ``max_file_bytes``, at stat or
        at read time), ``"binary"`` (NUL in the first 8 KiB), ``"minified"`` (lines longer than
        ``max_line_length`` hold over half the characters), ``"vanished"`` (deleted or a broken
        link), ``"permission_denied"``, ``"unreadable"`` (other OS errors, not a regular file).
        Text is UTF-8 (a BOM stripped), with invalid bytes replaced by U+FFFD; an empty file gives
        ``""``.

    Raises:
        Nothing for a bad file: every OS error becomes a reason string.
    """
    settings = _index_settings(settings)
    limit = settings.max_file_bytes
    try:
        st = os.stat(abs_path)
        if not stat.S_ISREG(st.st_mode):
            return "unreadable"
        if st.st_size > limit:
            return "too_large"
        with open(abs_path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        reason = _oserror_reason(exc)
        return "unreadable" if reason == "symlink_loop" else reason
    if len(data) > limit:
        return "too_large"
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return "binary"
    content_hash = hashlib.sha256(data).hexdigest()
    body = data[len(_UTF8_BOM) :] if data.startswith(_UTF8_BOM) else data
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = body.decode("utf-8", errors="replace")
    if _minified(text, settings.max_line_length):
        return "minified"
    return FileText(text=text, content_hash=content_hash, size=len(data))
