"""How sure the symbol graph is of an edge: a method call resolved by its receiver (a variable of a
class the chunk names, a module, ``self``), callers of a method ranked by it, and a packed chunk's
definitions named by their own symbols (real index: LanceDB in a temp dir, the real embedder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeask.index.engine import RootIndex
from codeask.index.rows import Hit
from codeask.query.graph import one_hop
from codeask.query.resolve import NAME_ONLY, SURE, TYPED, defined_symbol, how_sure
from codeask.settings import load_settings
from codeask.workspace import Workspace
from tests.tables import tables
from tests.workspaces import write_tree

WEB = {
    "web/models.py": (
        "class CaseInsensitiveDict:\n"
        "    def __init__(self, data):\n        self._store = dict(data)\n\n"
        "    def copy(self):\n        return CaseInsensitiveDict(self._store.values())\n"
    ),
    "web/cookies.py": (
        "class CookieJar:\n    def copy(self):\n        jar = CookieJar()\n        jar.update(self)\n        return jar\n"
    ),
    "web/sessions.py": (
        "from web.models import CaseInsensitiveDict\n\n\n"
        "def merge_headers(base):\n    headers = CaseInsensitiveDict(base)\n    return headers.copy()\n\n\n"
        "class Session:\n    def send(self, request):\n        return request.body\n"
    ),
    "web/api.py": (
        "from web.sessions import Session\n\n\n"
        "def request(method, url):\n    session = Session()\n    return session.send((method, url))\n"
    ),
    "tests/test_server.py": "def handler(sock):\n    sock.send(b'HTTP/1.1 200 OK')\n",
    "web/util.py": (
        "def first_helper(x):\n    return x + 1\n\n\n"
        "def second_helper(x):\n    return merge_headers(x)\n\n\n"
        "def third_helper(x):\n    return merge_headers(x) * 2\n"
    ),
}


@pytest.fixture
def web(tmp_path) -> Path:
    return write_tree(tmp_path / "proj", WEB)


def _targets(index: RootIndex, path: str, needle: str) -> dict[tuple[str, str], float]:
    """``{(target path, name): sure}`` of the edges one hop from the chunks of ``path`` holding ``needle``."""
    ids = [
        r["id"] for r in tables(index.store)[0].to_arrow().to_pylist() if r["path"] == path and needle in r["content"]
    ]
    edges, _ = one_hop(index.store, list(index.store.linked(ids).values()), {})
    return {(e.target.path, e.name): e.sure for e in edges if e.source_path == path}


def test_a_method_call_resolves_through_its_receivers_class_and_an_edit_removes_the_edge(web):
    index = RootIndex(web, load_settings(web))
    index.sync()
    edges = _targets(index, "web/sessions.py", "headers.copy()")
    assert edges[("web/models.py", "copy")] == TYPED  # headers = CaseInsensitiveDict(...): typed
    assert ("web/cookies.py", "copy") not in edges  # another class's copy: name only, dropped
    assert edges[("web/models.py", "CaseInsensitiveDict")] == SURE

    sessions = web / "web/sessions.py"
    sessions.write_text(WEB["web/sessions.py"].replace("return headers.copy()", "return headers"), encoding="utf-8")
    index.sync()
    edges = _targets(index, "web/sessions.py", "def merge_headers")
    assert ("web/models.py", "copy") not in edges
    assert ("web/models.py", "CaseInsensitiveDict") in edges


def test_callers_of_a_method_put_a_call_on_an_object_of_another_type_last(web):
    ws = Workspace([web])
    ws.index()
    callers = [(x.path, x.symbol, x.sure) for x in ws.related("Session.send").callers]
    assert callers == [("web/api.py", "request", TYPED), ("tests/test_server.py", "handler", NAME_ONLY)]
    assert ws.related("Session.send").to_json()["callers"][0]["sure"] == TYPED


def test_a_packed_chunk_names_each_definition_and_each_caller_in_it(web):
    ws = Workspace([web])
    ws.index(embed=False)
    assert [x.symbol for x in ws.related("second_helper").definitions] == ["second_helper"]
    callers = {(x.path, x.symbol) for x in ws.related("merge_headers").callers}
    assert {("web/util.py", "second_helper"), ("web/util.py", "third_helper")} <= callers


@pytest.mark.parametrize(
    ("content", "symbol", "path", "sure"),
    [
        ("return sessions.send(r)", "Session.send", "src/sessions.py", SURE),  # through the module
        ("return Session.send(r)", "Session.send", "src/sessions.py", SURE),  # through the class
        ("s := mux.NewRouter()", "NewRouter", "mux/mux.go", SURE),  # Go: the package's folder
        ("return send(r)", "send", "src/api.py", SURE),  # a bare call of a function
        ("self.send(r)", "Session.send", "src/sessions.py", NAME_ONLY),  # self in another file
        ("sock.send(b'x')", "Session.send", "src/sessions.py", NAME_ONLY),  # a variable of unknown type
        ("s: Session = make()\ns.send(r)", "Session.send", "src/sessions.py", TYPED),
    ],
)
def test_how_sure_a_reference_is_of_a_definition(content, symbol, path, sure):
    name = symbol.rsplit(".", 1)[-1]
    language = "go" if path.endswith(".go") else "python"
    assert how_sure(name, content, symbol, path, language) == sure


@pytest.mark.parametrize(
    ("symbol", "content", "name", "expected"),
    [
        ("first_helper", WEB["web/util.py"], "second_helper", "second_helper"),  # packed: its first's name
        ("Session.send", "def send(self, r):\n    return r\n", "send", "Session.send"),  # a method's chunk
        ("Session", "class Session:\n    def send(self, r):\n        return r\n", "send", "Session.send"),
    ],
)
def test_a_chunks_definition_is_named_by_its_own_symbol(symbol, content, name, expected):
    hit = Hit("id", "web/x.py", "python", 1, content.count("\n") + 1, symbol, content, 0.0)
    assert defined_symbol(hit, name) == expected
