"""Language-server failures found by replaying public bug reports of similar tools (issue 18), over
stdio with pytest-lsp, real LanceDB and the real embedding model."""

from __future__ import annotations

import asyncio
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
