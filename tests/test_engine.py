"""Incremental indexing: reuse, two phases, crash safety, one writer, bounded disk, hostile inputs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codeask.index import filetext
from codeask.index.engine import RootIndex
from codeask.index.lock import IndexLocked
from codeask.settings import load_settings
from codeask.workspace import Workspace
from tests.tables import tables


def _index(root: Path, **flags) -> RootIndex:
    return RootIndex(root, load_settings(root, flags=flags))


def _rows(index: RootIndex) -> list[tuple]:
    """``(id, path, start, end, content, has its vector)`` of every chunk row, sorted."""
    tbl = tables(index.store)[0].to_arrow().select(["id", "path", "start_line", "end_line", "content", "embed_hash"])
    stored = index.store.get_vectors(tbl["embed_hash"].to_pylist())
    cols = [tbl[c].to_pylist() for c in ("id", "path", "start_line", "end_line", "content")]
    return sorted((*row, h in stored) for *row, h in zip(*cols, tbl["embed_hash"].to_pylist()))


def test_unchanged_tree_embeds_nothing_and_edit_reembeds_one_chunk(sample_workspace):
    index = _index(sample_workspace)
    cold = index.sync()
    assert cold.files_changed == 4 and cold.chunks_embedded > 0 and cold.vectors_pending == 0
    again = _index(sample_workspace).sync()  # a restart: new objects, same index folder
    assert (again.files_changed, again.chunks_embedded, again.files_removed) == (0, 0, 0)

    cart = sample_workspace / "src/shop/cart.py"
    cart.write_text(cart.read_text() + "\n\ndef empty_cart(cart):\n    cart.items.clear()\n", encoding="utf-8")
    edited = _index(sample_workspace).sync()
    assert edited.files_changed == 1
    assert 1 <= edited.chunks_embedded <= 2  # only the chunk(s) whose text changed

    # moving a file re-embeds nothing
    (sample_workspace / "src/shop/pricing.py").rename(sample_workspace / "src/shop/prices.py")
    moved = _index(sample_workspace).sync()
    assert moved.chunks_embedded == 0
    assert moved.paths_removed == ["src/shop/pricing.py"] and moved.files_changed == 1


def test_keyword_search_works_before_vectors(sample_workspace):
    ws = Workspace([sample_workspace])
    stats = ws.index(embed=False)
    assert stats.vectors_pending == stats.chunks_total > 0
    assert ws.status()["vectors_pending"] == stats.chunks_total
    answer = ws.ask("apply_discount coupon", no_llm=True)
    assert answer.sources[0].path == "src/shop/pricing.py"
    ws.index()
    assert ws.status()["vectors_pending"] == 0


def test_removed_file_rows_are_deleted(sample_workspace):
    index = _index(sample_workspace)
    index.sync()
    (sample_workspace / "src/shop/shipping.py").unlink()
    stats = index.sync()
    assert stats.files_removed == 1 and stats.paths_removed == ["src/shop/shipping.py"]
    assert "src/shop/shipping.py" not in index.store.paths()
    assert index.manifest.get("src/shop/shipping.py") is None


def test_live_update_is_searchable_by_keyword_and_vector(sample_workspace):
    ws = Workspace([sample_workspace])
    ws.index()
    new = sample_workspace / "src/shop/refunds.py"
    new.write_text("def issue_refund_voucher(order):\n    return order.total * 0.1\n", encoding="utf-8")
    stats = ws.update_paths([new])
    assert stats.files_changed == 1 and stats.vectors_pending == 0
    assert ws.ask("issue_refund_voucher", no_llm=True).sources[0].path == "src/shop/refunds.py"
    index = ws.indexes[str(sample_workspace.resolve())]
    vec = ws.embedder().embed_query("issue_refund_voucher order total")
    assert index.store.vector_search(vec, 1)[0].path == "src/shop/refunds.py"
    new.unlink()
    assert ws.update_paths([new]).files_removed == 1
    assert all(s.path != "src/shop/refunds.py" for s in ws.ask("issue_refund_voucher", no_llm=True).sources)


def test_second_writer_is_refused_with_a_clear_message(sample_workspace):
    first = _index(sample_workspace)
    second = _index(sample_workspace)
    with first.writing(), pytest.raises(IndexLocked, match=f"pid {os.getpid()}"):
        second.sync(wait=False)
    assert second.sync(wait=False).files_changed == 4


_KILL_SCRIPT = """
import sys
from codeask.index import phase1
from codeask.workspace import Workspace
phase1.WRITE_BATCH_FILES = 5  # commits of 5 files, so a kill lands between two
Workspace([sys.argv[1]]).index()
"""


def _wait_until(predicate, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_kill_during_cold_index_converges(tmp_path):
    """kill -9 in phase 1 (some files committed), in phase 2 (some vectors stored) and right after
    start; a new run ends with exactly a clean index's rows."""
    root = tmp_path / "proj"
    for i in range(120):
        p = root / f"pkg{i % 6}" / f"mod{i}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(f"def func_{i}_{j}(x):\n    return x * {j} + {i}\n" for j in range(8))
        p.write_text(f'"""Module {i}."""\n\n{body}', encoding="utf-8")
    env = {**os.environ, "CODEASK_CACHE_DIR": os.environ["CODEASK_CACHE_DIR"]}
    observer = _index(root)

    def files_recorded() -> int:
        return observer.manifest.count()

    def vectors_stored() -> int:
        return observer.store.count_vectors() if files_recorded() else 0

    moments = [
        ("phase 1", lambda: 0 < files_recorded() < 120),
        ("phase 2", lambda: vectors_stored() > 0),
        ("start", lambda: True),
    ]
    for name, moment in moments:
        proc = subprocess.Popen([sys.executable, "-c", _KILL_SCRIPT, str(root)], env=env)
        reached = _wait_until(lambda moment=moment, proc=proc: moment() or proc.poll() is not None)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert reached and proc.returncode == -signal.SIGKILL, f"the run ended before the kill ({name})"
    index = _index(root)
    stats = index.sync()
    assert stats.vectors_pending == 0
    rows = _rows(index)
    ids = [r[0] for r in rows]
    assert len(ids) == len(set(ids)), "no duplicate chunk ids"
    assert index.manifest.count() == 120  # the modules

    clean_root = tmp_path / "clean" / "proj"
    shutil.copytree(root, clean_root)
    clean = _index(clean_root)
    clean.sync()
    assert [r[1:] for r in _rows(clean)] == [r[1:] for r in rows]


def test_disk_stays_bounded_over_many_edits(tmp_path):
    """With no version retention (a single-process user may choose it), disk stays bounded; unused
    vectors of the 1,000 old versions of the file are collected."""
    root = tmp_path / "proj"
    root.mkdir()
    for i in range(10):
        (root / f"m{i}.py").write_text(f"def f{i}(x):\n    return x + {i}\n", encoding="utf-8")
    target = root / "m0.py"
    index = _index(root)
    index.store.keep_versions_minutes = 0
    index.sync()
    index.store.optimize()
    clean_bytes = index.store.disk_bytes()
    for n in range(1000):
        target.write_text(f"def f0(x):\n    return x + {n}\n", encoding="utf-8")
        index.update_paths([target])
    index.sync()
    assert index.store.count() == 10
    assert index.store.count_vectors() == 10
    assert index.store.disk_bytes() < 5 * clean_bytes


def test_hostile_inputs_are_skipped_or_indexed_and_secrets_never_returned(tmp_path):
    root = tmp_path / "hostile"
    (root / "src").mkdir(parents=True)
    (root / "src/good.py").write_text("def healthy_function():\n    return 'ok'\n", encoding="utf-8")
    (root / "src/latin.py").write_bytes("# caf\xe9 na\xefve\ndef latin_marker_fn():\n    pass\n".encode("latin-1"))
    (root / "src/empty.py").write_text("", encoding="utf-8")
    (root / "blob.bin").write_bytes(b"\x00\x01\x02binary_marker" * 100)
    (root / "bundle.min.txt").write_text("var minified_marker=1;" * 400, encoding="utf-8")
    (root / "huge.txt").write_text("huge_marker line\n" * 80_000, encoding="utf-8")
    (root / ".env").write_text("SECRET_TOKEN=supersecret_env_value\n", encoding="utf-8")
    (root / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nsupersecret_key_value\n", encoding="utf-8")
    (root / ".gitignore").write_text("ignored_dir/\n*.log\n", encoding="utf-8")
    (root / "ignored_dir").mkdir()
    (root / "ignored_dir/hidden.py").write_text("def ignored_marker_fn():\n    pass\n", encoding="utf-8")
    (root / "logs").mkdir()
    (root / "logs/.gitignore").write_text("!keep.log\n", encoding="utf-8")
    (root / "logs/keep.log").write_text("negated_keep_marker kept\n", encoding="utf-8")
    (root / "logs/drop.log").write_text("dropped_log_marker\n", encoding="utf-8")
    (root / "loop").mkdir()
    os.symlink(root, root / "loop/back")
    os.symlink("/etc", root / "outside")
    stats = Workspace([root]).index()
    skipped = stats.files_skipped
    for reason in ("binary", "minified", "too_large", "secret", "ignored", "symlink_loop", "outside_root"):
        assert skipped.get(reason, 0) >= 1, (reason, skipped)

    ws = Workspace([root])
    found = lambda q: [s.path for s in ws.ask(q, no_llm=True, top_k=50, max_files=50).sources]  # noqa: E731
    assert found("latin_marker_fn")[0] == "src/latin.py"
    assert found("negated_keep_marker")[0] == "logs/keep.log"
    everything = ws.ask(
        "supersecret_env_value supersecret_key_value ignored_marker_fn dropped_log_marker binary_marker "
        "minified_marker huge_marker SECRET_TOKEN",
        no_llm=True, top_k=200, max_files=200,
    )
    assert everything.sources, "the healthy files still match some words"
    text = json.dumps(everything.to_json()["sources"])
    for marker in ("supersecret", "ignored_marker_fn", "dropped_log_marker", "binary_marker", "minified_marker", "huge_marker"):
        assert marker not in text


def test_a_file_skipped_for_its_content_is_not_read_again_until_it_or_the_limits_change(tmp_path, monkeypatch):
    """A binary or minified file is read once: the next sync reports it skipped from its skip record
    (no file is read, so phase 1 reports no ``index`` progress); an edit, or a setting that decides
    the skip, makes it read again, and a file that becomes indexable is indexed."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text("def healthy_function():\n    return 'ok'\n", encoding="utf-8")
    (root / "blob.txt").write_bytes(b"\x00\x01binary_marker" * 100)
    (root / "bundle.js").write_text("var minified_marker=1;" * 400, encoding="utf-8")
    assert _index(root).sync(embed=False).files_skipped == {"binary": 1, "minified": 1}

    seen: list = []
    stats = _index(root).sync(embed=False, progress=seen.append)
    assert stats.files_skipped == {"binary": 1, "minified": 1}
    assert [p for p in seen if p.phase == "index"] == [] and stats.files_changed == 0

    (root / "blob.txt").write_text("def was_binary_marker():\n    pass\n", encoding="utf-8")
    stats = _index(root).sync(embed=False)
    assert stats.files_skipped == {"minified": 1} and stats.paths_changed == ["blob.txt"]

    monkeypatch.setattr(filetext, "MAX_LINE_LENGTH", 100_000)
    relaxed = _index(root)
    stats = relaxed.sync(embed=False)
    assert stats.files_skipped == {} and stats.paths_changed == ["bundle.js"]
    assert relaxed.manifest.skipped() == {}


_KILL_IN_PHASE2 = """
import json, os, signal, sys
from pathlib import Path
from codeask.index.engine import RootIndex
from codeask.settings import load_settings
root = Path(sys.argv[1])
from codeask.index import phase2
phase2.EMBED_COMMIT_ROWS, phase2.EMBED_COMMIT_SECONDS = json.loads(sys.argv[2])
index = RootIndex(root, load_settings(root))
index.sync(embed=False)
index.embed_pending(progress=lambda p: os.kill(os.getpid(), signal.SIGKILL))
"""


@pytest.mark.parametrize("seconds, durable", [(0.0, True), (86_400.0, False)])
def test_phase2_commits_by_time_as_well_as_rows(sample_workspace, seconds, durable):
    """Issue 18 item 6: a run killed after its first group of texts keeps their vectors when the
    time rule is due (``EMBED_COMMIT_SECONDS``), although the row rule is not; without it, nothing."""
    rules = [100_000, seconds]  # EMBED_COMMIT_ROWS, EMBED_COMMIT_SECONDS of the killed run
    proc = subprocess.run([sys.executable, "-c", _KILL_IN_PHASE2, str(sample_workspace), json.dumps(rules)])
    assert proc.returncode == -signal.SIGKILL
    index = _index(sample_workspace)
    assert index.manifest.count() == 4 and index.store.count() > 0
    assert (index.store.count_vectors() > 0) is durable
    pending = index.store.count_pending()
    assert (pending < index.store.count()) is durable
    index.sync()  # the next run finishes the rest
    assert index.store.count_pending() == 0


def test_vectors_are_content_addressed_and_chunk_rows_are_never_rewritten(sample_workspace):
    """Phase 2 adds vectors without touching chunk rows: every row stays in the full-text index; a
    copy of a file re-embeds nothing; vectors no chunk uses are collected at compaction."""
    index = _index(sample_workspace)
    index.sync(embed=False)
    fts = index.store.index_stats()["chunks.text"]
    assert fts["unindexed_rows"] == 0 and fts["indexed_rows"] == index.store.count()
    version = tables(index.store)[0].version
    index.embed_pending()
    assert tables(index.store)[0].version == version, "phase 2 committed to the chunk table"
    assert index.store.index_stats()["chunks.text"]["unindexed_rows"] == 0
    texts = index.store.count_vectors()
    assert index.store.count_pending() == 0

    copy = sample_workspace / "src/shop/cart_copy.py"
    copy.write_text((sample_workspace / "src/shop/cart.py").read_text(encoding="utf-8"), encoding="utf-8")
    stats = index.update_paths([copy])
    assert stats.chunks_embedded == 0 and index.store.count_vectors() == texts

    copy.unlink()
    cart = sample_workspace / "src/shop/cart.py"
    cart.write_text("def only_this(x):\n    return x\n", encoding="utf-8")
    index.update_paths([copy, cart])
    assert index.store.count_vectors() > texts  # the new text's vector; old ones wait for compaction
    index.store.optimize()
    used = set(tables(index.store)[0].to_arrow()["embed_hash"].to_pylist())
    stored = tables(index.store)[1].to_arrow()["embed_hash"].to_pylist()
    assert sorted(stored) == sorted(used)


def test_one_commit_per_file_replacement_keeps_unchanged_rows(sample_workspace):
    """An edit replaces a file's rows in one commit and keeps its unchanged chunks' rows as they were."""
    big = sample_workspace / "src/shop/big.py"
    body = "\n\n".join(
        f"def step_{i}(x):\n" + "".join(f"    x = x * {j} + {i}\n" for j in range(20)) + "    return x\n" for i in range(12)
    )
    big.write_text(body, encoding="utf-8")
    index = _index(sample_workspace)
    index.sync()
    before = {r["id"] for r in index.store.rows_for_path("src/shop/big.py")}
    version = tables(index.store)[0].version
    big.write_text(body + "\n\ndef empty_cart(cart):\n    cart.items.clear()\n", encoding="utf-8")
    index.update_paths([big])
    assert tables(index.store)[0].version == version + 1
    after = {r["id"] for r in index.store.rows_for_path("src/shop/big.py")}
    assert len(before) > 2 and after - before and len(before & after) >= len(before) - 1


def test_blank_only_file_is_indexed_with_no_rows_until_it_holds_code(sample_workspace):
    """A whitespace-only file is recorded like an empty file (indexed, 0 chunks) and writes no row a
    search could return; an edit that adds code gives it rows, and blanking it again removes them."""
    blank, empty = sample_workspace / "src/shop/blank.py", sample_workspace / "src/shop/empty.py"
    blank.write_text("\n   \n\t\n\n", encoding="utf-8")
    empty.write_text("", encoding="utf-8")
    index = _index(sample_workspace)
    index.sync()
    assert index.store.rows_for_path("src/shop/blank.py") == []
    assert not any(not content.strip() for _, _, _, _, content, _ in _rows(index))  # no blank row at all
    assert index.manifest.get("src/shop/blank.py").chunks == index.manifest.get("src/shop/empty.py").chunks == 0
    status = index.status()
    assert status["files"] == 6 and status["chunks_total"] == len(_rows(index))

    blank.write_text("\n\ndef wrap_gift(items):\n    return len(items)\n\n", encoding="utf-8")
    index.update_paths([blank])
    rows = index.store.rows_for_path("src/shop/blank.py")
    assert [(r["start_line"], r["end_line"]) for r in rows] == [(1, 5)] and "wrap_gift" in rows[0]["content"]
    assert index.manifest.get("src/shop/blank.py").chunks == 1

    blank.write_text("\n\n", encoding="utf-8")
    index.update_paths([blank])
    assert index.store.rows_for_path("src/shop/blank.py") == [] and index.manifest.get("src/shop/blank.py").chunks == 0
