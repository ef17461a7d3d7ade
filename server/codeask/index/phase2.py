"""Phase 2 of indexing a root: vectors for the chunk rows that have none yet.

Texts are taken from the store's pending list (:mod:`codeask.index.pending`), looked up in the
machine's vector store (:mod:`codeask.index.machine`, a whole round at once) and the team's shared
cache, else embedded by the model, in groups under the write lock (released between
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
from typing import Any

import numpy as np

from codeask.index.stats import Progress, ProgressFn

# ``index``/``store`` arguments are a RootIndex, typed Any: codeask.index.engine imports this module and
# the package has no import cycles, not even for type checking (tests/test_import_graph.py).
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
    index: Any,
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
    store = index.store
    total = store.count_pending(distinct=True)
    done = embedded = 0
    started = time.monotonic()
    buffer: dict[str, np.ndarray] = {}
    last_commit = time.monotonic()

    def commit() -> None:
        nonlocal last_commit
        if buffer:
            with index.writing(wait=wait):
                store.put_vectors(buffer)
                index.maybe_optimize()
            buffer.clear()
        index.flush_machine()
        last_commit = time.monotonic()

    def report(done: int, total: int) -> int:
        """Say how far phase 2 is (reused and embedded vectors alike); returns the total, raised to ``done``."""
        total = max(total, done)
        if progress:
            elapsed = time.monotonic() - started
            eta = elapsed / done * (total - done) if done else None
            progress(Progress("embed", done, total, f"{done}/{total} chunks embedded", eta))
        return total

    stopped = False
    while not stopped:
        texts = store.pending_texts(EMBED_ROUND_TEXTS)
        todo = [h for h in texts if h not in buffer]
        if not todo:
            break
        # Vectors the machine already holds (a clone, a worktree, a branch switch): a few keyed
        # lookups for the whole round instead of one per group.
        reused, _ = index.fill_vectors({h: texts[h] for h in todo}, embed=False)
        buffer.update(reused)
        done += len(reused)
        todo = [h for h in todo if h not in reused]
        if reused:
            total = report(done, total)
        if len(buffer) >= EMBED_COMMIT_ROWS:
            commit()
        for start in range(0, len(todo), EMBED_GROUP_TEXTS):
            if should_stop and should_stop():
                stopped = True
                break
            if index.urgent:
                commit()  # a live update may need these vectors
                while index.urgent:
                    time.sleep(0.01)
            group = {h: texts[h] for h in todo[start : start + EMBED_GROUP_TEXTS]}
            try:
                with index.writing(wait=wait):
                    new, count = index.fill_vectors(
                        group,
                        embed=True,
                        use_shared=True,
                        background=index.background_indexing,
                        should_stop=should_stop,
                    )
            except InterruptedError:  # stopped mid-group: what was committed or buffered is kept
                stopped = True
                break
            buffer.update(new)
            embedded += count
            done += len(group)
            if len(buffer) >= EMBED_COMMIT_ROWS or time.monotonic() - last_commit >= EMBED_COMMIT_SECONDS:
                commit()
            total = report(done, total)
    commit()
    if done and not (should_stop and should_stop()):
        with index.writing(wait=wait):
            index.maybe_optimize(force=True)
    return embedded
