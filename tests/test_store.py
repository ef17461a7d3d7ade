"""The LanceDB store on its own: ANN index above the threshold, version retention, retried reads."""

from __future__ import annotations

import numpy as np

from codeask.index.chunk import Chunk
from codeask.index.store import Store, chunk_rows


def _chunks(n: int) -> list[Chunk]:
    import hashlib

    out = []
    for i in range(n):
        content = f"def handler_{i}(request):\n    return request.value + {i}\n"
        out.append(
            Chunk(
                path=f"pkg{i % 20}/mod{i}.py",
                language="python",
                start_line=1,
                end_line=2,
                symbol=f"handler_{i}",
                content=content,
                content_hash=hashlib.sha256(content.encode()).hexdigest(),
            )
        )
    return out


def _clustered(n: int, dim: int, seed: int) -> np.ndarray:
    """``(n, dim)`` unit vectors around 40 centres, like embeddings of related code."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, dim)).astype(np.float32)
    vectors = centres[rng.integers(0, 40, n)] + 0.6 * rng.standard_normal((n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_ann_index_above_threshold_keeps_top10_recall_and_stays_current(tmp_path):
    dim = 64
    store = Store(tmp_path / "index", dim, ann_min_rows=2000)
    rows = chunk_rows(_chunks(3000))
    vectors = _clustered(3000, dim, 0)
    store.put_vectors({r["embed_hash"]: v for r, v in zip(rows[:1500], vectors[:1500])})
    store.replace_files({r["path"] for r in rows}, rows)
    store.optimize()
    assert "vectors.vector" not in store.index_stats(), "no ANN index below the threshold"

    store.put_vectors({r["embed_hash"]: v for r, v in zip(rows[1500:], vectors[1500:])})
    store.optimize()
    stats = store.index_stats()
    assert stats["vectors.vector"]["type"].startswith("IVF")
    assert stats["vectors.vector"]["unindexed_rows"] == 0

    queries = _clustered(30, dim, 1)
    recalls = []
    for q in queries:
        exact = list(store.nearest_hashes(q, 10, exact=True))
        ann = list(store.nearest_hashes(q, 10))
        recalls.append(len(set(exact) & set(ann)) / 10)
    assert np.mean(recalls) >= 0.95, recalls

    # New vectors are searched before compaction folds them into the index, and after it.
    extra = chunk_rows([Chunk("new/extra.py", "python", 1, 2, "extra", "def extra():\n    pass\n", "x" * 64)])
    target = queries[0]
    store.put_vectors({extra[0]["embed_hash"]: target})
    store.replace_files(["new/extra.py"], extra)
    assert store.vector_search(target, 1)[0].path == "new/extra.py"
    assert store.index_stats()["vectors.vector"]["unindexed_rows"] == 1
    store.optimize()
    assert store.index_stats()["vectors.vector"]["unindexed_rows"] == 0
    assert store.vector_search(target, 1)[0].path == "new/extra.py"


def test_old_versions_survive_compaction_within_the_retention_window(tmp_path):
    """A reader holding an older version can still read it after compaction (retention 10 min)."""
    import lancedb

    store = Store(tmp_path / "index", 8)
    rows = chunk_rows(_chunks(200))
    for part in range(0, 200, 20):
        store.replace_files({r["path"] for r in rows[part : part + 20]}, rows[part : part + 20])
    old = lancedb.connect(str(tmp_path / "index" / "lance")).open_table("chunks")
    old.checkout(old.version)  # pinned to this version, as a long-running reader is
    before = old.to_arrow().num_rows
    store.replace_files([rows[0]["path"]], [])
    store.optimize()
    assert old.to_arrow().num_rows == before == 200  # its files were not deleted
    assert store.count() == 199
