"""Files that are text in another encoding than UTF-8 are read as an editor reads them, the same way
by every reader: the indexer (keyword search through ``Workspace.ask``), explain, hover over the
language server (stdio, pytest-lsp), the counts by encoding of ``index``/``status --json``; a real
binary is still skipped. Real parts throughout: LanceDB in a temp dir, the real embedding model."""

from __future__ import annotations

import asyncio
import codecs
import json
import os
import py_compile
import sqlite3
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from codeask.index.decode import decode
from codeask.index.filetext import FileText, read_text
from codeask.index.manifest import Manifest
from codeask.lines import split_lines
from codeask.query.explain import make_span, symbol_span
from codeask.settings import IndexSettings
from codeask.workspace import Workspace
from tests.test_lsp import session, uri, wait_indexed

JAPANESE = "# 日本語のコメントです。この関数は値を計算します。\n# 設定ファイルを読み込み、結果を返します。\n"


def source(name: str, comment: str) -> str:
    """A small module whose function ``name`` (line 5-7) carries non-ASCII letters."""
    return f"# {comment}\n\nLIMIT = 10\n\ndef {name}(wert):\n    '''{comment}'''\n    return wert * 2\n"


#: path -> (function name, text, encoded bytes): each name holds a letter outside ASCII.
FILES = {
    "win/fenster_utf16le.py": ("größe_utf16le", "Größe eines Fensters in Pixeln", "utf-16-le", codecs.BOM_UTF16_LE),
    "win/fenster_utf16be.py": ("größe_utf16be", "Größe für große Fenster", "utf-16-be", codecs.BOM_UTF16_BE),
    "win/maße_utf32.py": ("maße_utf32", "Maße und Gewichte, Übersicht", "utf-32-le", codecs.BOM_UTF32_LE),
    "legacy/latin1.py": ("façade_latin1", "Auteur: François Müller, très simple, à côté", "latin-1", b""),
    "legacy/cp1252.py": ("café_cp1252", "“Prix” en € — café crème, déjà payé", "cp1252", b""),
    "jp/sjis.py": ("計算_sjis", JAPANESE.strip("# \n").replace("\n# ", " "), "shift_jis", b""),
    "src/naïve_utf8.py": ("naïve_utf8", "Ça marche, naïve implémentation", "utf-8", b""),
}


def png() -> bytes:
    """A valid 4x4 RGB PNG image (signature, IHDR, IDAT, IEND chunks)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + bytes([40 * x, 60, 200]) * 4 for x in range(4))
    header = struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def texts_of(_root: Path) -> dict[str, str]:
    """Each file's text as written (decoded, it must read back the same)."""
    texts = {rel: source(name, comment) for rel, (name, comment, *_rest) in FILES.items()}
    texts["jp/sjis.py"] = JAPANESE + texts["jp/sjis.py"]
    return texts


@pytest.fixture
def encoded(tmp_path) -> Path:
    root = tmp_path / "encoded"
    texts = texts_of(root)
    for rel, (_name, _comment, encoding, bom) in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bom + texts[rel].encode(encoding))
    (root / "assets").mkdir()
    (root / "assets/logo.png").write_bytes(png())
    compiled = py_compile.compile(str(root / "src/naïve_utf8.py"), cfile=str(tmp_path / "naive.pyc"))
    (root / "assets/module.dat").write_bytes(Path(compiled).read_bytes())  # a .pyc by another name
    return root


def test_decode_reads_each_encoding_and_refuses_binaries(encoded):
    settings = IndexSettings()
    for rel, text in texts_of(encoded).items():
        got = read_text(encoded / rel, settings)
        assert isinstance(got, FileText) and got.text == text, rel
    assert read_text(encoded / "assets/logo.png", settings) == "binary"
    assert read_text(encoded / "assets/module.dat", settings) == "binary"
    # NUL bytes a UTF-16 reading explains are text, even without a BOM; random NULs are not
    assert decode("x = 'é'\n".encode("utf-16-le")) == ("x = 'é'\n", "utf-16-le")
    assert decode(b"\x00\x01\x02" * 100) is None


def test_every_encoding_is_searchable_with_exact_lines_and_explain_agrees(encoded):
    texts = texts_of(encoded)
    stats = Workspace([encoded]).index()
    assert stats.files_skipped.get("binary") == 2
    by_encoding = dict(stats.files_by_encoding)
    assert by_encoding.pop("utf-8") == 1
    assert {k: by_encoding.pop(k) for k in ("utf-16-le", "utf-16-be", "utf-32-le")} == dict.fromkeys(
        ("utf-16-le", "utf-16-be", "utf-32-le"), 1
    )
    assert by_encoding in ({"cp1252": 2, "cp932": 1}, {"cp1252": 2, "shift_jis": 1}), by_encoding

    ws = Workspace([encoded])
    assert ws.status()["files_by_encoding"] == stats.files_by_encoding
    for rel, (name, *_rest) in FILES.items():
        text = texts[rel]
        lines = split_lines(text)
        def_line = next(i for i, line in enumerate(lines, 1) if line.startswith(f"def {name}("))
        top = ws.ask(name, no_llm=True).sources[0]
        assert top.path == rel, (name, [s.path for s in ws.ask(name, no_llm=True).sources])
        assert top.start_line <= def_line <= top.end_line
        assert top.content == "\n".join(lines[top.start_line - 1 : top.end_line]), rel
        span = make_span(ws, str(encoded / rel), def_line, def_line + 2)
        assert span.text == "\n".join(lines[def_line - 1 : def_line + 2]) and span.symbol == name
        hovered = symbol_span(ws, str(encoded / rel), def_line, name)
        assert hovered is not None and (hovered.start_line, hovered.end_line) == (def_line, def_line + 2)


def test_cli_counts_files_by_encoding(encoded):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "server")}
    run = lambda *args: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "codeask", *args], capture_output=True, text=True, env=env, timeout=300
    )
    index = run("index", str(encoded), "--json", "--no-embed")
    assert index.returncode == 0, index.stderr
    out = json.loads(index.stdout)
    assert out["files_skipped"] == {"binary": 2} and sum(out["files_by_encoding"].values()) == len(FILES)
    status = json.loads(run("status", str(encoded), "--json").stdout)
    assert status["files_by_encoding"] == out["files_by_encoding"]
    assert status["roots"][0]["files_by_encoding"] == out["files_by_encoding"]


async def test_hover_over_the_language_server_agrees_with_the_index(encoded):
    texts = texts_of(encoded)
    async with session(encoded) as client:
        await wait_indexed(client)
        for rel in ("win/fenster_utf16le.py", "legacy/cp1252.py", "jp/sjis.py"):
            name = FILES[rel][0]
            lines = split_lines(texts[rel])
            line = next(i for i, text in enumerate(lines) if text.startswith(f"def {name}("))
            params = lsp.HoverParams(lsp.TextDocumentIdentifier(uri(encoded / rel)), lsp.Position(line, 5))
            result = await asyncio.wait_for(client.text_document_hover_async(params), 60)
            assert result is not None, rel
            value = result.contents.value
            assert f"Related code for **{name}** ([{rel}:{line + 1}-{line + 3}](" in value, value
            assert (result.range.start.line, result.range.start.character) == (line, 4)  # the whole name
            assert result.range.end.character == 4 + len(name.encode("utf-16-le")) // 2


def test_an_index_from_before_encodings_reads_each_file_once_more(tmp_path):
    """Files recorded without an encoding (an older codeask) are read again by the next walk: a
    Latin-1 file it indexed with U+FFFD gets its letters back; UTF-8 files keep their chunks."""
    root = tmp_path / "old"
    (root / "src").mkdir(parents=True)
    (root / "src/plain.py").write_text("def plain_fn():\n    return 1\n", encoding="utf-8")
    (root / "src/legacy.py").write_bytes("# Müller à côté\ndef façade_fn():\n    return 2\n".encode("latin-1"))
    ws = Workspace([root])
    ws.index()
    index = next(iter(ws.indexes.values()))
    with sqlite3.connect(index.manifest_path) as db:  # as an older codeask left it
        db.execute("UPDATE files SET encoding = NULL")
    assert Manifest(index.manifest_path, read_only=True).by_encoding() == {"unknown": 2}
    stats = Workspace([root]).index()
    assert stats.files_by_encoding == {"cp1252": 1, "utf-8": 1} and stats.files_changed == 1
    assert stats.paths_changed == ["src/legacy.py"]
