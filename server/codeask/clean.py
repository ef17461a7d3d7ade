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
import sys
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
    "clean_command",
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


def clean_command(args) -> int:
    """``codeask clean [PATH...] [--missing] [--all] [--json]``: list the indexes in the cache dir
    with their sizes, or remove some; returns the exit code (1 when a removal failed).

    Raises:
        CLIError: ``--all`` with other arguments, or a PATH without an index.
    """
    from codeask.console import CLIError
    from codeask.index.folders import cache_root, index_dir_for
    from codeask.settings import load_settings

    if args.all and (args.missing or args.path):
        raise CLIError("--all removes every index: give it alone")
    settings = load_settings(None)
    cache = cache_root(settings)
    indexes = list_indexes(cache)
    if args.all:
        chosen = list(indexes)
    else:
        chosen = [i for i in indexes if args.missing and not i.root_exists]
        for path in args.path:
            want = Path(path).expanduser().resolve()
            matches = [i for i in indexes if i.root == str(want) or i.index_dir == index_dir_for(want, settings)]
            if not matches:
                raise CLIError(f"no index of {want} in {cache}")
            chosen += [m for m in matches if m not in chosen]
    removing = bool(args.all or args.missing or args.path)
    stores, stores_removed, failed = _clean_vector_stores(cache, remove=bool(args.all))
    removed = []
    for index in chosen:
        try:
            remove_index(index)
            removed.append(index)
        except (RuntimeError, OSError) as exc:
            failed.append(f"{index.index_dir}: {exc}")
    if args.json:
        out = {
            "cache_dir": str(cache),
            "indexes": [dict(i.to_json(), removed=i in removed) for i in indexes],
            "removed": len(removed),
            "removed_bytes": sum(i.bytes for i in removed),
            "total_bytes": sum(i.bytes for i in indexes),
            "vector_stores": [dict(s.to_json(), removed=s in stores_removed) for s in stores],
            "vector_store_bytes": sum(s.bytes for s in stores),
        }
        print(json.dumps(out))
    else:
        _print_clean(cache, indexes, removed, stores, stores_removed, removing=removing)
    for line in failed:
        print(f"codeask: {line}", file=sys.stderr)
    return 1 if failed else 0


def _clean_vector_stores(cache: Path, *, remove: bool) -> tuple[list, list, list[str]]:
    """``codeask clean``'s part for the machine's vector stores (:func:`list_vector_stores`):
    ``(stores, removed, failure lines)``, removing every store with ``--all``."""
    stores, removed, failed = list_vector_stores(cache), [], []
    for store in stores if remove else []:
        try:
            remove_vector_store(store)
            removed.append(store)
        except (RuntimeError, OSError) as exc:
            failed.append(f"{store.folder}: {exc}")
    return stores, removed, failed


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _print_clean(
    cache: Path,
    indexes: list[IndexFolder],
    removed: list[IndexFolder],
    stores: list[VectorStore],
    stores_removed: list[VectorStore],
    *,
    removing: bool,
) -> None:
    """``codeask clean``'s listing as text: one line per index and vector store, then the totals."""
    for index in indexes:
        mark = "removed " if index in removed else ("gone    " if not index.root_exists else "        ")
        print(f"{mark}{_size(index.bytes):>9}  {index.root or '?'}  ({index.index_dir.name})")
    for store in stores:
        mark = "removed " if store in stores_removed else "        "
        print(f"{mark}{_size(store.bytes):>9}  {store.vectors:,} vectors shared by every index ({store.folder.name})")
    total = sum(i.bytes for i in indexes)
    print(f"{len(indexes)} indexes, {_size(total)} in {cache}", end="")
    if removing:
        print(f"; removed {len(removed)} ({_size(sum(i.bytes for i in removed))})")
    else:
        gone = sum(1 for i in indexes if not i.root_exists)
        hint = f"; {gone} of folders that no longer exist (codeask clean --missing)" if gone else ""
        print(f"{hint}; remove with codeask clean PATH | --missing | --all")
