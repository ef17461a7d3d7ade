"""What an indexing run reports: :class:`Progress` while it runs, :class:`IndexStats` when it ends."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Literal

__all__ = ["Progress", "ProgressFn", "IndexStats"]


@dataclass
class Progress:
    """A progress report: ``phase`` is ``scan``, ``index`` (phase 1) or ``embed`` (phase 2).

    ``done``/``total`` count files (scan, index) or chunks (embed); ``eta_seconds`` is ``None``
    until a rate is known.
    """

    phase: Literal["scan", "index", "embed"]
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

    ``files_seen`` counts the files the walk passed on to be read (those indexed and those skipped
    by their content); ``files_skipped`` maps a skip reason to a count, by name (``excluded``,
    ``secret``: never read) or by content (``binary``, ``minified``, ...): ``files_indexed`` plus
    every skip is every file the walk met;
    ``files_by_encoding`` counts the root's indexed files (all of them, not only those this run read)
    by the encoding they were read with (``{"utf-8": 120, "utf-16-le": 1}``); ``seconds`` is wall
    time of the run. ``roots`` holds each root's own stats when the run covered more than one root
    (``codeask index A B``; empty for one root): their ``seconds`` time that root's phase 1 only.
    ``read_again``: every file was read again, the index's rows having been cut by an older release
    (:func:`codeask.index.meta.reread_if_stale`).
    """

    root: str = ""
    files_seen: int = 0
    files_changed: int = 0
    files_removed: int = 0
    files_skipped: dict[str, int] = field(default_factory=dict)
    files_by_encoding: dict[str, int] = field(default_factory=dict)
    chunks_embedded: int = 0
    chunks_shared: int = 0
    chunks_reused: int = 0
    chunks_deleted: int = 0
    chunks_total: int = 0
    vectors_pending: int = 0
    seconds: float = 0.0
    seconds_to_searchable: float = 0.0
    paths_changed: list[str] = field(default_factory=list)
    paths_removed: list[str] = field(default_factory=list)
    read_again: bool = False
    roots: list[IndexStats] = field(default_factory=list)

    @property
    def files_indexed(self) -> int:
        """Files the root's index holds after the run: ``files_seen`` less the skipped ones (the sum of
        ``files_by_encoding``), the count ``codeask status`` calls ``files``."""
        return sum(self.files_by_encoding.values())

    def to_json(self) -> dict:
        """The fields as a plain dict (:func:`dataclasses.asdict`) with :attr:`files_indexed`, as
        ``codeask index --json`` prints it; a root's entry in ``roots`` has no ``roots`` key of its own."""
        out = asdict(self) | {"files_indexed": self.files_indexed}
        for root, stats in zip(out["roots"], self.roots):
            del root["roots"]
            root["files_indexed"] = stats.files_indexed
        return out

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
            files_by_encoding=dict(Counter(self.files_by_encoding) + Counter(other.files_by_encoding)),
            chunks_embedded=self.chunks_embedded + other.chunks_embedded,
            chunks_shared=self.chunks_shared + other.chunks_shared,
            chunks_reused=self.chunks_reused + other.chunks_reused,
            chunks_deleted=self.chunks_deleted + other.chunks_deleted,
            chunks_total=self.chunks_total + other.chunks_total,
            vectors_pending=self.vectors_pending + other.vectors_pending,
            seconds=self.seconds + other.seconds,
            seconds_to_searchable=self.seconds_to_searchable + other.seconds_to_searchable,
            paths_changed=self.paths_changed + other.paths_changed,
            paths_removed=self.paths_removed + other.paths_removed,
            read_again=self.read_again or other.read_again,
        )
