"""``codeask ask`` answered by a running ``codeask watch`` of the same folder (codeask.resident)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

from codeask.resident import socket_path
from tests.test_cli import codeask

QUESTION = "How is the coupon discount applied?"


class Watch:
    """A ``codeask watch ROOT`` subprocess whose stderr is collected line by line in a thread."""

    def __init__(self, root, env=None):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "codeask", "watch", str(root)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})},
        )
        self.sock = socket_path(root)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=lambda: self.lines.extend(self.proc.stderr), daemon=True)
        self._reader.start()

    def wait_for(self, what: str, done) -> None:
        """Until ``done()``; the watch must not exit meanwhile (600 s: a hang guard, not a speed check)."""
        deadline = time.monotonic() + 600
        while not done():
            assert self.proc.poll() is None, f"the watch exited: {''.join(self.lines)}"
            assert time.monotonic() < deadline, f"the watch never {what}: {''.join(self.lines)}"
            time.sleep(0.05)

    def stop(self) -> str:
        """SIGTERM (as Ctrl-C); its whole stderr."""
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=600)  # a hang guard, not a speed check (stdout: nothing without --json)
        self._reader.join(timeout=600)
        self.proc.stdout.close()
        return "".join(self.lines)


def _start_watch(root, env=None) -> Watch:
    """A watch of ``root`` once its first index is complete (both phases) and it answers asks."""
    watch = Watch(root, env)
    watch.wait_for("finished its first index", lambda: any("watching for changes" in line for line in watch.lines))
    assert watch.sock.exists(), "".join(watch.lines)
    return watch


def test_ask_is_answered_by_a_running_watch_and_falls_back_without_one(sample_workspace, tmp_path, fake_llm):
    (sample_workspace / "logo.png").write_bytes(b"\x89PNG\x00\x00" * 50)  # read, then skipped: not indexed
    in_process = json.loads(codeask("ask", str(sample_workspace), QUESTION, "--no-llm", "--json").stdout)
    watch = _start_watch(sample_workspace)
    sock = watch.sock
    try:
        assert oct(sock.parent.stat().st_mode & 0o777) == "0o700"
        assert oct(sock.with_suffix(".key").stat().st_mode & 0o777) == "0o600"
        # With a cache dir that cannot work, only the watch can answer: it does.
        broken = tmp_path / "not-a-folder"
        broken.write_text("x", encoding="utf-8")
        env = {"CODEASK_CACHE_DIR": str(broken)}
        served = json.loads(codeask("ask", str(sample_workspace), QUESTION, "--no-llm", "--json", env=env).stdout)
        assert [s["path"] for s in served["sources"]] == [s["path"] for s in in_process["sources"]]
        assert served["index"]["state"] == "ready"
        text = codeask("ask", str(sample_workspace), QUESTION, "--no-llm", env=env).stdout
        assert "Sources:" in text or "Most relevant code" in text
        # bad input is still one line and exit 2
        long = codeask("ask", str(sample_workspace), "-", "--no-llm", env=env, check=False, stdin="why?" * 50_001)
        assert long.returncode == 2 and "retrieval.max_question_chars" in long.stderr and "Traceback" not in long.stderr
        # other LLM settings than the watch's: answered in-process, through the LLM
        llm_env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": fake_llm.openai_base_url}
        out = json.loads(codeask("ask", str(sample_workspace), QUESTION, "--json", env=llm_env).stdout)
        assert out["answer"] == "FAKE ANSWER" and out["llm"].startswith("openai:")
    finally:
        err = watch.stop()
    assert "indexed 4 files; watching for changes" in err, err  # the status's count, not the files read
    assert not sock.exists() and not sock.with_suffix(".key").exists()
    # no watch: in-process again (and the broken cache dir is reported)
    proc = codeask("ask", str(sample_workspace), QUESTION, "--no-llm", env={"CODEASK_CACHE_DIR": str(broken)}, check=False)
    assert proc.returncode == 1 and "the cache dir" in proc.stderr


def test_a_stale_socket_is_ignored(sample_workspace):
    sock = socket_path(sample_workspace)
    sock.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    sock.write_text("", encoding="utf-8")  # left by a killed watch: nothing listens
    sock.with_suffix(".key").write_bytes(b"k" * 32)
    try:
        out = json.loads(codeask("ask", str(sample_workspace), QUESTION, "--no-llm", "--json").stdout)
        assert out["sources"]
    finally:
        sock.unlink(missing_ok=True)
        sock.with_suffix(".key").unlink(missing_ok=True)


def test_a_watch_answers_keyword_first_while_its_first_phase_2_runs(tmp_path):
    """The socket opens at the end of phase 1: an ask meanwhile is answered by the watch from the
    keyword index (state ``keyword-only``), and a SIGTERM during phase 2 still removes the socket."""
    from tests.test_embed import _embedding_children

    root = tmp_path / "many"
    root.mkdir()
    for i in range(120):  # enough chunks that phase 2 is still running when its child is paused below
        (root / f"mod{i}.py").write_text(
            f"def handler_{i}(value):\n    return value * {i} + {i * i}\n\n\n"
            f"class Store{i}:\n    def load_{i}(self, key):\n        return self.data.get(key, {i})\n",
            encoding="utf-8",
        )
    watch = Watch(root)
    try:
        watch.wait_for("opened its socket", watch.sock.exists)
        workers: dict[int, int] = {}
        watch.wait_for("started its embedding child", lambda: workers.update(_embedding_children(watch.proc.pid)) or workers)
        (child,) = workers
        os.kill(child, signal.SIGSTOP)  # phase 2 cannot finish while the ask runs
        try:
            # a cache dir that cannot work: only the watch can answer
            broken = tmp_path / "not-a-folder"
            broken.write_text("x", encoding="utf-8")
            out = json.loads(
                codeask("ask", str(root), "handler_7", "--no-llm", "--json", env={"CODEASK_CACHE_DIR": str(broken)}).stdout
            )
        finally:
            os.kill(child, signal.SIGCONT)
        assert out["index"]["state"] == "keyword-only" and out["index"]["vectors_pending"] > 0, out["index"]
        assert out["sources"][0]["path"] == "mod7.py"
    finally:
        err = watch.stop()
    assert watch.proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert "watching for changes" not in err, "phase 2 ended before the ask: the test proved nothing"
    assert not watch.sock.exists() and not watch.sock.with_suffix(".key").exists()
