"""Incremental indexing of workspace roots: manifest, two phases, one writer, live updates.

Phase 1 (``sync``) walks a root, reads and hashes only files whose size or mtime changed, chunks
the changed ones and writes their rows with the full-text index: keyword search works as soon as it
ends. Vectors are content-addressed (``codeask.index.store``): a chunk whose embed hash already has a
vector has it at once, so an edited function is the only chunk of its file that waits, and a moved
file waits for nothing.

Phase 2 (``embed_pending``) embeds the texts that have no vector yet and commits them every
``index.embed_commit_rows`` texts or ``index.embed_commit_seconds`` seconds, whichever comes first, so
any run longer than a few seconds makes durable progress; retrieval meanwhile uses what exists
(hybrid where vectors exist, keyword otherwise). Chunk rows and the full-text index are not touched.

Live updates (``update_paths``) re-check given files and embed their new chunks inline before the
single commit, so a saved file is searchable by keyword and vector together.

Crash safety: see ``codeask.index.manifest``. One writer per index: an inter-process file lock
(``write.lock``, released by the OS when its owner dies) around every write; a second process
either waits (``index``) or reads without writing (``ask``).

Nothing is created before the first write: opening a :class:`RootIndex` (``codeask status`` on a
folder never indexed) makes no folder and loads no model. An index folder that exists but cannot
be written (a read-only mount or folder) is read as it is: search works, every write raises
:class:`IndexReadOnly`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import filelock
import numpy as np
import platformdirs

from codeask.imports import load
from codeask.index.chunk import chunk_text
from codeask.index.embed import Embedder, load_embedder
from codeask.index.manifest import FileRecord, Manifest
from codeask.index.vectors import ReadOnlyCache, fill_vectors
from codeask.index.walk import FileEntry, FileText, Ignorer, read_text, walk
from codeask.settings import Settings

if TYPE_CHECKING:
    from codeask.index.shared import SharedReader
    from codeask.index.store import Store

# ``codeask.index.store`` imports LanceDB (~1.4 s): it is imported when an index is first opened,
# so the language server answers ``initialize`` without waiting for it.

__all__ = [
    "RootIndex",
    "IndexStats",
    "Progress",
    "IndexLocked",
    "IndexReadOnly",
    "CacheDirError",
    "index_dir_for",
    "cache_root",
    "SCHEMA_VERSION",
]

SCHEMA_VERSION = "2"
log = logging.getLogger(__name__)
_EMBED_ROUND_TEXTS = 1024
_EMBED_GROUP_TEXTS = 32
_OPTIMIZE_ROWS = 2048


class CacheDirError(RuntimeError):
    """The index cache dir is a file, or cannot be created; the message names it as the cache dir
    and where its value came from."""


class IndexLocked(RuntimeError):
    """Another process holds the index's write lock; the message names its pid and command."""


class IndexReadOnly(RuntimeError):
    """The index cannot be written: its folder is read-only, or it cannot be created (the message
    names the folder and the OS error)."""


def _writable(folder: Path) -> bool:
    """Whether files can be created in ``folder`` (``access(2)``: also false on a read-only mount)."""
    return os.access(folder, os.W_OK | os.X_OK)


@dataclass
class Progress:
    """A progress report: ``phase`` is ``scan``, ``index`` (phase 1) or ``embed`` (phase 2).

    ``done``/``total`` count files (scan, index) or chunks (embed); ``eta_seconds`` is ``None``
    until a rate is known.
    """

    phase: str
    done: int
    total: int
    message: str = ""
    eta_seconds: float | None = None

    @property
    def percent(self) -> int:
        """``done / total`` as a whole percentage (rounded down); 100 when ``total`` is 0."""
        return int(100 * self.done / self.total) if self.total else 100


ProgressFn = Callable[[Progress], None]


@dataclass
class IndexStats:
    """What one indexing run did; serialized as-is by ``codeask index --json``.

    ``files_skipped`` maps a skip reason (``binary``, ``secret``, ...) to a count; ``seconds`` is
    wall time of the run.
    """

    root: str = ""
    files_seen: int = 0
    files_changed: int = 0
    files_removed: int = 0
    files_skipped: dict[str, int] = field(default_factory=dict)
    chunks_embedded: int = 0
    chunks_shared: int = 0
    chunks_deleted: int = 0
    chunks_total: int = 0
    vectors_pending: int = 0
    seconds: float = 0.0
    seconds_to_searchable: float = 0.0
    paths_changed: list[str] = field(default_factory=list)
    paths_removed: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """The fields as a plain dict (:func:`dataclasses.asdict`), as ``codeask index --json`` prints it."""
        return asdict(self)

    def merge(self, other: IndexStats) -> IndexStats:
        """Sum of two runs (for multi-root totals); ``root`` is ``""`` once two roots were summed."""
        skipped = Counter(self.files_skipped)
        skipped.update(other.files_skipped)
        return IndexStats(
            root=other.root if not self.root else (self.root if self.root == other.root else ""),
            files_seen=self.files_seen + other.files_seen,
            files_changed=self.files_changed + other.files_changed,
            files_removed=self.files_removed + other.files_removed,
            files_skipped=dict(skipped),
            chunks_embedded=self.chunks_embedded + other.chunks_embedded,
            chunks_shared=self.chunks_shared + other.chunks_shared,
            chunks_deleted=self.chunks_deleted + other.chunks_deleted,
            chunks_total=self.chunks_total + other.chunks_total,
            vectors_pending=self.vectors_pending + other.vectors_pending,
            seconds=self.seconds + other.seconds,
            seconds_to_searchable=self.seconds_to_searchable + other.seconds_to_searchable,
            paths_changed=self.paths_changed + other.paths_changed,
            paths_removed=self.paths_removed + other.paths_removed,
        )


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


def _make_index_dir(index_dir: Path, settings: Settings) -> None:
    """Create ``index_dir`` under the cache dir.

    Raises:
        CacheDirError: the cache dir (or a parent) is a file, or the folder cannot be created.
    """
    cache = cache_root(settings)
    where = "CODEASK_CACHE_DIR or index.cache_dir" if settings.index.cache_dir else "the user cache dir"
    if cache.exists() and not cache.is_dir():
        raise CacheDirError(f"the cache dir {cache} ({where}) is a file, not a folder; point it at a folder")
    try:
        index_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CacheDirError(
            f"cannot create the cache dir {cache} ({where}): {exc.strerror or exc}; point it at a writable folder"
        ) from exc


class RootIndex:
    """The index of one workspace root: walk -> chunk -> rows, incremental and crash-safe.

    Args:
        root: the workspace folder, kept as named (absolute, symlinks not resolved: ``root``);
            ``real_root`` is its resolved path.
        settings: loaded settings (``index``, ``embedding`` sections are used).
        embedder: the embedding model; loaded lazily (shared per process) when ``None``.
    """

    def __init__(self, root: Path, settings: Settings, embedder: Embedder | None = None):
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
        self._phase1_running = False
        self._embedder_lock = threading.Lock()
        self._write_lock = threading.RLock()
        self._file_lock = filelock.FileLock(str(self.index_dir / "write.lock"))
        self._owner_file = self.index_dir / "write.owner"
        self._urgent = 0
        self._urgent_lock = threading.Lock()
        self.ignorer = Ignorer(self.root, settings.index)
        self._manifest: Manifest | None = None
        self._open_lock = threading.Lock()
        self._store: Store | None = None
        self._store_lock = threading.Lock()
        self._shared: SharedReader | None = None
        #: Vectors taken from the shared cache by this object so far (see :meth:`_fill_vectors`).
        self.chunks_shared = 0

    # ------------------------------------------------------------ resources
    @property
    def manifest_path(self) -> Path:
        """The index's ``manifest.sqlite``: the index exists when this file does."""
        return self.index_dir / "manifest.sqlite"

    def exists(self) -> bool:
        """Whether this root was ever indexed (its manifest exists); creates nothing."""
        return self.manifest_path.is_file()

    @property
    def read_only(self) -> bool:
        """Whether the index exists but its folder cannot be written (it is then searched as it is)."""
        return self.exists() and not _writable(self.index_dir)

    def _create(self) -> None:
        """Create the index folder (and ``root.txt``, naming the root for humans).

        Raises:
            CacheDirError: the cache dir is a file or cannot be created.
            IndexReadOnly: the folder cannot be written (one line naming it and why).
        """
        _make_index_dir(self.index_dir, self.settings)  # CacheDirError names the cache dir
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
        """The embedding model, loaded on first use (shared per process, :func:`~codeask.index.embed.load_embedder`).

        Raises:
            EmbeddingError: the model's files are not available offline.
        """
        with self._embedder_lock:
            if self._embedder is None:
                self._embedder = load_embedder(self.settings.embedding)
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
        """Open (or, after a model or schema change, recreate) the tables; caller holds ``_store_lock``."""
        Store = load("codeask.index.store").Store  # under the one import lock (codeask.imports)

        model = self.settings.embedding.model
        have = self.manifest.get_meta("index")
        try:
            meta = json.loads(have) if have else {}
        except ValueError:
            meta = {}
        if meta.get("model") == model and meta.get("schema") == SCHEMA_VERSION and meta.get("dim"):
            dim = int(meta["dim"])
        else:
            dim = self.embedder.dim
        want = json.dumps({"model": model, "dim": dim, "schema": SCHEMA_VERSION})
        if have != want and self.manifest.read_only:
            raise IndexReadOnly(
                f"the index {self.index_dir} is read-only and was built for another embedding model or "
                f"schema ({have}); it cannot be rebuilt"
            )
        if have is None:
            self.manifest.set_meta("index", want)  # a new index: nothing to clear
        elif have != want:
            with self.writing(wait=True):
                # Re-read under the write lock: another process (or another RootIndex of this
                # folder) may have just done this; only the first one starts over.
                have = self.manifest.get_meta("index")
                if have != want:
                    # Another model or schema: vectors are not comparable, start over.
                    self.manifest.clear()
                    shutil.rmtree(self.index_dir / "lance", ignore_errors=True)
                    self.manifest.set_meta("index", want)
        store = Store(
            self.index_dir,
            dim,
            keep_versions_minutes=self.settings.index.keep_versions_minutes,
            ann_min_rows=self.settings.index.ann_min_rows,
        )
        return store

    def close(self) -> None:
        """Close the manifest's SQLite connection (if it was opened)."""
        if self._manifest is not None:
            self._manifest.close()

    @contextmanager
    def writing(self, *, wait: bool = True, timeout: float | None = None):
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
        with self._write_lock:
            try:
                self._file_lock.acquire(timeout=0)
            except filelock.Timeout:
                if not wait:
                    raise IndexLocked(self.lock_message()) from None
                log.warning("%s; waiting for it to finish", self.lock_message())
                try:
                    self._file_lock.acquire(timeout=-1 if timeout is None else timeout)
                except filelock.Timeout:
                    raise IndexLocked(self.lock_message()) from None
            try:
                if self._file_lock.lock_counter == 1:
                    self._owner_file.write_text(
                        json.dumps({"pid": os.getpid(), "argv": " ".join(sys.argv[:3])}), encoding="utf-8"
                    )
                yield
            finally:
                self._file_lock.release()

    def lock_message(self) -> str:
        """Who holds the write lock, as one line."""
        try:
            owner = json.loads(self._owner_file.read_text(encoding="utf-8"))
            who = f"pid {owner.get('pid')} ({owner.get('argv', '').strip()})"
        except (OSError, ValueError):
            who = "another process"
        return f"the index {self.index_dir} is being updated by {who}"

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
        """Bring the index up to date with the disk (phase 1), then fill vectors (phase 2).

        Args:
            progress: called with :class:`Progress` reports of both phases.
            embed: run phase 2 too; ``False`` leaves vectors pending (keyword search works).
            should_stop: checked between batches; when true, the run ends early, consistent.
            wait: wait for another writer; ``False`` raises :class:`IndexLocked` instead.

        Raises:
            IndexLocked: another process writes this index and ``wait`` is false.
        """
        started = time.monotonic()
        stats = IndexStats(root=str(self.root))
        store = self.store
        self._phase1_running = True
        try:
            return self._sync(stats, store, started, progress, embed, should_stop, wait)
        finally:
            self._phase1_running = False

    def _sync(self, stats, store, started, progress, embed, should_stop, wait) -> IndexStats:
        stopped = False
        shared_before = self.chunks_shared
        with self.writing(wait=wait):
            self.ignorer.refresh()
            result = walk(self.root, self.settings.index, self.ignorer)
            stats.files_seen = len(result.files)
            skipped = Counter(result.skipped)
            if progress:
                progress(Progress("scan", len(result.files), len(result.files), f"{len(result.files)} files"))
            known = self.manifest.all()
            seen = {f.path for f in result.files}
            candidates = [
                f
                for f in result.files
                if (rec := known.get(f.path)) is None or rec.size != f.size or rec.mtime_ns != f.mtime_ns
            ]
            # Files gone from disk, plus files a killed run was rewriting (their rows may be committed).
            gone = (set(known) | self.manifest.dirty()) - seen
        batch_size = max(1, self.settings.index.write_batch_files)
        total = len(candidates)
        for start in range(0, total, batch_size):
            if should_stop and should_stop():
                stopped = True
                break
            with self.writing(wait=wait):
                self._write_batch(candidates[start : start + batch_size], known, stats, skipped)
                store.ensure_indexes()  # keyword search works from the first batch on
                self._maybe_optimize()
            if progress:
                done = min(total, start + batch_size)
                elapsed = time.monotonic() - started
                progress(
                    Progress(
                        "index",
                        done,
                        total,
                        f"{done}/{total} files",
                        elapsed / done * (total - done) if done else None,
                    )
                )
        if should_stop and should_stop():  # stopped: what is committed stays; the next run goes on
            stats.files_skipped = dict(skipped)
            stats.seconds = time.monotonic() - started
            return stats
        # Removed after the writes, so a moved file's new rows reuse the old rows' vectors.
        self._remove(sorted(gone), stats, unless_back=True)
        with self.writing(wait=wait):
            # Fold phase 1's rows into the full-text index now: phase 2 never rewrites chunk rows,
            # so keyword search is as fast while vectors are computed as after.
            store.ensure_indexes()
            if store.rows_since_optimize:
                self._maybe_optimize(force=True)
            if not stopped:
                self.manifest.set_meta("last_walk", json.dumps({"files_skipped": dict(skipped)}))
        self._phase1_running = False
        stats.files_skipped = dict(skipped)
        stats.seconds_to_searchable = time.monotonic() - started
        if embed:
            stats.chunks_embedded += self.embed_pending(progress=progress, should_stop=should_stop, wait=wait)
        with self.writing(wait=wait):
            self._maybe_optimize(force=True)
        stats.chunks_total = store.count()
        stats.vectors_pending = store.count_pending()
        stats.chunks_shared = self.chunks_shared - shared_before
        stats.seconds = time.monotonic() - started
        return stats

    def _remove(self, paths: list[str], stats: IndexStats, *, unless_back: bool = False) -> None:
        """Delete the rows and manifest entries of ``paths``.

        With ``unless_back``, a path that is an indexable file again by the time the write lock is
        held (a live update re-indexed it after the walk) is kept.
        """
        if not paths:
            return
        store = self.store
        with self.writing():
            if unless_back:
                paths = [p for p in paths if not ((self.root / p).is_file() and self.ignorer.reason(p) is None)]
            for start in range(0, len(paths), 500):
                part = paths[start : start + 500]
                self.manifest.forget(part)
                stats.chunks_deleted += store.replace_files(part, [])[1]
                self.manifest.done(part)
            stats.files_removed += len(paths)
            stats.paths_removed.extend(paths)

    def _read(self, entry: FileEntry) -> FileText | str:
        return read_text(entry.abs_path, self.settings.index)

    def _write_batch(
        self,
        entries: list[FileEntry],
        known: dict[str, FileRecord],
        stats: IndexStats,
        skipped: Counter,
        *,
        embed_now: bool = False,
    ) -> None:
        """Read, chunk and commit one batch of files (caller holds the write lock)."""
        store = self.store
        chunks_by_path: dict[str, list] = {}
        records: list[FileRecord] = []
        touch: list[FileRecord] = []
        drop: list[str] = []
        for entry in entries:
            got = self._read(entry)
            old = known.get(entry.path)
            if isinstance(got, str):
                skipped[got] += 1
                if old is not None or got == "vanished":
                    drop.append(entry.path)
                continue
            record = FileRecord(entry.path, got.content_hash, got.size, entry.mtime_ns, 0)
            if old is not None and old.content_hash == got.content_hash:
                touch.append(FileRecord(entry.path, old.content_hash, entry.size, entry.mtime_ns, old.chunks))
                continue
            chunks = chunk_text(
                entry.path,
                got.text,
                chunk_lines=self.settings.index.chunk_lines,
                max_chunk_chars=self.settings.index.max_chunk_chars,
            )
            chunks_by_path[entry.path] = chunks
            records.append(FileRecord(entry.path, record.content_hash, record.size, record.mtime_ns, len(chunks)))
        if touch:
            self.manifest.record(touch)
        if drop:
            self._remove(drop, stats)
        if not records:
            return
        from codeask.index.store import chunk_rows, embed_text

        all_chunks = [c for chunks in chunks_by_path.values() for c in chunks]
        rows = chunk_rows(all_chunks)
        if embed_now:
            # Vectors first: when the rows become visible, their vectors already are.
            new, embedded = self._fill_vectors(
                {r["embed_hash"]: embed_text(r["symbol"], r["content"]) for r in rows}, embed=embed_now
            )
            store.put_vectors(new)
            stats.chunks_embedded += embedded
        paths = [r.path for r in records]
        self.manifest.forget(paths)
        stats.chunks_deleted += store.replace_files(paths, rows)[1]
        self.manifest.record(records)
        stats.files_changed += len(records)
        stats.paths_changed.extend(paths)

    def _fill_vectors(
        self,
        texts: dict[str, str],
        *,
        embed: bool,
        use_shared: bool = False,
        should_stop: Callable[[], bool] | None = None,
    ) -> tuple[dict[str, np.ndarray], int]:
        """Vectors the store lacks for ``{embed_hash: text}``: :func:`~codeask.index.vectors.fill_vectors`
        with the team's shared cache (``shared.url``, one query per call) when ``use_shared`` (phase 2;
        live edits are embedded locally, without a network round trip), then (with ``embed``) the
        model. Returns ``({embed_hash: (dim,) float32}, texts embedded)``; vectors taken from the
        shared cache are counted in ``self.chunks_shared``.

        Raises:
            InterruptedError: ``should_stop()`` became true between embedding batches.
        """
        shared = self.shared if use_shared else None
        caches = [ReadOnlyCache(shared.fetch)] if shared is not None else []
        model = (lambda batch: self.embedder.embed(batch, should_stop=should_stop)) if embed else None
        new, embedded = fill_vectors(texts, self.store, caches, model)
        self.chunks_shared += len(new) - embedded
        return new, embedded

    @property
    def shared(self) -> SharedReader | None:
        """The team's shared vector cache (``shared.url``), or ``None`` when none is configured."""
        url = self.settings.shared.url
        if not url:
            return None
        if self._shared is None:
            from codeask.index.shared import SharedReader, SharedVectorCache, model_id

            emb = self.settings.embedding
            self._shared = SharedReader(SharedVectorCache(url, model_id(emb.model, emb.max_tokens), self.store.dim))
        return self._shared

    def _mark_urgent(self, delta: int) -> None:
        """Count live updates waiting for the write lock (phase 2 yields to them)."""
        with self._urgent_lock:
            self._urgent += delta

    def _maybe_optimize(self, force: bool = False) -> None:
        """Compact LanceDB, fold new rows into its indexes, collect unused vectors, checkpoint the manifest.

        Due every ``index.compact_every`` commits or 2,048 inserted chunk rows (or 1/8 of the table,
        if more): rows outside the full-text index are scanned by every keyword search, so they must
        not pile up. Old versions
        are kept for ``index.keep_versions_minutes`` (see ``codeask.index.store``).
        """
        store = self.store
        commits = store.commits_since_optimize
        # Rows due grow with the table (1/8 of it), so a cold index of a monorepo compacts a
        # logarithmic number of times instead of rewriting its growing fragments every 2,048 rows.
        rows_due = max(_OPTIMIZE_ROWS, store.count() // 8)
        due = commits >= self.settings.index.compact_every or store.rows_since_optimize >= rows_due
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
        """Embed every text that has no vector yet; returns the number of texts embedded.

        Texts are embedded in groups of 32 under the write lock (released between groups, and
        waiting live updates go first) and committed every ``index.embed_commit_rows`` texts or
        ``index.embed_commit_seconds`` seconds, whichever comes first, and when stopped: a run
        longer than a few seconds always leaves durable progress (issue 18, item 6).
        """
        store = self.store
        s = self.settings.index
        total = store.count_pending(distinct=True)
        done = embedded = 0
        started = time.monotonic()
        buffer: dict[str, np.ndarray] = {}
        last_commit = time.monotonic()

        def commit() -> None:
            nonlocal last_commit
            if buffer:
                with self.writing(wait=wait):
                    store.put_vectors(buffer)
                    self._maybe_optimize()
                buffer.clear()
            last_commit = time.monotonic()

        stopped = False
        while not stopped:
            texts = store.pending_texts(_EMBED_ROUND_TEXTS)
            todo = [h for h in texts if h not in buffer]
            if not todo:
                break
            for start in range(0, len(todo), _EMBED_GROUP_TEXTS):
                if should_stop and should_stop():
                    stopped = True
                    break
                if self._urgent:
                    commit()  # a live update may need these vectors
                    while self._urgent:
                        time.sleep(0.01)
                group = {h: texts[h] for h in todo[start : start + _EMBED_GROUP_TEXTS]}
                try:
                    with self.writing(wait=wait):
                        new, count = self._fill_vectors(group, embed=True, use_shared=True, should_stop=should_stop)
                except InterruptedError:  # stopped mid-group: what was committed or buffered is kept
                    stopped = True
                    break
                buffer.update(new)
                embedded += count
                done += len(group)
                if len(buffer) >= s.embed_commit_rows or time.monotonic() - last_commit >= s.embed_commit_seconds:
                    commit()
                if progress:
                    elapsed = time.monotonic() - started
                    total = max(total, done)
                    progress(
                        Progress(
                            "embed",
                            done,
                            total,
                            f"{done}/{total} chunks embedded",
                            elapsed / done * (total - done) if done else None,
                        )
                    )
        commit()
        if done and not (should_stop and should_stop()):
            with self.writing(wait=wait):
                self._maybe_optimize(force=True)
        return embedded

    # ------------------------------------------------------------ live updates
    def update_paths(self, abs_paths: Iterable[Path | str]) -> IndexStats:
        """Re-check specific files (saved, created, deleted, renamed) and commit them with vectors.

        Paths outside the root are ignored; a path that is now ignored, a secret, or gone has its
        rows removed. A changed ``.gitignore``/``.codeaskignore`` triggers a full :meth:`sync`.
        """
        started = time.monotonic()
        stats = IndexStats(root=str(self.root))
        skipped: Counter = Counter()
        rels: set[str] = set()
        rules_changed = False
        for p in abs_paths:
            rel_s = self.relative(Path(p))
            if rel_s is None:
                continue
            parent, _, name = rel_s.rpartition("/")
            if name in (".gitignore", ".codeaskignore") and (
                not parent or self.ignorer.reason(parent, is_dir=True) is None
            ):
                rules_changed = True
            rels.add(rel_s)
        if rules_changed:
            return self.sync(embed=True)
        self._mark_urgent(+1)
        try:
            with self.writing():
                rels = self._expand_dirs(rels)
                known = {r: rec for r in rels if (rec := self.manifest.get(r)) is not None}
                entries: list[FileEntry] = []
                gone: list[str] = []
                for rel_s in sorted(rels):
                    abs_path = self.root / rel_s
                    reason = self.ignorer.reason(rel_s) or self._link_reason(abs_path)
                    if reason is not None or not abs_path.is_file():
                        if reason is not None:
                            skipped[reason] += 1
                        if rel_s in known or (reason is None and not abs_path.exists()):
                            gone.append(rel_s)
                        continue
                    try:
                        st = abs_path.stat()
                    except OSError:
                        gone.append(rel_s)
                        continue
                    entries.append(FileEntry(rel_s, str(abs_path), st.st_size, st.st_mtime_ns))
                if gone:
                    dirty = self.manifest.dirty()
                    self._remove([g for g in gone if g in known or g in dirty], stats)
                stats.files_seen = len(entries)
                if entries:
                    self._write_batch(entries, known, stats, skipped, embed_now=True)
                self._maybe_optimize()
        finally:
            self._mark_urgent(-1)
        stats.files_skipped = dict(skipped)
        stats.chunks_total = self.store.count()
        stats.vectors_pending = self.store.count_pending()
        stats.seconds = stats.seconds_to_searchable = time.monotonic() - started
        return stats

    def relative(self, path: Path | str) -> str | None:
        """``path`` relative to the root, POSIX (the link's own path, not its target); ``None`` outside.

        A path under the root as named, or under its real path (a resolved path of a symlinked
        root), both count."""
        path = Path(path)
        path = Path(os.path.abspath(path if path.is_absolute() else self.root / path))
        try:
            rel = path.relative_to(self.root)
        except ValueError:
            try:  # the other name of a symlinked root
                rel = path.relative_to(self.real_root)
            except ValueError:
                try:
                    rel = path.resolve().relative_to(self.real_root)
                except (ValueError, OSError):
                    return None
        rel_s = rel.as_posix()
        return None if rel_s in (".", "") else rel_s

    def _link_reason(self, abs_path: Path) -> str | None:
        """The walk's symlink rules for one path: links are followed only when ``follow_symlinks``
        is on and their target stays inside the root (else ``"outside_root"``)."""
        try:
            real = abs_path.resolve()
            unlinked = self.real_root / abs_path.relative_to(self.root)
        except (OSError, RuntimeError):  # a loop
            return "symlink_loop"
        except ValueError:
            unlinked = abs_path
        if real == unlinked:
            return None
        if not self.settings.index.follow_symlinks:
            return "excluded"
        return None if self.real_root in real.parents else "outside_root"

    def _expand_dirs(self, rels: set[str]) -> set[str]:
        """Folders in ``rels`` become the files below them.

        A new folder's files may come without events of their own (the watch on a new folder starts
        after its first files are written); a removed folder's indexed files are in the manifest.
        Symlinks inside a new folder are not followed here; the next full sync picks them up.
        """
        out: set[str] = set()
        indexed: set[str] | None = None
        for rel_s in rels:
            abs_path = self.root / rel_s
            if abs_path.is_dir():
                if self.ignorer.reason(rel_s, is_dir=True) is not None:
                    continue
                for dirpath, dirnames, filenames in os.walk(abs_path):
                    rel_dir = Path(dirpath).relative_to(self.root).as_posix()
                    dirnames[:] = [d for d in dirnames if self.ignorer.reason(f"{rel_dir}/{d}", is_dir=True) is None]
                    out.update(f"{rel_dir}/{name}" for name in filenames)
            elif not abs_path.exists() and not abs_path.is_symlink():
                if indexed is None:
                    indexed = set(self.manifest.all()) | self.manifest.dirty()
                prefix = rel_s + "/"
                out.update({p for p in indexed if p.startswith(prefix)} or {rel_s})
            else:
                out.add(rel_s)
        return out

    # ------------------------------------------------------------------ status
    def searchable(self) -> bool:
        """Whether a phase 1 (walk + keyword rows) has completed for this root and none is running in
        this process. Indexes written before this was recorded count once they hold files."""
        if self.manifest.get_meta("last_walk") is not None:
            return True
        return self.manifest.count() > 0 and not self._phase1_running

    def last_skipped(self) -> dict[str, int]:
        """``files_skipped`` of the last completed walk (``{reason: count}``; ``{}`` if none)."""
        raw = self.manifest.get_meta("last_walk")
        try:
            return dict(json.loads(raw)["files_skipped"]) if raw else {}
        except (ValueError, KeyError, TypeError):
            return {}

    def status(self) -> dict:
        """``{"root", "indexed", "read_only", "files", "chunks_total", "vectors_pending", "index_dir",
        "embedding_model", "index_bytes"}`` (``index_bytes``: the index folder's size on disk).

        A root never indexed reports ``indexed: false`` and zeros, and nothing is created or loaded.
        """
        out = {
            "root": str(self.root),
            "indexed": self.exists(),
            "read_only": self.read_only,
            "files": 0,
            "chunks_total": 0,
            "vectors_pending": 0,
            "index_dir": str(self.index_dir),
            "embedding_model": self.settings.embedding.model,
            "index_bytes": 0,
        }
        if not out["indexed"]:
            return out
        store = self.store
        out.update(
            files=self.manifest.count(),
            chunks_total=store.count(),
            vectors_pending=store.count_pending(),
            index_bytes=store.disk_bytes(),
        )
        return out
