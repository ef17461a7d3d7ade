"""The symbol graph's links read the same from every door, and no link is a guess the code rules out (a
newcomer's findings on requests): a variable bound to a dict, list or set literal holds a builtin, whose
``update`` or ``get`` is no project method. Real parts: tree-sitter parsing, LanceDB in a temp dir."""

from __future__ import annotations

from codeask.query.explain import explain, make_span
from codeask.query.graph import one_hop
from codeask.query.resolve import NAME_ONLY, NONE, TYPED, sureness
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


ADAPTERS = {
    "web/redirects.py": "class SessionRedirectMixin:\n    def should_strip_auth(self, old, new):\n        return old != new\n",
    "web/sessions.py": (
        "from web.redirects import SessionRedirectMixin\n\n\nclass Session(SessionRedirectMixin):\n"
        "    def send_request(self, r):\n        adapter = self.pick_adapter(r)\n        return adapter.send_prepared(r)\n\n"
        "    def pick_adapter(self, r):\n        return r\n"
    ),
    "web/adapters.py": (
        "class BaseAdapter:\n    def send_prepared(self, r):\n        raise NotImplementedError\n\n\n"
        "class HTTPAdapter(BaseAdapter):\n    def send_prepared(self, r):\n        return r\n"
    ),
    "web/client.py": (
        "from web import sessions\n\n\ndef check_auth(old, new):\n    s = sessions.Session()\n"
        "    return s.should_strip_auth(old, new)\n"
    ),
}


def _callers(ws: Workspace, symbol: str) -> set[tuple[str, str, float]]:
    """``(caller's symbol, path:line of the definition it calls, sure)`` of ``symbol``'s callers."""
    return {(x.symbol, x.of, x.sure) for x in ws.related(symbol).callers}


def _callees(ws: Workspace, symbol: str) -> set[tuple[str, str, float]]:
    """``(symbol, path:line of the definition it calls, sure)`` of ``symbol``'s callees."""
    return {(symbol, f"{x.path}:{x.start_line}", x.sure) for x in ws.related(symbol).callees}


def test_a_caller_is_listed_among_its_callers_callees_as_sure(tmp_path):
    """Each caller ``C`` of a definition ``D`` surer than by the name lists ``D`` among its callees, as
    sure, and the other way round: ``s = sessions.Session(); s.should_strip_auth(..)`` is a typed caller
    of the mixin's method (through the subclass) and was a name-only callee. A call on a value of
    unknown type (``adapter.send_prepared``) of a name two classes define is a guess, a name-only caller
    of each and no callee (the callees listed ``BaseAdapter``'s, the first of the chunk packing both)."""
    ws = Workspace([write_tree(tmp_path / "ws", ADAPTERS)])
    ws.index(embed=False)
    asked = ["should_strip_auth", "HTTPAdapter.send_prepared", "BaseAdapter.send_prepared"]
    callers = {link for symbol in asked for link in _callers(ws, symbol)}
    guesses = {
        ("Session.send_request", "web/adapters.py:2", NAME_ONLY),
        ("Session.send_request", "web/adapters.py:7", NAME_ONLY),
    }
    assert callers == {("check_auth", "web/redirects.py:2", TYPED), *guesses}
    callees = {link for c in ("check_auth", "Session.send_request") for link in _callees(ws, c)}
    assert callers - guesses == {x for x in callees if x[1].split(":")[0] in {"web/redirects.py", "web/adapters.py"}}


def test_hover_rates_each_link_as_codeask_related_does(tmp_path):
    """Hover's related code over ``should_strip_auth`` and over its caller ``check_auth`` lists links
    ``codeask related`` lists, as sure: ``s = sessions.Session(); s.should_strip_auth(..)`` is typed
    (0.7) from either end (hover rated it 0.3 where ``related`` said 0.7: two resolvers)."""
    root = write_tree(tmp_path / "ws", ADAPTERS)
    ws = Workspace([root])
    ws.index(embed=False)
    spans = [("web/redirects.py", (2, 3), "should_strip_auth"), ("web/client.py", (4, 6), "check_auth")]
    for path, lines, symbol in spans:
        got = explain(ws, make_span(ws, str(root / path), *lines), brief=True, no_llm=True)
        hovered = {(s.path, s.start_line, s.end_line, s.via_sure) for s in got.sources if s.via}
        found = ws.related(symbol)
        listed = {(x.path, x.start_line, x.end_line, x.sure) for x in [*found.callers, *found.callees]}
        assert hovered and hovered <= listed, symbol
        assert {s for s in hovered if s[0] in {"web/client.py", "web/redirects.py"}} == (
            {("web/client.py", 4, 6, TYPED)} if path == "web/redirects.py" else {("web/redirects.py", 2, 3, TYPED)}
        )


MANY = {
    **{f"app/kind{i}.py": f"class Kind{i}:\n    def render(self, out):\n        return out\n" for i in range(9)},
    "app/page.py": (
        "from app.kind0 import Kind0\n\n\nclass Page:\n    def show(self, out):\n        k = Kind0()\n"
        "        return k.render(out)\n"
    ),
}


def test_a_name_with_many_definitions_links_both_ways_alike(tmp_path):
    """``render`` has nine definitions (more than ``MAX_DEFINITIONS``): ``k = Kind0(); k.render(..)`` is a
    typed caller of ``Kind0.render``, and ``Page.show`` lists it among its callees as sure (callees of a
    name with more than eight definitions were dropped; callers kept them)."""
    ws = Workspace([write_tree(tmp_path / "ws", MANY)])
    ws.index(embed=False)
    assert [(x.symbol, x.sure) for x in ws.related("Kind0.render").callers] == [("Page.show", TYPED)]
    assert [(x.symbol, x.sure) for x in ws.related("Page.show").callees] == [("Kind0", 1.0), ("Kind0.render", TYPED)]


JAVA = {
    "src/TypeName.java": (
        "class TypeName {\n  CodeWriter emitAnnotations(CodeWriter out) {\n    return out;\n  }\n}\n"
    ),
    "src/ArrayTypeName.java": (
        "class ArrayTypeName extends TypeName {\n  void emitBrackets(CodeWriter out) {\n    emitAnnotations(out);\n  }\n}\n"
    ),
    "src/CodeWriter.java": (
        "class CodeWriter {\n  void emitAnnotations(List<String> annotations, boolean inline) {\n"
        "    annotations.clear();\n  }\n}\n"
    ),
}


def test_a_bare_java_call_reaches_the_inherited_method_taking_its_arguments(tmp_path):
    """``emitAnnotations(out)`` in ``ArrayTypeName extends TypeName`` calls the inherited
    ``TypeName.emitAnnotations(CodeWriter)`` (sure: Java's implicit ``this``), never
    ``CodeWriter.emitAnnotations(List, boolean)``, which takes two arguments (it was a 0.3 caller of both)."""
    ws = Workspace([write_tree(tmp_path / "ws", JAVA)])
    ws.index(embed=False)
    callers = [(x.symbol, x.sure, x.of.split(":")[0]) for x in ws.related("emitAnnotations").callers]
    assert callers == [("ArrayTypeName.emitBrackets", 1.0, "src/TypeName.java")]
    callees = [(x.symbol, x.sure) for x in ws.related("ArrayTypeName.emitBrackets").callees]
    assert ("TypeName.emitAnnotations", 1.0) in callees and ("CodeWriter.emitAnnotations", NAME_ONLY) not in callees
    assert all(x[0] != "CodeWriter.emitAnnotations" for x in callees)


GO = {
    "mux.go": (
        "package chi\n\ntype Mux struct {\n\tname string\n}\n\nfunc (mx *Mux) Get(p string) {\n\tmx.handle(p)\n}\n\n"
        "func (mx *Mux) handle(p string) {\n\tmx.name = p\n}\n"
    ),
    "tree.go": "package chi\n\ntype node struct {\n\tmx *Mux\n}\n\nfunc (n *node) add(p string) {\n\tn.mx.handle(p)\n}\n",
}


def test_a_go_method_calling_through_its_own_receiver_is_sure(tmp_path):
    """``mx.handle(..)`` inside ``func (mx *Mux) Get`` is ``Mux.handle`` as surely as Python's
    ``self.handle(..)`` (it was 0.7, typed); a field of that type (``n.mx.handle``) stays typed."""
    ws = Workspace([write_tree(tmp_path / "ws", GO)])
    ws.index(embed=False)
    callers = [(x.symbol, x.sure) for x in ws.related("Mux.handle").callers]
    assert callers == [("Mux.Get", 1.0), ("node.add", TYPED)]
    assert ("Mux.handle", 1.0) in [(x.symbol, x.sure) for x in ws.related("Mux.Get").callees]


OUTSIDE = {
    "web/cookies.py": "class CookieJar:\n    def update(self, other):\n        return other\n",
    "web/structures.py": (
        "from collections.abc import MutableMapping\n\n\nclass CaseInsensitiveDict(MutableMapping):\n"
        "    def __init__(self, data):\n        self.update(data)\n"
    ),
    "web/env.py": "import os\n\n\ndef override(name):\n    os.environ.update({name: '1'})\n",
    "web/state.py": "class State:\n    def __setstate__(self, st):\n        self.__dict__.update(st)\n",
    "web/build.py": (
        "from collections import OrderedDict\n\nfrom web.structures import CaseInsensitiveDict\n\n\n"
        "def build(data):\n    cid = CaseInsensitiveDict(data)\n    cid.update(data)\n    return cid\n\n\n"
        "def ordered(data):\n    d = OrderedDict()\n    d.update(data)\n    return d\n"
    ),
    "web/fill.py": "from web.cookies import CookieJar\n\n\ndef fill(x):\n    jar = CookieJar()\n    jar.update(x)\n",
}


def test_a_receiver_of_a_class_outside_the_project_calls_no_project_method(tmp_path):
    """``self.update(..)`` in ``CaseInsensitiveDict(MutableMapping)`` (its kin has no ``CookieJar``), a
    variable of that class or of ``OrderedDict``, ``os.environ.update`` (a stdlib module's value) and
    ``self.__dict__.update`` are no callers of ``CookieJar.update`` (each was a 0.3 caller, by the name);
    ``jar = CookieJar(); jar.update(..)`` stays a typed one."""
    ws = Workspace([write_tree(tmp_path / "ws", OUTSIDE)])
    ws.index(embed=False)
    assert [(x.symbol, x.sure) for x in ws.related("CookieJar.update").callers] == [("fill", TYPED)]


STATIC = {
    "src/com/x/Util.java": "package com.x;\n\nfinal class Util {\n  static <T> T checkNotNull(T ref) {\n    return ref;\n  }\n}\n",
    "src/com/x/Spec.java": (
        "package com.x;\n\nimport static com.x.Util.checkNotNull;\n\nclass Spec {\n  Spec(String s) {\n"
        "    checkNotNull(s);\n  }\n}\n"
    ),
    "src/com/x/Other.java": "package com.x;\n\nclass Other {\n  void run(String s) {\n    checkNotNull(s);\n  }\n}\n",
}


def test_a_java_static_import_makes_its_bare_call_sure(tmp_path):
    """``import static com.x.Util.checkNotNull;`` then ``checkNotNull(s)``: a sure caller of
    ``Util.checkNotNull`` (it was a 0.3 guess by the name); a file without the import stays a guess."""
    ws = Workspace([write_tree(tmp_path / "ws", STATIC)])
    ws.index(embed=False)
    callers = [(x.symbol, x.sure) for x in ws.related("Util.checkNotNull").callers]
    assert callers == [("Spec.Spec", 1.0), ("Other.run", NAME_ONLY)]


BUILT = {
    "src/Writer.java": (
        "class Writer {\n  private final String out;\n\n  Writer(String out) {\n    this(out, 2);\n  }\n\n"
        "  Writer(String out, int indent) {\n    this.out = out;\n  }\n}\n"
    ),
    "src/Spec.java": (
        'class Spec {\n  String render() {\n    Writer w = new Writer("x");\n    return w.toString();\n  }\n\n'
        "  void emit(Writer w) {\n    w.hashCode();\n  }\n}\n"
    ),
}


def test_a_java_constructor_call_is_a_caller_of_that_constructor_once(tmp_path):
    """``new Writer("x")`` is a sure caller of the one-argument constructor ``Writer(String)`` (it was
    linked to the class only, and again at 0.3 to the constructors by name); ``emit(Writer w)`` only
    names the type: a caller of the class. Each caller is listed once."""
    ws = Workspace([write_tree(tmp_path / "ws", BUILT)])
    ws.index(embed=False)
    found = ws.related("Writer")
    lines = BUILT["src/Writer.java"].split("\n")
    one = lines.index("  Writer(String out) {") + 1
    callers = [(x.symbol, x.sure, x.of) for x in found.callers]
    assert sorted(callers) == [("Spec.emit", 1.0, "src/Writer.java:1"), ("Spec.render", 1.0, f"src/Writer.java:{one}")]


FIELD = {
    "src/Writer.java": (
        "class Writer {\n  private final Map<String, String> importedTypes;\n\n  Writer(Map<String, String> m) {\n"
        "    this.importedTypes = m;\n  }\n\n  Map<String, String> importedTypes() {\n    return importedTypes;\n  }\n\n"
        "  int size() {\n    return importedTypes().size();\n  }\n}\n"
    ),
}


def test_a_java_field_write_is_no_call_of_the_method_named_so(tmp_path):
    """``this.importedTypes = m`` writes the field: the constructor is no caller of the method
    ``importedTypes()`` (it was a sure one); ``importedTypes().size()`` in ``size`` is."""
    ws = Workspace([write_tree(tmp_path / "ws", FIELD)])
    ws.index(embed=False)
    assert [x.symbol for x in ws.related("Writer.importedTypes").callers] == ["Writer.size"]


RUST = {
    "src/exec.rs": "pub struct CommandSet;\n\nimpl CommandSet {\n    pub fn new(n: u32) -> CommandSet {\n        CommandSet\n    }\n}\n",
    "src/cli.rs": "use crate::exec::CommandSet;\n\nfn from_args(n: u32) -> CommandSet {\n    CommandSet::new(n)\n}\n",
}


def test_a_common_name_is_a_callee_as_it_is_a_caller(tmp_path):
    """``CommandSet::new(n)`` in ``from_args``: a sure caller of ``CommandSet.new``, and ``from_args``
    lists it among its callees (a common name, ``new``, was left out of callees only)."""
    ws = Workspace([write_tree(tmp_path / "ws", RUST)])
    ws.index(embed=False)
    assert [(x.symbol, x.sure) for x in ws.related("CommandSet.new").callers] == [("from_args", 1.0)]
    assert ("CommandSet.new", 1.0) in [(x.symbol, x.sure) for x in ws.related("from_args").callees]


def test_a_caller_of_two_overloads_of_one_constructor_is_listed_once(tmp_path):
    """``Spec.write`` calls both ``Writer`` constructors (javapoet's ``JavaFile.writeTo``): one caller
    entry (it was one per constructor), linked to the first; ``Spec.render`` calls one of them."""
    spec = BUILT["src/Spec.java"].replace(
        "class Spec {\n", 'class Spec {\n  void write() {\n    new Writer("a").hashCode();\n    new Writer("b", 4).hashCode();\n  }\n\n'
    )
    ws = Workspace([write_tree(tmp_path / "ws", {**BUILT, "src/Spec.java": spec})])
    ws.index(embed=False)
    lines = BUILT["src/Writer.java"].split("\n")
    one = lines.index("  Writer(String out) {") + 1
    callers = sorted((x.symbol, x.sure, x.of) for x in ws.related("Writer").callers)
    of_one = f"src/Writer.java:{one}"
    assert callers == [("Spec.emit", 1.0, "src/Writer.java:1"), ("Spec.render", 1.0, of_one), ("Spec.write", 1.0, of_one)]


REFERENCED = {
    "src/Writer.java": (
        "class Writer {\n  void emit(String s) {\n    System.out.print(s);\n  }\n\n"
        "  void emitAll(List<String> xs) {\n    xs.forEach(this::emit);\n  }\n\n"
        "  void count(List<String> xs) {\n    xs.size();\n  }\n}\n"
    ),
}


def test_a_java_method_reference_is_a_use_of_the_method(tmp_path):
    """``xs.forEach(this::emit)`` hands ``emit`` on to be called: ``emitAll`` is a sure caller of
    ``Writer.emit`` and lists it among its callees (a method reference was a bare value, no use)."""
    ws = Workspace([write_tree(tmp_path / "ws", REFERENCED)])
    ws.index(embed=False)
    assert [(x.symbol, x.sure) for x in ws.related("Writer.emit").callers] == [("Writer.emitAll", 1.0)]
    assert [x.symbol for x in ws.related("Writer.emitAll").callees] == ["Writer.emit"]
