"""Whether a folder named like build output (``dist/``, ``build/``, ``target/``...) holds generated
output, judged from what it holds rather than from its name alone.

A build-output name in the root or beside a project file is output only when its listing shows
build artifacts (:func:`holds_artifacts`): packages and archives (``*.whl``, ``*.tar.gz``, ``*.jar``),
bundles and their maps (``*.js``, ``*.css``, ``*.map``), objects and libraries (``*.o``, ``*.so``,
``*.class``, ``*.wasm``), HTML reports, or the sub-folders build tools write (``lib/``,
``bdist.*``, ``debug/``, ``release/``, ``classes/``, ``lcov-report/``...), in it or one level
below. A ``dist/`` of install scripts and systemd units holds none of them and is indexed.
Listing only (never reads a file); never raises.
"""

from __future__ import annotations

import os

__all__ = ["ARTIFACT_SUFFIXES", "OUTPUT_FOLDERS", "holds_artifacts"]

#: File name endings of build artifacts.
ARTIFACT_SUFFIXES = (
    ".js",
    ".mjs",
    ".cjs",
    ".css",
    ".map",
    ".d.ts",
    ".html",
    ".whl",
    ".egg",
    ".tar.gz",
    ".tgz",
    ".tar.bz2",
    ".tar.xz",
    ".zip",
    ".jar",
    ".war",
    ".ear",
    ".nupkg",
    ".deb",
    ".rpm",
    ".apk",
    ".dmg",
    ".msi",
    ".o",
    ".obj",
    ".so",
    ".a",
    ".lib",
    ".dll",
    ".dylib",
    ".exe",
    ".pdb",
    ".wasm",
    ".pyc",
    ".class",
    ".rlib",
    ".rmeta",
    ".d",
    ".info",
)
#: Sub-folder names build tools write into their output folder.
OUTPUT_FOLDERS = frozenset(
    {"lib", "debug", "release", "classes", "test-classes", "generated-sources", "lcov-report", "esm", "cjs", "umd"}
)
#: Sub-folder name prefixes of setuptools' output (``bdist.linux-x86_64``, ``temp.linux-x86_64-3.12``).
OUTPUT_PREFIXES = ("bdist.", "temp.", "lib.")
#: Sub-folders looked into, and names read from each.
PEEK_FOLDERS = 16
PEEK_NAMES = 256


def _artifact(name: str) -> bool:
    return name.lower().endswith(ARTIFACT_SUFFIXES)


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def holds_artifacts(abs_dir: str, names: list[str] | set[str] | frozenset[str]) -> bool:
    """Whether the folder ``abs_dir``, whose entries are ``names``, holds build artifacts (see the
    module docstring), or nothing at all (an empty folder loses no source)."""
    if not names:
        return True
    if any(_artifact(n) or n in OUTPUT_FOLDERS or n.startswith(OUTPUT_PREFIXES) for n in names):
        return True
    for name in sorted(names)[:PEEK_FOLDERS]:
        sub = os.path.join(abs_dir, name)
        if os.path.isdir(sub) and not os.path.islink(sub) and any(_artifact(m) for m in _listdir(sub)[:PEEK_NAMES]):
            return True
    return False
