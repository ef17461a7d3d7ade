"""A Python class's attributes are typed across its chunks: ``self.adapter = HTTPAdapter()`` set in
``__init__`` types ``self.adapter.send()`` in another method's chunk, as a Go struct's field
declared in the struct's own chunk types ``mx.pool.Put`` (:mod:`codeask.query.fields`). Real parts:
tree-sitter parsing, LanceDB in a temp dir, the CLI as a subprocess."""

from __future__ import annotations

from codeask.query.resolve import TYPED
from codeask.workspace import Workspace
from tests.workspaces import related_json, write_tree

CLIENT = (
    "from web.adapters import HTTPAdapter\n\n\nclass Client:\n"
    "    def __init__(self, url):\n        self.adapter = HTTPAdapter()\n        self.url = url\n\n"
    "    def fetch(self, n):\n        total = n\n"
    + "        total += 1\n" * 150
    + "        return self.adapter.send(self.url, total)\n"
)
WEB = {
    "web/adapters.py": "class HTTPAdapter:\n    def send(self, url, n):\n        return (url, n)\n",
    "web/mail.py": "class Mailer:\n    def send(self, url, n):\n        return None\n",
    "web/client.py": CLIENT,
}


def test_an_attribute_set_in_init_types_another_methods_chunk(tmp_path):
    """``Client.fetch``, a chunk apart from ``__init__``, calls ``self.adapter.send(..)``: a caller of
    ``HTTPAdapter.send`` as sure as a typed variable (it was by name only), and no caller of
    ``Mailer.send`` (it was, by name only): ``HTTPAdapter`` defines ``send`` itself."""
    root = write_tree(tmp_path / "web", WEB)
    ws = Workspace([root])
    ws.index(embed=False)
    chunks = next(iter(ws.indexes.values())).store.rows_for_path("web/client.py")
    fetch = ws.related("Client.fetch").definitions[0]
    assert not any(c["start_line"] <= fetch.start_line - 3 and c["end_line"] >= fetch.end_line for c in chunks)
    adapter = {(x["symbol"], x["sure"]) for x in related_json(root, "HTTPAdapter.send")["callers"]}
    assert adapter == {("Client.fetch", TYPED)}
    mailer = {(x["symbol"], x["sure"]) for x in related_json(root, "Mailer.send")["callers"]}
    assert mailer == set()
