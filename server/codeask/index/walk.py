"""Pipeline stage 1: the files of a workspace root to index, and why the others are skipped.

* :func:`walk` lists the files under a root with ``os.scandir`` (iterative, never leaving the root),
  applying the rules of :class:`~codeask.index.ignore.Ignorer` (secret, ignored, excluded, build
  output) and counting every skipped entry by reason (see :data:`SKIP_REASONS`). It only lists and
  stats: nothing is read or hashed, so a restart with no changes costs one ``scandir`` per folder.
* :func:`read_text` reads one listed file, or says why it must be skipped (binary, too large,
  minified, gone, ...).

Skip reasons:

``ignored``            matched a ``.gitignore`` / ``.codeaskignore`` pattern
``excluded``           matched ``exclude`` / ``extra_exclude`` (``.git/``, ``node_modules/``, ...),
                       a build-output folder (see below), or one of
                       codeask's own files (``.codeask.toml``, ``.codeaskignore``)
``secret``             matched ``secret_patterns`` / ``extra_secret_patterns``
``binary``             no text encoding explains the bytes (:func:`codeask.index.decode.decode`: a NUL
                       byte in the first 8 KiB that UTF-16/32 does not explain, or no legacy
                       encoding under the detector's confidence floor)
``too_large``          more than ``max_file_bytes`` bytes
``minified``           lines of code longer than ``max_line_length`` hold more than half the
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
import errno
import hashlib
import heapq
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from pathspec import GitIgnoreSpec

from codeask.index.decode import SNIFF_BYTES, decode
from codeask.index.ignore import (
    CACHEDIR_TAG,
    CODEASKIGNORE,
    GITIGNORE,
    NEVER_WALKED,
    PROJECT_MARKERS,
    SOURCE_MARKERS,
    Ignorer,
    _Chain,
    _index_settings,
    is_secret,
)
from codeask.index.outputs import holds_artifacts
from codeask.lines import split_lines
from codeask.settings import IndexSettings

# Ignorer, is_secret and the marker sets live in codeask.index.ignore; re-exported for callers.
__all__ = [
    "SKIP_REASONS",
    "GITIGNORE",
    "CODEASKIGNORE",
    "FileEntry",
    "WalkResult",
    "FileText",
    "Ignorer",
    "walk",
    "entry_for",
    "file_entry",
    "read_text",
    "content_reason",
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


@dataclass(frozen=True)
class FileText:
    """A file's decoded ``text`` (:func:`codeask.index.decode.decode`: BOM stripped, bad bytes as
    U+FFFD), the ``encoding`` it was read with (a canonical codec name: ``utf-8``, ``utf-16-le``,
    ``cp1252``, ...), the sha256 hex ``content_hash`` of its raw bytes and its ``size`` in bytes."""

    text: str
    content_hash: str
    size: int
    encoding: str = "utf-8"


def _is_inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _secret_target(real: str, root_real: str, settings: IndexSettings, is_dir: bool = False) -> bool:
    """Whether a link's real target ``real`` inside the root is secret by its own path: a link named
    ``notes.txt`` to ``.env`` is as secret as ``.env``."""
    if real == root_real:
        return False
    target = Path(os.path.relpath(real, root_real)).as_posix()
    return is_secret(target + "/" if is_dir else target, settings)


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
    # real folders of the regular files reached without a symlink, one per file (joined into real
    # paths only when a file was reached through a symlink too: the common walk builds no set)
    real_dirs: list[str] = []
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
        if rel_dir and (
            CACHEDIR_TAG in names
            or (maybe_output and names.isdisjoint(SOURCE_MARKERS) and holds_artifacts(abs_dir, names))
        ):
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
                    elif _secret_target(real, root_real, settings, is_dir):
                        skipped["secret"] += 1
                    elif is_dir:
                        output = project and name in outputs and not re_included
                        heapq.heappush(deferred, (rel, entry.path, real, chain, output))
                    elif stat.S_ISREG(st.st_mode):
                        linked_files.append((FileEntry(rel, entry.path, st.st_size, st.st_mtime_ns), real))
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
                files.append(FileEntry(rel, entry.path, st.st_size, st.st_mtime_ns))
                real_dirs.append(real_dir)
            except OSError as exc:
                skipped[_oserror_reason(exc)] += 1

    linked_files.sort(key=lambda item: item[0].path)
    real_files = {d + os.sep + f.path.rpartition("/")[2] for d, f in zip(real_dirs, files)} if linked_files else set()
    for entry_, real in linked_files:
        if real in real_files:
            skipped["symlink_loop"] += 1
            continue
        real_files.add(real)
        files.append(entry_)
    files.sort(key=lambda f: f.path)
    return WalkResult(files=files, skipped=skipped)


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
    settings = _index_settings(settings)
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
        return _oserror_reason(exc)
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
        return _oserror_reason(exc)
    if stat.S_ISDIR(st.st_mode):
        return "vanished"
    if not stat.S_ISREG(st.st_mode):
        return "unreadable"
    return FileEntry(rel, abs_path, st.st_size, st.st_mtime_ns)


#: Share of a long line one token (split at blanks and quotes) must cover for the line to be a
#: literal (a base64 blob, a hex string) rather than minified code.
LITERAL_SHARE = 0.8
_TOKEN_BREAKS = re.compile(r"[\s\"'`]+")


def is_literal_line(line: str) -> bool:
    """Whether ``line`` is one long literal: a single token between blanks and quotes covers over
    :data:`LITERAL_SHARE` of it (a base64 or hex string). Minified code breaks at its many quoted
    strings and never is."""
    return max((len(t) for t in _TOKEN_BREAKS.split(line)), default=0) > LITERAL_SHARE * len(line)


def _minified(text: str, max_line_length: int) -> bool:
    """Whether lines longer than ``max_line_length`` that are code, not one long literal
    (:func:`is_literal_line`), hold more than half of the characters: a test file with a long
    base64 line is source (its chunks shorten the line: :func:`codeask.index.chunk.chunk_file`)."""
    if len(text) <= max_line_length:
        return False
    long_chars = 0
    for line in split_lines(text):
        if len(line) > max_line_length and not is_literal_line(line):
            long_chars += len(line)
    return long_chars * 2 > len(text)


def content_reason(text: str, settings: IndexSettings) -> str | None:
    """Why :func:`read_text` would skip a file holding ``text`` (an editor's buffer, not read from
    disk): ``"too_large"`` (its UTF-8 encoding is over ``max_file_bytes`` bytes), ``"binary"`` (a
    NUL in its first 8 KiB), ``"minified"`` (as :func:`read_text`), or ``None``. Never raises."""
    settings = _index_settings(settings)
    if len(text.encode("utf-8", "surrogatepass")) > settings.max_file_bytes:
        return "too_large"
    if "\x00" in text[:SNIFF_BYTES]:
        return "binary"
    return "minified" if _minified(text, settings.max_line_length) else None


def read_text(abs_path: str | Path, settings: IndexSettings) -> FileText | str:
    """Read and decode one file for indexing.

    Returns:
        :class:`FileText`, or a skip reason: ``"too_large"`` (over ``max_file_bytes``, at stat or
        at read time), ``"binary"`` (no encoding decodes it: :func:`codeask.index.decode.decode`), ``"minified"`` (lines longer than
        ``max_line_length`` hold over half the characters), ``"vanished"`` (deleted or a broken
        link), ``"permission_denied"``, ``"unreadable"`` (other OS errors, not a regular file).
        Text is decoded by :func:`codeask.index.decode.decode` (a BOM, else UTF-8, else the detected
        legacy encoding; bad bytes as U+FFFD); an empty file gives ``""``.

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
    decoded = decode(data)
    if decoded is None:
        return "binary"
    if _minified(decoded.text, settings.max_line_length):
        return "minified"
    return FileText(decoded.text, hashlib.sha256(data).hexdigest(), len(data), decoded.encoding)
