"""The LanceDB store on its own: ANN index above the threshold, version retention, retried reads."""

from __future__ import annotations

import json

import numpy as np

from codeask.index.chunk import Chunk
from codeask.index.rows import chunk_rows
from codeask.index.store import Store
from tests.tables import pending_by_scan, tables


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


def _ann_partitions(index_dir, query: np.ndarray) -> int:
    """IVF partitions of the ``vectors`` ANN index, as LanceDB's query plan reports them."""
    import re

    import lancedb

    table = lancedb.connect(str(index_dir / "lance")).open_table("vectors")
    plan = table.search(query, vector_column_name="vector").distance_type("dot").limit(10).analyze_plan()
    return int(re.search(r"partitions_ranked=(\d+)", plan).group(1))


def test_ann_partitions_keep_their_size_through_compactions(tmp_path, monkeypatch):
    """LanceDB's incremental index optimize joined an index built by partition count into a few huge
    partitions (every query compared every vector); built by partition size, the layout holds."""
    from codeask.index import search

    monkeypatch.setattr(search, "PARTITION_ROWS", 64)
    dim = 32
    store = Store(tmp_path / "index", dim, ann_min_rows=2000)
    rows = chunk_rows(_chunks(4000))
    vectors = _clustered(4000, dim, 0)
    store.put_vectors({r["embed_hash"]: v for r, v in zip(rows[:3000], vectors[:3000])})
    store.replace_files({r["path"] for r in rows}, rows)
    store.optimize()
    built = _ann_partitions(store.index_dir, vectors[0])
    assert built >= 3000 // 64 // 2, built
    for start in (3000, 3500):  # new vectors folded into the index by compaction
        store.put_vectors({r["embed_hash"]: v for r, v in zip(rows[start : start + 500], vectors[start : start + 500])})
        store.optimize()
        assert store.index_stats()["vectors.vector"]["unindexed_rows"] == 0
        assert _ann_partitions(store.index_dir, vectors[0]) >= built // 2
    exact = list(store.nearest_hashes(vectors[3999], 10, exact=True))
    assert len(set(exact) & set(store.nearest_hashes(vectors[3999], 10))) >= 9


def test_an_ann_index_built_by_partition_count_is_rebuilt_at_compaction(tmp_path, monkeypatch):
    import lancedb
    from lancedb.index import IvfSq

    from codeask.index import search

    monkeypatch.setattr(search, "PARTITION_ROWS", 64)
    dim = 32
    store = Store(tmp_path / "index", dim, ann_min_rows=2000)
    rows = chunk_rows(_chunks(2500))
    store.put_vectors({r["embed_hash"]: v for r, v in zip(rows, _clustered(2500, dim, 0))})
    store.replace_files({r["path"] for r in rows}, rows)
    table = lancedb.connect(str(store.index_dir / "lance")).open_table("vectors")
    table.create_index("vector", config=IvfSq(distance_type="dot", num_partitions=50))  # an older codeask's index

    def details() -> dict:
        return next(ix.index_details for ix in table.list_indices() if ix.columns == ["vector"])

    assert "target_partition_size" not in details()
    store.optimize()
    table.checkout_latest()
    assert details()["target_partition_size"] == 64
    assert store.index_stats()["vectors.vector"]["unindexed_rows"] == 0


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


def test_pending_count_kept_by_commits_equals_a_full_scan_and_survives_a_new_process(tmp_path):
    """The pending-vector state is kept current by the writer's own commits (no scan per change):
    after replacements, vector commits, deletions and a compaction it equals a fresh scan of both
    tables, and a new Store on the folder starts from the saved state."""
    dim = 8
    store = Store(tmp_path, dim)
    rng = np.random.default_rng(3)
    rows = chunk_rows(_chunks(60))
    store.replace_files({r["path"] for r in rows}, rows)
    assert store.count_pending() == 60 == sum(pending_by_scan(store).values())
    first = rows[:25]
    store.put_vectors({r["embed_hash"]: rng.standard_normal(dim).astype(np.float32) for r in first})
    assert store.count_pending() == 35
    # A file rewritten: one chunk kept (its vector too), one new chunk pending, one removed.
    path = rows[0]["path"]
    kept = [r for r in rows if r["path"] == path][:1]
    new = chunk_rows(_chunks(61)[60:])
    new = [dict(r, path=path) for r in new]
    store.replace_files([path], kept + new)
    store.replace_files([rows[-1]["path"]], [])  # a file deleted
    store.optimize()
    scanned = pending_by_scan(store)
    assert store.count_pending() == sum(scanned.values())
    assert store.count_pending(distinct=True) == len(scanned)
    chunks, vectors = tables(store)
    saved = json.loads((tmp_path / "pending.json").read_text())
    assert saved == {"versions": [chunks.version, vectors.version], "rows": scanned}
    assert Store(tmp_path, dim).count_pending() == store.count_pending()
    # A new Store answers from the saved state, not by scanning: a state planted for the same
    # versions is what it reports.
    (tmp_path / "pending.json").write_text(json.dumps(dict(saved, rows={"0" * 64: 7})))
    assert Store(tmp_path, dim).count_pending() == 7


def test_optimize_leaves_a_table_it_compacted_and_has_not_written_since(tmp_path):
    """Phase 2 writes only ``vectors``: its final compaction no longer rewrites ``chunks`` (and every
    index on it) when this store compacted it and wrote no chunk row since. A store that never
    compacted compacts both tables, whoever wrote them."""
    store = Store(tmp_path / "index", 8)
    rows = chunk_rows(_chunks(40))
    for part in (rows[:10], rows[10:25], rows[25:]):  # phase 1's batches, indexed after the first
        store.replace_files({r["path"] for r in part}, part)
        store.ensure_indexes()
    store.optimize()  # LanceDB leaves two fragments here: asked again, it would merge them
    before = tables(store)[0].version
    rng = np.random.default_rng(3)
    store.put_vectors({r["embed_hash"]: rng.standard_normal(8).astype(np.float32) for r in rows[:10]})
    vectors_written = tables(store)[1].version
    store.optimize()
    assert tables(store)[0].version == before  # chunks: not compacted again
    assert tables(store)[1].version > vectors_written  # vectors: compacted (a new version)
    assert store.count() == 40 and store.count_vectors() == 10

    killed = Store(tmp_path / "other", 8)  # wrote chunk rows in two commits, never compacted
    killed.replace_files({r["path"] for r in rows[:20]}, rows[:20])
    killed.replace_files({r["path"] for r in rows[20:]}, rows[20:])
    written = tables(killed)[0].version
    reopened = Store(tmp_path / "other", 8)  # the next process: it compacted nothing yet
    reopened.put_vectors({r["embed_hash"]: rng.standard_normal(8).astype(np.float32) for r in rows[:2]})
    reopened.optimize()
    assert tables(reopened)[0].version > written
