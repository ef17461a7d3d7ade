"""Language-server failures found by replaying public bug reports of similar tools (issue 18), over
stdio with pytest-lsp, real LanceDB and the real embedding model."""

from __future__ import annotations

import asyncio
import sys
import time

import pytest
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
        assert result is not None and "target_fn_pagebreak" in result.contents.value
        assert result.range == lsp.Range(lsp.Position(3, 4), lsp.Position(3, 4 + len("target_fn_pagebreak")))


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


async def test_no_workspace_folder_falls_back_to_the_opened_files_project(tmp_path):
    """Issue 18.3: ``rootUri: null`` and no ``workspaceFolders``, then didOpen: the server indexes the
    file's project (nearest folder with a VCS or project marker), or says that no folder is open."""
    from pytest_lsp import ClientServerConfig

    from tests.test_lsp import SERVER

    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "src/pkg").mkdir(parents=True)
    app = project / "src/pkg/billing.py"
    app.write_text("def reconcile_ledger_entries(ledger):\n    return sorted(ledger)\n", encoding="utf-8")
    loose = tmp_path / "loose/notes.py"
    loose.parent.mkdir()
    loose.write_text("x = 1\n", encoding="utf-8")

    client = await ClientServerConfig(server_command=SERVER).start()
    try:
        caps = lsp.ClientCapabilities(window=lsp.WindowClientCapabilities(work_done_progress=True))
        await client.initialize_session(
            lsp.InitializeParams(capabilities=caps, root_uri=None, root_path=None, workspace_folders=None)
        )
        with pytest.raises(Exception, match="no workspace folder is open"):
            await cmd(client, "codeask.ask", {"question": "reconcile_ledger_entries", "no_llm": True})

        open_doc(client, loose)  # in no project: one clear warning, nothing indexed
        deadline = time.monotonic() + 30
        while not any("no workspace folder is open" in m.message for m in client.messages):
            assert time.monotonic() < deadline, client.messages
            await asyncio.sleep(0.1)
        assert (await cmd(client, "codeask.status"))["roots"] == []

        open_doc(client, app)  # inside a repository: its root becomes the workspace folder
        st = await wait_indexed(client, vectors=False)
        assert [r["root"] for r in st["roots"]] == [str(project)]
        out = await cmd(client, "codeask.ask", {"question": "reconcile_ledger_entries", "no_llm": True})
        assert out["sources"][0]["path"] == "src/pkg/billing.py"
        assert out["locations"][0]["uri"] == uri(app)
        warnings = [m for m in client.messages if "no workspace folder is open and" in m.message]
        assert [m.type for m in warnings] == [lsp.MessageType.Warning]
    finally:
        await asyncio.wait_for(client.shutdown_session(), 30)
        await client.stop()


async def test_symlinked_root_locations_use_the_opened_path(tmp_path):
    """Issue 18.8: Locations are under the folder as the client named it, not its real path."""
    real = tmp_path / "real"
    (real / "src").mkdir(parents=True)
    (real / "src/app.py").write_text("def settle_linked_invoice(order):\n    return order.total\n", encoding="utf-8")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    async with session(link) as client:  # the workspace folder URI names the link
        await wait_indexed(client, vectors=False)
        out = await cmd(client, "codeask.ask", {"question": "settle_linked_invoice", "no_llm": True})
        assert out["sources"][0]["root"] == str(link)
        assert out["locations"][0]["uri"] == (link / "src/app.py").as_uri()
        assert out["sources"][0]["uri"].startswith((link / "src/app.py").as_uri() + "#L1")
