"""Links that are true in every language (a newcomer's findings on chi, fd, ky, javapoet and
requests): Go reaches another package's names only through its qualifier, its root package's too.
Real parts: tree-sitter parsing, LanceDB in a temp dir."""

from __future__ import annotations

from codeask.query.resolve import SURE
from codeask.workspace import Workspace
from tests.workspaces import write_tree


def _callers(ws: Workspace, symbol: str) -> set[tuple[str, str, float]]:
    return {(x.path, x.symbol, x.sure) for x in ws.related(symbol).callers}


GO = {
    "context.go": "package chi\n\nfunc RouteContext(x int) int {\n\treturn x\n}\n",
    "middleware/get_head.go": (
        'package middleware\n\nimport (\n\t"net/http"\n\n\t"github.com/go-chi/chi/v5"\n)\n\n'
        "func GetHead(r int) int {\n\t_ = http.MethodGet\n\treturn chi.RouteContext(r)\n}\n"
    ),
    "_examples/custom/main.go": (
        "package main\n\ntype Handler func(int) int\n\nfunc main() {\n\tvar h Handler\n\t_ = h\n}\n"
    ),
    "middleware/wrap_test.go": (
        'package middleware\n\nimport "net/http"\n\n'
        "func TestWrap(h http.Handler) {\n\tsrv := http.Server{Handler: h}\n\t_ = srv\n}\n"
    ),
}


def test_go_reaches_another_package_only_through_its_qualifier(tmp_path):
    """``chi.RouteContext`` in ``middleware/`` calls the root package's ``RouteContext`` (the root
    folder has no name: the import ``github.com/go-chi/chi/v5`` names it; it was no caller at
    all), and the struct key ``Handler:`` in ``middleware/`` is no use of an example ``package
    main``'s type ``Handler`` (it was a sure caller): a bare name never leaves its package."""
    ws = Workspace([write_tree(tmp_path / "ws", GO)])
    ws.index(embed=False)
    assert _callers(ws, "RouteContext") == {("middleware/get_head.go", "GetHead", SURE)}
    assert _callers(ws, "Handler") == {("_examples/custom/main.go", "main", SURE)}
