"""``codeask clean``: the indexes in the cache dir, their sizes, and removing them.

An index folder is ``<cache dir>/<folder name>-<hash of path>`` (see
:func:`codeask.index.engine.index_dir_for`) and records the workspace folder it indexes in
``root.txt``. Only folders that look like an index (``manifest.sqlite`` or ``root.txt`` inside)
are listed or removed; an index whose write lock another process holds is never removed. The
machine's vector stores (``<cache dir>/_vectors/``, :mod:`codeask.index.machine`) are listed beside
them and removed with ``--all``.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import filelock

__all__ = [
    "IndexFolder",
    "list_indexes",
    "remove_index",
    "folder_bytes",
    "VectorStore",
    "list_vector_stores",
    "remove_vector_store",
]


@dataclass
class IndexFolder:
    """One index in the cache dir: its folder, the workspace folder it indexes (``None`` when
    ``root.txt`` is unreadable), whether that folder still exists, and its size on disk (bytes)."""

    index_dir: Path
    root: str | None
    root_exists: bool
    bytes: int

    def to_json(self) -> dict:
        """``{"index_dir", "root", "root_exists", "bytes"}``."""
        return {
            "index_dir": str(self.index_dir),
            "root": self.root,
            "root_exists": self.root_exists,
            "bytes": self.bytes,
        }


def folder_bytes(folder: Path) -> int:
    """Sum of the sizes of the regular files below ``folder``, bytes (unreadable entries count 0)."""
    total = 0
    for path in folder.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_size
        except OSError:
            continue
    return total


def list_indexes(cache: Path) -> list[IndexFolder]:
    """The index folders directly under ``cache``, sorted by workspace folder; ``[]`` when ``cache``
    does not exist. Never creates anything."""
    if not cache.is_dir():
        return []
    found = []
    for child in sorted(cache.iterdir()):
        if not child.is_dir() or child.is_symlink():
            continue
        if not ((child / "manifest.sqlite").exists() or (child / "root.txt").exists()):
            continue
        try:
            root = (child / "root.txt").read_text(encoding="utf-8").strip() or None
        except OSError:
            root = None
        found.append(IndexFolder(child, root, root is not None and Path(root).is_dir(), folder_bytes(child)))
    return sorted(found, key=lambda f: (f.root or "", str(f.index_dir)))


def remove_index(index: IndexFolder) -> None:
    """Delete ``index.index_dir`` while holding its write lock (so no codeask process is writing it).

    Raises:
        RuntimeError: another process holds the write lock (the message names it).
        OSError: the folder cannot be removed.
    """
    lock = filelock.FileLock(str(index.index_dir / "write.lock"))
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        try:
            owner = json.loads((index.index_dir / "write.owner").read_text(encoding="utf-8"))
            who = f"pid {owner.get('pid')} ({owner.get('argv', '').strip()})"
        except (OSError, ValueError):
            who = "another process"
        raise RuntimeError(f"the index {index.index_dir} is in use by {who}; stop it first") from None
    try:
        shutil.rmtree(index.index_dir)
    finally:
        lock.release()


@dataclass
class VectorStore:
    """The machine's vector store of one embedding model (:mod:`codeask.index.machine`): its folder
    (named by the model key), the vectors it holds and its size on disk (bytes)."""

    folder: Path
    vectors: int
    bytes: int

    def to_json(self) -> dict:
        """``{"dir", "model", "vectors", "bytes"}``."""
        return {"dir": str(self.folder), "model": self.folder.name, "vectors": self.vectors, "bytes": self.bytes}


def list_vector_stores(cache: Path) -> list[VectorStore]:
    """The machine's vector stores under ``cache`` (``<cache>/_vectors/<model key>``), by name; never
    creates anything. Counting opens each store read-only (LanceDB, imported only when one exists)."""
    from codeask.index.folders import VECTOR_STORES

    folder = cache / VECTOR_STORES
    if not folder.is_dir():
        return []
    from codeask.index.machine import folder_vectors  # imports LanceDB

    return [
        VectorStore(child, folder_vectors(child), folder_bytes(child))
        for child in sorted(folder.iterdir())
        if child.is_dir() and not child.is_symlink()
    ]


def remove_vector_store(store: VectorStore) -> None:
    """Delete ``store.folder`` while holding its write lock (no process is adding to it meanwhile;
    readers that still have it open lose only cache hits).

    Raises:
        RuntimeError: another process holds the write lock.
        OSError: the folder cannot be removed.
    """
    lock = filelock.FileLock(str(store.folder / "write.lock"))
    try:
        lock.acquire(timeout=5)
    except filelock.Timeout:
        raise RuntimeError(f"the vector store {store.folder} is being written by another process") from None
    try:
        shutil.rmtree(store.folder)
    finally:
        lock.release()
