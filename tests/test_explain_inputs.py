"""What ``explain`` accepts: the files it refuses by the indexer's rules (secret, binary, too large,
minified, a link out of the folder, not a regular file), blank input, odd encodings, and where a
relative FILE is found. Through the real CLI (a subprocess), the language server over stdio and the
MCP engine; the LLM is the fake HTTP server, which must see none of what is refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.test_cli import codeask
from tests.test_cli_errors import one_line

AWS_KEY = "AKIAQX3J7RL5ZB2KWN4E"
OUTSIDE_VALUE = "outside-private-value-5e1d"


def _llm_env(fake_llm) -> dict:
    return {"OPENAI_BASE_URL": fake_llm.openai_base_url, "OPENAI_API_KEY": "test-key"}


def _refused_files(root: Path, tmp_path: Path) -> dict[str, str]:
    """Files the indexer never reads, under ``root`` -> what the refusal says."""
    (root / "assets").mkdir()
    (root / "assets/logo.py").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (root / ".env").write_text("API_TOKEN=env-token-value-9\n", encoding="utf-8")
    (root / "static").mkdir()
    (root / "static/bundle.js").write_text("var a=function(b){return b+1};" * 200 + "\n", encoding="utf-8")
    (root / "data").mkdir()
    (root / "data/table.py").write_text("ROW = 1\n" * 150_000, encoding="utf-8")  # 1.2 MB: over 1 MiB
    outside = tmp_path / "elsewhere" / "private_notes.py"
    outside.parent.mkdir()
    outside.write_text(f"PRIVATE = '{OUTSIDE_VALUE}'\n", encoding="utf-8")
    (root / "src/shop/notes.py").symlink_to(outside)
    os.mkfifo(root / "src/shop/pipe.py")  # reading it would block forever
    return {
        "assets/logo.py": "is a binary file",
        ".env": "is a secret file",
        "static/bundle.js": "looks minified",
        "data/table.py:1-3": "larger than index.max_file_bytes",
        "src/shop/notes.py": "is a link to a file outside its workspace folder",
        "src/shop/pipe.py": "is not a regular file",
    }


def test_cli_refuses_what_the_indexer_never_reads_and_sends_nothing(sample_workspace, tmp_path, fake_llm):
    for target, says in _refused_files(sample_workspace, tmp_path).items():
        proc = codeask("explain", str(sample_workspace), target, env=_llm_env(fake_llm), check=False)
        line = one_line(proc, 1)
        assert line.startswith("codeask: ") and says in line and target.split(":")[0] in line, (target, line)
        assert proc.stdout == "" and OUTSIDE_VALUE not in line
    assert fake_llm.requests == []
    # the same files named by absolute path are refused the same way
    line = one_line(codeask("explain", str(sample_workspace), str(sample_workspace / ".env"), check=False), 1)
    assert "is a secret file" in line


def test_a_secret_value_in_the_selection_or_its_related_code_never_reaches_the_llm(sample_workspace, fake_llm):
    pricing = sample_workspace / "src/shop/pricing.py"
    rate = "    rate = COUPONS.get(coupon, 0.0)\n"  # the key inside the related definition, which is sent
    pricing.write_text(pricing.read_text().replace(rate, f'{rate}    gateway_key = "{AWS_KEY}"\n'), encoding="utf-8")
    assert AWS_KEY in pricing.read_text(encoding="utf-8")
    cart = sample_workspace / "src/shop/cart.py"
    cart.write_text(cart.read_text() + f'\n\nBACKUP_KEY = "{AWS_KEY}"\n', encoding="utf-8")
    n = len(cart.read_text().splitlines())
    proc = codeask("explain", str(sample_workspace), f"src/shop/cart.py:16-{n}", "--json", env=_llm_env(fake_llm))
    out = json.loads(proc.stdout)
    assert out["llm"] and len(fake_llm.requests) == 1
    prompt = fake_llm.prompts()[0]
    assert "return apply_discount(subtotal, coupon)" in prompt  # the selection went...
    assert "src/shop/pricing.py" in prompt and "def apply_discount" in prompt  # ...with its related code
    assert AWS_KEY not in prompt  # but neither key
    redacted = {w["path"] for w in out["withheld"] if w["action"] == "redacted"}
    assert {"src/shop/cart.py", "src/shop/pricing.py"} <= redacted


def test_a_relative_file_is_found_in_the_folder_then_in_the_current_folder(sample_workspace, tmp_path):
    shop = sample_workspace / "src/shop"

    def selection(target: str, cwd: Path) -> dict:
        proc = codeask("explain", str(sample_workspace), target, "--no-llm", "--json", cwd=cwd)
        return json.loads(proc.stdout)["selection"]

    # tab-completed in a subfolder: relative to where the shell is
    got = selection("cart.py:16-19", shop)
    assert (got["path"], got["root"], got["start_line"]) == ("src/shop/cart.py", str(sample_workspace), 16)
    # relative to the folder, from anywhere
    assert selection("src/shop/pricing.py", tmp_path)["path"] == "src/shop/pricing.py"
    # a name in both places is the folder's
    (sample_workspace / "cart.py").write_text("def folder_level_cart():\n    return []\n", encoding="utf-8")
    assert selection("cart.py", shop)["path"] == "cart.py"
    # a file of the current folder outside the workspace folder: named by its absolute path, and said so
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "helpers.py").write_text("def helper_outside():\n    return 1\n", encoding="utf-8")
    proc = codeask("explain", str(sample_workspace), "helpers.py", "--no-llm", "--json", cwd=elsewhere)
    assert json.loads(proc.stdout)["selection"]["path"] == str(elsewhere / "helpers.py")
    assert f"{elsewhere / 'helpers.py'} is outside the workspace folder {sample_workspace}" in proc.stderr
    # in neither place: both are named
    line = one_line(codeask("explain", str(sample_workspace), "nope.py:1-2", "--no-llm", cwd=shop, check=False), 1)
    assert "file not found: nope.py" in line and str(sample_workspace) in line and str(shop) in line


def test_odd_files_are_explained_or_refused_in_one_line(sample_workspace, fake_llm):
    shop = sample_workspace / "src/shop"
    (shop / "empty.py").write_text("", encoding="utf-8")
    (shop / "blank.py").write_text("\n\n   \n", encoding="utf-8")
    blank = (shop / "cart.py").read_text().splitlines().index("") + 1
    for target, says in (
        ("src/shop/empty.py", "nothing to explain: src/shop/empty.py is empty"),
        ("src/shop/blank.py", "nothing to explain: src/shop/blank.py holds only blank lines"),
        (f"src/shop/cart.py:{blank}-{blank}", f"src/shop/cart.py:{blank} holds only blank lines"),
    ):
        assert says in one_line(codeask("explain", str(sample_workspace), target, check=False), 1)

    env = _llm_env(fake_llm)
    (shop / "crlf.py").write_bytes(b"def crlf_total(items):\r\n    return sum(items)\r\n")
    out = json.loads(codeask("explain", str(sample_workspace), "src/shop/crlf.py:2-9", "--json", env=env).stdout)
    assert (out["selection"]["start_line"], out["selection"]["end_line"]) == (2, 2)
    sent = fake_llm.prompts()[-1]
    assert "return sum(items)" in sent and "\r" not in sent
    line = one_line(codeask("explain", str(sample_workspace), "src/shop/crlf.py:3", check=False), 2)
    assert "line 3 is past the end of src/shop/crlf.py (2 lines)" in line

    (shop / "latin.py").write_bytes(b'def latin_name():\n    return "caf\xe9"\n')  # Latin-1, not UTF-8
    proc = codeask("explain", str(sample_workspace), "src/shop/latin.py", "--json", env=env)
    assert json.loads(proc.stdout)["llm"] and "Traceback" not in proc.stderr
    assert 'return "café"' in fake_llm.prompts()[-1]  # decoded as the indexer decodes it (cp1252)


def test_mcp_explain_code_refuses_the_same_files(sample_workspace, tmp_path):
    from mcp.server.mcpserver.exceptions import ToolError

    from codeask.mcp_server import CodeaskMCP

    refused = _refused_files(sample_workspace, tmp_path)
    engine = CodeaskMCP([sample_workspace])
    for target, says in refused.items():
        path = target.split(":")[0]
        with pytest.raises(ToolError, match=says):
            engine.files.selection(path, 1, 1)
    (sample_workspace / "src/shop/blank.py").write_text("\n\n\n", encoding="utf-8")
    with pytest.raises(ToolError, match="is a folder, not a file"):
        engine.files.selection("src/shop", 1, 1)
    with pytest.raises(ToolError, match=r"^nothing to explain: .*holds only blank lines"):  # before any indexing
        engine.explain_code("src/shop/blank.py", 1, 2)


async def test_language_server_refuses_the_same_files(sample_workspace, tmp_path, fake_llm):
    """Each refusal is one InvalidParams error whose message is the line to show, and no
    ``window/showMessage`` besides: a client that shows failed requests (VS Code, Neovim) shows it once."""
    from pygls.exceptions import JsonRpcInvalidParams

    from tests.test_lsp import cmd, hover, llm_options, open_doc, session, uri, wait_indexed

    refused = {target.split(":")[0]: says for target, says in _refused_files(sample_workspace, tmp_path).items()}
    (sample_workspace / "src/shop/blank.py").write_text("\n\n   \n", encoding="utf-8")
    refused["src/shop/blank.py"] = "holds only blank lines"
    notes = sample_workspace / "src/shop/notes.py"
    rng = {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}
    config = {"codeask": {"hover": {"llm": True}}}
    async with session(sample_workspace, options=llm_options(fake_llm), configuration=config) as client:
        await wait_indexed(client)
        for path, says in refused.items():
            with pytest.raises(JsonRpcInvalidParams, match=f"^(cannot|nothing to) explain: .*{path}.* {says}") as err:
                await cmd(client, "codeask.explain", uri(sample_workspace / path), rng)
            assert "\n" not in str(err.value) and "Traceback" not in str(err.value), (path, str(err.value))
        with pytest.raises(JsonRpcInvalidParams, match=r"^cannot explain: untitled:Untitled-1 is not a file on disk$"):
            await cmd(client, "codeask.explain", "untitled:Untitled-1", rng)
        await cmd(client, "codeask.status")  # a round trip: any message sent with a refusal has arrived
        said = [m.message for m in client.messages if "explain" in m.message]
        assert said == [], said  # the error is the one message; no showMessage repeats it
        # a hover in the linked file (open in the editor) sends nothing either
        open_doc(client, notes, f"PRIVATE = '{OUTSIDE_VALUE}'\n")
        assert await hover(client, notes, "PRIVATE") is None
        # an ordinary file still explains, with the LLM
        out = await cmd(client, "codeask.explain", uri(sample_workspace / "src/shop/cart.py"), rng)
        assert out["llm"] and out["markdown"].startswith("FAKE ANSWER")
    assert all(OUTSIDE_VALUE not in p and "env-token-value-9" not in p for p in fake_llm.prompts())
    assert len(fake_llm.requests) == 1
