"""``codeask mcp`` driven over stdio (and streamable HTTP) by the official MCP SDK's own client."""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import jsonschema
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from codeask.listen import read_token
from tests.test_cli import REDIRECT_Q

TOOLS = {"search_code", "ask_codebase", "explain_code", "related_code", "index_status", "resolve_citation"}


def server_params(*roots: Path) -> StdioServerParameters:
    """``python -m codeask mcp ROOTS`` with this test's environment (cache dir, keys, PYTHONPATH)."""
    return StdioServerParameters(
        command=sys.executable, args=["-m", "codeask", "mcp", *map(str, roots)], env=dict(os.environ)
    )


async def wait_ready(client: Client, timeout: float = 600) -> dict:
    """Poll ``index_status`` until indexing (both phases) is done; the status's structured result."""
    deadline = time.monotonic() + timeout
    while True:
        status = (await client.call_tool("index_status", {})).structured_content
        if status["state"] in ("ready", "read-only", "failed") and not status["vectors_pending"]:
            return status
        assert time.monotonic() < deadline, f"index never became ready: {status}"
        await asyncio.sleep(0.2)


def check_output(tool, result) -> None:
    """A successful call whose structured result validates against the tool's outputSchema and
    whose first content block is text for the model."""
    assert not result.is_error, result.content
    jsonschema.validate(result.structured_content, tool.output_schema)
    assert result.content[0].type == "text" and result.content[0].text


async def test_tools_schemas_errors_and_resources(sample_workspace, tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text("def leaked():\n    return 'private'\n", encoding="utf-8")
    (sample_workspace / ".env").write_text("API_TOKEN=abc123\n", encoding="utf-8")
    async with Client(server_params(sample_workspace)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            jsonschema.Draft202012Validator.check_schema(tool.input_schema)
            jsonschema.Draft202012Validator.check_schema(tool.output_schema)
            assert len(tool.description) > 80  # written for the model, not a name echo
        assert tools["search_code"].input_schema["required"] == ["query"]
        assert set(tools["search_code"].input_schema["properties"]) == {"query", "top_k", "max_files", "path_glob"}
        assert tools["explain_code"].input_schema["required"] == ["path", "start_line", "end_line"]

        status = await wait_ready(client)
        assert status["state"] == "ready" and status["files"] == 4 and status["llm"] is None

        result = await client.call_tool("search_code", {"query": "apply the coupon discount", "max_files": 2})
        check_output(tools["search_code"], result)
        sources = result.structured_content["sources"]
        assert [s["rank"] for s in sources] == [1, 2]
        assert sources[0]["path"] == "src/shop/pricing.py" and sources[0]["symbol"] == "apply_discount"
        assert sources[0]["uri"].startswith((sample_workspace / "src/shop/pricing.py").as_uri() + "#L")
        # each source is a readable resource holding exactly the cited lines
        links = [c for c in result.content if c.type == "resource_link"]
        assert [str(link.uri) for link in links] == [s["resource_uri"] for s in sources]
        read = await client.read_resource(sources[0]["resource_uri"])
        assert read.contents[0].text == sources[0]["content"]

        only_md = await client.call_tool("search_code", {"query": "discount", "path_glob": "*.md"})
        assert [s["path"] for s in only_md.structured_content["sources"]] == ["README.md"]

        # no LLM configured: the ranked sources and a note saying so
        asked = await client.call_tool("ask_codebase", {"question": "How is the coupon discount applied?"})
        check_output(tools["ask_codebase"], asked)
        assert asked.structured_content["llm"] is None and "No LLM" in asked.structured_content["note"]
        assert asked.structured_content["sources"][0]["path"] in ("src/shop/pricing.py", "src/shop/cart.py")

        explained = await client.call_tool("explain_code", {"path": "src/shop/cart.py", "start_line": 16, "end_line": 19})
        check_output(tools["explain_code"], explained)
        assert "pricing.py" in explained.content[0].text  # related code: apply_discount's definition

        # expected failures are tool errors with one line, and the server keeps serving
        for args in (
            {"path": str(outside), "start_line": 1, "end_line": 2},
            {"path": "../outside.py", "start_line": 1, "end_line": 2},
            {"path": ".env", "start_line": 1, "end_line": 1},
            {"path": "src/shop/missing.py", "start_line": 1, "end_line": 1},
            {"path": "src/shop/cart.py", "start_line": 400, "end_line": 401},
        ):
            failed = await client.call_tool("explain_code", args)
            assert failed.is_error, args
            message = failed.content[0].text
            assert "\n" not in message and "Traceback" not in message and "abc123" not in message
        assert "outside the workspace" in (await client.call_tool("explain_code", {"path": str(outside), "start_line": 1, "end_line": 1})).content[0].text
        assert "secret" in (await client.call_tool("explain_code", {"path": ".env", "start_line": 1, "end_line": 1})).content[0].text
        bad = await client.call_tool("search_code", {"query": "x", "top_k": 0})
        assert bad.is_error and bad.content[0].text.startswith("invalid arguments: top_k:") and "\n" not in bad.content[0].text
        related = await client.call_tool("related_code", {"symbol": "apply_discount"})
        check_output(tools["related_code"], related)
        assert related.structured_content["counts"]["callers"] >= 1 and related.structured_content["truncated"] is False
        definition = related.structured_content["definitions"][0]
        assert {c["of"] for c in related.structured_content["callers"]} == {f"{definition['path']}:{definition['start_line']}"}
        unknown = await client.call_tool("related_code", {"symbol": "no_such_symbol"})  # the CLI exits 1
        said = f"no_such_symbol: no definition or use in the index of {sample_workspace}"  # the CLI's words
        assert unknown.is_error and unknown.content[0].text == said

        from mcp import MCPError

        for uri in ("codeask://source/.env", "codeask://source/..%2Foutside.py", "codeask://source/src/shop/nope.py"):
            with pytest.raises(MCPError):
                await client.read_resource(uri)
        status_text = (await client.read_resource("codeask://status")).contents[0].text
        assert '"chunks_total"' in status_text

        # a file written during the session is found by a later search (the watcher)
        new = sample_workspace / "src/shop/gift_wrap.py"
        new.write_text('def gift_wrap_fee(items):\n    """Wrapping paper per item."""\n    return 2.5 * len(items)\n', encoding="utf-8")
        deadline = time.monotonic() + 120
        while True:
            found = await client.call_tool("search_code", {"query": "gift_wrap_fee wrapping paper"})
            paths = [s["path"] for s in found.structured_content["sources"]]
            if paths and paths[0] == "src/shop/gift_wrap.py":
                break
            assert time.monotonic() < deadline, paths
            await asyncio.sleep(0.2)


async def test_ask_codebase_with_the_fake_llm(sample_workspace, llm_env):
    async with Client(server_params(sample_workspace)) as client:
        await wait_ready(client)
        asked = await client.call_tool("ask_codebase", {"question": "How is the coupon discount applied?", "max_files": 3})
        assert not asked.is_error, asked.content
        out = asked.structured_content
        assert out["llm"] and out["llm"].startswith("openai") and out["note"] is None
        assert out["answer"] and "Sources:\n1. [" in out["markdown"]
        assert 1 <= len(out["sources"]) <= 3
        # where to start reading each: inside its lines, past pricing.py's docstring to apply_discount
        spans = [x for s in out["sources"] for x in [s, *s["spans"]]]
        assert all(x["start_line"] <= x["open_line"] <= x["end_line"] for x in spans), spans
        assert any(x["open_line"] > x["start_line"] for x in spans), spans
        assert any("apply_discount" in prompt for prompt in llm_env.prompts())  # the code reached the LLM
        explained = await client.call_tool("explain_code", {"path": "src/shop/pricing.py", "start_line": 6, "end_line": 9})
        assert not explained.is_error and explained.structured_content["llm"].startswith("openai")
        # the LLM refuses the key: the sources and the error, said once
        llm_env.fail_next(401, "invalid api key", times=20)
        failed = await client.call_tool("ask_codebase", {"question": "Where is the shipping fee computed?"})
        assert not failed.is_error and failed.structured_content["error"] and failed.structured_content["sources"]
        assert failed.content[0].text.count("invalid api key") == 1, failed.content[0].text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_streamable_http_transport(sample_workspace):
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "codeask", "mcp", str(sample_workspace), "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while True:  # until the port accepts connections
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode()
                assert time.monotonic() < deadline
                await asyncio.sleep(0.2)
        headers = {"Authorization": f"Bearer {read_token()}"}  # the server reads the same token file
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
            Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client,
        ):
            await wait_ready(client)
            found = await client.call_tool("search_code", {"query": "shipping cost express"})
            assert found.structured_content["sources"][0]["path"] == "src/shop/shipping.py"
    finally:
        proc.terminate()
        proc.wait(30)


async def test_files_an_agent_reads_follow_the_indexers_rules(sample_workspace, tmp_path):
    """``codeask://source`` and ``explain_code`` read a file only as the indexer would: a link out of
    the root, any link when ``index.follow_symlinks`` is off, a binary file and a secret file are each
    refused with one line naming the reason; a normal file and a link inside the root still read."""
    from mcp import MCPError

    private = tmp_path / "elsewhere" / "private_notes.py"
    private.parent.mkdir()
    private.write_text("PRIVATE = 'outside-private-value'\n", encoding="utf-8")
    shop = sample_workspace / "src/shop"
    (shop / "leak.py").symlink_to(private)
    (shop / "alias.py").symlink_to(shop / "cart.py")  # inside the root: read while links are followed
    (sample_workspace / "assets").mkdir()
    (sample_workspace / "assets/logo.py").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (sample_workspace / ".env").write_text("API_TOKEN=env-token-value-9\n", encoding="utf-8")
    (shop / "notes.txt").symlink_to(sample_workspace / ".env")
    strict = tmp_path / "strict"  # a second root whose own settings turn links off
    strict.mkdir()
    (strict / ".codeask.toml").write_text("[index]\nfollow_symlinks = false\n", encoding="utf-8")
    (strict / "real.py").write_text("def real():\n    return 1\n", encoding="utf-8")
    (strict / "alias.py").symlink_to(strict / "real.py")
    refused = {  # (resource path, explain_code path) -> what the refusal says
        ("src/shop/leak.py", str(shop / "leak.py")): "src/shop/leak.py is a link to a file outside its workspace folder",
        ("alias.py?root=1", str(strict / "alias.py")): "alias.py is reached through a symlink and index.follow_symlinks is off",
        ("assets/logo.py", "assets/logo.py"): "assets/logo.py is a binary file",
        (".env", ".env"): ".env is a secret file",
        ("src/shop/notes.txt", "src/shop/notes.txt"): "src/shop/notes.txt is a secret file",  # a link to .env
    }
    cart = (shop / "cart.py").read_text(encoding="utf-8").splitlines()
    async with Client(server_params(sample_workspace, strict)) as client:
        for (resource, path), says in refused.items():
            with pytest.raises(MCPError) as err:
                await client.read_resource(f"codeask://source/{resource}")
            message = err.value.message
            assert says in message and "\n" not in message, (resource, message)
            assert "outside-private-value" not in message and "env-token" not in message
            failed = await client.call_tool("explain_code", {"path": path, "start_line": 1, "end_line": 1})
            assert failed.is_error and says in failed.content[0].text, (path, failed.content)
        read = await client.read_resource("codeask://source/src/shop/cart.py?start=1&end=3")
        assert read.contents[0].text == "\n".join(cart[:3])
        linked = await client.read_resource("codeask://source/src/shop/alias.py?start=1&end=3")
        assert linked.contents[0].text == "\n".join(cart[:3])
        own = await client.read_resource("codeask://source/real.py?root=1")
        assert own.contents[0].text == "def real():\n    return 1"


def test_bad_arguments_are_one_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "codeask", "mcp", str(tmp_path / "missing")], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "not found" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "codeask", "mcp", str(tmp_path), "--http", "nonsense"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1 and "HOST:PORT" in proc.stderr and "Traceback" not in proc.stderr


@pytest.fixture(scope="module")
def requests_copy(tmp_path_factory, requests_sdist) -> Path:
    root = tmp_path_factory.mktemp("mcp") / "requests-2.34.2"
    shutil.copytree(requests_sdist, root)
    return root


@pytest.mark.slow
async def test_requests_sdist_redirect_question(requests_copy):
    async with Client(server_params(requests_copy)) as client:
        status = await wait_ready(client)
        assert status["state"] == "ready" and status["files"] > 30
        found = await client.call_tool("search_code", {"query": REDIRECT_Q})
        sources = found.structured_content["sources"]
        assert sources[0]["path"] == "src/requests/sessions.py", [s["path"] for s in sources]
        assert len({s["path"] for s in sources}) == len(sources)
        for s in sources:  # each source lists its file's spans, its own lines first, none overlapping
            spans = sorted((x["start_line"], x["end_line"]) for x in s["spans"])
            assert (s["spans"][0]["start_line"], s["spans"][0]["end_line"]) == (s["start_line"], s["end_line"])
            assert all(a[1] + 1 < b[0] for a, b in itertools.pairwise(spans))  # touching spans are merged
        assert any(len(s["spans"]) > 1 for s in sources)  # sessions.py etc. bring more than one span
        py_only = await client.call_tool("search_code", {"query": REDIRECT_Q, "path_glob": "tests/"})
        assert py_only.structured_content["sources"]
        assert all(s["path"].startswith("tests/") for s in py_only.structured_content["sources"])
        first = sources[0]
        explained = await client.call_tool(
            "explain_code", {"path": first["path"], "start_line": first["start_line"], "end_line": first["end_line"]}
        )
        assert not explained.is_error and explained.structured_content["sources"]
        outside = await client.call_tool("explain_code", {"path": "/etc/hostname", "start_line": 1, "end_line": 1})
        assert outside.is_error and "outside the workspace" in outside.content[0].text


@pytest.mark.slow
async def test_requests_sdist_callers_of_should_strip_auth(requests_copy):
    async with Client(server_params(requests_copy)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool("related_code", {"symbol": "should_strip_auth"})
        check_output(tools["related_code"], result)
        found = result.structured_content
        assert [(d["path"], d["symbol"]) for d in found["definitions"]] == [
            ("src/requests/sessions.py", "SessionRedirectMixin.should_strip_auth")
        ]
        callers = [(c["path"], c["symbol"]) for c in found["callers"]]
        assert ("src/requests/sessions.py", "SessionRedirectMixin.rebuild_auth") in callers, callers
        rebuild = next(c for c in found["callers"] if c["symbol"].endswith("rebuild_auth"))
        lines = (requests_copy / "src/requests/sessions.py").read_text().splitlines()
        assert lines[rebuild["start_line"] - 1].strip().startswith("def rebuild_auth(")
        assert "should_strip_auth" in "\n".join(lines[rebuild["start_line"] - 1 : rebuild["end_line"]])
        assert "rebuild_auth" in result.content[0].text
        bad = await client.call_tool("related_code", {"symbol": "no such; thing"})
        assert bad.is_error and "not a symbol name" in bad.content[0].text


def test_paths_through_a_symlinked_root(sample_workspace, tmp_path):
    from mcp.server.mcpserver.exceptions import ToolError

    from codeask.mcp_server import CodeaskMCP

    link = tmp_path / "link"
    link.symlink_to(sample_workspace, target_is_directory=True)
    (sample_workspace / ".env").write_text("TOKEN=x\n", encoding="utf-8")
    engine = CodeaskMCP([link])
    root = str(link)  # the root as the client named it (citations keep the link path)
    for given in (str(link / "src/shop/cart.py"), str(sample_workspace / "src/shop/cart.py"), "src/shop/cart.py"):
        assert engine.files.read(given)[:2] == (root, "src/shop/cart.py"), given
    with pytest.raises(ToolError, match="secret"):
        engine.files.read(str(link / ".env"))
    with pytest.raises(ToolError, match="outside the workspace"):
        engine.files.read(str(tmp_path))
