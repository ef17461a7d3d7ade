"""Phase 2 of indexing a root: vectors for the chunk rows that have none yet.

Texts are taken from the store's pending list (:mod:`codeask.index.pending`), looked up by their
hashes in the machine's vector store (:mod:`codeask.index.machine`, a whole round at once; only the
texts it lacks are read from the chunk rows), then in the team's shared cache, else embedded by the
model, in groups under the write lock (released between
groups; live updates waiting for it go first), and committed every :data:`EMBED_COMMIT_ROWS` texts
or :data:`EMBED_COMMIT_SECONDS` seconds. Chunk rows and the full-text index are never touched.

Which model instance embeds is chosen once, by whoever built the index
(``RootIndex.background_indexing``): a process that searches while it indexes (language server, MCP
server, ``codeask watch``) uses the niced indexing model in a child process
(:func:`~codeask.index.embed.load_embedder` ``background=True``, ``embedding.index_nice``); a
foreground command (``codeask index``, ``ask``, ``explain``, ``eval``), whose user waits for exactly
this work, embeds at its own priority: a nice value lowers it against *other programs* too, and on
a busy machine that made the first ``ask`` of a small repository wait minutes.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from codeask.index.protocols import Phase2Root
from codeask.index.stats import Progress, ProgressFn

__all__ = ["embed_pending"]

#: Pending texts fetched per round, and embedded per group under the write lock.
EMBED_ROUND_TEXTS = 1024
EMBED_GROUP_TEXTS = 32
#: Phase 2 commits its vectors every this many texts (the model's ~20-44 texts/s on a laptop core
#: make it a commit every few seconds, few LanceDB versions)... Was ``index.embed_commit_rows``.
EMBED_COMMIT_ROWS = 256
#: ...or every this many seconds, whichever comes first, so a killed run keeps what it embedded
#: (issue 18 item 6). Was ``index.embed_commit_seconds``.
EMBED_COMMIT_SECONDS = 5.0


def embed_pending(
    index: Phase2Root,
    *,
    progress: ProgressFn | None = None,
    should_stop: Callable[[], bool] | None = None,
    wait: bool = True,
) -> int:
    """Embed every text that has no vector yet; returns the number of texts embedded.

    Texts are embedded in groups of 32 under the write lock (released between groups, and
    waiting live updates go first) and committed every :data:`EMBED_COMMIT_ROWS` texts or
    :data:`EMBED_COMMIT_SECONDS` seconds, whichever comes first, and when stopped: a run
    longer than a few seconds always leaves durable progress (issue 18, item 6). With
    ``index.background_indexing`` the model runs at lower CPU priority (``embedding.index_nice``)
    so searches meanwhile get the CPU first; without it, at this process's priority.

    Raises:
        IndexLocked: another process writes this index and ``wait`` is false.
        EmbeddingError: the model cannot be loaded, or its child process died.
    """
    run = _EmbedRun(index, progress, should_stop, wait)
    while not run.stopped:
        todo = [h for h in index.store.pending_hashes(EMBED_ROUND_TEXTS) if h not in run.buffer]
        if not todo:
            break
        rest = run.reuse(todo)
        texts = index.store.texts(rest) if rest else {}
        if len(rest) == len(todo) and not texts:  # their rows went meanwhile: nothing left to fill
            break
        run.embed(texts, [h for h in rest if h in texts])
    run.commit()
    if run.done and not run.stop():
        with index.writing(wait=wait):
            index.maybe_optimize(force=True)
    return run.embedded


class _EmbedRun:
    """One run of phase 2: the vectors buffered since the last commit and the counts so far
    (``done``: texts given a vector, reused or embedded; ``embedded``: by the model)."""

    def __init__(
        self, index: Phase2Root, progress: ProgressFn | None, should_stop: Callable[[], bool] | None, wait: bool
    ):
        self.index = index
        self.progress = progress
        self.should_stop = should_stop
        self.wait = wait
        self.total = index.store.count_pending(distinct=True)
        self.done = self.embedded = 0
        self.stopped = False
        self.buffer: dict[str, np.ndarray] = {}
        self.started = self.last_commit = time.monotonic()

    def stop(self) -> bool:
        """Whether the caller asked the run to stop."""
        return bool(self.should_stop and self.should_stop())

    def commit(self) -> None:
        """Commit the buffered vectors (under the write lock) and the machine's store's new ones."""
        if self.buffer:
            with self.index.writing(wait=self.wait):
                self.index.store.put_vectors(self.buffer)
                self.index.maybe_optimize()
            self.buffer.clear()
        self.index.supply.flush_machine()
        self.last_commit = time.monotonic()

    def report(self) -> None:
        """Say how far phase 2 is (reused and embedded vectors alike); the total is raised to ``done``."""
        self.total = max(self.total, self.done)
        if self.progress:
            elapsed = time.monotonic() - self.started
            eta = elapsed / self.done * (self.total - self.done) if self.done else None
            self.progress(Progress("embed", self.done, self.total, f"{self.done}/{self.total} chunks embedded", eta))

    def reuse(self, todo: list[str]) -> list[str]:
        """Buffer the vectors the machine already holds for the hashes ``todo`` (a clone, a worktree,
        a branch switch: a few keyed lookups for the whole round instead of one per group); returns
        the rest."""
        reused = self.index.supply.reuse(todo)
        self.buffer.update(reused)
        self.done += len(reused)
        if reused:
            self.report()
        if len(self.buffer) >= EMBED_COMMIT_ROWS:
            self.commit()
        return [h for h in todo if h not in reused]

    def embed(self, texts: dict[str, str], todo: list[str]) -> None:
        """Fill ``todo`` in groups of :data:`EMBED_GROUP_TEXTS` under the write lock, committing by
        rows and seconds (:data:`EMBED_COMMIT_ROWS`, :data:`EMBED_COMMIT_SECONDS`); sets
        ``stopped`` when asked to stop."""
        for start in range(0, len(todo), EMBED_GROUP_TEXTS):
            if self.stop():
                self.stopped = True
                return
            if self.index.urgent:
                self.commit()  # a live update may need these vectors
                while self.index.urgent:
                    time.sleep(0.01)
            group = {h: texts[h] for h in todo[start : start + EMBED_GROUP_TEXTS]}
            try:
                with self.index.writing(wait=self.wait):
                    new, count = self.index.supply.fill(
                        group,
                        use_shared=True,
                        ask_machine=False,  # reuse() asked it for the whole round
                        background=self.index.background_indexing,
                        should_stop=self.should_stop,
                    )
            except InterruptedError:  # stopped mid-group: what was committed or buffered is kept
                self.stopped = True
                return
            self.buffer.update(new)
            self.embedded += count
            self.done += len(group)
            if len(self.buffer) >= EMBED_COMMIT_ROWS or time.monotonic() - self.last_commit >= EMBED_COMMIT_SECONDS:
                self.commit()
            self.report()
