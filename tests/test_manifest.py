"""The manifest's file count: cached between changes, current after this or another connection's commits."""

from __future__ import annotations

from codeask.index.manifest import FileRecord, Manifest


def _rec(path: str) -> FileRecord:
    return FileRecord(path, "0" * 64, 10, 1, 2)


def test_count_follows_own_and_other_connections_commits(tmp_path):
    path = tmp_path / "manifest.sqlite"
    mine, other = Manifest(path), Manifest(path)
    assert mine.count() == 0
    mine.record([_rec("a.py"), _rec("b.py")])
    assert mine.count() == 2
    assert mine.count() == 2  # unchanged: the cached count
    other.record([_rec("c.py")])  # another connection (as another process would) commits
    assert mine.count() == 3
    mine.forget(["a.py"])
    assert mine.count() == 2
    other.forget(["b.py", "c.py"])
    assert mine.count() == 0 == other.count()
    mine.close()
    other.close()
