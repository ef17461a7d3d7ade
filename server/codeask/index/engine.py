"""Incremental indexing of workspace roots: manifest, two phases, one writer, live updates.

Phase 1 (``sync_keywords``) walks a root, reads and hashes only files whose size or mtime changed, chunks
the changed ones and writes their rows with the full-text index: keyword search works as soon as it
ends. Vectors are content-addressed (``codeask.index.store``): a chunk whose embed hash already has a
vector has it at once, so an edited function is the only chunk of its file that waits, and a moved
file waits for nothing.

Phase 2 (``embed_pending``) embeds the texts that have no vector yet and commits them every
:data:`~codeask.index.phase2.EMBED_COMMIT_ROWS` texts or :data:`~codeask.index.phase2.EMBED_COMMIT_SECONDS` seconds, whichever comes first, so
any run longer than a few seconds makes durable progress; retrieval meanwhile uses what exists
(hybrid where vectors exist, keyword otherwise). Chunk rows and the full-text index are not touched.

``sync`` runs both for this root through :func:`codeask.index.phases.run_phases`, the one place
that sequences the phases (also for a workspace's roots, the MCP server and the language server).

Live updates (``update_paths``) re-check given files with the walk's own rules
(:func:`~codeask.index.walk.entry_for`), commit each file's new rows in one commit (keyword-searchable
at once: LanceDB also searches rows its full-text index has not folded in yet), then embed the new
chunks and commit their vectors before releasing the lock; unchanged chunks keep their vectors.

Crash safety: see ``codeask.index.manifest``. One writer per index: an inter-process file lock
(``write.lock``, released by the OS when its owner dies) around every write; a second process
either waits (``index``) or reads without writing (``ask``).

Nothing is created before the first write: opening a :class:`RootIndex` (``codeask status`` on a
folder never indexed) makes no folder and loads no model. An index folder that exists but cannot
be written (a read-only mount or folder) is read as it is: search works, every write raises
:class:`IndexReadOnly`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from codeask.index import live, phase1, phase2, phases
from codeask.index.embed import Embedder, load_embedder
from codeask.index.folders import IndexReadOnly, index_dir_for, make_index_dir, writable
from codeask.index.live import relative
from codeask.index.lock import IndexLocked, WriteLock
from codeask.index.manifest import Manifest
from codeask.index.meta import SCHEMA_VERSION, built_for, open_store, rows_outdated
from codeask.index.records import RootStatus
from codeask.index.stats import IndexStats, ProgressFn
from codeask.index.vectors import VectorSupply
from codeask.index.walk import Ignorer
from codeask.settings import Settings

if TYPE_CHECKING:
    from codeask.index.store import Store

# ``codeask.index.store`` imports LanceDB (~1.4 s): it is imported when an index is first opened,
# so the language server answers ``initialize`` without waiting for it.

__all__ = ["RootIndex", "SCHEMA_VERSION"]

#: Inserted chunk rows that make a compaction due (or 1/8 of the table, if more; see
#: :meth:`RootIndex.maybe_optimize`). Rows outside the full-text index are scanned by every keyword
#: search (sphinx 9.0.4's rows: ~0.1 ms each at load ~5), and each compaction rewrites the table and
#: every index on it (~1.2 s of CPU at 10,000 rows): at 2,048 a cold index of sphinx (or a copy of it)
#: compacted after nearly every 200-file batch, 5 times, 5.4 s of CPU of a 13 s keyword phase;
#: at 8,192 it compacts once before phase 1 ends, and a keyword search meanwhile scans at most
#: ~8,192 rows plus a batch.
_OPTIMIZE_ROWS = 8192
#: LanceDB compaction (and old-version cleanup) runs after this many commits (or
#: :data:`_OPTIMIZE_ROWS` inserted rows): ``bench/concurrency.py`` measured searches during live
#: updates at every 10 to 200 commits. Was ``index.compact_every``.
COMPACT_EVERY = 50


class RootIndex:
    """The index of one workspace root: walk -> chunk -> rows, incremental and crash-safe.

    Args:
        root: the workspace folder, kept as named (absolute, symlinks not resolved: ``root``);
            ``real_root`` is its resolved path.
        settings: loaded settings (``index``, ``embedding`` sections are used).
        embedder: the embedding model; loaded lazily (shared per process) when ``None``.
        background_indexing: where phase 2 runs the model. ``True`` (the default): in a child
            process niced by ``embedding.index_nice``, for a process that answers searches while it
            indexes (the language server, the MCP server, ``codeask watch``); ``False``: in this
            process at its own priority, for a foreground command whose user waits for exactly this
            work (``codeask index``, ``ask``, ``explain``, ``eval``). Live updates and queries use
            the normal-priority model either way.
    """

    def __init__(
        self,
        root: Path,
        settings: Settings,
        embedder: Embedder | None = None,
        *,
        background_indexing: bool = True,
    ):
        # The root as the client named it (a symlinked root stays the link: citations, URIs and
        # Locations use it, so editors do not open a second tab for the same file); the index is
        # keyed by its real path, which the symlink checks also use.
        self.root = Path(os.path.abspath(root))
        self.real_root = self.root.resolve()
        self.settings = settings
        self.index_dir = index_dir_for(self.root, settings)
        if self.index_dir == self.real_root or self.real_root in self.index_dir.parents:
            raise ValueError(f"the index folder {self.index_dir} must not be inside the workspace {self.root}")
        self._embedder = embedder
        #: Whether phase 2 embeds in the niced child process (see the class docstring).
        self.background_indexing = background_indexing
        #: Whether a phase 1 runs in this process (see :meth:`searchable`).
        self.phase1_running = False
        self._embedder_lock = threading.Lock()
        self._lock = WriteLock(self.index_dir)
        #: Live updates waiting for the write lock (phase 2 yields to them).
        self.urgent = 0
        self._urgent_lock = threading.Lock()
        self.ignorer = Ignorer(self.root, settings.index)
        self._manifest: Manifest | None = None
        self._open_lock = threading.Lock()
        self._store: Store | None = None
        self._store_lock = threading.Lock()
        #: Where missing vectors come from (machine's store, team cache, model), and how many each gave.
        self.supply = VectorSupply(settings, lambda: self.store, lambda: self.embedder)

    # ------------------------------------------------------------ resources
    @property
    def manifest_path(self) -> Path:
        """The index's ``manifest.sqlite``: the index exists when this file does."""
        return self.index_dir / "manifest.sqlite"

    def exists(self) -> bool:
        """Whether this root was ever indexed (its manifest exists); creates nothing."""
        return self.manifest_path.is_file()

    def searchable_as_is(self) -> bool:
        """Whether this root's index has rows that opening it keeps (:func:`~codeask.index.meta.built_for`:
        not one the next run rebuilds for another model or graph version); creates nothing."""
        return self.exists() and self.manifest.count() > 0 and built_for(self.manifest, self.settings)

    @property
    def read_only(self) -> bool:
        """Whether the index exists but its folder cannot be written (it is then searched as it is)."""
        return self.exists() and not writable(self.index_dir)

    def _create(self) -> None:
        """Create the index folder (and ``root.txt``, naming the root for humans).

        Raises:
            CacheDirError: the cache dir is a file or cannot be created.
            IndexReadOnly: the folder cannot be written (one line naming it and why).
        """
        make_index_dir(self.index_dir, self.settings)  # CacheDirError names the cache dir
        try:
            (self.index_dir / "root.txt").write_text(str(self.root) + "\n", encoding="utf-8")
        except OSError as exc:
            why = exc.strerror or type(exc).__name__
            raise IndexReadOnly(
                f"cannot create the index folder {self.index_dir}: {why}; set CODEASK_CACHE_DIR "
                "(or index.cache_dir) to a writable folder"
            ) from None

    @property
    def manifest(self) -> Manifest:
        """The per-file manifest, opened on first use: read-only for a read-only index; a new index
        folder is created here (never by ``status`` on a folder not indexed, see :meth:`status`).

        Raises:
            IndexReadOnly: a new index folder cannot be created.
        """
        with self._open_lock:
            if self._manifest is None:
                if not self.exists():
                    self._create()
                self._manifest = Manifest(self.manifest_path, read_only=self.read_only)
            return self._manifest

    @property
    def embedder(self) -> Embedder:
        """The embedding model, loaded on first use (shared per process, :func:`~codeask.index.embed.load_embedder`):
        the normal-priority one of queries and live updates; without ``background_indexing`` also phase 2's.

        Raises:
            EmbeddingError: the model's files are not available offline.
        """
        with self._embedder_lock:
            if self._embedder is None:
                self._embedder = load_embedder(self.settings.embedding, bulk=not self.background_indexing)
            return self._embedder

    @property
    def store(self) -> Store:
        """The chunk table; (re)created for the current embedding model.

        Opening an index built with the configured model does not load the model (so ``status``
        and keyword search stay fast); a new index, or another model, loads it for its dimension.
        """
        with self._store_lock:
            if self._store is None:
                self._store = self._open_store()
            return self._store

    def _open_store(self) -> Store:
        """Open the tables for the configured model (see :func:`codeask.index.meta.open_store`);
        caller holds ``_store_lock``."""
        return open_store(
            self.index_dir, self.manifest, self.settings, lambda: self.embedder.dim, lambda: self.writing(wait=True)
        )

    def close(self) -> None:
        """Close the manifest's SQLite connection (if it was opened)."""
        if self._manifest is not None:
            self._manifest.close()

    @contextmanager
    def writing(self, *, wait: bool = True, timeout: float | None = None) -> Iterator[None]:
        """Hold this index's write lock (in-process and inter-process).

        Args:
            wait: block until the lock is free; ``False`` raises at once if it is held.
            timeout: seconds to wait at most (``None``: forever).

        Raises:
            IndexLocked: the lock is held by another process (and ``wait`` is false or timed out).
            IndexReadOnly: the index folder is read-only or cannot be created.
        """
        if self.read_only:
            raise IndexReadOnly(
                f"the index {self.index_dir} is read-only: it is searched as it is and cannot be updated"
            )
        if not self.exists():
            self.manifest  # noqa: B018 - creates the index folder, or raises IndexReadOnly
        with self._lock.hold(wait=wait, timeout=timeout):
            yield

    def lock_message(self) -> str:
        """Who holds the write lock, as one line."""
        return self._lock.message()

    def is_locked_elsewhere(self) -> bool:
        """Whether another process holds this index's write lock (the inter-process lock is tried once,
        without waiting; see :meth:`writing`)."""
        try:
            with self.writing(wait=False):
                return False
        except IndexLocked:
            return True

    # ---------------------------------------------------------------- phase 1
    def sync(
        self,
        *,
        progress: ProgressFn | None = None,
        embed: bool = True,
        should_stop: Callable[[], bool] | None = None,
        wait: bool = True,
    ) -> IndexStats:
        """Bring the index up to date with the disk (phase 1), then fill vectors (phase 2): the
        sequence of :func:`codeask.index.phases.run_phases` for this root.

        Args:
            progress: called with :class:`Progress` reports of both phases.
            embed: run phase 2 too; ``False`` leaves vectors pending (keyword search works).
            should_stop: checked between batches; when true, the run ends early, consistent.
            wait: wait for another writer; ``False`` raises :class:`IndexLocked` instead.

        Raises:
            IndexLocked: another process writes this index and ``wait`` is false.
        """
        return phases.run_phases([self], progress=progress, embed=embed, should_stop=should_stop, wait=wait)

    def sync_keywords(
        self,
        *,
        progress: ProgressFn | None = None,
        should_stop: Callable[[], bool] | None = None,
        wait: bool = True,
    ) -> IndexStats:
        """Phase 1 alone (:func:`codeask.index.phase1.sync_root`): changed files -> rows with the
        full-text index, gone files removed, then compaction; vectors stay pending. Run by
        :func:`~codeask.index.phases.run_phases`, which owns the phase sequence.

        Raises:
            IndexLocked: another process writes this index and ``wait`` is false.
        """
        started = time.monotonic()
        stats = IndexStats(root=str(self.root))
        self.store  # noqa: B018 - opens the tables (starting over for another model) before the walk
        self.phase1_running = True
        try:
            return phase1.sync_root(self, stats, started, progress, should_stop, wait)
        finally:
            self.phase1_running = False

    def mark_urgent(self, delta: int) -> None:
        """Count live updates waiting for the write lock (phase 2 yields to them)."""
        with self._urgent_lock:
            self.urgent += delta

    def maybe_optimize(self, force: bool = False) -> None:
        """Compact LanceDB, fold new rows into its indexes, collect unused vectors, checkpoint the manifest.

        Due every :data:`COMPACT_EVERY` commits or 8,192 inserted chunk rows (or 1/8 of the table,
        if more): rows outside the full-text index are scanned by every keyword search, so they must
        not pile up. Old versions
        are kept for :data:`~codeask.index.store.KEEP_VERSIONS_MINUTES` (see ``codeask.index.store``).
        """
        store = self.store
        commits = store.commits_since_optimize
        # Rows due grow with the table (1/8 of it), so a cold index of a monorepo compacts a
        # logarithmic number of times instead of rewriting its growing fragments every 8,192 rows.
        rows_due = max(_OPTIMIZE_ROWS, store.count() // 8)
        due = commits >= COMPACT_EVERY or store.rows_since_optimize >= rows_due
        if commits and (force or due):
            store.optimize()
            self.manifest.checkpoint()

    # ---------------------------------------------------------------- phase 2
    def embed_pending(
        self,
        *,
        progress: ProgressFn | None = None,
        should_stop: Callable[[], bool] | None = None,
        wait: bool = True,
    ) -> int:
        """Embed every text that has no vector yet (phase 2, :func:`codeask.index.phase2.embed_pending`);
        returns the number of texts embedded by the model."""
        return phase2.embed_pending(self, progress=progress, should_stop=should_stop, wait=wait)

    # ------------------------------------------------------------ live updates
    def update_paths(self, abs_paths: Iterable[Path | str]) -> IndexStats:
        """Re-check specific files (saved, created, deleted, renamed): :func:`codeask.index.live.update_paths`."""
        return live.update_paths(self, abs_paths)

    def relative(self, path: Path | str) -> str | None:
        """``path`` relative to the root (see :func:`codeask.index.live.relative`); ``None`` outside."""
        return relative(self.root, self.real_root, path)

    # ------------------------------------------------------------------ status
    def searchable(self) -> bool:
        """Whether a phase 1 (walk + keyword rows) has completed for this root and none is running in
        this process. Indexes written before this was recorded count once they hold files."""
        if self.manifest.get_meta("last_walk") is not None:
            return True
        return self.manifest.count() > 0 and not self.phase1_running

    def last_skipped(self) -> dict[str, int]:
        """``files_skipped`` of the last completed walk (``{reason: count}``; ``{}`` if none)."""
        raw = self.manifest.get_meta("last_walk")
        try:
            return dict(json.loads(raw)["files_skipped"]) if raw else {}
        except (ValueError, KeyError, TypeError):
            return {}

    def status(self) -> RootStatus:
        """``{"root", "indexed", "read_only", "files", "chunks_total", "vectors_pending", "index_dir",
        "embedding_model", "index_bytes", "files_by_encoding", "outdated"}`` (``index_bytes``: the index
        folder's size on disk; ``files_by_encoding``: indexed files by the encoding they were read with;
        ``outdated``: rows cut by an older release, :func:`~codeask.index.meta.rows_outdated`).

        A root never indexed reports ``indexed: false`` and zeros, and nothing is created or loaded.
        """
        out: RootStatus = {
            "root": str(self.root),
            "indexed": self.exists(),
            "read_only": self.read_only,
            "files": 0,
            "chunks_total": 0,
            "vectors_pending": 0,
            "index_dir": str(self.index_dir),
            "embedding_model": self.settings.embedding.model,
            "index_bytes": 0,
            "files_by_encoding": {},
            "outdated": False,
        }
        if not out["indexed"]:
            return out
        store = self.store
        out["files"] = self.manifest.count()
        out["chunks_total"] = store.count()
        out["vectors_pending"] = store.count_pending()
        out["index_bytes"] = store.disk_bytes()
        out["files_by_encoding"] = self.manifest.by_encoding()
        out["outdated"] = rows_outdated(self.manifest)
        return out
