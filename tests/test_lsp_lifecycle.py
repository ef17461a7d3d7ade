"""The language server as a good citizen: lazy start, clean stop, cheap hover, cancellable asks, and
an index that catches up with another writer. Over stdio (pytest-lsp), real LanceDB and embedding
model; the LLM is the local fake server driven through the real ``openai`` SDK.

No wall-clock thresholds: each test waits for what it observes (progress notifications, fake-LLM
requests, process exit) with generous hang guards, and prints the durations it measured.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig

from tests.test_lsp import cmd, llm_options, open_doc, session, uri, wait_indexed

HANG = 300  # seconds: a guard against hangs, never a speed goal


def _capabilities(progress: bool = True) -> lsp.ClientCapabilities:
    return lsp.ClientCapabilities(
        window=lsp.WindowClientCapabilities(work_done_progress=progress),
        workspace=lsp.WorkspaceClientCapabilities(configuration=True, workspace_folders=True),
    )


def _progress(client, title: str) -> tuple[list, bool]:
    """The values of the latest progress titled ``title`` and whether it has ended."""
    found: list = []
    for values in client.progress_reports.values():
        if values and isinstance(values[0], lsp.WorkDoneProgressBegin) and values[0].title == title:
            found = values
    return found, bool(found) and isinstance(found[-1], lsp.WorkDoneProgressEnd)


async def _until(predicate, what: str, timeout: float = HANG):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)
    return value


# ------------------------------------------------------------------------------------------------
# stopping during phase 1 / phase 2 of the requests sdist


@pytest.fixture(scope="module")
def requests_root(requests_sdist, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("stop") / "requests"
    shutil.copytree(requests_sdist, root)
    return root


async def _stop_once(root: Path, cache: Path, stderr: Path, phase: int, how: str) -> tuple[int, float, str]:
    """Start a server, wait until ``phase`` is observed, then ``shutdown``+``exit`` or close stdin.
    Returns ``(exit code, seconds from the stop to the exit, stderr)``."""
    command = ["sh", "-c", 'exec "$0" -m codeask serve 2>"$1"', sys.executable, str(stderr)]
    env = {**os.environ, "CODEASK_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1"}
    client = await ClientServerConfig(server_command=command, server_env=env).start()
    try:
        await client.initialize_session(
            lsp.InitializeParams(
                capabilities=_capabilities(),
                workspace_folders=[lsp.WorkspaceFolder(uri=uri(root), name=root.name)],
                initialization_options={"indexOnStartup": "always"},
            )
        )
        if phase == 1:  # files are being chunked and written: the scan has been reported, no end yet
            def seen():
                values, ended = _progress(client, "codeask: indexing")
                return not ended and any(isinstance(v, lsp.WorkDoneProgressReport) for v in values)
        else:  # a batch of vectors is being embedded
            def seen():
                values, ended = _progress(client, "codeask: embedding")
                return bool(values) and not ended
        await _until(seen, f"phase {phase}")
        process = client._server
        started = time.monotonic()
        if how == "exit":
            await asyncio.wait_for(client.shutdown_async(None), HANG)
            client.exit(None)
        else:
            process.stdin.close()
        code = await asyncio.wait_for(process.wait(), HANG)
        return code, time.monotonic() - started, stderr.read_text()
    finally:
        await client.stop()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["exit", "eof"])
@pytest.mark.parametrize("phase", [1, 2])
async def test_stop_during_indexing_is_clean(requests_root, tmp_path, phase, how):
    repeats = int(os.environ.get("CODEASK_STOP_REPEATS", "10"))
    shared = tmp_path / "cache"  # phase 2: each run goes on embedding where the last one stopped
    seconds = []
    for i in range(repeats):
        cache = shared if phase == 2 else tmp_path / f"cache-{i}"
        code, took, err = await _stop_once(requests_root, cache, tmp_path / f"stderr-{i}.txt", phase, how)
        seconds.append(took)
        assert code >= 0, f"run {i}: killed by signal {-code}\n{err}"
        assert code == (0 if how == "exit" else 1), f"run {i}: exit code {code}\n{err}"
        assert "Traceback" not in err and "Event loop is closed" not in err, f"run {i}:\n{err}"
    print(f"\nstop during phase {phase} by {how}: {repeats} runs, exit after "
          f"median {statistics.median(seconds):.2f} s, max {max(seconds):.2f} s (goal < 3 s)")
