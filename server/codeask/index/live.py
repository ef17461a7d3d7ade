"""Live updates: which workspace files a batch of editor or watcher events names.

Events name paths (saved, created, deleted, renamed files and folders) that may lie outside the
root, under its real path, or be whole folders. These helpers turn them into workspace-relative file
paths; each file is then checked by :func:`codeask.index.walk.entry_for`, the rules the full walk
applies (ignore files, secrets, excludes, build output, symlinks), so a file is indexed after an
event exactly when the next walk would index it.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from codeask.index.ignore import CODEASKIGNORE, GITIGNORE, Ignorer
from codeask.index.phase1 import remove_paths, write_batch
from codeask.index.protocols import LiveRoot
from codeask.index.stats import IndexStats
from codeask.index.walk import FileEntry, entry_for

__all__ = ["update_paths", "relative", "expand_dirs", "changes_rules"]


def update_paths(index: LiveRoot, abs_paths: Iterable[Path | str]) -> IndexStats:
    """Re-check specific files (saved, created, deleted, renamed): commit their rows, then vectors.

    ``seconds_to_searchable`` in the result is the time until the rows were committed (keyword
    search finds them), ``seconds`` until their vectors were committed too.

    Paths outside the root are ignored; a path that is now ignored, a secret, or gone has its
    rows removed. A changed ``.gitignore``/``.codeaskignore`` triggers a full :meth:`sync`.
    """
    started = time.monotonic()
    stats = IndexStats(root=str(index.root))
    skipped: Counter[str] = Counter()
    rels: set[str] = set()
    for p in abs_paths:
        rel_s = index.relative(Path(p))
        if rel_s is not None:
            rels.add(rel_s)
    if any(changes_rules(r, index.ignorer) for r in rels):
        return index.sync(embed=True)
    index.mark_urgent(+1)
    try:
        with index.writing():
            texts = _write_rows(index, rels, stats, skipped)
            # Keyword-searchable now (LanceDB searches rows not yet in the full-text index);
            # the new chunks' vectors follow in a second commit, before the lock is released.
            stats.seconds_to_searchable = time.monotonic() - started
            if texts:
                reused_before = index.supply.chunks_reused
                new, stats.chunks_embedded = index.supply.fill(texts)
                stats.chunks_reused = index.supply.chunks_reused - reused_before
                index.store.put_vectors(new)
                index.supply.flush_machine()
            index.maybe_optimize()
    finally:
        index.mark_urgent(-1)
    stats.files_skipped = dict(skipped)
    stats.chunks_total = index.store.count()
    stats.vectors_pending = index.store.count_pending()
    stats.seconds = time.monotonic() - started
    return stats


def _write_rows(index: LiveRoot, rels: set[str], stats: IndexStats, skipped: Counter[str]) -> dict[str, str]:
    """Commit the rows of the files ``rels`` name (folders expanded) and remove those of files gone,
    ignored or secret now (caller holds the write lock); returns ``{embed_hash: text}`` to embed."""
    rels = expand_dirs(index.root, index.ignorer, lambda: set(index.manifest.all()) | index.manifest.dirty(), rels)
    known = {r: rec for r in rels if (rec := index.manifest.get(r)) is not None}
    entries: list[FileEntry] = []
    gone: list[str] = []
    for rel_s in sorted(rels):
        got = entry_for(index.root, rel_s, index.settings.index, index.ignorer)
        if isinstance(got, FileEntry):
            entries.append(got)
            continue
        if got != "vanished":
            skipped[got] += 1
        if rel_s in known or got == "vanished":
            gone.append(rel_s)
    if gone:
        dirty = index.manifest.dirty()
        remove_paths(index, [g for g in gone if g in known or g in dirty], stats)
    stats.files_seen = len(entries)
    return write_batch(index, entries, known, stats, skipped) if entries else {}


def relative(root: Path, real_root: Path, path: Path | str) -> str | None:
    """``path`` relative to ``root``, POSIX (a link's own path, not its target); ``None`` outside.

    A path under the root as named, or under its real path ``real_root`` (a resolved path of a
    symlinked root), both count; a relative ``path`` is taken relative to ``root``."""
    path = Path(path)
    path = Path(os.path.abspath(path if path.is_absolute() else root / path))
    try:
        rel = path.relative_to(root)
    except ValueError:
        try:  # the other name of a symlinked root
            rel = path.relative_to(real_root)
        except ValueError:
            try:
                rel = path.resolve().relative_to(real_root)
            except (ValueError, OSError):
                return None
    rel_s = rel.as_posix()
    return None if rel_s in (".", "") else rel_s


def changes_rules(rel: str, ignorer: Ignorer) -> bool:
    """Whether ``rel`` is an ignore file that applies (``.codeaskignore`` or a ``.gitignore`` in a
    folder that is not itself skipped): the indexed set must then be recomputed by a full walk."""
    parent, _, name = rel.rpartition("/")
    return name in (GITIGNORE, CODEASKIGNORE) and (not parent or ignorer.reason(parent, is_dir=True) is None)


def expand_dirs(root: Path, ignorer: Ignorer, indexed: Callable[[], Iterable[str]], rels: set[str]) -> set[str]:
    """Folders in ``rels`` (workspace-relative) become the files below them.

    A new folder's files may come without events of their own (the watch on a new folder starts
    after its first files are written): its files are listed, skipped folders (by ``ignorer``) not
    entered. A removed folder's files are those of ``indexed()`` (the manifest's paths, read once,
    only when needed) below it. Symlinks inside a new folder are not followed here; the next full
    walk picks them up.
    """
    out: set[str] = set()
    known: set[str] | None = None
    for rel_s in rels:
        abs_path = root / rel_s
        if abs_path.is_dir():
            if ignorer.reason(rel_s, is_dir=True) is not None:
                continue
            for dirpath, dirnames, filenames in os.walk(abs_path):
                rel_dir = Path(dirpath).relative_to(root).as_posix()
                dirnames[:] = [d for d in dirnames if ignorer.reason(f"{rel_dir}/{d}", is_dir=True) is None]
                out.update(f"{rel_dir}/{name}" for name in filenames)
        elif not abs_path.exists() and not abs_path.is_symlink():
            if known is None:
                known = set(indexed())
            prefix = rel_s + "/"
            out.update({p for p in known if p.startswith(prefix)} or {rel_s})
        else:
            out.add(rel_s)
    return out
