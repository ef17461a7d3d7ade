"""Where an index lives: one folder per workspace root under the cache dir, never inside the root."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import platformdirs

from codeask.settings import Settings

__all__ = [
    "CacheDirError",
    "IndexReadOnly",
    "cache_root",
    "check_cache_dir",
    "index_dir_for",
    "make_index_dir",
    "writable",
]


#: The folder under the cache dir that holds the machine's vector stores, one per embedding model
#: (:mod:`codeask.index.machine`); never an index folder.
VECTOR_STORES = "_vectors"


class CacheDirError(RuntimeError):
    """The index cache dir is a file, or cannot be created; the message names it as the cache dir
    and where its value came from."""


class IndexReadOnly(RuntimeError):
    """The index cannot be written: its folder is read-only, or it cannot be created (the message
    names the folder and the OS error)."""


def writable(folder: Path) -> bool:
    """Whether files can be created in ``folder`` (``access(2)``: also false on a read-only mount)."""
    return os.access(folder, os.W_OK | os.X_OK)


def cache_root(settings: Settings) -> Path:
    """Where indexes live: ``index.cache_dir`` (``$CODEASK_CACHE_DIR``) or the user cache dir."""
    if settings.index.cache_dir:
        return Path(settings.index.cache_dir).expanduser()
    return Path(platformdirs.user_cache_dir("codeask", appauthor=False)) / "indexes"


def index_dir_for(root: Path, settings: Settings) -> Path:
    """``<cache>/<folder name>-<sha256(absolute path)[:12]>``: one folder per root, never inside it."""
    root = Path(root).resolve()
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogatepass")).hexdigest()[:12]
    name = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in (root.name or "root"))
    return cache_root(settings) / f"{name}-{digest}"


def _where(settings: Settings) -> str:
    return "CODEASK_CACHE_DIR or index.cache_dir" if settings.index.cache_dir else "the user cache dir"


def check_cache_dir(settings: Settings) -> Path:
    """The cache dir (:func:`cache_root`), when it is a folder or can become one; creates nothing.

    Raises:
        CacheDirError: it, or the nearest of its parents that exists, is not a folder.
    """
    cache = cache_root(settings)
    existing = next((p for p in (cache, *cache.parents) if p.exists()), None)
    if existing is None or existing.is_dir():
        return cache
    if existing == cache:
        raise CacheDirError(f"the cache dir {cache} ({_where(settings)}) is a file, not a folder; point it at a folder")
    raise CacheDirError(
        f"cannot create the cache dir {cache} ({_where(settings)}): {existing} is a file; point it at a folder"
    )


def make_index_dir(index_dir: Path, settings: Settings) -> None:
    """Create ``index_dir`` under the cache dir.

    Raises:
        CacheDirError: the cache dir (or a parent) is a file, or the folder cannot be created.
    """
    cache = check_cache_dir(settings)
    where = _where(settings)
    try:
        index_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CacheDirError(
            f"cannot create the cache dir {cache} ({where}): {exc.strerror or exc}; point it at a writable folder"
        ) from exc
