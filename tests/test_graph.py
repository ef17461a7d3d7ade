"""The symbol graph: names per chunk in each language, kept with the chunk rows through edits,
deletions and moves, followed by the ``neighbours`` step (``via`` in ``ask --json``) and by
``Workspace.related``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeask.doctor import run_checks
from codeask.index import chunking
from codeask.index.chunking import chunk_text
from codeask.index.chunking import graph as chunk_graph
from codeask.index.engine import RootIndex
from codeask.query.pipeline import Document, along_chain
from codeask.readiness import OUTDATED_NOTE
from codeask.service import Service
from codeask.settings import load_settings
from codeask.workspace import Workspace
from tests.tables import tables
from tests.test_cli import codeask
from tests.workspaces import write_tree

SNIPPETS = {
    "a.py": (
        "from .utils import should_strip_auth\n\nMAX_REDIRECTS = 30\n\n\n"
        "class Session(Base):\n    def rebuild_auth(self, req: Request):\n"
        "        if self.should_strip_auth(req.url):\n            return DEFAULT_PORTS\n",
        {"Session", "rebuild_auth", "MAX_REDIRECTS"},
        {"should_strip_auth", "Base", "Request", "DEFAULT_PORTS"},
    ),
    "a.js": (
        "import { fetchUser } from './api';\nclass Page extends Component {\n"
        "  render() { return fetchUser(1).then(this.show); }\n}\nconst load = () => new Loader();\n",
        {"Page", "render", "load"},
        {"fetchUser", "Component", "Loader"},
    ),
    "a.ts": (
        "interface Options { retries: number }\nexport class Client extends Base {\n"
        "  send(o: Options): Reply { return transmit(o); }\n}\n",
        {"Options", "Client", "send"},
        {"Base", "Reply", "transmit"},
    ),
    "a.go": (
        "package srv\n\ntype Server struct{}\n\nfunc (s *Server) Serve(r *Request) error {\n"
        "\treturn handle(r)\n}\n\nfunc New() *Server { return &Server{} }\n",
        {"Server", "Serve", "New"},
        {"Request", "handle"},
    ),
    "a.rs": (
        "struct Config;\n\nimpl Config {\n    fn load(p: &Path) -> Config { parse_file(p); Config }\n}\n\n"
        "fn main() { let c = Config::load(x); c.run(); }\n",
        {"Config", "load", "main"},
        {"Path", "parse_file", "run"},
    ),
    "A.java": (
        "class Api extends Base {\n  Api() {}\n  Reply send(Request r) { return client.execute(new Request()); }\n}\n",
        {"Api", "send"},
        {"Base", "Reply", "Request", "execute"},
    ),
    "a.c": (
        "#define MAX_LEN 10\nstruct conn { int fd; };\n\n"
        "static int open_conn(struct conn *c) {\n    return do_open(c->fd, MAX_LEN);\n}\n",
        {"MAX_LEN", "conn", "open_conn"},
        {"do_open"},
    ),
    "a.cpp": (
        "namespace net {\nclass Socket {\n  void close();\n};\n}\n\n"
        "void net::Socket::close() {\n  release(fd_);\n  auto w = new Watcher();\n}\n",
        {"net", "Socket", "close"},
        {"release", "Watcher"},
    ),
}


@pytest.mark.parametrize("path", sorted(SNIPPETS))
def test_names_per_language(path):
    text, defines, refs = SNIPPETS[path]
    chunks = chunk_text(path, text)
    got_defines = {n for c in chunks for n in c.defines}
    got_refs = {n for c in chunks for n in c.refs}
    assert defines <= got_defines, got_defines
    assert refs <= got_refs, got_refs
    for c in chunks:  # a chunk's own definitions are not its references
        assert not set(c.defines) & set(c.refs)


def test_a_chunk_without_a_grammar_has_no_names():
    chunks = chunk_text("notes.txt", "send(x) and Session\n")
    assert chunks and all(c.defines == () and c.refs == () for c in chunks)


SHOP = {
    "app/handlers.py": (
        "from app.store import persist_order\n\n\n"
        "def handle_checkout(request):\n"
        '    """Checkout: validate the basket, then place the order."""\n'
        "    basket = request.basket\n"
        "    return persist_order(basket)\n"
    ),
    "app/store.py": (
        "def persist_order(record):\n"
        '    """Write one record into the database table."""\n'
        "    return database.insert('orders', record)\n"
    ),
    "app/report.py": ("def monthly_report(rows):\n    return sum(row.total for row in rows)\n"),
}


@pytest.fixture
def shop(tmp_path) -> Path:
    return write_tree(tmp_path / "shop", SHOP)


def _callers(ws: Workspace, name: str) -> list[tuple[str, str]]:
    return [(x.path, x.symbol) for x in ws.related(name).callers]


def test_edges_follow_edits_deletions_and_moves(shop):
    ws = Workspace([shop])
    ws.index()
    related = ws.related("persist_order")
    assert [(x.path, x.symbol) for x in related.definitions] == [("app/store.py", "persist_order")]
    assert _callers(ws, "persist_order") == [("app/handlers.py", "handle_checkout")]
    assert ("app/store.py", "persist_order") in [(x.path, x.name) for x in ws.related("handle_checkout").callees]

    handlers = shop / "app/handlers.py"  # an edit that removes the call removes the edge
    handlers.write_text("def handle_checkout(request):\n    return request.basket\n", encoding="utf-8")
    ws.update_paths([handlers])
    assert _callers(ws, "persist_order") == []

    (shop / "app/report.py").write_text("def monthly_report(rows):\n    return persist_order(rows)\n", encoding="utf-8")
    ws.update_paths([shop / "app/report.py"])
    assert _callers(ws, "persist_order") == [("app/report.py", "monthly_report")]
    (shop / "app/report.py").unlink()  # a deleted file removes its edges
    ws.update_paths([shop / "app/report.py"])
    assert _callers(ws, "persist_order") == []


def test_a_moved_file_keeps_its_vectors_and_edges(shop):
    index = RootIndex(shop, load_settings(shop))
    index.sync()
    (shop / "app/handlers.py").rename(shop / "app/checkout.py")
    moved = RootIndex(shop, load_settings(shop)).sync()
    assert moved.chunks_embedded == 0 and moved.paths_removed == ["app/handlers.py"]
    chunks = tables(index.store)[0].to_arrow().to_pylist()
    rows = [r for r in chunks if r["path"] == "app/checkout.py"]
    assert rows and any("persist_order" in r["refs"] for r in rows)
    assert not [r for r in chunks if r["path"] == "app/handlers.py"]
    assert [x.path for x in Workspace([shop]).related("persist_order").callers] == ["app/checkout.py"]


@pytest.mark.parametrize("module, version", [(chunk_graph, "GRAPH_VERSION"), (chunking, "CHUNKING_VERSION")])
def test_an_index_written_by_other_graph_queries_is_read_again_once(shop, monkeypatch, module, version):
    """A release whose queries capture other names (``GRAPH_VERSION``) or whose chunker cuts other
    chunks (``CHUNKING_VERSION``) reads every file again at the next index run, so no unchanged file
    keeps the old queries' edges or the old boundaries; no vector is embedded again. Until that run,
    the old rows are searched as they are: ``status``, ``related`` and ``ask --no-update`` emptied the
    index when opening it started over (a newcomer's ``codeask status`` after an upgrade printed
    "0 files, 0 chunks", then ``related`` found no definition); ``status`` and ``doctor`` say the
    next run reads every file again (they called the index ready)."""
    first = Workspace([shop]).index()
    assert first.files_changed == 3 and first.chunks_embedded > 0
    chunks = Workspace([shop]).status()["chunks_total"]
    monkeypatch.setattr(module, version, getattr(module, version) + "-next")
    assert Service([shop]).scheduler.keyword_ready()  # the old rows answer at once
    status = Service([shop]).status()
    assert (status.state, status.note, status.counts["outdated"]) == ("ready", OUTDATED_NOTE, True)
    index_check = run_checks([shop], llm=False)[-1]
    assert index_check.status == "warn" and OUTDATED_NOTE in index_check.detail
    assert Workspace([shop]).status()["chunks_total"] == chunks
    assert _callers(Workspace([shop]), "persist_order") == [("app/handlers.py", "handle_checkout")]
    assert Workspace([shop]).ask("how is checkout handled", no_llm=True).sources  # from the index as it is
    reread = Workspace([shop]).index()
    assert (reread.files_changed, reread.chunks_embedded, reread.read_again) == (3, 0, True)
    assert Workspace([shop]).status()["chunks_total"] == chunks
    assert _callers(Workspace([shop]), "persist_order") == [("app/handlers.py", "handle_checkout")]
    again = Workspace([shop]).index()
    assert (again.files_changed, again.read_again) == (0, False)
    status = Service([shop]).status()
    assert (status.state, status.note, status.counts["outdated"]) == ("ready", None, False)
    assert run_checks([shop], llm=False)[-1].status == "ok"


def test_ask_json_sources_say_via_for_expanded_files(shop):
    Workspace([shop]).index(embed=False)  # keyword search only: the store file shares no word with the question
    out = json.loads(codeask("ask", "--no-llm", "--no-update", "--json", str(shop), "how is checkout handled").stdout)
    by_path = {s["path"]: s for s in out["sources"]}
    assert by_path["app/handlers.py"]["via"] == ""
    caller_line = SHOP["app/handlers.py"].splitlines().index("def handle_checkout(request):") + 1  # not the import
    assert by_path["app/store.py"]["via"] == f"calls persist_order from app/handlers.py:{caller_line}"
    assert list(by_path).index("app/store.py") > list(by_path).index(
        "app/handlers.py"
    )  # retrieved files keep their ranks
    assert "app/report.py" not in by_path  # no edge, no word in common


def _doc(path: str, via_path: str = "") -> Document:
    return Document(path, "/r", 1, 2, "", "python", "x", via="calls f" if via_path else "", via_path=via_path)


def test_the_prompt_reads_added_files_after_the_file_they_were_reached_from():
    docs = [_doc("a.py"), _doc("b.py"), _doc("c.py"), _doc("d.py", "a.py"), _doc("e.py", "a.py"), _doc("f.py", "zz.py")]
    assert [d.path for d in along_chain(docs)] == ["a.py", "d.py", "e.py", "b.py", "c.py", "f.py"]
    assert along_chain(docs[:3]) == docs[:3]


def test_related_refuses_a_non_symbol(shop):
    ws = Workspace([shop])
    with pytest.raises(ValueError, match="not a symbol name"):
        ws.related("DROP TABLE chunks; --")
