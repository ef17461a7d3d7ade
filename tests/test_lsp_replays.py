"""Language-server failures found by replaying public bug reports of similar tools (issue 18), over
stdio with pytest-lsp, real LanceDB and the real embedding model."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from lsprotocol import types as lsp

from tests.test_lsp import cmd, open_doc, session, uri, wait_indexed

# Line 3 (0-based) is a form feed page break; line 5 ends with two characters outside the Basic
# Multilingual Plane (2 UTF-16 code units each).
FORM_FEED_FILE = (
    "def a():\n"
    "    return 1\n"
    "\f\n"
    "def target_fn_pagebreak():\n"
    "    '''para\u2028graph'''\n"
    "    return '\U0001f600\U0001f600'\n"
)


async def test_positions_follow_editor_lines_and_utf16_columns(tmp_path):
    """Issue 18.2: a form feed or U+2028 shifts no line; range ends count UTF-16 code units."""
    root = tmp_path / "ws"
    root.mkdir()
    path = root / "f.py"
    path.write_text(FORM_FEED_FILE, encoding="utf-8")
    async with session(root) as client:
        await wait_indexed(client)
        out = await cmd(client, "codeask.ask", {"question": "target_fn_pagebreak", "no_llm": True})
        source = out["sources"][0]
        assert (source["path"], source["start_line"], source["end_line"]) == ("f.py", 1, 6)
        assert "para\u2028graph" in source["content"]
        end = out["locations"][0]["range"]["end"]
        last = "    return '\U0001f600\U0001f600'"
        assert end == {"line": 5, "character": len(last.encode("utf-16-le")) // 2}

        # hover on the identifier of editor line 3 (pygls's own lines would put a blank line there)
        open_doc(client, path)
        params = lsp.HoverParams(lsp.TextDocumentIdentifier(uri(path)), lsp.Position(3, 8))
        result = await asyncio.wait_for(client.text_document_hover_async(params), 60)
        assert result is not None
        assert (result.range.start.line, result.range.end.line) == (0, 5)
        assert result.range.end.character == end["character"]


async def test_watch_limit_reported_in_status_and_polling_picks_up_changes(sample_workspace):
    """Issue 18.4: past the OS watch limit the server's watcher polls, warns once, reports it in
    ``codeask.status``, and still picks up a file written outside the editor."""
    from tests.test_cli_replays import with_watch_limit

    for i in range(10):  # more folders than the limit of 5 watches
        (sample_workspace / f"pkg{i}").mkdir()
    server = with_watch_limit([sys.executable, "-m", "codeask", "serve"])
    async with session(sample_workspace, server_command=server) as client:
        await wait_indexed(client)
        deadline = time.monotonic() + 60
        while (st := await cmd(client, "codeask.status"))["watch"] is None or st["watch"]["mode"] != "polling":
            assert time.monotonic() < deadline, st
            await asyncio.sleep(0.2)
        assert "fs.inotify.max_user_watches" in st["watch"]["warning"]
        new = sample_workspace / "pkg4/inventory.py"
        new.write_text("def frobnicate_polled_stock(level):\n    return level + 1\n", encoding="utf-8")
        deadline = time.monotonic() + 120
        while True:
            out = await cmd(client, "codeask.ask", {"question": "frobnicate_polled_stock", "no_llm": True})
            if out["sources"] and out["sources"][0]["path"] == "pkg4/inventory.py":
                break
            assert time.monotonic() < deadline, out["sources"]
            await asyncio.sleep(0.5)
        warnings = [m for m in client.messages if "limit on file watches" in m.message]
        assert [m.type for m in warnings] == [lsp.MessageType.Warning], client.messages
