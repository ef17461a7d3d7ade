"""``codeask ask`` answered by a running ``codeask watch`` of the same folder (codeask.resident)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from codeask.resident import socket_path
from tests.test_cli import codeask

QUESTION = "How is the coupon discount applied?"


def _start_watch(root, env=None):
    proc = subprocess.Popen(
        [sys.executable, "-m", "codeask", "watch", str(root)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})},
    )
    sock = socket_path(root)
    deadline = time.monotonic() + 600  # a hang guard, not a speed check
    while not sock.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the watch never opened its socket"
        time.sleep(0.2)
    return proc, sock


def test_ask_is_answered_by_a_running_watch_and_falls_back_without_one(sample_workspace, tmp_path, fake_llm):
    (sample_workspace / "logo.png").write_bytes(b"\x89PNG\x00\x00" * 50)  # read, then skipped: not indexed
    in_process = json.loads(codeask("ask", str(sample_workspace), QUESTION, "--no-llm", "--json").stdout)
    proc, sock = _start_watch(sample_workspace)
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
        long = codeask("ask", str(sample_workspace), "why?" * 2000, "--no-llm", env=env, check=False)
        assert long.returncode == 2 and "retrieval.max_question_chars" in long.stderr and "Traceback" not in long.stderr
        # other LLM settings than the watch's: answered in-process, through the LLM
        llm_env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": fake_llm.openai_base_url}
        out = json.loads(codeask("ask", str(sample_workspace), QUESTION, "--json", env=llm_env).stdout)
        assert out["answer"] == "FAKE ANSWER" and out["llm"].startswith("openai:")
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
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
