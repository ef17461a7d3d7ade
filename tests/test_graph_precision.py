"""The symbol graph's precision, as a newcomer met it on the requests sdist: callers and callees
belong to a definition's own lines, a call on a dict or a word in a docstring is no sure link, an
added file is cited at the calling function (not its import block), a caller question gathers the
callers, a packed chunk is labelled by the definition that matched; and ``codeask related``.
Also Go, Rust, TypeScript, Java, C and a method reached through a subclass. Real parts: LanceDB in a temp dir, the CLI as a subprocess."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from codeask.index.engine import RootIndex
from codeask.query.graph import one_hop
from codeask.query.resolve import NAME_ONLY, SURE, TYPED
from codeask.settings import load_settings
from codeask.workspace import Workspace
from tests.tables import tables
from tests.test_cli import codeask
from tests.workspaces import caller_spans, related_json, write_tree

PROJECT = {
    "web/api.py": "def get(url, **kwargs):\n    return send_request('GET', url, **kwargs)\n",
    "web/jar.py": "class Jar:\n    def get(self, name):\n        return self.cookies[name]\n",
    "web/helpers.py": (
        "def to_native(value):\n    return str(value)\n\n\n"
        "def parse_port(netloc):\n    return int(netloc.rsplit(':', 1)[1])\n"
    ),
    "web/redirects.py": (
        "DEFAULT_PORTS = {'http': 80, 'https': 443}\n\n\n"
        "def get_target(resp):\n    location = resp.headers['location']\n    return to_native(location)\n\n\n"
        "def should_strip(old, new, **kwargs):\n"
        '    """Decide; get the ports and get out early. Calls get() on nothing."""\n'
        "    # get the default port\n"
        "    timeout = kwargs.get('timeout')\n"
        "    return DEFAULT_PORTS.get(old) != parse_port(new)\n"
    ),
    "pkg/timeouts.py": "class Timeout(Exception):\n    def __init__(self, seconds):\n        self.seconds = seconds\n",
    "tests/test_timeouts.py": (
        "import os\nimport sys\n\nimport pytest\n\nfrom pkg.timeouts import Timeout\nfrom web.redirects import should_strip\n"
        "\n\n"
        + "".join(f"def test_unrelated_{i}():\n    assert os.sep and sys.path\n\n\n" for i in range(4))
        + "def test_timeout_keeps_seconds():\n    assert Timeout(3).seconds == 3\n\n\n"
        "def test_strip_on_port_change():\n    assert should_strip('a:1', 'a:2')\n\n\n"
        "def test_strip_on_host_change():\n    assert should_strip('a:1', 'b:1')\n"
    ),
}


@pytest.fixture
def project(tmp_path) -> Path:
    return write_tree(tmp_path / "proj", PROJECT)


def test_callees_belong_to_the_definitions_own_lines(project):
    ws = Workspace([project])
    ws.index(embed=False)
    related = ws.related("should_strip")
    assert [(x.path, x.symbol) for x in related.definitions] == [("web/redirects.py", "should_strip")]
    callees = {x.name for x in related.callees}
    assert "parse_port" in callees
    assert "to_native" not in callees  # its chunk-mate get_target calls it, not should_strip
    assert {x.name for x in ws.related("get_target").callees} == {"to_native"}


def test_a_call_on_a_dict_or_a_word_in_a_docstring_is_no_sure_link(project):
    ws = Workspace([project])
    ws.index(embed=False)
    assert not [x for x in ws.related("should_strip").callees if x.name == "get"]  # DEFAULT_PORTS.get, kwargs.get
    callers = [(x.symbol, x.sure) for x in ws.related("get").callers]
    assert all(sure < SURE for symbol, sure in callers if symbol == "should_strip"), callers
    index = RootIndex(project, load_settings(project))
    ids = [r["id"] for r in tables(index.store)[0].to_arrow().to_pylist() if "def should_strip" in r["content"]]
    edges, _ = one_hop(index.store, list(index.store.linked(ids).values()), {})
    to_get = [(e.target.path, e.sure) for e in edges if e.name == "get"]
    assert to_get and all(sure <= NAME_ONLY for _, sure in to_get), to_get


def test_an_added_caller_file_is_cited_at_the_calling_function_not_its_imports(project):
    index = RootIndex(project, load_settings(project))
    index.sync(embed=False)
    ids = [r["id"] for r in tables(index.store)[0].to_arrow().to_pylist() if r["path"] == "pkg/timeouts.py"]
    edges, _ = one_hop(index.store, list(index.store.linked(ids).values()), {"pkg/timeouts.py": "pkg/timeouts.py"})
    callers = [e for e in edges if e.target.path == "tests/test_timeouts.py"]
    assert [(e.symbol, e.target.symbol) for e in callers] == [("test_timeout_keeps_seconds",) * 2]
    lines = PROJECT["tests/test_timeouts.py"].splitlines()
    target = callers[0].target
    assert lines[target.start_line - 1] == "def test_timeout_keeps_seconds():"
    assert "import" not in target.content and target.end_line - target.start_line == 1


def test_a_caller_question_gathers_the_callers_tests_included(project):
    """The callers ``related`` lists, each cited at its definition (never an import block)."""
    Workspace([project]).index(embed=False)
    callers = {(x.path, x.symbol) for x in Workspace([project]).related("should_strip").callers}
    assert ("tests/test_timeouts.py", "test_strip_on_port_change") in callers, callers
    assert ("tests/test_timeouts.py", "test_strip_on_host_change") in callers, callers
    assert callers <= caller_spans(project, "should_strip")


def test_a_packed_chunk_is_labelled_by_the_definition_that_matched(project):
    """The chunk's stored symbol names its first definition, to_native; the label names the one
    that matched, after the first, where a reader opening the span starts (a newcomer met
    ``sessions.py:282-332`` labelled ``rebuild_proxies`` though it starts at ``rebuild_auth``)."""
    Workspace([project]).index(embed=False)
    out = json.loads(
        codeask("ask", "--no-llm", "--no-update", "--json", str(project), "how is the netloc port parsed").stdout
    )
    helpers = next(s for s in out["sources"] if s["path"] == "web/helpers.py")
    assert helpers["symbol"] == "to_native, parse_port"
    assert PROJECT["web/helpers.py"].splitlines()[helpers["start_line"] - 1] == "def to_native(value):"


def test_codeask_related_prints_the_graph_with_exit_codes(project):
    Workspace([project]).index(embed=False)
    proc = codeask("related", str(project), "should_strip")
    assert proc.returncode == 0, proc.stderr
    assert "web/redirects.py:9-13  should_strip" in proc.stdout
    at = PROJECT["tests/test_timeouts.py"].splitlines().index("def test_strip_on_port_change():") + 1
    assert f"tests/test_timeouts.py:{at}-{at + 1}  test_strip_on_port_change" in proc.stdout
    found = related_json(project, "should_strip")
    assert set(found) == {"symbol", "definitions", "callers", "callees", "counts", "truncated", "alias", "index"}
    assert {"path", "root", "start_line", "end_line", "symbol", "name", "sure", "uri"} <= set(found["callers"][0])
    assert found == {**Workspace([project]).related("should_strip").to_json(), "index": found["index"]}
    unknown = codeask("related", str(project), "no_such_symbol", check=False)
    assert unknown.returncode == 1 and unknown.stderr.strip().count("\n") == 0
    assert unknown.stderr.strip().endswith(f"no_such_symbol: no definition or use in the index of {project}")
    bad = codeask("related", str(project), "1 + 1", check=False)
    assert bad.returncode == 2 and "not a symbol name" in bad.stderr and "Traceback" not in bad.stderr
    missing = codeask("related", str(project / "nope"), "get", check=False)
    assert missing.returncode != 0 and "Traceback" not in missing.stderr


LANGUAGES = {
    "srv/server.go": (
        "package srv\n\ntype Server struct{ tree *Tree }\n\n"
        "func (s *Server) Serve() error {\n\treturn s.handle()\n}\n\n"
        "func (s *Server) handle() error {\n\treturn nil\n}\n"
    ),
    "web/handle.go": "package web\n\nfunc Handle() {}\n",
    "cmd/main.go": ('package main\n\nfunc main() {\n\ts := &srv.Server{}\n\ts.Serve()\n\thttp.Handle("/", nil)\n}\n'),
    "src/dir_entry.rs": (
        "pub struct DirEntry;\n\nimpl DirEntry {\n    pub fn stripped_path(&self) -> u32 {\n        1\n    }\n}\n"
    ),
    "src/exec/job.rs": "fn job(dir_entry: &DirEntry) -> u32 {\n    dir_entry.stripped_path()\n}\n",
    "src/walk.rs": "fn walk(e: ignore::DirEntry) -> u32 {\n    e.depth()\n}\n",
    "include/feed.h": "int feed(int x);\nint other(int y);\n",
    "src/feed.c": "int feed(int x) {\n    return x + 1;\n}\n",
    "src/main.c": "int main(void) {\n    return feed(2);\n}\n",
    "web/retry.ts": "export const MAX_RETRIES = 3;\n",
    "web/client.ts": "// see MAX_RETRIES in retry.ts\nexport function fetchAll(urls: string[]) {\n  return urls;\n}\n",
    "app/Api.java": "class Api {\n  Reply send(Request r) {\n    return null;\n  }\n}\n",
    "shop/base.py": "class Base:\n    def ping(self):\n        return 1\n",
    "shop/child.py": "from shop.base import Base\n\n\nclass Child(Base):\n    pass\n",
    "shop/use.py": "from shop.child import Child\n\n\ndef use():\n    c = Child()\n    return c.ping()\n",
    "app/Main.java": "class Main {\n  void run() {\n    Api api = new Api();\n    api.send(null);\n  }\n}\n",
}


@pytest.fixture
def polyglot(tmp_path) -> Path:
    root = write_tree(tmp_path / "poly", LANGUAGES)
    Workspace([root]).index(embed=False)
    return root


def _callers(ws: Workspace, symbol: str) -> list[tuple[str, str, float]]:
    return [(x.path, x.symbol, x.sure) for x in ws.related(symbol).callers]


def test_go_rust_c_typescript_and_java_callers(polyglot):
    ws = Workspace([polyglot])
    assert _callers(ws, "Server.Serve") == [("cmd/main.go", "main", TYPED)]
    assert _callers(ws, "Server.handle") == [("srv/server.go", "Server.Serve", SURE)]  # s of func (s *Server): its self
    assert _callers(ws, "Handle") == []  # http.Handle is another package's
    assert _callers(ws, "DirEntry.stripped_path") == [("src/exec/job.rs", "job", TYPED)]  # not its module
    assert [x.name for x in ws.related("walk").callees] == []  # ignore::DirEntry is another crate's
    feed = ws.related("feed")
    assert [(x.path, x.start_line) for x in feed.definitions] == [("src/feed.c", 1)]  # the body, not the prototype
    assert [(x.path, x.symbol) for x in feed.callers] == [("src/main.c", "main")]
    assert _callers(ws, "MAX_RETRIES") == []  # a word in a comment
    assert _callers(ws, "Api.send") == [("app/Main.java", "Main.run", TYPED)]
    assert _callers(ws, "Base.ping") == [("shop/use.py", "use", TYPED)]  # through its subclass Child


@pytest.mark.slow
def test_requests_sdist_should_strip_auth(requests_sdist, tmp_path):
    root = tmp_path / "requests"
    shutil.copytree(requests_sdist, root)
    assert codeask("index", "--no-embed", str(root)).returncode == 0
    found = related_json(root, "should_strip_auth")
    callers = [(c["path"], c["symbol"]) for c in found["callers"]]
    assert callers[0] == ("src/requests/sessions.py", "SessionRedirectMixin.rebuild_auth")
    tests = sorted(s for p, s in callers if p == "tests/test_requests.py")
    assert len(tests) == 5 and all(s.startswith("TestRequests.test_should_strip_auth_") for s in tests)
    assert {c["sure"] for c in found["callers"][1:]} == {TYPED}  # s = requests.Session(): a subclass
    assert not [c for c in found["callees"] if c["name"] in {"to_native_string", "get"}], found["callees"]
    out = json.loads(
        codeask("ask", "--no-llm", "--no-update", "--json", str(root), "callers of should_strip_auth").stdout
    )
    spans = {x["symbol"] for s in out["sources"] for x in s["spans"]}
    assert {f"TestRequests.{s.split('.')[-1]}" for s in tests} <= spans, spans
    assert "SessionRedirectMixin.rebuild_auth" in spans


def test_via_cites_the_definition_that_uses_or_defines_the_name(tmp_path):
    """``via`` names the line of the calling definition, not the first line of its packed chunk
    (requests' ``calls UnrewindableBodyError from utils.py:1054`` cited ``urldefragauth``, the chunk's
    first definition; the raise is in ``rewind_body``), and the line of the definition called, not
    its chunk's comment (chi's ``caller of NewRouter in chi.go:61``, a line above ``func NewRouter``)."""
    utils = (
        "def defrag(url):\n    return url.split('#')[0]\n\n\n"
        "def rewind(body):\n    if body is None:\n        raise BodyError('cannot rewind')\n    return body\n"
    )
    errors = "# Errors of the package.\n\n\nclass BodyError(Exception):\n    pass\n"
    root = write_tree(tmp_path / "ws", {"pkg/utils.py": utils, "pkg/errors.py": errors})
    index = RootIndex(root, load_settings(root))
    index.sync(embed=False)
    rows = tables(index.store)[0].to_arrow().to_pylist()
    seeds = index.store.linked([r["id"] for r in rows if r["path"] == "pkg/utils.py"]).values()
    edges, _ = one_hop(index.store, list(seeds), {})
    rewind_line = utils.splitlines().index("def rewind(body):") + 1
    assert [e.via for e in edges if e.name == "BodyError"] == [f"creates BodyError from pkg/utils.py:{rewind_line}"]
    seeds = index.store.linked([r["id"] for r in rows if r["path"] == "pkg/errors.py"]).values()
    edges, _ = one_hop(index.store, list(seeds), {})
    class_line = errors.splitlines().index("class BodyError(Exception):") + 1
    assert [e.via for e in edges if e.name == "BodyError"] == [f"creates BodyError in pkg/errors.py:{class_line}"]


KINDS = {
    "web/sessions.py": (
        "MAX_RETRIES = 3\n\n\nclass Session:\n    def send(self, r):\n        return r\n\n\n"
        "def merge_settings(a, b):\n    return a or b\n"
    ),
    "web/api.py": (
        "from web.sessions import MAX_RETRIES, Session, merge_settings\n\n\n"
        "def make():\n    return Session()\n\n\n"
        "def typed(s: Session) -> int:\n    return MAX_RETRIES\n\n\n"
        "def merged(a):\n    return merge_settings(a, None)\n"
    ),
}


def test_via_names_the_kind_of_link_from_either_end(tmp_path):
    """An edge's ``via`` says what the link is (it said ``caller of`` for every use): a class called
    ``creates`` it, a class only named (an annotation) ``uses type``, an ``ALL_CAPS`` constant ``reads``,
    a function ``calls``; from the used definition's side ``creates .. in``, ``uses type .. in``,
    ``reads .. in``, ``caller of .. in``."""
    root = write_tree(tmp_path / "ws", KINDS)
    index = RootIndex(root, load_settings(root))
    index.sync(embed=False)
    rows = tables(index.store)[0].to_arrow().to_pylist()
    lines = KINDS["web/api.py"].splitlines()
    make, typed, merged = (lines.index(f"def {f}") + 1 for f in ("make():", "typed(s: Session) -> int:", "merged(a):"))
    seeds = index.store.linked([r["id"] for r in rows if r["path"] == "web/api.py"]).values()
    down = sorted(e.via for e in one_hop(index.store, list(seeds), {})[0])
    assert down == [
        f"calls merge_settings from web/api.py:{merged}",
        f"creates Session from web/api.py:{make}",
        f"reads MAX_RETRIES from web/api.py:{typed}",
    ]  # the first use of Session is make's call; typed's annotation is its second
    own = KINDS["web/sessions.py"].splitlines()
    at = {
        n: next(i for i, x in enumerate(own, 1) if n in x)
        for n in ("MAX_RETRIES", "class Session", "def merge_settings")
    }
    seeds = index.store.linked([r["id"] for r in rows if r["path"] == "web/sessions.py"]).values()
    up = sorted((e.target.symbol, e.via) for e in one_hop(index.store, list(seeds), {})[0])
    assert up == [
        ("make", f"creates Session in web/sessions.py:{at['class Session']}"),
        ("merged", f"caller of merge_settings in web/sessions.py:{at['def merge_settings']}"),
        ("typed", f"reads MAX_RETRIES in web/sessions.py:{at['MAX_RETRIES']}"),
        ("typed", f"uses type Session in web/sessions.py:{at['class Session']}"),
    ]
    assert all(e.up for e in one_hop(index.store, list(seeds), {})[0])
