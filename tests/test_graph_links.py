"""Links that are true in every language (a newcomer's findings on chi, fd, ky, javapoet and
requests): Go reaches another package's names only through its qualifier, its root package's too.
Real parts: tree-sitter parsing, LanceDB in a temp dir."""

from __future__ import annotations

from codeask.query.related_code import related
from codeask.query.resolve import NAME_ONLY, SURE, TYPED
from codeask.workspace import Workspace
from tests.workspaces import write_tree


def _callers(ws: Workspace, symbol: str) -> set[tuple[str, str, float]]:
    return {(x.path, x.symbol, x.sure) for x in ws.related(symbol).callers}


GO = {
    "go.mod": "module github.com/go-chi/chi/v5\n\ngo 1.22\n",
    "context.go": (
        "package chi\n\nfunc RouteContext(x int) int {\n\treturn x\n}\n\ntype Context struct{}\n\n"
        "func (c *Context) RouteContext(x int) int {\n\treturn x\n}\n"
    ),
    "chain.go": "package chi\n\ntype Middlewares []int\n\nfunc (mws Middlewares) HandlerFunc(h int) int {\n\treturn h\n}\n",
    "middleware/wrap.go": (
        'package middleware\n\nimport "net/http"\n\n'
        "func Wrap(h func(http.ResponseWriter, *http.Request)) http.Handler {\n\treturn http.HandlerFunc(h)\n}\n"
    ),
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
    folder has no name: the import of the module path ``go.mod`` declares names it; it was no caller
    at all; ``http.HandlerFunc`` in ``middleware/`` reaches no root ``HandlerFunc``), and the struct key ``Handler:`` in ``middleware/`` is no use of an example ``package
    main``'s type ``Handler`` (it was a sure caller): a bare name never leaves its package."""
    ws = Workspace([write_tree(tmp_path / "ws", GO)])
    ws.index(embed=False)
    assert _callers(ws, "RouteContext") == {("middleware/get_head.go", "GetHead", SURE)}  # not Context's
    assert _callers(ws, "Handler") == {("_examples/custom/main.go", "main", SURE)}
    assert _callers(ws, "Middlewares.HandlerFunc") == set()  # http's HandlerFunc: another package's


MIXIN = {
    "web/sessions.py": (
        "class RedirectMixin:\n    def resolve(self, r):\n        return self.send(r)\n\n\n"
        "class Session(RedirectMixin):\n    def send(self, r):\n        return r\n\n"
        "    def request(self, r):\n        return self.send(r)\n"
    ),
    "tests/test_redirects.py": (
        "from web.sessions import RedirectMixin\n\n\nclass RedirectSession(RedirectMixin):\n"
        "    def send(self, r):\n        return [r]\n"
    ),
}


def test_a_mixins_self_call_is_no_sure_call_of_its_subclass_method(tmp_path):
    """requests' ``SessionRedirectMixin.resolve_redirects`` calls ``self.send(..)``, which ``Session`` and a
    test's ``RedirectSession`` define: the call is typed (0.7), not sure (it was 1.0); ``Session``'s own
    ``self.send(..)`` stays sure."""
    ws = Workspace([write_tree(tmp_path / "ws", MIXIN)])
    ws.index(embed=False)
    callers = _callers(ws, "Session.send")
    assert callers == {
        ("web/sessions.py", "RedirectMixin.resolve", TYPED),
        ("web/sessions.py", "Session.request", SURE),
    }


PATCH = {
    "web/api.py": "def patch(url):\n    return url\n\n\ndef dumps(x):\n    return x\n",
    "web/client.py": (
        "import json\nfrom unittest import mock\n\n\ndef encode(x):\n    return json.dumps(x)\n\n\n"
        "def test_patch():\n    with mock.patch('web.api.patch'):\n        return 1\n\n\n"
        "def guess(thing):\n    return thing.patch(1)\n"
    ),
}


def test_a_module_imported_from_elsewhere_reaches_no_project_function(tmp_path):
    """``mock.patch(..)`` after ``from unittest import mock`` and ``json.dumps(..)`` after ``import json``
    are no callers of the project's ``patch`` and ``dumps`` (they were, by name only); a value's
    ``thing.patch(..)`` stays a guess."""
    ws = Workspace([write_tree(tmp_path / "ws", PATCH)])
    ws.index(embed=False)
    assert _callers(ws, "patch") == {("web/client.py", "guess", NAME_ONLY)}
    assert _callers(ws, "dumps") == set()


GUESSES = {
    "web/a.py": "class A:\n    def send(self, r):\n        return r\n",
    "web/b.py": "class B:\n    def send(self, r):\n        return r\n",
    "web/c.py": "class C:\n    def send(self, r):\n        return r\n",
    "web/hooks.py": "def handle_401(conn, r):\n    return conn.send(r)\n",
}


def test_a_guess_by_name_is_listed_once(tmp_path):
    """``conn.send(r)`` (a value of no known class) is a name-only caller of each of three ``send``
    methods: ``related . send`` lists it once, linked to none of them (it was listed three times)."""
    ws = Workspace([write_tree(tmp_path / "ws", GUESSES)])
    ws.index(embed=False)
    found = ws.related("send")
    assert len(found.definitions) == 3
    assert [(x.symbol, x.sure, x.of) for x in found.callers] == [("handle_401", NAME_ONLY, "")]


RUST = {
    "src/exec/mod.rs": (
        "pub struct CommandSet {\n    n: usize,\n}\n\nimpl CommandSet {\n"
        "    pub fn new(n: usize) -> Result<CommandSet, ()> {\n        Ok(CommandSet { n })\n    }\n}\n"
    ),
    "src/walk.rs": "pub fn scan(n: usize) -> usize {\n    n\n}\n",
    "src/tests.rs": (
        "use crate::exec::CommandSet;\n\n#[test]\nfn builds() {\n"
        "    assert!(CommandSet::new(1).is_ok());\n    assert_eq!(crate::walk::scan(2), 2);\n"
        "    let v = Vec::new();\n    assert!(v.is_empty());\n}\n"
    ),
}


def test_a_call_inside_a_rust_macro_is_a_reference(tmp_path):
    """fd's ``assert!(CommandSet::new(..))`` and ``assert_eq!(crate::walk::scan(..), ..)`` call
    ``CommandSet::new`` and ``scan`` (a macro's arguments parse as tokens: they were no callers);
    ``Vec::new()`` outside a macro stays no call of ``CommandSet::new``."""
    ws = Workspace([write_tree(tmp_path / "ws", RUST)])
    ws.index(embed=False)
    assert _callers(ws, "CommandSet::new") == {("src/tests.rs", "builds", SURE)}
    assert _callers(ws, "scan") == {("src/tests.rs", "builds", SURE)}


TS = {
    "source/Ky.ts": (
        "export class Ky {\n\tasync #fetch(): Promise<number> {\n\t\treturn 1;\n\t}\n\n"
        "\tasync run(): Promise<number> {\n\t\treturn this.#fetch();\n\t}\n}\n"
    ),
}


def test_a_typescript_private_method_can_be_asked_for(tmp_path):
    """``related . 'Ky.#fetch'`` (or ``'#fetch'``) lists ``Ky.#fetch``'s definition and its caller
    ``Ky.run`` (``this.#fetch()``): it was "not a symbol name", and ``#fetch`` was neither defined
    nor referenced in the graph."""
    ws = Workspace([write_tree(tmp_path / "ws", TS)])
    ws.index(embed=False)
    for asked in ("Ky.#fetch", "#fetch"):
        found = ws.related(asked)
        assert [(d.symbol, d.start_line, d.end_line) for d in found.definitions] == [("Ky.#fetch", 2, 4)]
        assert [(c.symbol, c.sure) for c in found.callers] == [("Ky.run", SURE)]


OPTIONS = {
    "source/core/constants.ts": "export const retry = (n: number): number => n;\n",
    "source/core/Ky.ts": (
        "import type {Options} from './options.js';\n\n"
        "export function make(input: Options) {\n\treturn {retry: String(options.retry), input};\n}\n"
    ),
    "source/core/alias.ts": (
        "import * as constants from './constants.js';\n\n"
        "export function again(n: number) {\n\treturn constants.retry(n);\n}\n"
    ),
}


def test_a_word_of_an_imports_module_name_is_no_alias(tmp_path):
    """ky's ``normalizeRetryOptions(options.retry)`` with ``import type {Options} from '../types/options.js'`` is no import-alias
    (0.5) use of ``retry``: that statement binds ``Options``, not ``options`` (it was 0.5; now a
    guess by name); ``import * as constants`` does bind ``constants``, whose ``constants.retry(n)``
    stays sure (the module's own name)."""
    ws = Workspace([write_tree(tmp_path / "ws", OPTIONS)])
    ws.index(embed=False)
    assert _callers(ws, "retry") == {("source/core/Ky.ts", "make", NAME_ONLY), ("source/core/alias.ts", "again", SURE)}


SENDERS = {
    "src/walk.rs": (
        "pub struct BatchSender {\n    n: usize,\n}\n\nimpl BatchSender {\n    pub fn new(n: usize) -> BatchSender {\n"
        "        BatchSender { n }\n    }\n}\n\npub struct WorkerState {\n    n: usize,\n}\n\nimpl WorkerState {\n"
        "    /// Starts the senders.\n    fn spawn_senders(&self) -> usize {\n"
        "        let tx = BatchSender::new(self.n);\n        let mut total = tx.n;\n"
        + "        total += 1;\n" * 150
        + "        total\n    }\n}\n"
    ),
}


def test_a_caller_whose_split_head_does_not_parse_is_the_whole_definition(tmp_path):
    """fd's ``spawn_senders`` calls ``BatchSender::new`` in the first chunk of its split body, whose
    head (an open brace) parses as no definition: the caller is the whole method, with the lines
    its definition has (it was the chunk, 442-484 for 443-614)."""
    ws = Workspace([write_tree(tmp_path / "ws", SENDERS)])
    ws.index(embed=False)
    assert len(next(iter(ws.indexes.values())).store.rows_for_path("src/walk.rs")) > 2
    (definition,) = ws.related("WorkerState::spawn_senders").definitions
    callers = [(x.symbol, x.start_line, x.end_line) for x in ws.related("BatchSender::new").callers]
    assert callers == [("WorkerState.spawn_senders", definition.start_line, definition.end_line)]


OVERLOADS = {
    "src/CodeWriter.java": (
        "class CodeWriter {\n  CodeWriter emit(String s) {\n    return emit(s, 0);\n  }\n\n"
        "  CodeWriter emit(String s, Object... args) {\n    return this;\n  }\n\n"
        "  CodeWriter emit(int n) {\n    return this;\n  }\n}\n"
    ),
    "src/TypeSpec.java": (
        'class TypeSpec {\n  void write(CodeWriter w) {\n    w.emit("a", 1, 2);\n  }\n\n'
        "  void none(CodeWriter w) {\n    w.emit();\n  }\n}\n"
    ),
}


def test_each_java_overload_is_a_definition_with_the_calls_its_parameters_take(tmp_path):
    """javapoet's ``CodeWriter.emit`` has four overloads: ``related`` listed one. Each is a definition,
    and a caller links to the overloads taking as many arguments as it passes (varargs: any from one
    less): ``emit(s, 0)`` and ``w.emit("a", 1, 2)`` reach ``emit(String, Object...)``; a call passing
    none reaches none of them."""
    ws = Workspace([write_tree(tmp_path / "ws", OVERLOADS)])
    ws.index(embed=False)
    found = ws.related("CodeWriter.emit")
    assert [(d.start_line, d.end_line) for d in found.definitions] == [(2, 4), (6, 8), (10, 12)]
    callers = {(c.symbol, c.of) for c in found.callers}
    varargs = "src/CodeWriter.java:6"
    assert callers == {("CodeWriter.emit", varargs), ("TypeSpec.write", varargs)}


KEYS = {
    "handler.go": "package chi\n\ntype Handler func(int) int\n\nconst KIND_A = 1\n",
    "server.go": (
        "package chi\n\ntype Server struct {\n\tHandler Handler\n}\n\n"
        'func serve(h func(int) int) map[int]string {\n\t_ = Server{Handler: h}\n\treturn map[int]string{KIND_A: "a"}\n}\n'
    ),
}


def test_a_go_struct_field_key_is_no_use(tmp_path):
    """The key ``Handler:`` of ``Server{Handler: h}`` names the struct's field, no use of the package's type
    ``Handler`` (``serve`` was a sure caller of it); a map literal's key ``KIND_A`` is a value, a use."""
    ws = Workspace([write_tree(tmp_path / "ws", KEYS)])
    ws.index(embed=False)
    assert ("server.go", "serve", SURE) not in _callers(ws, "Handler")
    assert _callers(ws, "KIND_A") == {("server.go", "serve", SURE)}


TWICE = {
    "src/dir_entry.rs": (
        "pub struct DirEntry {\n    n: usize,\n}\n\nimpl DirEntry {\n    pub fn file_type(&self) -> usize {\n"
        "        self.n\n    }\n}\n\nfn filler() -> usize {\n"
        + "    let _ = 1;\n" * 80
        + "    0\n}\n\nimpl Clone for DirEntry {\n    fn file_type(&self) -> usize {\n        self.n\n    }\n}\n"
    ),
    "src/output.rs": "use crate::dir_entry::DirEntry;\n\nfn print(e: &DirEntry) -> usize {\n    e.file_type()\n}\n",
}


def test_two_rust_definitions_of_one_method_are_no_overloads(tmp_path):
    """fd's two ``DirEntry::file_type`` (an inherent and a trait impl) are no overloads told apart by
    arguments (``&self`` is none): ``e.file_type()`` stays a caller of both."""
    ws = Workspace([write_tree(tmp_path / "ws", TWICE)])
    ws.index(embed=False)
    found = ws.related("DirEntry::file_type")
    assert len(found.definitions) == 2
    of = {f"src/dir_entry.rs:{d.start_line}" for d in found.definitions}
    assert {(c.symbol, c.of) for c in found.callers} == {("print", n) for n in of}


INHERITED = {
    "web/models.py": (
        "class EncodingMixin:\n    def _encode(self, d):\n        return d\n\n\n"
        "class Prepared(EncodingMixin):\n    def prepare_body(self, d):\n        return self._encode(d)\n"
    ),
}


def test_a_subclass_calling_its_bases_method_stays_sure(tmp_path):
    """requests' ``PreparedRequest.prepare_body`` calls ``self._encode_params(..)``, which its base
    ``RequestEncodingMixin`` defines: a sure callee and caller (the mixin rule made it typed)."""
    ws = Workspace([write_tree(tmp_path / "ws", INHERITED)])
    ws.index(embed=False)
    assert _callers(ws, "EncodingMixin._encode") == {("web/models.py", "Prepared.prepare_body", SURE)}
    assert {(c.symbol, c.sure) for c in ws.related("Prepared.prepare_body").callees} == {
        ("EncodingMixin._encode", SURE)
    }


class _Counted:
    """A store whose graph and file lookups (``definers``, ``referrers``, ``rows_for_path``,
    ``linked``) are counted (every other attribute is the store's)."""

    def __init__(self, store):
        self.store, self.lookups = store, 0

    def definers(self, names, limit=200):
        self.lookups += 1
        return self.store.definers(names, limit)

    def referrers(self, names, limit=200):
        self.lookups += 1
        return self.store.referrers(names, limit)

    def rows_for_path(self, path):
        self.lookups += 1
        return self.store.rows_for_path(path)

    def linked(self, ids):
        self.lookups += 1
        return self.store.linked(ids)

    def __getattr__(self, attribute):
        return getattr(self.store, attribute)


def _class_calling(helpers: int) -> dict[str, str]:
    """A class whose method calls ``helpers`` functions, each defined once in another file."""
    calls = "".join(f"        helper{i}(x)\n" for i in range(helpers))
    defs = "".join(f"def helper{i}(x):\n    return x\n\n\n" for i in range(helpers))
    head = "from app.helpers import *\n\n\n"
    return {"app/helpers.py": defs, "app/big.py": f"{head}class Big:\n    def run(self, x):\n{calls}        return x\n"}


def test_a_class_s_callees_read_their_definers_in_lookups_that_do_not_grow_with_its_names(tmp_path):
    """``related Big`` lists each helper its method calls, and reads their definers in as many store
    lookups for 40 helpers as for 4 (they were one lookup per name: javapoet's ``MethodSpec``, some
    150 names, took seconds in the editor); counted through a wrapper of the real store."""
    lookups = []
    for helpers in (4, 40):
        found, store, _ = _related_counted(tmp_path / str(helpers), _class_calling(helpers), "Big")
        assert {x.symbol for x in found.callees} == {f"helper{i}" for i in range(helpers)}
        lookups.append(store.lookups)
    assert lookups[0] == lookups[1]


def _related_counted(folder, files: dict[str, str], symbol: str):
    """``related symbol`` over ``files`` indexed keyword-only in ``folder``, through a store wrapper
    counting its lookups: (the answer, the counting store, the real store)."""
    ws = Workspace([write_tree(folder, files)])
    ws.index(embed=False)
    index = next(iter(ws.indexes.values()))
    store = _Counted(index.store)
    return related([(str(index.root), store)], symbol), store, (str(index.root), index.store)


def _hierarchy(classes: int) -> dict[str, str]:
    """``Big`` (a subclass of ``Base``, with ``classes`` subclasses of its own) whose method calls a
    method of each of ``classes`` helper classes through a typed value and its own ``self.check``;
    each helper class has a subclass in its file, ``Big``'s subclasses share one file."""
    files = {"app/base.py": "class Base:\n    def check(self, x):\n        return x\n"}
    calls = "".join(f"        h{i} = Helper{i}()\n        h{i}.help{i}(x)\n" for i in range(classes))
    imports = "".join(f"from app.helper{i} import Helper{i}\n" for i in range(classes))
    run = f"    def run(self, x):\n{calls}        return self.check(x)\n"
    files["app/big.py"] = f"from app.base import Base\n{imports}\n\nclass Big(Base):\n{run}"
    for i in range(classes):
        helper = (
            f"class Helper{i}:\n    def help{i}(self, x):\n        return x\n\n\nclass Sub{i}(Helper{i}):\n    pass\n"
        )
        files[f"app/helper{i}.py"] = helper
    small = "".join(f"\n\nclass Small{i}(Big):\n    pass\n" for i in range(classes))
    files["app/small.py"] = f"from app.big import Big\n{small}"
    return files


def test_a_class_s_hierarchy_is_read_in_lookups_that_do_not_grow_with_its_classes(tmp_path):
    """``related Big`` reads the subclasses and bases of its callees' classes and of the classes its
    uses go through (``Helper{i}``, ``Big`` and its subclasses) in as many store lookups for 12
    classes as for 3 (they were a lookup or two per class: javapoet's ``MethodSpec`` took some 160
    of its 290 lookups), and finds the same callees as sure; counted through a wrapper of the real
    store."""
    lookups = []
    for classes in (3, 12):
        found, store, real = _related_counted(tmp_path / str(classes), _hierarchy(classes), "Big")
        want = {f"Helper{i}.help{i}" for i in range(classes)} | {"Base.check"}
        assert {x.symbol for x in found.callees if x.sure > NAME_ONLY} >= want
        assert found.callees == related([real], "Big").callees
        lookups.append(store.lookups)
    assert lookups[0] == lookups[1]
