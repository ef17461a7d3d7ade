"""Indexing embeds at a lower CPU priority than queries (``embedding.index_nice``, issue 11)."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from pydantic import ValidationError

from codeask.index.embed import THREAD_NICE_SUPPORTED, load_embedder
from codeask.index.engine import RootIndex
from codeask.settings import EmbeddingSettings, load_settings

linux_only = pytest.mark.skipif(not THREAD_NICE_SUPPORTED, reason="per-thread nice values are Linux-only")


def _nice(tid: int) -> int:
    """A thread's nice value, from ``/proc`` (field 19 of ``stat``)."""
    with open(f"/proc/self/task/{tid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


@linux_only
def test_indexing_session_and_its_onnx_threads_are_niced_and_queries_keep_their_own():
    # threads=2 gives the session an intra-op pool thread; index_nice=7 keys a fresh instance.
    settings = EmbeddingSettings(threads=2, index_nice=7)
    caller = threading.get_native_id()
    base = os.getpriority(os.PRIO_PROCESS, caller)
    before = set(os.listdir("/proc/self/task"))
    indexing = load_embedder(settings, background=True)
    created = sorted(set(os.listdir("/proc/self/task")) - before, key=int)

    assert indexing.nice == 7
    assert len(created) >= 2, "expected the worker thread and ONNX Runtime's pool thread"
    assert {_nice(int(t)) for t in created} == {min(19, base + 7)}
    assert os.getpriority(os.PRIO_PROCESS, caller) == base, "the caller's priority changed"

    query = load_embedder(settings)
    assert query is not indexing and query.nice == 0
    assert load_embedder(settings, background=True) is indexing
    text = "def total(items): return sum(i.price for i in items)"
    np.testing.assert_allclose(indexing.embed([text])[0], query.embed_query(text), atol=1e-5)


def test_index_nice_zero_shares_one_session_and_the_bound_is_enforced():
    settings = EmbeddingSettings(index_nice=0)
    assert load_embedder(settings, background=True) is load_embedder(settings)
    assert load_embedder(settings).nice == 0
    with pytest.raises(ValidationError):
        EmbeddingSettings(index_nice=20)
    with pytest.raises(ValidationError):
        EmbeddingSettings(index_nice=-1)


@linux_only
def test_phase2_embeds_on_the_niced_session_and_live_updates_on_the_normal_one(sample_workspace):
    index = RootIndex(sample_workspace, load_settings(sample_workspace, flags={"embedding.index_nice": 5}))
    indexing = load_embedder(index.settings.embedding, background=True)
    query = load_embedder(index.settings.embedding)
    index.sync(embed=False)
    start_indexing, start_query = indexing.texts_embedded, query.texts_embedded
    embedded = index.embed_pending()
    assert embedded > 0
    assert indexing.texts_embedded - start_indexing == embedded
    assert query.texts_embedded == start_query

    new = sample_workspace / "src/shop/refunds.py"
    new.write_text("def issue_refund_voucher(order):\n    return order.total * 0.1\n", encoding="utf-8")
    stats = index.update_paths([new])
    assert stats.chunks_embedded == 1
    assert query.texts_embedded == start_query + 1
    assert indexing.texts_embedded - start_indexing == embedded
