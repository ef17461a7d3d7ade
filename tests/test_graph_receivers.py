"""A call whose receiver's class is known links only to that class's method (a newcomer's findings
on requests and javapoet): ``self.send(..)`` inside a class that defines ``send``, ``Session().send(r)``
on a constructor's result, Java's bare ``emit(..)`` inside its own class, and a call on a subclass
that overrides the method; a plain word imported from outside the project is no import alias. Real
parts: tree-sitter parsing, LanceDB in a temp dir."""

from __future__ import annotations

from codeask.query.graph import one_hop
from codeask.query.resolve import NAME_ONLY, NONE, SURE, TYPED, sureness
from codeask.query.uses import uses_in
from codeask.workspace import Workspace
from tests.workspaces import write_tree

SEND = {
    "web/sessions.py": (
        "class Session:\n    def send(self, r):\n        return r\n\n"
        "    def get(self, url):\n        return self.send(url)\n\n\n"
        "def fetch(url):\n    return Session().send(url)\n"
    ),
    "web/adapters.py": "class HTTPAdapter:\n    def send(self, r):\n        return r\n",
    "web/base.py": "class Base:\n    def close(self):\n        return 1\n",
    "web/child.py": (
        "from web.base import Base\n\n\nclass Child(Base):\n    def close(self):\n        return 2\n\n\n"
        "def shut():\n    return Child().close()\n"
    ),
    "src/CodeWriter.java": (
        "class CodeWriter {\n  void emit(String s) {\n  }\n\n  void emitAll(String s) {\n    emit(s);\n  }\n}\n"
    ),
    "src/FieldSpec.java": "class FieldSpec {\n  void emit(String s) {\n  }\n}\n",
}


def _callers(ws: Workspace, symbol: str) -> set[tuple[str, float]]:
    return {(x.symbol, x.sure) for x in ws.related(symbol).callers}


def test_a_call_on_a_known_class_links_only_to_that_class(tmp_path):
    """``self.send(..)`` in ``Session.get`` and ``Session().send(..)`` call ``Session.send`` (sure), not
    ``HTTPAdapter.send`` (both were 0.3 callers of it); Java's bare ``emit(s)`` in ``CodeWriter`` calls
    ``CodeWriter.emit``, not ``FieldSpec.emit``; ``Child().close()`` calls ``Child.close``, which
    overrides ``Base.close``: it is no caller of ``Base.close``."""
    ws = Workspace([write_tree(tmp_path / "ws", SEND)])
    ws.index(embed=False)
    assert _callers(ws, "Session.send") == {("Session.get", SURE), ("fetch", SURE)}
    assert _callers(ws, "HTTPAdapter.send") == set()
    assert _callers(ws, "CodeWriter.emit") == {("CodeWriter.emitAll", SURE)}
    assert _callers(ws, "FieldSpec.emit") == set()
    assert _callers(ws, "Child.close") == {("shut", SURE)}
    assert _callers(ws, "Base.close") == set()
    assert NAME_ONLY < SURE


ALIAS = {
    "web/api.py": "def get(url):\n    return url\n\n\ndef patch(url):\n    return url\n\n\ndef dumps(x):\n    return x\n",
    "web/client.py": (
        "import json\nfrom os import environ\nfrom unittest import mock\n\nfrom web import api as a\n\n\n"
        "def fetch(url):\n    return a.get(url)\n\n\n"
        "def netrc():\n    return environ.get('NETRC')\n\n\n"
        "def encode(x):\n    return json.dumps(x)\n\n\n"
        "def test_patch():\n    with mock.patch('web.api.get'):\n        return 1\n"
    ),
}


def test_a_word_imported_from_outside_the_project_is_no_import_alias(tmp_path):
    """``environ.get`` after ``from os import environ``, ``json.dumps`` and ``mock.patch`` are no
    import-alias (0.5) callers of the project's ``get``, ``dumps`` and ``patch`` (they were): the
    file imports those words from other packages; ``a.get`` after ``from web import api as a`` is."""
    ws = Workspace([write_tree(tmp_path / "ws", ALIAS)])
    ws.index(embed=False)
    assert _callers(ws, "get") == {("fetch", 0.5)}
    assert _callers(ws, "dumps") == set()
    assert _callers(ws, "patch") == set()


REDIRECTS = (
    "def rebuild_auth(r):\n    return r\n\n\nclass Mixin:\n    def resolve_redirects(self, resp):\n        total = 0\n"
    + "        total += 1\n" * 150
    + "        return rebuild_auth(resp)\n"
)


def test_a_caller_in_a_later_chunk_of_a_split_definition_is_the_whole_definition(tmp_path):
    """``rebuild_auth``'s caller ``resolve_redirects`` calls it from a later chunk of its split body:
    the caller is listed with the definition's own line range (it was that chunk's, as requests'
    219-261), the same range as the definition has; so is ``prepare``, which calls it from its first
    chunk (fd's ``spawn_senders`` was 442-484 of 443-614)."""
    early = "from web.redirects import rebuild_auth\n\n\ndef prepare(r):\n    rebuild_auth(r)\n" + "    r += 1\n" * 150
    root = write_tree(tmp_path / "ws", {"web/redirects.py": REDIRECTS, "web/early.py": early})
    ws = Workspace([root])
    ws.index(embed=False)
    chunks = next(iter(ws.indexes.values())).store.rows_for_path("web/redirects.py")
    definition = ws.related("resolve_redirects").definitions[0]
    assert len([c for c in chunks if definition.start_line <= c["end_line"] <= definition.end_line]) > 1
    prepare = ws.related("prepare").definitions[0]
    assert len(next(iter(ws.indexes.values())).store.rows_for_path("web/early.py")) > 1
    callers = {(x.symbol, x.start_line, x.end_line, x.sure) for x in ws.related("rebuild_auth").callers}
    assert callers == {
        ("Mixin.resolve_redirects", definition.start_line, definition.end_line, SURE),
        ("prepare", prepare.start_line, prepare.end_line, SURE),
    }


def test_via_from_a_later_chunk_of_a_split_definition_cites_its_first_line(tmp_path):
    """A callee reached from a later chunk of a split function is cited at that function's first
    line (``calls rebuild_auth from web/redirects.py:5``), as from its first chunk; it was the
    call's own line."""
    body = REDIRECTS.replace("def rebuild_auth(r):\n    return r\n\n\n", "from web.auth import rebuild_auth\n\n\n")
    root = write_tree(
        tmp_path / "ws", {"web/auth.py": "def rebuild_auth(r):\n    return r\n", "web/redirects.py": body}
    )
    ws = Workspace([root])
    ws.index(embed=False)
    store = next(iter(ws.indexes.values())).store
    rows = store.rows_for_path("web/redirects.py")
    last = store.linked([rows[-1]["id"]])
    assert "rebuild_auth(resp)" in rows[-1]["content"] and "def resolve_redirects" not in rows[-1]["content"]
    edges, _ = one_hop(store, list(last.values()), {})
    start = body.splitlines().index("    def resolve_redirects(self, resp):") + 1
    assert [e.via for e in edges if e.name == "rebuild_auth"] == [f"calls rebuild_auth from web/redirects.py:{start}"]


def test_a_method_call_on_a_local_names_no_type():
    """chi's ``hr.Handler(w)`` calls a method on the local ``hr``: it neither mentions nor constructs
    the type ``Handler``, so ``h.ServeHTTP(w)`` is no typed (0.7) caller of ``Handler.ServeHTTP`` (it
    was); ``h := Handler(w)`` still is."""
    method = "package chi\n\nfunc (hr HeaderRouter) Serve(w int) {\n\th := hr.Handler(w)\n\th.ServeHTTP(w)\n}\n"
    mention = "package chi\n\nfunc (hr HeaderRouter) Serve(w int) {\n\twrap(hr.Handler(w))\n\th := get()\n\th.ServeHTTP(w)\n}\n"
    conversion = "package chi\n\nfunc Serve(w int) {\n\th := Handler(w)\n\th.ServeHTTP(w)\n}\n"
    target = ("ServeHTTP", "Handler.ServeHTTP", "handler.go", "go")
    assert sureness(uses_in(method, "go"), *target) == NAME_ONLY
    assert sureness(uses_in(mention, "go"), *target) == NAME_ONLY
    assert sureness(uses_in(conversion, "go"), *target) == TYPED


def test_a_name_the_file_defines_is_no_other_packages(tmp_path):
    """``Run`` (a chunk of its own) calls ``Parse()``, which its own file defines: the expansion of ask
    links no other package's ``Parse`` (it was sure, 1.0, since same-file edges are left out)."""
    run = "func Run() int {\n\tx := 0\n" + "\tx += 1\n" * 150 + "\treturn Parse() + x\n}\n"
    files = {
        "cmd/a/a.go": f"package a\n\nfunc Parse() int {{\n\treturn 1\n}}\n\n{run}",
        "pkg/b/b.go": "package b\n\nfunc Parse() int {\n\treturn 2\n}\n",
    }
    ws = Workspace([write_tree(tmp_path / "ws", files)])
    ws.index(embed=False)
    store = next(iter(ws.indexes.values())).store
    rows = [r for r in store.rows_for_path("cmd/a/a.go") if "return Parse()" in r["content"]]
    assert rows and "func Parse" not in rows[0]["content"]
    seeds = list(store.linked([rows[0]["id"]]).values())
    assert "Parse" in seeds[0].refs
    edges, _ = one_hop(store, seeds, {})
    assert [e.target.path for e in edges if e.name == "Parse"] == []
    edges, _ = one_hop(store, seeds, {}, same_file=True)
    assert {(e.target.path, e.sure) for e in edges if e.name == "Parse"} == {("cmd/a/a.go", SURE)}


def test_a_rust_path_naming_another_type_is_no_link():
    """fd's ``Vec::new()`` and ``OnceCell::new()`` call those types' ``new``, not ``WorkerState::new``
    (they were 0.3 callers of it); ``WorkerState::new(1)`` is sure."""
    src = "fn make() -> u32 {\n    let v: Vec<u32> = Vec::new();\n    let c = OnceCell::new();\n    WorkerState::new(1).n\n}\n"
    found = uses_in(src, "rust")
    target = ("new", "WorkerState.new", "src/walk.rs", "rust")
    assert [sureness(found, *target, (n, n)) for n in (2, 3, 4)] == [NONE, NONE, SURE]


def test_each_same_named_method_of_a_packed_chunk_can_be_asked_for(tmp_path):
    """Two small classes packed in one chunk each define ``put``: ``B.put`` is found (it was unknown:
    only the chunk's first ``put`` was read), at its own lines, with its own typed caller; ``A.put``'s
    overloads are one definition."""
    overloads = "    @overload\n    def put(self, v: int) -> int: ...\n    @overload\n    def put(self, v: str) -> str: ...\n"
    box = f"class A:\n{overloads}    def put(self, v):\n        return v\n\n\nclass B:\n    def put(self, v):\n        return v\n"
    use = "from store.box import B\n\n\ndef use():\n    b = B()\n    return b.put(1)\n"
    ws = Workspace([write_tree(tmp_path / "ws", {"store/box.py": box, "app/use.py": use})])
    ws.index(embed=False)
    assert len(next(iter(ws.indexes.values())).store.rows_for_path("store/box.py")) == 1
    found = ws.related("B.put")
    assert [(d.symbol, d.start_line) for d in found.definitions] == [("B.put", box.splitlines().index("class B:") + 2)]
    assert [(x.symbol, x.sure) for x in found.callers] == [("use", TYPED)]
    assert [d.symbol for d in ws.related("put").definitions] == ["A.put", "B.put"]


TS = {
    "web/adapter.ts": "export class HttpAdapter {\n  send(n: number) {\n    return n;\n  }\n}\n",
    "web/mailer.ts": "export class Mailer {\n  send(n: number) {\n    return n;\n  }\n}\n",
    "web/client.ts": (
        "import { HttpAdapter } from './adapter';\n\nexport class Client {\n  private adapter = new HttpAdapter();\n\n"
        "  fetch(n: number) {\n    let t = n;\n" + "    t += 1;\n" * 150 + "    return this.adapter.send(t);\n  }\n}\n"
    ),
}


def test_a_typescript_class_field_types_its_calls(tmp_path):
    """ky-like ``private adapter = new HttpAdapter()`` types ``this.adapter.send(..)`` in a method the
    chunker stored apart: a typed (0.7) caller of ``HttpAdapter.send`` (it was by name only) and no
    caller of ``Mailer.send`` (it was, by name only)."""
    ws = Workspace([write_tree(tmp_path / "ws", TS)])
    ws.index(embed=False)
    assert len(next(iter(ws.indexes.values())).store.rows_for_path("web/client.ts")) > 1
    assert _callers(ws, "HttpAdapter.send") == {("Client.fetch", TYPED)}
    assert _callers(ws, "Mailer.send") == set()


def test_an_object_key_or_a_type_property_is_no_use():
    """ky's ``{ timeout: 5000 }`` and ``interface Options { timeout: number }`` name a key, not the
    project's function ``timeout`` (they were sure, 1.0, callers of it); a shorthand ``{ retry }`` reads
    the variable ``retry``."""
    call = "export function make() {\n  return ky.create({ timeout: 5000, retry });\n}\n"
    shape = "interface Options {\n  timeout: number;\n}\n"
    assert sureness(uses_in(call, "typescript"), "timeout", "timeout", "source/timeout.ts", "typescript") == NONE
    assert sureness(uses_in(shape, "typescript"), "timeout", "timeout", "source/timeout.ts", "typescript") == NONE
    assert sureness(uses_in(call, "typescript"), "retry", "retry", "source/retry.ts", "typescript") == SURE


def test_c_calls_no_cpp_method():
    """hiredis' ``c->funcs->write(c)`` (a C function pointer) is no caller of a C++ example's
    ``Client::write`` (it was, by name only); a C function ``write`` still is one by name."""
    src = "int flush(redisContext *c) {\n    return c->funcs->write(c);\n}\n"
    found = uses_in(src, "c")
    assert sureness(found, "write", "Client.write", "examples/client.cpp", "c") == NONE
    assert sureness(found, "write", "write", "net.c", "c") == NAME_ONLY


JAVA = {
    "src/TypeName.java": "class TypeName {\n  void emitAnnotations(CodeWriter out) {\n  }\n}\n",
    "src/ClassName.java": "class ClassName extends TypeName {\n  ClassName nested() {\n    return this;\n  }\n}\n",
    "src/CodeWriter.java": "class CodeWriter {\n  void emitAnnotations(String s) {\n  }\n}\n",
    "src/TypeSpec.java": (
        "class TypeSpec {\n  private final ClassName className;\n\n  void emit(CodeWriter out) {\n    int n = 0;\n"
        + "    n += 1;\n" * 150
        + "    className.emitAnnotations(out);\n  }\n}\n"
    ),
}


def test_a_java_field_reached_by_its_bare_name_types_its_calls(tmp_path):
    """javapoet's ``className.emitAnnotations(out)`` on the field ``ClassName className`` (declared in
    the class's chunk, the call in a method stored apart) calls ``TypeName.emitAnnotations`` through
    its subclass ``ClassName``, typed (it was by name only, as sure as ``CodeWriter.emitAnnotations``:
    the newcomer saw both at 0.7 where the chunk named both classes); a ``ClassName`` reaches no method of
    ``CodeWriter``, outside its kin (it was a name-only caller)."""
    ws = Workspace([write_tree(tmp_path / "ws", JAVA)])
    ws.index(embed=False)
    assert len(next(iter(ws.indexes.values())).store.rows_for_path("src/TypeSpec.java")) > 1
    assert _callers(ws, "TypeName.emitAnnotations") == {("TypeSpec.emit", TYPED)}
    assert _callers(ws, "CodeWriter.emitAnnotations") == set()


def test_a_caller_in_a_piece_of_a_split_class_body_is_its_method(tmp_path):
    """A class body the chunker split into pieces whose private methods (``#m3``) do not parse alone:
    the call of ``timeout`` in one is listed as the method holding it, ``K.#m3`` at its own lines (ky's
    calls inside ``Ky`` were attributed to the class; widening the piece gave the whole class)."""
    body = "".join(
        f"\t#m{i}(x: number): number {{\n" + "\t\tx += 1;\n" * 25 + ("\t\tx = timeout(x);\n" if i == 3 else "") + "\t\treturn x;\n\t}\n\n"
        for i in range(6)
    )
    src = "export class K {\n\tconstructor() {\n\t\tthis.a = 1;\n\t}\n\n" + body + "}\n"
    timeout = "export default function timeout(x: number): number {\n\treturn x;\n}\n"
    ws = Workspace([write_tree(tmp_path / "ws", {"source/K.ts": src, "source/timeout.ts": timeout})])
    ws.index(embed=False)
    assert len(next(iter(ws.indexes.values())).store.rows_for_path("source/K.ts")) > 2
    start = src.splitlines().index("\t#m3(x: number): number {") + 1
    callers = [(x.symbol, x.start_line, x.end_line) for x in ws.related("timeout").callers]
    assert callers == [("K.#m3", start, start + 28)]


MIXIN = {
    "web/sessions.py": (
        "class RedirectMixin:\n    def send(self, r):\n        ...\n\n    def resolve(self, r):\n        return self.send(r)\n\n\n"
        "class Session(RedirectMixin):\n    def send(self, r):\n        return r\n\n    def request(self, r):\n        return self.send(r)\n"
    ),
}


def test_a_mixins_self_call_may_reach_its_subclass_override(tmp_path):
    """requests' ``SessionRedirectMixin.resolve_redirects`` calls ``self.send(..)``, declared by the mixin
    and overridden by ``Session``: it stays a caller of ``Session.send`` (the class-known rule dropped
    it); ``Session.request``'s ``self.send(..)`` calls ``Session.send``, not the mixin's, also when both
    classes are packed in one chunk."""
    ws = Workspace([write_tree(tmp_path / "ws", MIXIN)])
    ws.index(embed=False)
    assert _callers(ws, "Session.send") == {("RedirectMixin.resolve", TYPED), ("Session.request", SURE)}
    assert _callers(ws, "RedirectMixin.send") == {("RedirectMixin.resolve", SURE)}


def test_hover_and_ask_graph_edges_follow_the_class_known_rule(tmp_path):
    """The graph step behind hover's related code and ask's expansion (``one_hop``) lists no caller of
    ``HTTPAdapter.send`` that calls ``Session().send(..)`` (it was a 0.3 edge)."""
    client = "from web.sessions import Session\n\n\ndef fetch(url):\n    return Session().send(url)\n"
    ws = Workspace([write_tree(tmp_path / "ws", {**SEND, "web/client.py": client})])
    ws.index(embed=False)
    store = next(iter(ws.indexes.values())).store
    seeds = list(store.linked([r["id"] for r in store.rows_for_path("web/adapters.py")]).values())
    edges, _ = one_hop(store, seeds, {})
    assert [(e.target.path, e.symbol) for e in edges if e.name == "send"] == []
