"""No module of ``server/codeask`` reaches into another class's or module's private names (read with :mod:`ast`).

The rule: a name ``_x`` (one leading underscore, not a dunder) belongs to the module that defines it
(a ``def``/``class``, an assignment to ``_x``, ``self._x`` or ``cls._x``, a class-body field).
A module may use its own private names on any object (``other._x`` between two instances of one
class, a module-level helper reading its class's state); it may not use a private name it does not
define, on anything but ``self``/``cls`` (``store._chunks`` in another module), nor import one
(``from codeask.x import _y``). The few underscore names that are public by contract are allowed:
:func:`collections.namedtuple`'s ``_replace``, ``_asdict``, ``_fields``, ``_make``,
``_field_defaults``, and :func:`os._exit` / :func:`sys._getframe`.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "server" / "codeask"

#: Underscore names that are a documented public API of the standard library.
PUBLIC_BY_CONTRACT = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults", "_exit", "_getframe"})


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def own_names(tree: ast.AST) -> set[str]:
    """The private names a module defines (see the module docstring)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return {n for n in names if _private(n)}


def reach_ins(source: str) -> list[tuple[int, str]]:
    """``(line, expression)`` for each use in ``source`` of a private name it does not define."""
    tree = ast.parse(source)
    own = own_names(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if node.attr not in own and node.attr not in PUBLIC_BY_CONTRACT:
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            found.extend((node.lineno, f"from {node.module} import {a.name}") for a in node.names if _private(a.name))
    return sorted(found)


def all_reach_ins() -> list[str]:
    """``"codeask/<module>.py:<line> <expression>"`` for every reach-in of the package."""
    return [
        f"{path.relative_to(PACKAGE.parent).as_posix()}:{line} {text}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, text in reach_ins(path.read_text(encoding="utf-8"))
    ]


def test_the_scan_tells_a_reach_in_from_a_modules_own_names():
    source = (
        "from codeask.index.store import _matrix\n"
        "from codeask.index.rows import TABLE\n"
        "class A:\n"
        "    def __init__(self):\n"
        "        self._mine = 1\n"
        "    def same(self, other):\n"
        "        return other._mine + self._inherited\n"
        "def _helper(store, row):\n"
        "    return store._chunks, row._replace(a=1), _helper\n"
    )
    assert own_names(ast.parse(source)) == {"_mine", "_helper"}
    assert reach_ins(source) == [(1, "from codeask.index.store import _matrix"), (9, "store._chunks")]


def test_no_module_reaches_into_another_ones_private_names():
    assert len(list(PACKAGE.rglob("*.py"))) > 50  # the whole package was read
    assert all_reach_ins() == []
