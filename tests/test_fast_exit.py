"""``codeask`` one-shot commands end their process without Python's finalization (``cli.run``):
output flushed whole, exit codes kept, everything written committed for the next process."""

from __future__ import annotations

import json
import sqlite3

from tests.test_cli import codeask


def test_a_one_shot_command_flushes_its_output_and_keeps_its_writes(sample_workspace):
    indexed = json.loads(codeask("index", str(sample_workspace), "--json").stdout)
    assert indexed["files_changed"] == 4 and indexed["vectors_pending"] == 0
    status = json.loads(codeask("status", str(sample_workspace), "--json").stdout)  # a new process reads it all
    assert status["files"] == 4 and status["chunks_total"] == indexed["chunks_total"]
    assert status["vectors_pending"] == 0
    manifest = status["roots"][0]["index_dir"] + "/manifest.sqlite"
    with sqlite3.connect(f"file:{manifest}?mode=ro", uri=True) as db:  # its SQLite writes are committed
        assert db.execute("select count(*) from files").fetchone()[0] == 4
    proc = codeask("ask", str(sample_workspace), "How is the shipping cost computed?", "--no-llm", "--json")
    answer = json.loads(proc.stdout)  # the whole JSON object arrived through the pipe
    assert answer["sources"] and proc.stdout.endswith("\n")


def test_a_one_shot_command_keeps_its_exit_code(sample_workspace):
    assert codeask("ask", str(sample_workspace), "   ", "--no-llm", check=False).returncode == 2
    missing = codeask("status", str(sample_workspace / "nope"), check=False)
    assert missing.returncode == 1 and missing.stderr.startswith("codeask: workspace folder not found")


def test_only_one_shot_commands_skip_the_finalization(sample_workspace, tmp_path):
    """``run`` skips Python's finalization (atexit handlers, module teardown) after a one-shot
    command only; any other command exits normally."""
    import os
    import subprocess
    import sys

    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('finalized', file=sys.stderr))\n"
        "sys.argv = ['codeask', *sys.argv[1:]]\n"
        "from codeask.cli import run\n"
        "run()\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}

    def finalized(*args: str) -> bool:
        proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        return "finalized" in proc.stderr

    assert not finalized("status", str(sample_workspace), "--json")
    assert finalized("--version")
