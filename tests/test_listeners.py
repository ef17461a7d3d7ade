"""Listeners closed to strangers: ``codeask mcp --http`` and ``codeask serve --tcp`` started as real
processes on 127.0.0.1 (and 0.0.0.0 with ``--allow-remote``), driven over real sockets: without the
token or with a wrong one nothing is served; with it the SDK's MCP client and a pygls LSP client
work; foreign Host/Origin headers and folders outside the served ones are refused; each refused peer
is logged once. The token file lives in the test's ``$CODEASK_CONFIG_DIR``, never the real home."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest
from lsprotocol import types as lsp
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pygls.lsp.client import LanguageClient

from codeask.listen import is_loopback, parse_address, read_token, rotate_token, token_path

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _codeask(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "codeask", *args], capture_output=True, text=True, timeout=120)


async def _listening(proc: subprocess.Popen, port: int) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "the listener never opened its port"
            await asyncio.sleep(0.2)


def _stop(proc: subprocess.Popen) -> str:
    """Stop ``proc`` if it still runs; its stderr."""
    if proc.poll() is None:
        proc.terminate()
    return proc.communicate(timeout=60)[1]


def test_token_file_is_owner_only_and_rotates(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEASK_CONFIG_DIR", str(tmp_path / "config" / "codeask"))
    path = token_path()
    assert path == tmp_path / "config" / "codeask" / "token" and not path.exists()
    token = _codeask("token").stdout.strip()  # written on first use
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert len(token) >= 43 and read_token() == token == path.read_text().strip()
    assert _codeask("token", "--path").stdout.strip() == str(path)
    rotated = _codeask("token", "--rotate").stdout.strip()
    assert rotated != token and read_token() == rotated and stat.S_IMODE(path.stat().st_mode) == 0o600
    path.chmod(0o644)  # readable by others: refused, never used
    proc = _codeask("mcp", str(tmp_path), "--http", f"127.0.0.1:{_free_port()}")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert f"the token file {path} can be read by others (mode 0644)" in proc.stderr
    assert rotate_token() != rotated and stat.S_IMODE(path.stat().st_mode) == 0o600  # the fix it names
    path.write_text("short\n")
    assert "holds no valid token" in _codeask("token").stderr


def test_addresses():
    assert parse_address("[::1]:8765", "--http") == ("::1", 8765) and is_loopback("::1")
    assert parse_address(":8765", "--http") == ("127.0.0.1", 8765)
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "localhost", "LOCALHOST"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.5", "myhost", "localhost.evil.example"))
    for bad in ("nonsense", "127.0.0.1:", "127.0.0.1:99999", "host:-1"):
        with pytest.raises(ValueError, match="--http wants HOST:PORT"):
            parse_address(bad, "--http")


def test_non_loopback_needs_allow_remote(tmp_path):
    for args in (["mcp", str(tmp_path), "--http", "0.0.0.0:8765"], ["serve", "--tcp", "0.0.0.0:2087", str(tmp_path)]):
        proc = _codeask(*args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "0.0.0.0 is not a loopback address" in proc.stderr and "--allow-remote" in proc.stderr
    proc = _codeask("serve", "--tcp", "127.0.0.1:2087")  # no folder: refuses to start
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "FOLDER" in proc.stderr


async def test_mcp_http_needs_the_token(sample_workspace):
    token, port = read_token(), _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    proc = subprocess.Popen(
        [sys.executable, "-m", "codeask", "mcp", str(sample_workspace), "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        await _listening(proc, port)
        async with httpx2.AsyncClient() as http:
            for auth in ({}, {"Authorization": "Bearer wrong-token"}, {"Authorization": token}):
                got = await http.post(url, json=INIT, headers={**MCP_HEADERS, **auth})
                assert got.status_code == 401 and got.headers["www-authenticate"].startswith("Bearer"), got.text
                assert "codeask token" in got.text and "result" not in got.text
            right = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
            assert (await http.post(url, json=INIT, headers=right)).status_code == 200
        headers = {"Authorization": f"Bearer {token}"}
        timeout = httpx2.Timeout(30, read=300)  # the SDK's own: a tool waits for the first index
        async with (
            httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            found = await client.call_tool("search_code", {"query": "shipping cost express"})
            assert found.structured_content["sources"][0]["path"] == "src/shop/shipping.py"
    finally:
        stderr = _stop(proc)
    refused = [line for line in stderr.splitlines() if "refused 127.0.0.1" in line]
    assert len(refused) == 1 and "401" in refused[0], stderr  # three refusals, one line


async def test_mcp_http_allow_remote_keeps_host_and_origin_checks(tmp_path):
    (tmp_path / "a.py").write_text("def answer():\n    return 42\n", encoding="utf-8")
    token, port = read_token(), _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    args = ["mcp", str(tmp_path), "--http", f"0.0.0.0:{port}", "--allow-remote", "--allow-host", "codeask.lan"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "codeask", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    right = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    try:
        await _listening(proc, port)
        async with httpx2.AsyncClient() as http:
            assert (await http.post(url, json=INIT, headers=MCP_HEADERS)).status_code == 401
            foreign_host = await http.post(url, json=INIT, headers={**right, "Host": f"evil.example:{port}"})
            assert foreign_host.status_code == 421, foreign_host.text
            foreign_origin = await http.post(url, json=INIT, headers={**right, "Origin": "http://evil.example"})
            assert foreign_origin.status_code == 403, foreign_origin.text
            named = await http.post(url, json=INIT, headers={**right, "Host": f"codeask.lan:{port}"})
            assert named.status_code == 200, named.text
            assert (await http.post(url, json=INIT, headers=right)).status_code == 200
    finally:
        stderr = _stop(proc)
    warnings = [line for line in stderr.splitlines() if "warning: listening on 0.0.0.0" in line]
    assert len(warnings) == 1 and "reachable from the network" in warnings[0], stderr
    assert sum("refused 127.0.0.1" in line for line in stderr.splitlines()) == 1, stderr


async def _raw_lsp(port: int, *messages: dict) -> tuple[list[dict], bool]:
    """Send ``messages`` on a fresh connection; the messages the server sent back and whether it
    closed the connection (within 30 s)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for message in messages:
        body = json.dumps(message).encode()
        writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    await writer.drain()
    got, closed = [], False
    try:
        while True:
            header = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
            length = int(header.split(b"Content-Length: ")[1].split(b"\r\n")[0])
            got.append(json.loads(await reader.readexactly(length)))
    except (asyncio.IncompleteReadError, ConnectionError):
        closed = True
    except TimeoutError:
        pass
    writer.close()
    return got, closed


def _initialize(folder: Path, token: str | None, msg_id: int = 1) -> dict:
    options = {} if token is None else {"token": token}
    params = {"processId": None, "rootUri": folder.as_uri(), "capabilities": {}, "initializationOptions": options}
    return {"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params}


async def test_lsp_tcp_needs_the_token_and_serves_only_its_folders(sample_workspace, tmp_path):
    token, port = read_token(), _free_port()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "x.py").write_text("SECRET = 'outside'\n", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "codeask", "serve", "--tcp", f"127.0.0.1:{port}", str(sample_workspace)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    status = {"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand", "params": {"command": "codeask.status"}}
    try:
        await _listening(proc, port)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"Content-Length: 2000000\r\n\r\n{")  # 2 MB before initialize: not read
        with contextlib.suppress(ConnectionError):
            assert await asyncio.wait_for(reader.read(), 30) == b""  # closed, nothing answered
        writer.close()
        refusals = {
            "token is missing or wrong": [_initialize(sample_workspace, None), status],
            "token is missing or wrong ": [_initialize(sample_workspace, "wrong-token"), status],
            f"{outside} is outside the folders this server serves": [_initialize(outside, token), status],
            "workspace/executeCommand before an accepted initialize": [status],
        }
        for says, messages in refusals.items():
            got, closed = await _raw_lsp(port, *messages)
            assert closed and len(got) == 1, (says, got)  # one error, then the connection is closed
            assert got[0]["id"] == messages[0]["id"] and says.strip() in got[0]["error"]["message"], got
            assert "result" not in got[0]
        client = LanguageClient("test", "1")
        await client.start_tcp("127.0.0.1", port)
        inside = sample_workspace / "src"
        result = await client.initialize_async(
            lsp.InitializeParams(
                capabilities=lsp.ClientCapabilities(),
                workspace_folders=[lsp.WorkspaceFolder(uri=inside.as_uri(), name="src")],
                initialization_options={"token": token},
            )
        )
        assert "codeask.status" in result.capabilities.execute_command_provider.commands
        client.initialized(lsp.InitializedParams())
        # a second client, even with the token, cannot join (or take over) the session
        got, closed = await _raw_lsp(port, _initialize(sample_workspace, token))
        assert closed and got == []
        run = client.workspace_execute_command_async
        await run(lsp.ExecuteCommandParams(command="codeask.reindex"))
        got = await run(lsp.ExecuteCommandParams(command="codeask.status"))
        assert [r["root"] for r in got["roots"]] == [str(inside)] and got["files"] >= 3, got
        with pytest.raises(Exception, match="outside the folders this server serves"):
            range_ = {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}
            await run(
                lsp.ExecuteCommandParams(command="codeask.explain", arguments=[(outside / "x.py").as_uri(), range_])
            )
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
        assert proc.wait(60) == 0
    finally:
        stderr = _stop(proc)
    refused = [line for line in stderr.splitlines() if "refused 127.0.0.1" in line]
    assert len(refused) == 1 and "a 2,000,000-byte message before initialize" in refused[0], stderr
    assert "Unhandled exception" not in stderr and "SystemExit" not in stderr, stderr
