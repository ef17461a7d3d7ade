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

from tests.test_lsp import cmd, llm_options, open_doc, session, start, uri, wait_indexed

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
    client = await start(command, env)
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
        started = time.monotonic()
        if how == "exit":
            await asyncio.wait_for(client.shutdown_async(None), HANG)
            client.exit(None)
        else:
            client.close_stdin()
        code = await client.wait_exit(HANG)
        return code, time.monotonic() - started, stderr.read_text()
    finally:
        await client.stop()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["exit", "eof"])
@pytest.mark.parametrize("phase", [1, 2])
async def test_stop_during_indexing_is_clean(requests_root, tmp_path, phase, how):
    repeats = int(os.environ.get("CODEASK_STOP_REPEATS", "3"))  # the issue asks 10: CODEASK_STOP_REPEATS=10
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


# ------------------------------------------------------------------------------------------------
# lazy start


def _words(path: Path) -> list[tuple[int, int, str]]:
    """``(line, column, word)`` of each distinct identifier of ``path`` (0-based)."""
    import re

    seen, out = set(), []
    for i, line in enumerate(path.read_text().splitlines()):
        for m in re.finditer(r"[A-Za-z_][A-Za-z0-9_]{2,}", line):
            if m.group(0) not in seen:
                seen.add(m.group(0))
                out.append((i, m.start() + 1, m.group(0)))
    return out


async def test_lazy_start_first_ask_indexes_and_waits(sample_workspace, tmp_path):
    async with session(sample_workspace, options={"indexOnStartup": "auto"}) as client:
        st = await cmd(client, "codeask.status")
        assert st["index_state"] == "not-indexed" and st["files"] == 0 and not st["indexing"], st
        assert "not indexed yet" in st["index_message"]
        assert _progress(client, "codeask: indexing") == ([], False)
        # hover costs nothing before the first question: no indexing starts
        cart = sample_workspace / "src/shop/cart.py"
        line, col, _ = _words(cart)[3]
        params = lsp.HoverParams(lsp.TextDocumentIdentifier(uri(cart)), lsp.Position(line, col))
        assert await client.text_document_hover_async(params) is None
        assert not (await cmd(client, "codeask.status"))["indexing"]

        # the first ask starts indexing, waits for the keyword phase and answers from it
        out = await cmd(client, "codeask.ask", {"question": "shipping cost express", "no_llm": True}, timeout=HANG)
        assert out["sources"][0]["path"] == "src/shop/shipping.py"
        values, _ = _progress(client, "codeask: asking")
        assert any("waiting for the keyword index" in (v.message or "") for v in values), values
        assert _progress(client, "codeask: indexing")[1]  # phase 1 ran and ended
        await wait_indexed(client)

    # an index exists now: ``auto`` brings it up to date at start
    async with session(sample_workspace, options={"indexOnStartup": "auto"}) as client:
        await _until(lambda: _progress(client, "codeask: indexing")[1], "indexing at start")
        # ``never`` leaves it alone until asked, but answers from the existing index at once
    async with session(sample_workspace, options={"indexOnStartup": "never"}) as client:
        st = await cmd(client, "codeask.status")
        assert st["index_state"] == "ready" and not st["indexing"], st
        out = await cmd(client, "codeask.ask", {"question": "apply discount coupon", "no_llm": True})
        assert out["sources"][0]["path"] == "src/shop/pricing.py"

    # a folder with a .codeask.toml is indexed at start
    other = tmp_path / "configured"
    shutil.copytree(sample_workspace, other)
    (other / ".codeask.toml").write_text("[retrieval]\ntop_k = 10\n")
    async with session(other, options={"indexOnStartup": "auto"}) as client:
        st = await wait_indexed(client)
        assert st["files"] >= 4 and st["index_state"] == "ready"


# ------------------------------------------------------------------------------------------------
# hover: cheap by default, debounced and one LLM call at a time with hover.llm


@pytest.mark.parametrize("hover_llm", [False, True])
async def test_hover_sweep_costs_at_most_one_llm_call(sample_workspace, fake_llm, hover_llm):
    def slow(request):
        time.sleep(2)
        return "FAKE HOVER"

    config = {"codeask": {"hover": {"llm": hover_llm}}}
    async with session(sample_workspace, options=llm_options(fake_llm), configuration=config) as client:
        await wait_indexed(client)
        fake_llm.reset()
        fake_llm.responder = slow
        targets = []
        for name in ("src/shop/cart.py", "src/shop/pricing.py", "src/shop/shipping.py"):
            path = sample_workspace / name
            open_doc(client, path)
            targets += [(path, line, col) for line, col, _ in _words(path)]
        targets = targets[:40]
        assert len(targets) == 40
        hovers = []
        status = None
        for i, (path, line, col) in enumerate(targets):
            params = lsp.HoverParams(lsp.TextDocumentIdentifier(uri(path)), lsp.Position(line, col))
            hovers.append(asyncio.ensure_future(client.text_document_hover_async(params)))
            if i == 20:  # meanwhile the server answers other requests
                status = asyncio.ensure_future(cmd(client, "codeask.status"))
            await asyncio.sleep(0.02)
        results = await asyncio.wait_for(asyncio.gather(*hovers, return_exceptions=True), HANG)
        st = await asyncio.wait_for(status, HANG)
        assert st["files"] == 4
        assert not [r for r in results if isinstance(r, BaseException)], results
        last = results[-1]
        assert last is not None  # the hover the pointer rests on is answered
        if hover_llm:
            assert last.contents.value.startswith("FAKE HOVER")
            assert 1 <= len(fake_llm.requests) <= 2, len(fake_llm.requests)
        else:
            assert "Related code" in last.contents.value and "](file://" in last.contents.value
            assert fake_llm.requests == []
        # a failing LLM: the hover shows the related code, no error popup
        if hover_llm:
            fake_llm.reset()
            fake_llm.fail_next(500, "boom", times=5)
            path, line, col = targets[-1]
            text = path.read_text() + "\n# changed\n"  # new code: not in the explanation cache
            client.text_document_did_change(lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(version=2, uri=uri(path)),
                [lsp.TextDocumentContentChangeWholeDocument(text=text)]))
            params = lsp.HoverParams(lsp.TextDocumentIdentifier(uri(path)), lsp.Position(line, col))
            failed = await asyncio.wait_for(client.text_document_hover_async(params), HANG)
            assert len(fake_llm.requests) == 1  # one attempt, no retries
            assert failed is not None and "Related" in failed.contents.value and "boom" not in failed.contents.value
        await asyncio.sleep(0.2)
        assert not [m for m in client.messages if m.type in (lsp.MessageType.Error, lsp.MessageType.Warning)], client.messages


async def test_hover_only_for_indexed_code_inside_the_roots(sample_workspace, tmp_path):
    outside = tmp_path / "elsewhere.py"
    outside.write_text("def apply_discount_elsewhere(amount):\n    return amount\n")
    async with session(sample_workspace) as client:
        await wait_indexed(client)
        readme = sample_workspace / "README.md"
        for path, line, col in [(outside, 0, 5), (readme, 2, 3)]:
            params = lsp.HoverParams(lsp.TextDocumentIdentifier(uri(path)), lsp.Position(line, col))
            assert await client.text_document_hover_async(params) is None, path
        cart = sample_workspace / "src/shop/cart.py"
        line, col, _ = next(w for w in _words(cart) if w[2] == "apply_discount")
        params = lsp.HoverParams(lsp.TextDocumentIdentifier(uri(cart)), lsp.Position(line, col))
        assert (await client.text_document_hover_async(params)) is not None


@pytest.mark.parametrize("enabled", [True, False])
async def test_hover_is_offered_only_when_enabled(sample_workspace, enabled):
    """``hover.enabled`` from the client's ``initializationOptions`` decides whether the server offers
    ``textDocument/hover`` at all (issue 28: registered only when enabled)."""
    client = await start([sys.executable, "-m", "codeask", "serve"])
    try:
        folders = [lsp.WorkspaceFolder(uri=uri(sample_workspace), name="shop")]
        options = {"indexOnStartup": "never", "hover": {"enabled": enabled}}
        result = await asyncio.wait_for(
            client.initialize_session(
                lsp.InitializeParams(capabilities=_capabilities(), workspace_folders=folders, initialization_options=options)
            ),
            HANG,
        )
        assert bool(result.capabilities.hover_provider) is enabled
        assert result.capabilities.code_action_provider  # the rest is offered either way
        await asyncio.wait_for(client.shutdown_session(), HANG)
    finally:
        await client.stop()


# ------------------------------------------------------------------------------------------------
# cancelling asks mid-stream


async def test_cancel_asks_mid_stream_closes_the_stream_and_frees_the_slots(sample_workspace, fake_llm):
    async with session(sample_workspace, options=llm_options(fake_llm, llm={
        "provider": "openai", "baseUrl": fake_llm.openai_base_url, "apiKey": "test", "numSubquestions": 0,
    })) as client:
        await wait_indexed(client)
        fake_llm.stream_delay = 0.1
        # a 100 s stream (0.1 s per 3-word frame, 3,000 words): it must outlast the time the
        # three asks take to reach their LLM calls on a busy machine (in CI under a load of 6, 600
        # words, 20 s, ended the first stream before the third began)
        fake_llm.reply_with(" ".join(f"word{i}" for i in range(3000)))
        asks, ids = [], [f"ask-{i}" for i in range(3)]  # as many as there are request slots
        for i, msg_id in enumerate(ids):
            params = lsp.ExecuteCommandParams(command="codeask.ask", arguments=[f"How is the discount applied? ({i})"])
            asks.append(asyncio.ensure_future(client.protocol.send_request_async(lsp.WORKSPACE_EXECUTE_COMMAND, params, msg_id)))
        await _until(lambda: len([r for r in fake_llm.requests if r.get("stream")]) == 3, "three streams")
        cancelled_at = time.monotonic()
        for msg_id in ids:
            client.cancel_request(lsp.CancelParams(id=msg_id))
        for fut in asks:
            with pytest.raises(Exception, match="cancel"):
                await asyncio.wait_for(fut, HANG)
        await _until(lambda: len(fake_llm.disconnects) == 3, "the fake LLM to see three closed streams")
        print(f"\nstreams closed {max(fake_llm.disconnects) - cancelled_at:.2f} s after $/cancelRequest (goal < 1 s)")
        # the slots are free again: a new ask runs at once
        fake_llm.reset()
        out = await cmd(client, "codeask.ask", "How is the discount applied?")
        assert out["answer"].startswith("FAKE ANSWER")
        ends = [vs[-1].message for vs in client.progress_reports.values() if vs[0].title == "codeask: asking"]
        assert ends.count("cancelled") == 3, ends


async def test_cancel_explain_mid_stream_closes_the_stream(sample_workspace, fake_llm):
    """Explain runs through the ask Pipeline: ``$/cancelRequest`` reaches its LLM call the same way."""
    async with session(sample_workspace, options=llm_options(fake_llm)) as client:
        await wait_indexed(client)
        fake_llm.stream_delay = 0.1
        fake_llm.reply_with(" ".join(f"word{i}" for i in range(600)))  # a 60 s stream
        rng = {"start": {"line": 15, "character": 0}, "end": {"line": 19, "character": 0}}
        params = lsp.ExecuteCommandParams(command="codeask.explain", arguments=[uri(sample_workspace / "src/shop/cart.py"), rng])
        explain = asyncio.ensure_future(client.protocol.send_request_async(lsp.WORKSPACE_EXECUTE_COMMAND, params, "explain"))
        await _until(lambda: any(r.get("stream") for r in fake_llm.requests), "the explanation to stream")
        client.cancel_request(lsp.CancelParams(id="explain"))
        with pytest.raises(Exception, match="cancel"):
            await asyncio.wait_for(explain, HANG)
        await _until(lambda: fake_llm.disconnects, "the fake LLM to see the stream closed")
        ends = [vs[-1].message for vs in client.progress_reports.values() if vs[0].title == "codeask: explaining"]
        assert ends == ["cancelled"], ends


# ------------------------------------------------------------------------------------------------
# another process (the CLI) holds the index at start-up


@pytest.mark.slow
async def test_index_catches_up_after_the_cli_releases_the_lock(requests_sdist, tmp_path):
    root = tmp_path / "requests"
    shutil.copytree(requests_sdist, root)
    cache = tmp_path / "cache"
    env = {**os.environ, "CODEASK_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1"}
    cli = subprocess.Popen(
        [sys.executable, "-m", "codeask", "index", str(root), "--json"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    try:
        # the CLI has taken the write lock (it names itself in write.owner)
        await _until(lambda: any(f"\"pid\": {cli.pid}" in p.read_text() for p in cache.glob("*/write.owner")),
                     "the CLI to hold the index")
        async with session(root, env=env) as client:
            waiting = await _until(
                lambda: [v.message for vs in client.progress_reports.values() for v in vs
                         if isinstance(v, lsp.WorkDoneProgressReport) and (v.message or "").startswith("waiting:")],
                "the server to wait for the CLI",
            )
            assert f"pid {cli.pid}" in waiting[0] and " index " in waiting[0], waiting  # the holder, named
            st = await cmd(client, "codeask.status")
            if st["index_state"] == "waiting":
                assert f"pid {cli.pid}" in st["lock_holder"], st
            # a file added while the CLI runs (after its walk): only the server's own run can index it
            (root / "src/requests/zz_catchup.py").write_text("def quintessential_redirect_budget(n):\n    return n\n")
            assert await asyncio.to_thread(cli.wait, HANG) == 0
            # no user action: the server retries, catches up and finishes both phases
            deadline = time.monotonic() + HANG
            while True:
                st = await cmd(client, "codeask.status")
                if st["index_state"] == "ready" and not st["indexing"] and st.get("vectors_pending") == 0:
                    break
                assert time.monotonic() < deadline, st
                await asyncio.sleep(0.2)
            assert st["lock_holder"] is None
            out = await cmd(client, "codeask.ask", {"question": "quintessential_redirect_budget", "no_llm": True})
            assert out["sources"][0]["path"] == "src/requests/zz_catchup.py", out["sources"][:3]
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()


async def test_stdin_closed_mid_ask_exits_1_without_traceback(sample_workspace, fake_llm, tmp_path):
    stderr = tmp_path / "stderr.txt"
    command = ["sh", "-c", 'exec "$0" -m codeask serve 2>"$1"', sys.executable, str(stderr)]
    client = await start(command, dict(os.environ))
    try:
        await client.initialize_session(lsp.InitializeParams(
            capabilities=_capabilities(),
            workspace_folders=[lsp.WorkspaceFolder(uri=uri(sample_workspace), name="shop")],
            initialization_options=llm_options(fake_llm, indexOnStartup="always"),
        ))
        await wait_indexed(client)
        fake_llm.stream_delay = 0.1
        fake_llm.reply_with(" ".join(f"word{i}" for i in range(600)))
        params = lsp.ExecuteCommandParams(command="codeask.ask", arguments=["How is the discount applied?"])
        ask = asyncio.ensure_future(client.workspace_execute_command_async(params))
        await _until(lambda: any(r.get("stream") for r in fake_llm.requests), "the answer to stream")
        client.close_stdin()
        code = await client.wait_exit(HANG)
        ask.cancel()
    finally:
        await client.stop()
    err = stderr.read_text()
    assert code == 1, err
    assert "Traceback" not in err and "CancelledError" not in err and "Event loop is closed" not in err, err
    await _until(lambda: fake_llm.disconnects, "the fake LLM to see the stream closed")
