"""``codeask clean``, ``codeask doctor``, progress lines without a terminal, ``startup_seconds``."""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import filelock
import pytest

from tests.test_cli import codeask


def _small(root: Path, name: str = "a.py") -> Path:
    root.mkdir(parents=True)
    (root / name).write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
    return root


def test_clean_lists_with_sizes_then_removes_missing_named_and_all(tmp_path, isolated_env):
    keep, gone, other = _small(tmp_path / "keep"), _small(tmp_path / "gone"), _small(tmp_path / "other")
    for root in (keep, gone, other):
        codeask("index", str(root), "--no-embed")
    shutil.rmtree(gone)

    listed = json.loads(codeask("clean", "--json").stdout)
    assert listed["cache_dir"] == str(isolated_env) and listed["removed"] == 0
    by_root = {i["root"]: i for i in listed["indexes"]}
    assert set(by_root) == {str(keep), str(gone), str(other)}
    assert by_root[str(gone)]["root_exists"] is False and by_root[str(keep)]["root_exists"] is True
    assert all(i["bytes"] > 0 and Path(i["index_dir"]).is_dir() for i in listed["indexes"])
    assert listed["total_bytes"] == sum(i["bytes"] for i in listed["indexes"])
    text = codeask("clean").stdout
    assert str(gone) in text and "gone" in text and "codeask clean --missing" in text

    out = json.loads(codeask("clean", "--missing", "--json").stdout)
    assert out["removed"] == 1 and out["removed_bytes"] == by_root[str(gone)]["bytes"]
    assert not Path(by_root[str(gone)]["index_dir"]).exists() and Path(by_root[str(keep)]["index_dir"]).exists()

    out = json.loads(codeask("clean", str(other), "--json").stdout)
    assert out["removed"] == 1 and not Path(by_root[str(other)]["index_dir"]).exists()

    proc = codeask("clean", str(tmp_path / "never-indexed"), check=False)
    assert proc.returncode == 1 and "no index of" in proc.stderr and "Traceback" not in proc.stderr

    out = json.loads(codeask("clean", "--all", "--json").stdout)
    assert out["removed"] == 1 and json.loads(codeask("clean", "--json").stdout)["indexes"] == []
    # the next ask simply indexes again
    assert codeask("ask", str(keep), "add", "--no-llm").returncode == 0


def test_clean_never_removes_an_index_being_written(tmp_path):
    root = _small(tmp_path / "busy")
    codeask("index", str(root), "--no-embed")
    index_dir = Path(json.loads(codeask("clean", "--json").stdout)["indexes"][0]["index_dir"])
    lock = filelock.FileLock(str(index_dir / "write.lock"))
    with lock.acquire(timeout=10):
        proc = codeask("clean", "--all", check=False)
    assert proc.returncode == 1 and "in use by" in proc.stderr and "Traceback" not in proc.stderr
    assert (index_dir / "manifest.sqlite").exists()


def _checks(proc) -> dict:
    out = json.loads(proc.stdout)
    return {c["name"]: c for c in out["checks"]} | {"_ok": out["ok"]}


def test_doctor_reports_each_part_and_the_llm_by_name(sample_workspace, fake_llm, isolated_env):
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": fake_llm.openai_base_url, "CODEASK_MODEL": "doctor-model"}
    checks = _checks(codeask("doctor", str(sample_workspace), "--json", env=env))
    assert checks["_ok"] is True
    assert checks["python"]["status"] == "ok" and checks["packages"]["status"] == "ok"
    assert "lancedb" in checks["packages"]["detail"]
    assert checks["embedding model"]["status"] == "ok" and "384-d" in checks["embedding model"]["detail"]
    assert checks["cache dir"]["status"] == "ok" and str(isolated_env) in checks["cache dir"]["detail"]
    assert checks["llm"]["status"] == "ok" and "openai:doctor-model" in checks["llm"]["detail"]
    assert [c["body"]["model"] for c in fake_llm.calls] == ["doctor-model"]
    index = checks[f"index {sample_workspace}"]
    assert index["status"] == "warn" and index["fix"] == f"codeask index {sample_workspace}"
    assert not any(isolated_env.iterdir()), "doctor creates no index"
    last = codeask("doctor", str(sample_workspace), "--no-llm").stdout.splitlines()[-1]
    assert last == "all checks passed, 1 with a warning (its fix above)"  # it said "all checks passed"

    codeask("index", str(sample_workspace))
    checks = _checks(codeask("doctor", str(sample_workspace), "--json", "--no-llm"))
    assert "llm" not in checks
    index = checks[f"index {sample_workspace}"]
    assert index["status"] == "ok" and index["detail"].startswith("ready: 4 files, 0 chunks")


def test_doctor_prints_a_fix_for_each_problem(sample_workspace, tmp_path):
    afile = tmp_path / "cache-file"
    afile.write_text("x", encoding="utf-8")
    env = {"CODEASK_CACHE_DIR": str(afile), "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    proc = codeask("doctor", "--json", env=env, check=False)
    assert proc.returncode == 1
    checks = _checks(proc)
    assert checks["_ok"] is False
    assert checks["cache dir"]["status"] == "fail" and "CODEASK_CACHE_DIR" in checks["cache dir"]["fix"]
    assert checks["llm"]["status"] == "fail" and "base URL" in checks["llm"]["fix"]
    text = codeask("doctor", env=env, check=False).stdout
    assert re.search(r"^fail  cache dir: .*\n      fix: set CODEASK_CACHE_DIR", text, re.M)
    assert "2 problem(s) found" in text

    proc = codeask("doctor", "--no-llm", "--json", env={"CODEASK_LLM": "anthropic"}, check=False)
    assert proc.returncode == 0  # --no-llm: the LLM is not checked
    proc = codeask("doctor", "--json", env={"CODEASK_LLM": "anthropic"}, check=False)
    llm = _checks(proc)["llm"]
    assert proc.returncode == 1 and llm["status"] == "fail" and "ANTHROPIC_API_KEY" in llm["fix"]


def _run_with_terminal_stderr(*args: str) -> tuple[int, str, str]:
    """Run ``python -m codeask ARGS`` with stderr on a pseudo-terminal and stdout on a pipe;
    returns (exit code, stdout, everything written to the terminal)."""
    leader, follower = os.openpty()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TERM": "xterm", "COLUMNS": "120", "LINES": "40"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "codeask", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    terminal = bytearray()
    deadline = time.monotonic() + 900  # a hang guard, not a speed check
    try:
        while time.monotonic() < deadline:
            if not select.select([leader], [], [], 1.0)[0]:
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the command closed the terminal (it ended)
                break
            if not chunk:
                break
            terminal += chunk
    finally:
        os.close(leader)
    out, _ = proc.communicate(timeout=900)
    return proc.returncode, out.decode(), terminal.decode(errors="replace")


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal (POSIX)")
def test_json_on_stdout_and_progress_bars_on_a_terminal_stderr(sample_workspace):
    """``index --json``: stdout holds only the JSON object, and a terminal on stderr shows the
    progress bars as without ``--json`` (no plain lines there: those are for logs)."""
    code, out, terminal = _run_with_terminal_stderr("index", str(sample_workspace), "--json")
    assert code == 0, terminal
    stats = json.loads(out)  # the one object, nothing else
    assert out.strip().count("\n") == 0 and stats["chunks_embedded"] > 0
    assert "indexing files" in terminal and "embedding chunks" in terminal, terminal
    assert "codeask progress:" not in terminal


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal (POSIX)")
def test_explain_in_a_cold_folder_shows_the_indexing_progress(sample_workspace, tmp_path):
    """``explain`` indexes a cold folder first, with the progress of ``ask`` / ``index`` on stderr:
    bars on a terminal (with or without ``--json``), plain lines on a pipe, none on a pipe with
    ``--json``; stdout holds only the explanation (or the one JSON object)."""
    copy = shutil.copytree(sample_workspace, tmp_path / "copy")  # another folder: another, cold, index
    code, out, terminal = _run_with_terminal_stderr(
        "explain", str(sample_workspace), "src/shop/cart.py:1-5", "--no-llm", "--json"
    )
    assert code == 0, terminal
    result = json.loads(out)  # the one object, nothing else
    assert out.strip().count("\n") == 0 and result["markdown"]
    assert "indexing files" in terminal and "embedding chunks" in terminal, terminal
    assert "codeask progress:" not in terminal

    proc = codeask("explain", str(copy), "src/shop/cart.py:1-5", "--no-llm")  # stderr is a pipe
    lines = [line for line in proc.stderr.splitlines() if line.startswith("codeask progress:")]
    done = r"codeask progress: indexing files: 4/4 \(100%\), [\d.]+ files/s, done in [\d.]+ s"
    assert any(re.fullmatch(done, line) for line in lines), proc.stderr
    assert any(line.startswith("codeask progress: embedding chunks:") for line in lines), proc.stderr
    assert "codeask progress" not in proc.stdout and proc.stdout.strip()
    # warm: nothing to index, no progress
    assert "codeask progress:" not in codeask("explain", str(copy), "src/shop/cart.py:1-5", "--no-llm").stderr

    cold = shutil.copytree(sample_workspace, tmp_path / "cold")
    proc = codeask("explain", str(cold), "src/shop/cart.py:1-5", "--no-llm", "--json")
    assert json.loads(proc.stdout)["markdown"] and "codeask progress:" not in proc.stderr  # --json on a pipe: no lines


def test_progress_lines_without_a_terminal_and_startup_seconds(sample_workspace):
    proc = codeask("index", str(sample_workspace))  # stderr is a pipe here, not a terminal
    lines = [line for line in proc.stderr.splitlines() if line.startswith("codeask progress:")]
    assert any(re.fullmatch(r"codeask progress: indexing files: 4/4 \(100%\), [\d.]+ files/s, done in [\d.]+ s", line) for line in lines), lines
    embed = [line for line in lines if line.startswith("codeask progress: embedding chunks:")]
    assert embed and re.fullmatch(r"codeask progress: embedding chunks: (\d+)/\1 \(100%\), [\d.]+ chunks/s, done in [\d.]+ s", embed[-1])
    assert "start-up" in proc.stdout

    stats = json.loads(codeask("index", str(sample_workspace), "--json").stdout)
    assert isinstance(stats["startup_seconds"], float) and stats["startup_seconds"] > 0
    assert stats["seconds"] >= stats["seconds_to_searchable"] >= 0
    assert codeask("index", str(sample_workspace), "--json").stderr == ""  # --json: no progress lines
