"""Phase 1 of indexing a root: walk -> changed files -> chunks -> rows, committed in batches.

A restart costs one ``scandir`` per folder and one stat per file: a file whose size and mtime match
its manifest record is not read, nor is one an earlier read skipped for its content (binary, minified,
too large: the manifest's skip records) while its size, mtime and the deciding settings match. Changed files are read, hashed, chunked and written in batches of
``WRITE_BATCH_FILES`` (one commit per batch: a file's rows are replaced in one commit), and
keyword search works from the first batch on. Files gone from disk, or left half-written by a killed
run (the manifest's ``dirty`` list), are removed after the writes, so a moved file's new rows reuse
the old rows' vectors. When files changed, hub files are measured by keyword search
(:mod:`codeask.index.hubs`). Phase 2 (:mod:`codeask.index.phase2`) fills the vectors.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from codeask.index import filetext
from codeask.index.chunk import chunk_file
from codeask.index.filetext import read_text
from codeask.index.hubs import HUBS_FILE, measure_hubs, save_hubs
from codeask.index.kinds import classify, keyword_only_kinds
from codeask.index.manifest import FileRecord, SkipRecord
from codeask.index.meta import reread_if_stale
from codeask.index.protocols import Phase1Root
from codeask.index.stats import IndexStats, Progress, ProgressFn
from codeask.index.walk import FileEntry, walk
from codeask.settings import IndexSettings

__all__ = ["sync_root", "remove_paths", "write_batch", "skip_limits"]

#: Skip reasons decided by a file's content and the settings in :func:`skip_limits` alone: recorded,
#: so the unchanged file is not read again. Others (``vanished``, ``permission_denied``) are retried.
CONTENT_SKIPS = frozenset({"binary", "minified", "too_large"})


#: Version of the decoding rules (:mod:`codeask.index.decode`) in skip records: a file skipped as
#: binary by older rules (a UTF-16 file) is read again once they change.
DECODE_RULES = 2
#: Files per LanceDB commit in phase 1: keyword search works from the first commit on, and each
#: commit is a table version, so a few hundred files keep versions few on large roots. Was
#: ``index.write_batch_files``.
WRITE_BATCH_FILES = 200


def skip_limits(settings: IndexSettings) -> str:
    """The index settings (and decoding rules) a content skip depends on, as the string kept in its
    skip record."""
    return f"max_file_bytes={settings.max_file_bytes};max_line_length={filetext.MAX_LINE_LENGTH};decode={DECODE_RULES}"


def _same_text(old: FileRecord | None, content_hash: str, encoding: str) -> bool:
    """Whether ``old``'s chunks hold the text just read: same bytes, decoded the same way (a record
    from before encodings were kept was decoded as UTF-8)."""
    if old is None or old.content_hash != content_hash:
        return False
    return old.encoding == encoding or (old.encoding is None and encoding.startswith("utf-8"))


@dataclass
class _Changes:
    """What the walk found: the files to read (``candidates``), the manifest's records (``known``),
    the paths on disk (``seen``), the paths to remove (``gone``), the skip counts so far, and whether
    every file is read again for rows an older release cut (``read_again``)."""

    candidates: list[FileEntry]
    known: dict[str, FileRecord]
    seen: set[str]
    gone: set[str]
    skipped: Counter[str]
    read_again: bool = False


def sync_root(
    index: Phase1Root,
    stats: IndexStats,
    started: float,
    progress: ProgressFn | None,
    should_stop: Callable[[], bool] | None,
    wait: bool,
) -> IndexStats:
    """Phase 1 of a root (:meth:`RootIndex.sync_keywords <codeask.index.engine.RootIndex.sync_keywords>`;
    the phase sequence is :func:`codeask.index.phases.run_phases`): walk, compare size and mtime
    with the manifest, read, chunk and commit what changed in batches of :data:`WRITE_BATCH_FILES`
    files, remove what is gone, compact; fills and returns ``stats`` (``started``: its
    :func:`time.monotonic` start)."""
    shared_before, reused_before = index.supply.chunks_shared, index.supply.chunks_reused
    changes = _changes(index, progress, wait)
    stats.read_again = changes.read_again
    stopped = _write_changes(index, changes, stats, started, progress, should_stop, wait)
    if should_stop and should_stop():  # stopped: what is committed stays; the next run goes on
        stats.files_skipped = dict(changes.skipped)
        stats.seconds = time.monotonic() - started
        return stats
    # Removed after the writes, so a moved file's new rows reuse the old rows' vectors.
    remove_paths(index, sorted(changes.gone), stats, unless_back=True)
    _fold_in(index, stats, changes, stopped, wait)
    index.phase1_running = False
    stats.files_skipped = dict(changes.skipped)
    stats.seconds_to_searchable = time.monotonic() - started
    with index.writing(wait=wait):
        index.maybe_optimize(force=True)
    store = index.store
    stats.chunks_total = store.count()
    stats.files_by_encoding = index.manifest.by_encoding()
    stats.vectors_pending = store.count_pending()
    stats.chunks_shared = index.supply.chunks_shared - shared_before
    stats.chunks_reused = index.supply.chunks_reused - reused_before
    stats.seconds = time.monotonic() - started
    return stats


def _changes(index: Phase1Root, progress: ProgressFn | None, wait: bool) -> _Changes:
    """Walk the root and compare each file's size and mtime with its manifest (or skip) record,
    under the write lock; stale skip records are forgotten."""
    with index.writing(wait=wait):
        read_again = reread_if_stale(index.manifest)  # rows cut by an older chunker or graph
        index.ignorer.refresh()
        result = walk(index.root, index.settings.index, index.ignorer)
        skipped = Counter(result.skipped)
        if progress:
            progress(Progress("scan", len(result.files), len(result.files), f"{len(result.files)} files"))
        known = index.manifest.all()
        seen = {f.path for f in result.files}
        skips = index.manifest.skipped()
        limits = skip_limits(index.settings.index)
        candidates = []
        for f in result.files:
            rec = known.get(f.path)
            if rec is not None and rec.size == f.size and rec.mtime_ns == f.mtime_ns and rec.encoding is not None:
                continue
            skip = skips.get(f.path) if rec is None else None
            if skip is not None and (skip.size, skip.mtime_ns, skip.limits) == (f.size, f.mtime_ns, limits):
                skipped[skip.reason] += 1
                continue
            candidates.append(f)
        if stale := [p for p in skips if p not in seen]:
            index.manifest.forget_skipped(stale)
        # Files gone from disk, plus files a killed run was rewriting (their rows may be committed).
        gone = (set(known) | index.manifest.dirty()) - seen
    return _Changes(candidates, known, seen, gone, skipped, read_again)


def _write_changes(
    index: Phase1Root,
    changes: _Changes,
    stats: IndexStats,
    started: float,
    progress: ProgressFn | None,
    should_stop: Callable[[], bool] | None,
    wait: bool,
) -> bool:
    """Read, chunk and commit ``changes.candidates`` in batches of :data:`WRITE_BATCH_FILES`, each
    under the write lock; returns whether ``should_stop`` ended it early."""
    stats.files_seen = len(changes.seen)
    batch_size = WRITE_BATCH_FILES
    total = len(changes.candidates)
    for start in range(0, total, batch_size):
        if should_stop and should_stop():
            return True
        with index.writing(wait=wait):
            write_batch(index, changes.candidates[start : start + batch_size], changes.known, stats, changes.skipped)
            index.store.ensure_indexes()  # keyword search works from the first batch on
            index.maybe_optimize()
        if progress:
            done = min(total, start + batch_size)
            eta = (time.monotonic() - started) / done * (total - done) if done else None
            progress(Progress("index", done, total, f"{done}/{total} files", eta))
    return False


def _fold_in(index: Phase1Root, stats: IndexStats, changes: _Changes, stopped: bool, wait: bool) -> None:
    """Fold phase 1's rows into the full-text index now (phase 2 never rewrites chunk rows, so keyword
    search is as fast while vectors are computed as after), record the walk (unless ``stopped``),
    and measure hub files when files changed (:mod:`codeask.index.hubs`)."""
    store = index.store
    with index.writing(wait=wait):
        store.ensure_indexes()
        if store.rows_since_optimize:
            index.maybe_optimize(force=True)
        if not stopped:
            index.manifest.set_meta("last_walk", json.dumps({"files_skipped": dict(changes.skipped)}))
        if stats.files_changed or stats.files_removed or not (store.index_dir / HUBS_FILE).exists():
            save_hubs(store.index_dir, measure_hubs(store, len(changes.seen)))


def remove_paths(index: Phase1Root, paths: list[str], stats: IndexStats, *, unless_back: bool = False) -> None:
    """Delete the rows and manifest entries of ``paths``.

    With ``unless_back``, a path that is an indexable file again by the time the write lock is
    held (a live update re-indexed it after the walk) is kept.
    """
    if not paths:
        return
    store = index.store
    with index.writing():
        if unless_back:
            paths = [p for p in paths if not ((index.root / p).is_file() and index.ignorer.reason(p) is None)]
        for start in range(0, len(paths), 500):
            part = paths[start : start + 500]
            index.manifest.forget(part)
            stats.chunks_deleted += store.replace_files(part, [])[1]
            index.manifest.done(part)
        stats.files_removed += len(paths)
        stats.paths_removed.extend(paths)


def write_batch(
    index: Phase1Root,
    entries: list[FileEntry],
    known: dict[str, FileRecord],
    stats: IndexStats,
    skipped: Counter,
) -> dict[str, str]:
    """Read, chunk and commit one batch of files (caller holds the write lock); returns
    ``{embed_hash: embed_text}`` of the rows written that are embedded (their vectors may be
    missing; rows of a keyword-only kind, :func:`~codeask.index.kinds.keyword_only_kinds`, are not)."""
    store = index.store
    chunks_by_path: dict[str, list] = {}
    kinds: dict[str, str] = {}
    records: list[FileRecord] = []
    touch: list[FileRecord] = []
    drop: list[str] = []
    skips: list[SkipRecord] = []
    limits = skip_limits(index.settings.index)
    for entry in entries:
        got = read_text(entry.abs_path, index.settings.index)
        old = known.get(entry.path)
        if isinstance(got, str):
            skipped[got] += 1
            if old is not None or got == "vanished":
                drop.append(entry.path)
            if got in CONTENT_SKIPS:
                skips.append(SkipRecord(entry.path, entry.size, entry.mtime_ns, got, limits))
            continue
        if old is not None and _same_text(old, got.content_hash, got.encoding):
            touch.append(old._replace(size=entry.size, mtime_ns=entry.mtime_ns, encoding=got.encoding))
            continue
        chunks = chunk_file(entry.path, got.text)
        chunks_by_path[entry.path] = chunks
        kinds[entry.path] = classify(entry.path, got.text, chunks[0].language if chunks else "text")
        records.append(FileRecord(entry.path, got.content_hash, got.size, entry.mtime_ns, len(chunks), got.encoding))
    if touch:
        index.manifest.record(touch)
    if drop:
        remove_paths(index, drop, stats)
    if skips:
        index.manifest.record_skipped(skips)
    if not records:
        return {}
    from codeask.index.rows import chunk_rows, embed_text

    all_chunks = [c for chunks in chunks_by_path.values() for c in chunks]
    rows = chunk_rows(all_chunks, kinds, keyword_only_kinds())
    paths = [r.path for r in records]
    index.manifest.forget(paths)
    stats.chunks_deleted += store.replace_files(paths, rows)[1]
    index.manifest.record(records)
    stats.files_changed += len(records)
    stats.paths_changed.extend(paths)
    return {r["embed_hash"]: embed_text(r["symbol"], r["content"]) for r in rows if r["embed_hash"]}
