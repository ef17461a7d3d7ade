"""Short enough to read at once (issue 28): no function over 60 lines and no module over 400 lines
in the ``codeask`` package, read from the source with :mod:`ast`."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "server" / "codeask"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400


def _sources() -> list[tuple[str, str]]:
    return [(str(p.relative_to(PACKAGE.parent)), p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.rglob("*.py"))]


def test_no_module_is_over_400_lines():
    sources = _sources()
    assert len(sources) > 100  # the package was found
    long = [(name, len(text.splitlines())) for name, text in sources if len(text.splitlines()) > MAX_MODULE_LINES]
    assert long == []


def test_no_function_is_over_60_lines():
    long = []
    for name, text in _sources():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append((name, node.name, lines))
    assert long == []
