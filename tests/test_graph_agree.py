"""The symbol graph's links read the same from every door, and no link is a guess the code rules out (a
newcomer's findings on requests): a variable bound to a dict, list or set literal holds a builtin, whose
``update`` or ``get`` is no project method. Real parts: tree-sitter parsing, LanceDB in a temp dir."""

from __future__ import annotations

from codeask.query.graph import one_hop
from codeask.query.resolve import NONE, TYPED, sureness
from codeask.query.uses import uses_in
from codeask.workspace import Workspace
from tests.workspaces import write_tree

JAR = {
    "web/cookies.py": (
        "class CookieJar:\n    def update_cookies(self, other):\n        return other\n\n"
        "    def lookup_cookie(self, key):\n        return key\n"
    ),
    "web/send.py": (
        "def send_all(extra):\n    kwargs = {'timeout': 3}\n    kwargs.update_cookies(extra)\n    return kwargs\n\n\n"
        "def ports(scheme):\n    names = ['http', 'https']\n    return names.lookup_cookie(scheme)\n"
    ),
}


def test_a_variable_bound_to_a_literal_calls_no_project_method(tmp_path):
    """``kwargs = {..}; kwargs.update_cookies(..)`` and ``names = [..]; names.lookup_cookie(..)`` are
    calls on a builtin: no caller of ``CookieJar``'s methods (each was a 0.3 caller, by the name only),
    neither in ``codeask related`` nor in the graph step behind hover and ask; a variable bound to a
    constructed ``CookieJar()`` still types its calls."""
    ws = Workspace([write_tree(tmp_path / "ws", JAR)])
    ws.index(embed=False)
    assert ws.related("CookieJar.update_cookies").callers == []
    assert ws.related("CookieJar.lookup_cookie").callers == []
    store = next(iter(ws.indexes.values())).store
    seeds = list(store.linked([r["id"] for r in store.rows_for_path("web/send.py")]).values())
    edges, _ = one_hop(store, seeds, {})
    assert [e.symbol for e in edges if e.target.path == "web/cookies.py"] == []
    rebound = "def f(x):\n    jar = {}\n    jar = CookieJar()\n    return jar.update_cookies(x)\n"
    found = uses_in(rebound, "python")
    assert sureness(found, "update_cookies", "CookieJar.update_cookies", "web/cookies.py", "python") == TYPED
    literal = "def f(x):\n    jar = {}\n    return jar.update_cookies(x)\n"
    found = uses_in(literal, "python")
    assert sureness(found, "update_cookies", "CookieJar.update_cookies", "web/cookies.py", "python") == NONE

