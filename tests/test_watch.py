"""Live updates from disk (watchfiles) and several roots in one engine."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

from codeask.index.watch import Watcher
from codeask.workspace import Workspace


def _wait_for(predicate, timeout=20.0, step=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


def test_watcher_indexes_new_files_coalesces_bursts_and_ignores_ignored(sample_workspace):
    (sample_workspace / ".gitignore").write_text("scratch/\n", encoding="utf-8")
    ws = Workspace([sample_workspace])
    ws.index()
    batches = []
    done = threading.Event()

    def on_update(stats):
        batches.append(stats)
        done.set()

    applied: list[list[str]] = []  # every batch the watcher hands to the engine
    update_paths = ws.update_paths

    def recording_update_paths(paths):
        applied.append([str(p) for p in paths])
        return update_paths(paths)

    ws.update_paths = recording_update_paths
    watcher = Watcher(ws, on_update=on_update).start()
    try:
        time.sleep(0.5)  # let the watcher start
        new = sample_workspace / "src/shop/loyalty.py"
        new.write_text("def award_loyalty_points(customer, amount):\n    return int(amount // 10)\n", encoding="utf-8")
        assert _wait_for(lambda: batches and ws.ask("award_loyalty_points", no_llm=True).sources[0].path == "src/shop/loyalty.py")
        assert batches[-1].vectors_pending == 0  # keyword and vector rows land together

        # A burst of 200 files is applied in one batch (or very few), never one per file.
        batches.clear()
        burst = sample_workspace / "src/generated"
        burst.mkdir()
        for i in range(200):
            (burst / f"g{i}.py").write_text(f"def generated_{i}():\n    return {i}\n", encoding="utf-8")
        assert _wait_for(lambda: sum(b.files_changed for b in batches) >= 200, timeout=60), [(b.files_changed, b.files_seen, b.files_skipped) for b in batches]
        assert len(batches) <= 3

        # Removing the folder removes every file below it.
        shutil.rmtree(burst)
        index = ws.indexes[str(sample_workspace.resolve())]
        assert _wait_for(lambda: not any(p.startswith("src/generated/") for p in index.store.paths()))
        assert not any(p.startswith("src/generated/") for p in index.manifest.all())

        # Ignored paths trigger no work: the engine is not even called.
        applied.clear()
        (sample_workspace / "scratch").mkdir()
        (sample_workspace / "scratch/notes.py").write_text("def scratch_marker_fn():\n    pass\n", encoding="utf-8")
        (sample_workspace / "src/shop/after_scratch.py").write_text("AFTER = 1\n", encoding="utf-8")
        assert _wait_for(lambda: any(p.endswith("after_scratch.py") for batch in applied for p in batch))
        assert not any("scratch/" in p for batch in applied for p in batch)

        # Deletes are applied.
        new.unlink()
        assert _wait_for(
            lambda: all(s.path != "src/shop/loyalty.py" for s in ws.ask("award_loyalty_points", no_llm=True).sources)
        )
    finally:
        watcher.stop()
    assert all(s.path != "scratch/notes.py" for s in ws.ask("scratch_marker_fn", no_llm=True).sources)


def test_one_engine_serves_several_roots(tmp_path):
    a = tmp_path / "alpha"
    b = tmp_path / "beta"
    (a / "pkg").mkdir(parents=True)
    (b / "lib").mkdir(parents=True)
    (a / "pkg/tokens.py").write_text("def refresh_access_token(session):\n    return session.renew()\n")
    (b / "lib/retry.py").write_text("def retry_with_backoff(call, attempts=3):\n    return call()\n")
    ws = Workspace([a, b])
    stats = ws.index(embed=False)
    assert stats.files_changed == 2
    assert {Path(r["root"]).name for r in ws.status()["roots"]} == {"alpha", "beta"}
    first = ws.ask("refresh_access_token", no_llm=True).sources[0]
    assert (Path(first.root).name, first.path) == ("alpha", "pkg/tokens.py")
    assert first.uri.startswith(f"file://{a.resolve()}/pkg/tokens.py#L")
    second = ws.ask("retry_with_backoff", no_llm=True).sources[0]
    assert (Path(second.root).name, second.path) == ("beta", "lib/retry.py")
    ws.remove_root(b)
    assert all(Path(s.root).name == "alpha" for s in ws.ask("retry_with_backoff", no_llm=True).sources)
