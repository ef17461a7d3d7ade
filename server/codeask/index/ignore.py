"""Pipeline stage 1a: which paths of a workspace are skipped by rule, from the path alone.

:class:`Ignorer` decides whether a path is a ``"secret"`` (``secret_patterns``),
``"ignored"`` (``.gitignore`` files at any depth and
``<root>/.codeaskignore``) or ``"excluded"`` (``exclude``, and build-output
folders), checked in that order: a secret is never indexed even if a ``!pattern`` re-includes it,
and a ``!pattern`` in the user's ignore files re-includes a default exclude (VCS metadata folders,
:data:`NEVER_WALKED`, excepted). All patterns use gitignore syntax (``pathspec``, with its RE2
backend when ``google-re2`` is installed: one regex set per pattern list, about 13x faster per path
than one regex per pattern, which matters when a restart re-checks 150,000 files); git itself is
never called, so plain folders behave like repositories.

Build-output folders: a folder named in ``build_outputs`` (``build``, ``dist``, ``coverage``, ...) is
excluded only where it is output: directly in the root, or beside a project file
(:data:`PROJECT_MARKERS`) of a nested project, only when it holds no ``__init__.py`` or project
file itself (so coverage.py's ``coverage/`` package and ``src/build/rules.py`` are indexed), and
only when it holds build artifacts (:mod:`codeask.index.outputs`: a ``dist/`` of install scripts
and systemd units is indexed). A
folder holding a ``CACHEDIR.TAG`` (https://bford.info/cachedir/) is excluded whatever its name.

:func:`codeask.index.walk.walk` applies the same rules while it lists a root (each folder's
``.gitignore`` compiled once per walk, a skipped folder never descended into); :meth:`Ignorer.reason`
checks one path (live updates, file events).
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from pathspec import GitIgnoreSpec

from codeask.index.outputs import holds_artifacts
from codeask.lines import split_lines
from codeask.settings import DEFAULT_BUILD_OUTPUTS, IndexSettings

__all__ = [
    "GITIGNORE",
    "CODEASKIGNORE",
    "NEVER_WALKED",
    "PROJECT_MARKERS",
    "SOURCE_MARKERS",
    "CACHEDIR_TAG",
    "OWN_FILES",
    "Ignorer",
    "is_secret",
]

GITIGNORE = ".gitignore"
CODEASKIGNORE = ".codeaskignore"

#: Folders no ignore file can re-include: version-control metadata (a remote URL in ``.git/config``
#: may hold a token) and codeask's own folder; ``.git`` also as a file, which a ``git worktree`` or a
#: submodule has in place of the folder (``gitdir: ...``).
NEVER_WALKED = (".git", ".hg/", ".svn/", ".jj/", ".codeask/")

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


def index_settings(settings: Any) -> IndexSettings:
    """Accept the full ``Settings`` too (``settings.index``)."""
    index = getattr(settings, "index", None)
    return index if isinstance(index, IndexSettings) else settings


def _compile(lines: Iterable[str]) -> GitIgnoreSpec | None:
    """A gitignore spec from pattern lines, or ``None`` when there are no patterns.

    pathspec's best backend (RE2 when installed) is used; a list RE2 cannot compile falls back to
    Python's ``re`` backend (same matches), and a line neither can compile is dropped rather than
    failing the whole file.
    """
    lines = list(lines)
    if not any(line.strip() and not line.startswith("#") for line in lines):
        return None
    for backend in ("best", "simple"):
        try:
            return GitIgnoreSpec.from_lines(lines, backend=backend)
        except Exception:
            continue
    good = []
    for line in lines:
        try:
            GitIgnoreSpec.from_lines([line], backend="simple")
        except Exception:
            continue
        good.append(line)
    return GitIgnoreSpec.from_lines(good, backend="simple") if good else None


@functools.lru_cache(maxsize=64)
def _compile_cached(patterns: tuple[str, ...]) -> GitIgnoreSpec | None:
    return _compile(patterns)


class _SecretRules(NamedTuple):
    """The secret patterns split by what they name: ``folders`` (a trailing ``/``: ``.ssh/``),
    ``names`` (no inner ``/``: ``.env``, ``*.pem``, ``credentials``: matched against a *file's*
    name only, so a folder called ``credentials/`` over source files is not secret) and ``paths``
    (an inner ``/``: ``**/.docker/config.json``, matched against a file's path)."""

    folders: GitIgnoreSpec | None
    names: GitIgnoreSpec | None
    paths: GitIgnoreSpec | None

    def entry(self, rel: str, is_dir: bool) -> bool:
        """Whether the folder or file ``rel`` itself (not its parents) is secret."""
        if is_dir:
            return self.folders is not None and self.folders.match_file(rel + "/")
        name = rel.rpartition("/")[2]
        return (self.names is not None and self.names.match_file(name)) or (
            self.paths is not None and self.paths.match_file(rel)
        )

    def path_or_parent(self, rel: str, is_dir: bool) -> bool:
        """Whether ``rel`` or one of its parent folders is secret."""
        parts = rel.split("/")
        return any(self.entry("/".join(parts[:i]), True) for i in range(1, len(parts))) or self.entry(rel, is_dir)


@functools.lru_cache(maxsize=64)
def _secret_rules_cached(patterns: tuple[str, ...]) -> _SecretRules:
    def body(p: str) -> str:
        return p[1:] if p.startswith("!") else p

    folders = [p for p in patterns if body(p).rstrip().endswith("/")]
    files = [p for p in patterns if p not in folders]
    names = [p for p in files if "/" not in body(p).strip()]
    paths = [p for p in files if p not in names]
    return _SecretRules(_compile(folders), _compile(names), _compile(paths))


def _secret_rules(settings: IndexSettings) -> _SecretRules:
    return _secret_rules_cached(tuple(settings.secret_patterns))


def _exclude_spec(settings: IndexSettings) -> GitIgnoreSpec | None:
    return _compile_cached(tuple(settings.exclude))


def _never_spec() -> GitIgnoreSpec | None:
    return _compile_cached(NEVER_WALKED)


def _is_output_folder(
    name: str, parent_names: Iterable[str] | None, own_names: Iterable[str], outputs, abs_dir: str
) -> bool:
    """Whether folder ``name`` at ``abs_dir`` holds build output (see the module docstring).

    ``parent_names``: the names in its parent folder, ``None`` when the parent is the root;
    ``own_names``: the names inside it, which must show build artifacts
    (:func:`codeask.index.outputs.holds_artifacts`).
    """
    own = set(own_names)
    if CACHEDIR_TAG in own:
        return True
    if name not in outputs or own & SOURCE_MARKERS:
        return False
    beside_project = parent_names is None or not PROJECT_MARKERS.isdisjoint(parent_names)
    return beside_project and holds_artifacts(abs_dir, own)


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


def is_secret(rel_path: str, settings: IndexSettings) -> bool:
    """Whether workspace-relative ``rel_path`` (or one of its parent folders) matches
    ``secret_patterns``. A trailing ``/`` marks a folder. A folder is
    secret only by a folder pattern (``.ssh/``); other patterns name secret *files*
    (:class:`_SecretRules`).

    Path-only (never reads the file); never raises. Use it before anything goes to an LLM.
    """
    settings = index_settings(settings)
    rel, is_dir = _normalize_rel(rel_path, False)
    return bool(rel) and _secret_rules(settings).path_or_parent(rel, is_dir)


#: codeask's own files (settings and ignore rules), never indexed whatever ``index.exclude`` says.
OWN_FILES = frozenset({".codeask.toml", CODEASKIGNORE})

# (prefix length of the folder holding the .gitignore, its spec), outermost first
Chain = tuple[tuple[int, GitIgnoreSpec], ...]


class Ignorer:
    """Decides, for one root, whether a path is excluded, ignored or secret, from the path alone.

    * ``secret``: ``secret_patterns`` match the path or a parent folder
      (checked first: nothing re-includes a secret);
    * ``ignored``: ``.gitignore`` files at any depth, each relative to its own folder (the deepest
      matching file wins, ``!`` negates, ``/x`` anchors, ``x/`` matches folders only), and
      ``<root>/.codeaskignore`` (same syntax, relative to the root), which takes precedence over
      every ``.gitignore`` so it can also re-include with ``!``. As in git, nothing below an ignored
      folder can be re-included;
    * ``excluded``: :data:`NEVER_WALKED` (always), else, unless an ignore file's ``!pattern``
      re-included the path, ``exclude`` or a build-output folder.

    Ignore files are compiled once and re-read lazily when their mtime/size/inode changes (or
    after :meth:`refresh`); a missing or unreadable ignore file counts as empty.
    """

    def __init__(self, root: Path, settings: IndexSettings) -> None:
        """``root``: the workspace folder; ``settings``: its ``IndexSettings``. Never raises."""
        self.root = Path(os.path.abspath(os.fspath(root)))
        self._root_str = str(self.root)
        self.settings = index_settings(settings)
        self._secret = _secret_rules(self.settings)
        self._exclude = _exclude_spec(self.settings)
        self._never = _never_spec()
        self.build_outputs = frozenset(DEFAULT_BUILD_OUTPUTS)
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

    def entry_spec(self, rel_file: str, entry: os.DirEntry[str] | None) -> GitIgnoreSpec | None:
        """Like :meth:`_stat_load` with the stat taken from a directory listing entry."""
        if entry is None:
            return self._load(rel_file, None)
        try:
            st = entry.stat()
        except OSError:
            st = None
        return self._load(rel_file, st)

    # -- matching -------------------------------------------------------------------------

    def decide(self, rel: str, is_dir: bool, chain: Chain, codeask: GitIgnoreSpec | None) -> tuple[str | None, bool]:
        """``(reason, re_included)`` for ``rel`` itself, its parent folders being known not to be
        skipped; ``re_included``: a user's ``!pattern`` matched it (no default exclude applies)."""
        path = rel + "/" if is_dir else rel
        if self._secret.entry(rel, is_dir):
            return "secret", False
        # NEVER_WALKED holds folder patterns only, and parents are decided before their entries
        # (walk and reason() both stop at a skipped folder): a file need not be matched again.
        if is_dir and self._never is not None and self._never.match_file(path):
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

    def _output_folder(self, rel_dir: str) -> bool:
        """Whether folder ``rel_dir`` (not re-included by an ignore file) holds build output."""
        parent, _, name = rel_dir.rpartition("/")
        folder = os.path.join(self._root_str, rel_dir)
        if name not in self.build_outputs:
            return os.path.exists(os.path.join(folder, CACHEDIR_TAG))
        parent_names = _listdir(os.path.join(self._root_str, parent)) if parent else None
        return _is_output_folder(name, parent_names, _listdir(folder), self.build_outputs, folder)

    def reason(self, rel_path: str, is_dir: bool = False) -> str | None:
        """``"secret"``, ``"excluded"``, ``"ignored"`` or ``None`` (index it) for a path.

        ``rel_path`` is workspace-relative POSIX (a trailing ``/`` also marks a folder); parent
        folders are checked too (a file in an ignored folder is ``"ignored"``). The root itself
        is never skipped. Ignore files are re-read if they changed. Never raises.
        """
        rel, is_dir = _normalize_rel(rel_path, is_dir)
        if not rel:
            return None
        if self._secret.path_or_parent(rel, is_dir):
            return "secret"
        codeask = self._stat_load(CODEASKIGNORE)
        root_spec = self._stat_load(GITIGNORE)
        chain: Chain = ((0, root_spec),) if root_spec is not None else ()
        parts = rel.split("/")
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            last = i == len(parts)
            folder = is_dir if last else True
            why, re_included = self.decide(sub, folder, chain, codeask)
            if why is None and folder and not re_included and self._output_folder(sub):
                why = "excluded"
            if why is not None:
                return why
            if not last:
                spec = self._stat_load(sub + "/" + GITIGNORE)
                if spec is not None:
                    chain = chain + ((len(sub) + 1, spec),)
        return None
