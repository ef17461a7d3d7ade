"""What the phases, live updates and the phase sequence use of a root's index: narrow Protocols.

:class:`~codeask.index.engine.RootIndex` owns the resources of one root (manifest, store, ignore
rules, write lock, vector sources) and runs phase 1 (:mod:`codeask.index.phase1`), phase 2
(:mod:`codeask.index.phase2`), live updates (:mod:`codeask.index.live`) and the phase sequence
(:mod:`codeask.index.phases`) on itself. Those modules call back into it through the Protocols
here, each naming only what that module uses, so they need not import ``codeask.index.engine``
(which imports them: the package has no import cycles, ``tests/test_import_graph.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from codeask.index.ignore import Ignorer
    from codeask.index.manifest import Manifest
    from codeask.index.stats import IndexStats, ProgressFn
    from codeask.index.store import Store
    from codeask.index.vectors import VectorSupply
    from codeask.settings import Settings

__all__ = ["IndexWriter", "Phase1Root", "Phase2Root", "LiveRoot", "PhasedRoot"]


class IndexWriter(Protocol):
    """The write side of an index: its lock and its compaction."""

    def writing(self, *, wait: bool = True, timeout: float | None = None) -> AbstractContextManager[None]:
        """Hold the index's write lock (raises ``IndexLocked`` or ``IndexReadOnly``)."""
        ...

    def maybe_optimize(self, force: bool = False) -> None:
        """Compact the store when due (or with ``force``)."""
        ...


class Phase1Root(IndexWriter, Protocol):
    """What phase 1 (walk -> rows) uses: the root, its rules, manifest and store.

    ``phase1_running`` is cleared by phase 1 as soon as its rows are committed and indexed."""

    settings: Settings
    phase1_running: bool

    @property
    def root(self) -> Path: ...

    @property
    def ignorer(self) -> Ignorer: ...

    @property
    def manifest(self) -> Manifest: ...

    @property
    def store(self) -> Store: ...

    @property
    def supply(self) -> VectorSupply: ...


class Phase2Root(IndexWriter, Protocol):
    """What phase 2 (vectors) uses: the store, the vector sources, and the count of live updates
    waiting for the write lock (``urgent``: phase 2 yields to them)."""

    @property
    def store(self) -> Store: ...

    @property
    def supply(self) -> VectorSupply: ...

    @property
    def urgent(self) -> int: ...

    @property
    def background_indexing(self) -> bool: ...


class LiveRoot(Phase1Root, Protocol):
    """What a live update uses: phase 1's parts, paths made relative, the urgency count, a full sync."""

    def relative(self, path: Path | str) -> str | None:
        """``path`` relative to the root; ``None`` outside it."""
        ...

    def mark_urgent(self, delta: int) -> None:
        """Count live updates waiting for the write lock."""
        ...

    def sync(self, *, embed: bool = True) -> IndexStats:
        """Both phases for this root (a changed ignore file re-walks it)."""
        ...


class PhasedRoot(Protocol):
    """What the phase sequence runs on each root: its two phases, its store's counts, its vector sources."""

    @property
    def store(self) -> Store: ...

    @property
    def supply(self) -> VectorSupply: ...

    def sync_keywords(
        self, *, progress: ProgressFn | None = None, should_stop: Callable[[], bool] | None = None, wait: bool = True
    ) -> IndexStats:
        """Phase 1."""
        ...

    def embed_pending(
        self, *, progress: ProgressFn | None = None, should_stop: Callable[[], bool] | None = None, wait: bool = True
    ) -> int:
        """Phase 2; returns the texts embedded."""
        ...
