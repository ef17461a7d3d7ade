"""Readers in other processes during a cold index, live edits and compactions (``bench/concurrency.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "concurrency.py"


def test_readers_never_fail_nor_see_a_file_without_rows(tmp_path):
    """A writer process (cold index, then 40 single-file edits, compaction every 2 commits) against a
    codeask reader and a reader using LanceDB directly: every read succeeds and no file that had
    rows is ever seen without rows."""
    root = tmp_path / "proj"
    for i in range(30):
        path = root / f"pkg{i % 3}" / f"mod{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(f"def parse_config_{i}_{j}(text):\n    return text.split({j!r})\n" for j in range(4))
        path.write_text(f'"""Module {i}: configuration parsing."""\n\n{body}', encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(BENCH), str(root), "--edits", "40", "--compact-every", "2", "--no-write"],
        capture_output=True,
        text=True,
        env={**os.environ, "LANCE_LOG": "error"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["complete"]
    assert summary["writer"]["edits"] == 40 and summary["writer"]["compactions"] >= 10
    codeask_reader, direct_reader = summary["readers"]
    assert codeask_reader["reads"] > 0 and direct_reader["reads"] > 0
    assert summary["reads"] == codeask_reader["reads"] + direct_reader["reads"]
    assert summary["failed_reads"] == 0, summary
    assert summary["empty_snapshots"] == 0, summary
