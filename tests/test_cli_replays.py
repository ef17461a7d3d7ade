"""CLI failures found by replaying public bug reports of similar tools (issue 18): real processes,
real folders, the real embedding model and LanceDB."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import codeask

CART = '''def cart_total(items, coupon=None):
    """Sum of prices with the coupon's discount applied."""
    return sum(price for _, price in items) * (1 - (coupon or 0))
'''


def make_workspace(base: Path) -> Path:
    root = base / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src/cart.py").write_text(CART, encoding="utf-8")
    (root / "README.md").write_text("# Shop\n\nA tiny cart.\n", encoding="utf-8")
    return root


def one_clean_line(proc: subprocess.CompletedProcess) -> str:
    """The process failed with exactly one line on stderr and no traceback."""
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stderr.strip().count("\n") == 0, proc.stderr
    return proc.stderr.strip()


def test_status_of_a_folder_never_indexed_creates_nothing(tmp_path, isolated_env):
    """Issue 18.7: no index folder, no embedding model, no LanceDB; says "not indexed"."""
    root = make_workspace(tmp_path)
    probe = (
        "import json, sys\n"
        "from codeask.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "loaded = [m for m in ('onnxruntime', 'lancedb') if m in sys.modules]\n"
        "print(json.dumps(loaded), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    for args in (["status", str(root), "--json"], ["status", str(root)]):
        proc = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stderr.strip().splitlines()[-1]) == []  # nothing heavy was loaded
        assert list(isolated_env.iterdir()) == []  # and nothing was created
        if "--json" in args:
            status = json.loads(proc.stdout)
            assert status["indexed"] is False and status["files"] == 0 and status["roots"][0]["indexed"] is False
        else:
            assert proc.stdout.startswith(f"not indexed: {root}")


def _read_only_runner(cache: Path):
    """A function running ``python -m codeask ARGS`` with ``cache`` read-only, and a cleanup.

    As root (which ignores permission bits) the cache is bind-mounted read-only over itself in a
    private mount namespace of the child only (``unshare -m``): the real "index on a read-only
    mount" case. As another user, the folder's write bits are removed.
    """
    if os.geteuid() != 0:
        for path in [cache, *cache.rglob("*")]:
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))

        def restore() -> None:
            for path in [cache, *cache.rglob("*")]:
                path.chmod(path.stat().st_mode | stat.S_IWUSR)

        return (lambda *args: codeask(*args, check=False)), restore
    if shutil.which("unshare") is None:
        pytest.fail("running as root needs util-linux unshare to make a read-only mount")
    mount = f'mount --bind "{cache}" "{cache}" && mount -o remount,bind,ro "{cache}" && exec "$@"'

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", mount, "sh", sys.executable, "-m", "codeask", *args],
            capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )

    return run, (lambda: None)


def test_read_only_index_answers_and_says_it_cannot_update(tmp_path, isolated_env):
    """Issue 18.5: status, ask and ask --no-update answer from a read-only index."""
    root = make_workspace(tmp_path)
    built = json.loads(codeask("index", str(root), "--json").stdout)
    assert built["files_changed"] == 2 and built["vectors_pending"] == 0
    (root / "src/cart.py").write_text(CART + "\n\ndef shipping_fee():\n    return 5\n", encoding="utf-8")
    before = sorted(str(p.relative_to(isolated_env)) for p in isolated_env.rglob("*"))

    run, restore = _read_only_runner(isolated_env)
    try:
        proc = run("status", str(root), "--json")
        assert proc.returncode == 0, proc.stderr
        status = json.loads(proc.stdout)
        assert status["read_only"] is True and status["files"] == 2 and status["chunks_total"] >= 2

        for extra in (["--no-update"], []):
            proc = run("ask", str(root), "how is the cart total computed", "--no-llm", "--json", *extra)
            assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
            answer = json.loads(proc.stdout)
            assert answer["sources"][0]["path"] == "src/cart.py"
            assert "shipping_fee" not in answer["sources"][0]["content"]  # as indexed: no update
            assert "read-only" in proc.stderr

        line = one_clean_line(run("index", str(root)))
        assert "read-only" in line and "cannot be updated" in line
    finally:
        restore()
    assert sorted(str(p.relative_to(isolated_env)) for p in isolated_env.rglob("*")) == before


def test_cache_folder_that_cannot_be_created_is_one_line(tmp_path):
    """Issue 18.5: a cache folder that cannot be created: one line naming it, no traceback, from
    ``index`` and (issue 27) from ``status`` too, which said "not indexed" and exited 0."""
    root = make_workspace(tmp_path)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be\n", encoding="utf-8")
    env = {"CODEASK_CACHE_DIR": str(blocker / "cache")}
    line = one_clean_line(codeask("index", str(root), env=env, check=False))
    assert "cannot create the cache dir" in line and str(blocker) in line  # the message of issue 14
    proc = codeask("status", str(root), "--json", env=env, check=False)  # issue 27: as index does
    assert proc.returncode == 1 and proc.stdout == ""
    status_line = one_clean_line(proc)
    assert "cannot create the cache dir" in status_line and str(blocker) in status_line


def with_watch_limit(command: list[str], limit: int = 5) -> list[str]:
    """``command`` run in a new user namespace whose inotify watch limit is ``limit``.

    ``/proc/sys/user/max_inotify_watches`` is per user namespace: the child hits a real limit (the
    kernel refuses ``inotify_add_watch`` with ENOSPC, and watchfiles raises exactly what it raises
    at the machine-wide ``fs.inotify.max_user_watches``) while the machine's sysctl is untouched.
    """
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-U", "-r", "true"]).returncode != 0:
        pytest.skip("needs user namespaces (util-linux unshare -U) to lower the inotify watch limit")
    script = f'echo {limit} > /proc/sys/user/max_inotify_watches && exec "$@"'
    return ["unshare", "-U", "-r", "sh", "-c", script, "sh", *command]


def test_watch_limit_falls_back_to_polling(tmp_path):
    """Issue 18.4: past the OS watch limit, `codeask watch` polls, after one warning naming the limit."""
    import queue
    import signal
    import threading
    import time

    root = make_workspace(tmp_path)
    for i in range(12):  # more folders than the limit of 5 watches
        (root / f"pkg{i}").mkdir()
        (root / f"pkg{i}/mod.py").write_text(f"VALUE_{i} = {i}\n", encoding="utf-8")
    codeask("index", str(root))
    proc = subprocess.Popen(
        with_watch_limit([sys.executable, "-m", "codeask", "watch", str(root), "--json"]),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    lines: queue.Queue = queue.Queue()
    for stream, name in ((proc.stdout, "out"), (proc.stderr, "err")):
        threading.Thread(target=lambda s=stream, n=name: [lines.put((n, line)) for line in s], daemon=True).start()

    def next_line(where: str, needle: str, timeout: float = 300) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                name, line = lines.get(timeout=1)
            except queue.Empty:
                assert proc.poll() is None, f"codeask watch exited {proc.returncode}"
                continue
            seen.append((name, line))
            if name == where and needle in line:
                return line
        raise AssertionError(f"no {needle!r} on std{where}: {seen}")

    seen: list = []
    try:
        warning = next_line("err", "limit on file watches")
        assert "fs.inotify.max_user_watches" in warning and "sysctl" in warning and "polling" in warning
        (root / "pkg3/added.py").write_text("def polled_change_marker():\n    return 1\n", encoding="utf-8")
        update = json.loads(next_line("out", "files_changed"))
        assert "pkg3/added.py" in update["paths_changed"]
    finally:
        proc.send_signal(signal.SIGTERM)  # as Ctrl-C (a shell without job control starts background jobs with SIGINT ignored)
        proc.wait(60)
    time.sleep(0.2)
    while not lines.empty():
        seen.append(lines.get())
    errors = [line for name, line in seen if name == "err"]
    assert sum("fs.inotify.max_user_watches" in line for line in errors) == 1, errors
    assert not any("Traceback" in line for line in errors), errors
    assert proc.returncode == 0
