"""The phase sequence of a full index, in one place, for one root or all roots of a workspace.

:func:`run_phases` runs phase 1 (keyword rows: walk -> chunks -> rows with the full-text index,
then that root's compaction: :meth:`RootIndex.sync_keywords <codeask.index.engine.RootIndex.sync_keywords>`)
for every root first, so every root is keyword-searchable as early as possible; then, when chunks
wait for vectors, phase 2 (:meth:`RootIndex.embed_pending <codeask.index.engine.RootIndex.embed_pending>`,
which compacts when it ends) for every root. Every driver of a full index runs it:

* :meth:`RootIndex.sync <codeask.index.engine.RootIndex.sync>` (one root: ``codeask ask``/``explain``
  bring their folder up to date, a live update whose ignore rules changed) and
  :meth:`Workspace.index <codeask.workspace.Workspace.index>` (``codeask index``, the watcher's
  catch-up, ``codeask eval``): they wait for another writer, or raise :class:`IndexLocked`;
* the MCP server's background thread (:mod:`codeask.mcp_server`): a root another process writes
  is read as it is (:attr:`PhaseHooks.locked` answers ``False``);
* the language server's scheduler (:mod:`codeask.scheduler`): a root another process writes is
  retried every second, and each phase is work-done progress (:attr:`PhaseHooks.begin` and ``end``).

``should_stop`` is checked before each root and, inside a phase, between batches of files and of
embeddings (each commit is atomic, so a stopped run leaves nothing half written).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from codeask.index.lock import IndexLocked
from codeask.index.protocols import PhasedRoot
from codeask.index.stats import IndexStats, ProgressFn

__all__ = ["run_phases", "PhaseHooks", "Phase"]

#: ``keywords``: phase 1 (rows + full-text index); ``vectors``: phase 2 (embeddings).
Phase = Literal["keywords", "vectors"]

T = TypeVar("T")


@dataclass
class PhaseHooks:
    """What a driver does around the phases of :func:`run_phases` (each hook optional).

    Attributes:
        begin: ``begin(phase, total)`` before a phase: ``total`` is the number of roots for
            ``keywords``, of chunks waiting for a vector for ``vectors`` (phase 2 is not begun when
            none waits).
        end: ``end(phase, finished)`` after a phase, also when it raised; ``finished`` is false
            when it was stopped (or raised).
        locked: ``locked(exc)`` when a root's write lock is held by another process (only with
            ``wait=False``): ``True`` runs that root's phase again (the hook waits first), ``False``
            goes on without it. Without the hook :class:`IndexLocked` is raised.
    """

    begin: Callable[[Phase, int], None] | None = None
    end: Callable[[Phase, bool], None] | None = None
    locked: Callable[[IndexLocked], bool] | None = None


def run_phases(
    indexes: Sequence[PhasedRoot],
    *,
    progress: ProgressFn | None = None,
    embed: bool = True,
    should_stop: Callable[[], bool] | None = None,
    wait: bool = True,
    hooks: PhaseHooks | None = None,
) -> IndexStats:
    """Bring ``indexes`` (RootIndex objects, :class:`~codeask.index.protocols.PhasedRoot`) up to date: phase 1 for all, then phase 2 for all.

    Args:
        progress: gets the :class:`~codeask.index.stats.Progress` reports of both phases.
        embed: run phase 2; ``False`` leaves vectors pending (keyword search works).
        should_stop: checked before each root and between batches; when true, the run ends early,
            consistent (phase 2 is not started).
        wait: wait for another process's write lock; ``False`` raises :class:`IndexLocked` (or
            calls ``hooks.locked``).
        hooks: the driver's :class:`PhaseHooks`.

    Returns:
        The summed :class:`IndexStats` (``root`` set for one root): ``seconds_to_searchable`` when
        phase 1 ended, ``seconds`` when the run ended, ``chunks_total`` and ``vectors_pending``
        counted at the end; with more than one root, ``roots`` holds each root's own stats (a root
        skipped because another process held its lock is not listed).

    Raises:
        IndexLocked: another process writes a root, ``wait`` is false and there is no ``locked`` hook.
        IndexReadOnly: a root's index cannot be written.
    """
    hooks = hooks or PhaseHooks()
    stop = should_stop or (lambda: False)
    indexes = list(indexes)
    started = time.monotonic()

    def keywords(index: PhasedRoot) -> IndexStats:
        return index.sync_keywords(progress=progress, should_stop=should_stop, wait=wait)

    ran = _phase("keywords", len(indexes), indexes, keywords, hooks, stop)
    total = functools.reduce(IndexStats.merge, (stats for _, stats in ran), IndexStats())
    total.seconds_to_searchable = time.monotonic() - started
    pending = sum(i.store.count_pending() for i in indexes) if embed and not stop() else 0
    supplied = {id(i): (i.supply.chunks_shared, i.supply.chunks_reused) for i in indexes}
    embedded: dict[int, int] = {}
    if pending:

        def vectors(index: PhasedRoot) -> int:
            return index.embed_pending(progress=progress, should_stop=should_stop, wait=wait)

        embedded = {id(index): n for index, n in _phase("vectors", pending, indexes, vectors, hooks, stop)}
    for index in indexes:
        total.chunks_embedded += embedded.get(id(index), 0)
        total.chunks_shared += index.supply.chunks_shared - supplied[id(index)][0]
        total.chunks_reused += index.supply.chunks_reused - supplied[id(index)][1]
    total.vectors_pending = sum(i.store.count_pending() for i in indexes)
    total.chunks_total = sum(i.store.count() for i in indexes)
    total.seconds = time.monotonic() - started
    total.roots = [_root_end(index, stats, embedded, supplied) for index, stats in ran] if len(indexes) > 1 else []
    return total


def _root_end(
    index: PhasedRoot, stats: IndexStats, embedded: dict[int, int], supplied: dict[int, tuple[int, int]]
) -> IndexStats:
    """One root's phase-1 ``stats`` completed with its phase 2 (``embedded`` and ``supplied``, the
    vector supply's shared and reused counts before phase 2, are keyed by ``id(index)``) and its end counts."""
    stats.chunks_embedded += embedded.get(id(index), 0)
    stats.chunks_shared += index.supply.chunks_shared - supplied[id(index)][0]
    stats.chunks_reused += index.supply.chunks_reused - supplied[id(index)][1]
    stats.vectors_pending, stats.chunks_total = index.store.count_pending(), index.store.count()
    return stats


def _phase(
    phase: Phase,
    size: int,
    indexes: list[PhasedRoot],
    work: Callable[[PhasedRoot], T],
    hooks: PhaseHooks,
    stop: Callable[[], bool],
) -> list[tuple[PhasedRoot, T]]:
    """``(index, work(index))`` for each root, in order, between ``hooks.begin`` and ``hooks.end``; a
    root whose lock another process holds goes to ``hooks.locked`` (retried while it answers ``True``;
    left out of the list when it answers ``False``)."""
    results: list[tuple[PhasedRoot, T]] = []
    finished = False
    if hooks.begin is not None:
        hooks.begin(phase, size)
    try:
        for index in indexes:
            while not stop():
                try:
                    results.append((index, work(index)))
                    break
                except IndexLocked as exc:
                    if hooks.locked is None:
                        raise
                    if not hooks.locked(exc):
                        break
        finished = not stop()
    finally:
        if hooks.end is not None:
            hooks.end(phase, finished)
    return results
