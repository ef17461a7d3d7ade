"""The symbol graph tells the truth at the front doors (a newcomer's findings on chi, fd and
requests): a Go field of another package's type (value, pointer, slice or map) ends the chain, a
method value passed as an argument is a use, a Rust module path never reaches a method, two
definitions of one name each have their own callers and callees, a definition has one line range
everywhere, a bare call means the definition in scope, and a name-only link says it is one. Real
parts: tree-sitter parsing, LanceDB in a temp dir, the CLI as a subprocess."""

from __future__ import annotations

from dataclasses import asdict

from codeask.mcp_results import RelatedResult, related_lines
from codeask.query.related_code import related
from codeask.query.resolve import NAME_ONLY, SURE, TYPED, sureness
from codeask.query.result import Source, source_lines
from codeask.query.steps.callers import caller_documents
from codeask.query.steps.retrieve import SearchTarget
from codeask.query.uses import uses_in
from codeask.workspace import Workspace
from tests.workspaces import related_json, write_tree

WALK = (
    "pub struct WorkerState {\n    n: u32,\n}\n\nimpl WorkerState {\n"
    "    pub fn new(n: u32) -> WorkerState {\n        WorkerState { n }\n    }\n\n"
    "    fn spawn_senders(&self) -> u32 {\n        let mut x = self.n;\n"
    + "        x += 1;\n"
    * 150
    + "        x\n    }\n\n"
    "    fn scan(&self) -> u32 {\n        self.spawn_senders()\n    }\n}\n\n"
    "pub fn scan(n: u32) -> u32 {\n    WorkerState::new(n).scan()\n}\n"
)
FD = {"src/walk.rs": WALK, "src/main.rs": "mod walk;\n\nfn run() -> u32 {\n    walk::scan(1)\n}\n"}


def test_a_rust_module_path_is_a_function_and_each_definition_has_its_own_callers(tmp_path):
    """fd's ``walk::scan(..)`` calls the free function ``scan``, never the method ``WorkerState::scan``,
    whose sure caller is the free ``scan`` (``WorkerState::new(..).scan()``); each caller and callee
    names the definition it links to (``of``; the free ``scan`` calls the method, not itself), and ``spawn_senders``, split over chunks, has one
    line range as a definition and as a callee."""
    root = write_tree(tmp_path / "fd", FD)
    Workspace([root]).index(embed=False)
    found = related_json(root, "scan")
    at = {d["symbol"]: f"{d['path']}:{d['start_line']}" for d in found["definitions"]}
    assert set(at) == {"WorkerState.scan", "scan"}
    callers = {(x["path"], x["symbol"], x["sure"], x["of"]) for x in found["callers"]}
    assert callers == {("src/main.rs", "run", SURE, at["scan"]), ("src/walk.rs", "scan", SURE, at["WorkerState.scan"])}
    callees = {(x["symbol"], x["of"]): (x["start_line"], x["end_line"]) for x in found["callees"]}
    spawn = related_json(root, "spawn_senders")["definitions"][0]
    assert spawn["end_line"] > spawn["start_line"] + 150
    assert callees[("WorkerState.spawn_senders", at["WorkerState.scan"])] == (spawn["start_line"], spawn["end_line"])
    assert ("WorkerState.spawn_senders", at["scan"]) not in callees
    assert ("WorkerState.scan", at["scan"]) in callees and ("scan", at["scan"]) not in callees


API = {
    "web/sessions.py": (
        "class Session:\n    def request(self, method, url):\n        return (method, url)\n\n"
        "    def get(self, url):\n        return self.request('GET', url)\n"
    ),
    "web/api.py": (
        "from web import sessions\n\n\ndef request(method, url):\n"
        "    with sessions.Session() as session:\n        return session.request(method, url)\n\n\n"
        "def get(url):\n    return request('get', url)\n"
    ),
    "web/client.py": "from web.api import request\n\n\ndef fetch(url):\n    return request('get', url)\n",
    "tests/test_own.py": "def request(x):\n    return x\n\n\ndef test_own():\n    assert request(1)\n",
    "tests/test_local.py": (
        "from web import api\n\n\ndef test_local(s):\n    request = api.Request()\n    return s.send(request.prepare())\n"
    ),
}


def test_a_bare_call_means_the_definition_in_scope(tmp_path):
    """requests' ``api.get`` calls its module's ``request(..)``, not the method ``Session.request``
    (it was a caller at 0.3), nor does ``Session.get``'s ``self.request(..)`` call ``api.request``; a
    file with its own top-level ``request`` calls that one, and a local variable ``request`` is
    neither."""
    root = write_tree(tmp_path / "api", API)
    Workspace([root]).index(embed=False)
    method = {(x["path"], x["symbol"], x["sure"]) for x in related_json(root, "Session.request")["callers"]}
    assert method == {("web/sessions.py", "Session.get", SURE), ("web/api.py", "request", TYPED)}
    function = {(x["path"], x["symbol"], x["sure"]) for x in related_json(root, "api.request")["callers"]}
    assert function == {("web/api.py", "get", SURE), ("web/client.py", "fetch", SURE)}


CHI = {
    "mux.go": (
        'package chi\n\nimport "sync"\n\n// Mux routes.\ntype Mux struct {\n\tpool *sync.Pool\n\tpools []*sync.Pool\n'
        + "".join(f"\t// field {i}\n\tf{i} int\n" for i in range(20))
        + "}\n\n"
        "func (mx *Mux) Put(p string) {\n}\n\n"
        "func (mx *Mux) ServeHTTP(w int) {\n" + "\tw = w + 1\n" * 20 + "\tmx.pool.Put(w)\n}\n\n"
        "func (mx *Mux) routeHTTP(w int) {\n}\n\n"
        "func (mx *Mux) updateRouteHandler() {\n\tmx.handle(http.HandlerFunc(mx.routeHTTP))\n}\n\n"
        "func (mx *Mux) handle(h int) {\n}\n"
    ),
    "chain.go": (
        'package chi\n\nimport "net/http"\n\ntype ChainHandler struct {\n\tchain http.Handler\n}\n\n'
        "func (c *ChainHandler) ServeHTTP(w int) {\n\tc.chain.ServeHTTP(w)\n}\n\n"
        "func chain(h int) int {\n\treturn h\n}\n"
    ),
}


def test_go_fields_end_the_chain_and_a_method_value_is_a_use(tmp_path):
    """chi's ``mx.pool.Put`` through a pointer field ``*sync.Pool`` declared in the ``Mux`` struct's own
    chunk is no caller of ``Mux.Put`` (it was, at 0.3); the method value ``mx.routeHTTP`` passed to
    ``http.HandlerFunc`` in ``updateRouteHandler`` is a use (it was not listed); the field
    ``c.chain`` is no use of the function ``chain`` (it was a callee at 0.3)."""
    root = write_tree(tmp_path / "chi", CHI)
    ws = Workspace([root])
    ws.index(embed=False)
    struct = ws.related("Mux").definitions[0]
    serve = ws.related("Mux.ServeHTTP").definitions[0]
    chunks = next(iter(ws.indexes.values())).store.rows_for_path("mux.go")
    assert any(struct.end_line < c["start_line"] <= serve.start_line for c in chunks)  # not in the caller's chunk
    assert related_json(root, "Mux.Put")["callers"] == []
    assert [(x.symbol, x.sure) for x in ws.related("routeHTTP").callers] == [
        ("Mux.updateRouteHandler", SURE)
    ]  # mx: its self
    assert [x.symbol for x in ws.related("ChainHandler.ServeHTTP").callees] == ["ChainHandler"]
    assert [(x.symbol, x.sure) for x in ws.related("chain").callers] == []
    assert NAME_ONLY < TYPED


FIXTURE = {
    "web/strip.py": "def should_strip(old, new):\n    return old != new\n",
    "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef strip_url():\n    return 'u'\n",
    "tests/test_strip.py": (
        "from web.strip import should_strip\n\n\ndef test_strip_on_change():\n    assert should_strip('a', 'b')\n"
    ),
    "tests/test_fixture.py": "def test_strip_fixture(should_strip):\n    assert should_strip('a', 'b')\n",
}


def test_via_says_how_sure_its_link_is(tmp_path):
    """A pytest fixture's parameter called like the project's function (requests' ``httpbin(..)``)
    is a link by name only, not a sure one; a caller source added along the graph carries its
    ``via`` with ``via_sure`` (JSON) and ``by name only`` in the Sources text when it is a guess."""
    root = write_tree(tmp_path / "fixture", FIXTURE)
    ws = Workspace([root])
    ws.index(embed=False)
    callers = {(x["path"], x["sure"]) for x in related_json(root, "should_strip")["callers"]}
    assert callers == {("tests/test_strip.py", SURE), ("tests/test_fixture.py", NAME_ONLY)}
    index = next(iter(ws.indexes.values()))
    target = SearchTarget(str(root), lambda: index.store)
    added = {d.path: Source.from_document(d) for d, _ in caller_documents(target, ["should_strip"], 1.0)}
    weak, sure = added["tests/test_fixture.py"], added["tests/test_strip.py"]
    assert asdict(weak)["via"] == "caller of should_strip in web/strip.py:1" and asdict(weak)["via_sure"] == NAME_ONLY
    assert asdict(sure)["via_sure"] == SURE
    weak_line, sure_line = source_lines([weak, sure])
    assert weak_line.endswith("(added: caller of should_strip in web/strip.py:1, by name only)")
    assert sure_line.endswith("(added: caller of should_strip in web/strip.py:1)")


def test_a_cut_list_keeps_callers_of_every_definition(tmp_path):
    """Two classes define ``put``; four files call ``x.put()`` on a receiver typed with one of them, two
    for each class. Cut to two callers, the list holds callers of both definitions (chi's ``related
    Get``: the 50 listed were 48 callers of one of three definitions). A name-only caller of both is
    listed once, linked to neither (test_graph_links)."""
    files = {
        "store/a.py": "class A:\n    def put(self, v):\n        return v\n",
        "store/b.py": "class B:\n    def put(self, v):\n        return v\n",
    }
    for i in range(4):
        cls = "AB"[i % 2]
        files[f"app/use{i}.py"] = (
            f"from store.{cls.lower()} import {cls}\n\n\ndef use{i}(box: {cls}):\n    return box.put({i})\n"
        )
    root = write_tree(tmp_path / "ws", files)
    workspace = Workspace([root])
    workspace.index(embed=False)
    stores = [(str(root), index.store) for index in workspace.indexes.values()]
    whole = related(stores, "put")
    assert whole.counts["callers"] == 4 and {x.sure for x in whole.callers} == {TYPED}
    cut = related(stores, "put", limit=2)
    at = {f"{d.path}:{d.start_line}" for d in cut.definitions}
    assert len(at) == 2 and {x.of for x in cut.callers} == at and cut.truncated


def test_an_attribute_of_an_imported_module_is_no_import_alias():
    """``os.environ.get(..)`` in requests' ``get_netrc_auth`` is no use of ``api.get`` through an
    import alias (it was 0.5): only a plain word may name a module; ``api.get(..)`` still is sure."""
    src = "import os\n\n\ndef netrc(url):\n    path = os.environ.get('NETRC')\n    return api.get(url)\n"
    found = uses_in(src, "python")
    assert sureness(found, "get", "get", "src/requests/api.py", "python", (5, 5)) == NAME_ONLY
    assert sureness(found, "get", "get", "src/requests/api.py", "python", (6, 6)) == SURE


def test_another_packages_type_of_the_same_name_is_no_mention_of_the_class():
    """chi's ``HeaderRouter.Handler`` returns ``http.Handler`` and calls ``matcher.Middleware(next).ServeHTTP``:
    that file names no project ``Handler``, so the call is no typed (0.7) use of an example's
    ``Handler.ServeHTTP`` (a newcomer's finding); a file naming the project's ``Handler`` still is."""
    call = "\treturn http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {\n\t\tm.Middleware(next).ServeHTTP(w, r)\n\t})\n}\n"
    foreign = f"package middleware\n\nfunc Wrap(next http.Handler) http.Handler {{\n{call}"
    own = f"package middleware\n\nfunc Wrap(next Handler) Handler {{\n{call}"
    target = ("ServeHTTP", "Handler.ServeHTTP", "handler.go", "go")
    assert sureness(uses_in(foreign, "go"), *target) <= NAME_ONLY
    assert sureness(uses_in(own, "go"), *target) == TYPED


def test_a_local_named_like_a_package_is_no_package():
    """chi's ``data := &ArticleRequest{}; data.Article`` reads a local's field, not package ``data``'s
    ``Article`` (it was a sure caller, a newcomer's finding); ``data.Article{}`` without such a local is."""
    local = "package main\n\nfunc CreateArticle() {\n\tdata := &ArticleRequest{}\n\tarticle := data.Article\n\t_ = article\n}\n"
    package = "package main\n\nfunc Show() {\n\tarticle := data.Article{}\n\t_ = article\n}\n"
    target = ("Article", "Article", "_examples/versions/data/article.go", "go")
    assert sureness(uses_in(local, "go"), *target) < SURE
    assert sureness(uses_in(package, "go"), *target) == SURE


def test_the_mcp_text_says_which_definition_a_caller_links_to(tmp_path):
    """``related_code``'s text names the definition each caller links to when there are several
    (``(of path:line)``, with ``(sure 0.3)``), as ``codeask related`` does: fd's two ``scan``
    definitions each have their callers."""
    root = write_tree(tmp_path / "fd", FD)
    Workspace([root]).index(embed=False)
    found = related_json(root, "scan")
    text = related_lines(RelatedResult.model_validate(found))
    for caller in found["callers"]:
        assert (
            f"{caller['path']}:{caller['start_line']}-{caller['end_line']} {caller['symbol']} (of {caller['of']})"
            in text
        )
