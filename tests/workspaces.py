"""Test workspaces written from ``{relative path: text}`` and the symbol graph read through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codeask.workspace import Workspace
from tests.test_cli import codeask

__all__ = ["write_tree", "indexed", "first_path", "related_json", "caller_spans"]


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (``{POSIX path relative to root: text}``, UTF-8) under ``root``; returns ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def indexed(root: Path, files: dict[str, str] | None = None) -> Workspace:
    """The workspace of ``root`` with ``files`` written first (:func:`write_tree`), indexed keyword-only
    (no vectors: the embedding model is not loaded)."""
    ws = Workspace([write_tree(root, files or {})])
    ws.index(embed=False)
    return ws


def first_path(ws: Workspace, question: str) -> str:
    """The path of the first source ``ws`` answers ``question`` with, without an LLM."""
    return ws.ask(question, no_llm=True).sources[0].path


def related_json(root: Path, symbol: str) -> dict[str, Any]:
    """``codeask related --json ROOT SYMBOL`` as a subprocess (exit 0 required): its JSON object."""
    return json.loads(codeask("related", "--json", str(root), symbol).stdout)


def caller_spans(root: Path, symbol: str, *flags: str) -> set[tuple[str, str]]:
    """``(path, symbol)`` of each span ``codeask ask --no-llm "callers of SYMBOL"`` cites (``flags``
    before the root: ``--max-files 2``); a test's span never holds an import block."""
    question = ("ask", "--no-llm", "--no-update", "--json", *flags, str(root), f"callers of {symbol}")
    out = json.loads(codeask(*question).stdout)
    tests = [x for s in out["sources"] if s["path"].startswith("tests/") for x in s["spans"]]
    assert all("import" not in x["content"] for x in tests), tests
    return {(s["path"], x["symbol"]) for s in out["sources"] for x in s["spans"]}
