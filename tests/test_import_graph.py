"""The import graph of the ``codeask`` package, read from the source with :mod:`ast`.

Every ``import`` / ``from ... import`` counts, including those inside functions (a lazy import
still ties two modules together). Checks the layering the design relies on: the command-line
modules import each other in one direction only, and the chunker depends on nothing above it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "server" / "codeask"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    """``{module: {codeask modules it imports}}`` for every module of the package."""
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets.add(base)
                targets.update(f"{base}.{alias.name}" for alias in node.names)
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        for nxt in graph[stack.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def test_graph_sees_imports():
    graph = import_graph()
    assert "codeask.console" in graph["codeask.cli"]
    assert "codeask.eval.cli" in graph["codeask.cli"]  # a function-level import
    assert "codeask.index.chunking.packing" in graph["codeask.index.chunking.code"]


@pytest.mark.parametrize(
    "module", ["codeask.cli", "codeask.eval.cli", "codeask.publish", "codeask.console", "codeask.index.chunking"]
)
def test_no_import_cycle_through(module):
    graph = import_graph()
    assert module not in reachable(graph, module)


def test_console_and_chunker_depend_on_nothing_above_them():
    graph = import_graph()
    assert reachable(graph, "codeask.console") == {"codeask.counts"}
    below = reachable(graph, "codeask.index.chunking")
    assert below <= {m for m in graph if m.startswith("codeask.index.chunking.")} | {
        "codeask.lines",
        "codeask.imports",
    }, below


def test_no_module_is_in_an_import_cycle():
    graph = import_graph()
    assert len(graph) > 50  # the whole package was read
    assert [m for m in graph if m in reachable(graph, m)] == []


#: The front doors (issue 28): they translate their protocol to and from :mod:`codeask.service`.
FRONT_DOORS = ("codeask.lsp", "codeask.mcp_", "codeask.commands", "codeask.cli", "codeask.cli_", "codeask.resident")


def door_modules(graph: dict[str, set[str]]) -> list[str]:
    """The modules of the front doors: everything under ``lsp/``, the ``mcp_*`` and ``cli_*``
    modules, ``commands``, ``cli`` and ``resident``."""
    return sorted(
        m for m in graph if any(m == d or m.startswith(d if d.endswith("_") else d + ".") for d in FRONT_DOORS)
    )


def test_the_doors_are_known():
    doors = door_modules(import_graph())
    assert {"codeask.cli", "codeask.commands", "codeask.resident", "codeask.mcp_server", "codeask.lsp.server"} <= set(
        doors
    ), doors


def test_front_doors_import_the_service_not_the_engine():
    graph = import_graph()
    below = ("codeask.index", "codeask.query")
    reaches = {
        door: sorted(t for t in graph[door] if any(t == b or t.startswith(b + ".") for b in below))
        for door in door_modules(graph)
    }
    assert {door: targets for door, targets in reaches.items() if targets} == {}
