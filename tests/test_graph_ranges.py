"""A definition has one line range wherever the symbol graph cites it (a newcomer's findings on ky): a
TypeScript class's private methods that the chunker packed into one piece of the class body parse as
methods (alone the piece parsed as none: ``#fetch`` was one line, the piece a caller of itself and
``#fetch`` its own callee), a Java method's head chunk ending inside a ``switch`` too; a chunk that
starts inside a doc comment calls nothing its example calls. Real parts: the chunker, tree-sitter parsing, LanceDB in a temp dir."""

from __future__ import annotations

from codeask.query.explain import explain, make_span
from codeask.query.resolve import TYPED, definitions_of
from codeask.query.span import symbol_span
from codeask.query.uses import uses_in
from codeask.workspace import Workspace
from tests.workspaces import write_tree


def _method(name: str, lines: int, tail: str = "return 1;") -> str:
    body = "".join(f"\t\tconst v{i} = this.#options.value + {i};\n" for i in range(lines))
    return f"\t{name}(): number {{\n{body}\t\t{tail}\n\t}}\n\n"


KY = (
    "export class Ky {\n\tstatic create(): number {\n\t\tconst ky = new Ky();\n\t\treturn ky.#fetch();\n\t}\n\n"
    "\t#options = {value: 1};\n\n"
    + _method("#prepare", 30)
    + _method("#big", 45, "return this.#fetch();")
    + _method("#small", 2)
    + _method("#fetch", 40, "return this.#prepare() + this.#small();")
    + _method("#after", 30)
    + "}\n"
)


def _at(ws: Workspace, symbol: str, kind: str) -> list[tuple[int, int, str]]:
    return [(x.start_line, x.end_line, x.symbol) for x in getattr(ws.related(symbol), kind)]


def test_private_methods_packed_in_a_piece_of_a_class_body_are_whole_methods(tmp_path):
    """``#big`` and ``#small`` share one chunk of ``Ky``'s body: each is defined at its own lines, the
    chunk is no caller of ``#small`` and ``#small`` no callee of itself; ``#big`` calls ``#fetch``."""
    ws = Workspace([write_tree(tmp_path / "ws", {"source/Ky.ts": KY})])
    ws.index(embed=False)
    lines = KY.split("\n")
    big, small, fetch = (lines.index(f"\t{m}(): number {{") + 1 for m in ("#big", "#small", "#fetch"))
    chunks = [
        (r["start_line"], r["end_line"]) for r in next(iter(ws.indexes.values())).store.rows_for_path("source/Ky.ts")
    ]
    assert any(s <= big and small <= e for s, e in chunks)  # the two methods share a chunk
    assert _at(ws, "Ky.#small", "definitions") == [(small, small + 4, "Ky.#small")]
    assert _at(ws, "Ky.#big", "definitions") == [(big, big + 47, "Ky.#big")]
    assert _at(ws, "Ky.#small", "callers") == [(fetch, fetch + 42, "Ky.#fetch")]
    assert _at(ws, "Ky.#small", "callees") == []
    assert _at(ws, "Ky.#big", "callees") == [(fetch, fetch + 42, "Ky.#fetch")]


WRITER = (
    "class CodeWriter {\n  CodeWriter emit(String s) {\n"
    + "".join(f"    int u{i} = s.length() + {i};\n" for i in range(40))
    + "    return this;\n  }\n\n  CodeWriter emit(String s, boolean last) {\n"
    + '    for (String part : s.split(",")) {\n      switch (part) {\n'
    + "".join(f'        case "p{i}":\n          last = !last;\n          break;\n' for i in range(45))
    + "      }\n    }\n    return emit(s);\n  }\n}\n"
)


def test_a_java_method_the_chunker_split_is_one_definition(tmp_path):
    """``emit(String, boolean)``, split over three chunks (the first ending inside a ``switch``), is a definition of ``CodeWriter.emit`` at its
    whole range beside the one-argument overload (it was missing: its head chunk parsed as none)."""
    ws = Workspace([write_tree(tmp_path / "ws", {"src/CodeWriter.java": WRITER})])
    ws.index(embed=False)
    assert len(next(iter(ws.indexes.values())).store.rows_for_path("src/CodeWriter.java")) > 1
    end = len(WRITER.split("\n")) - 2
    second = WRITER.split("\n").index("  CodeWriter emit(String s, boolean last) {") + 1
    assert _at(ws, "CodeWriter.emit", "definitions") == [
        (2, second - 2, "CodeWriter.emit"),
        (second, end, "CodeWriter.emit"),
    ]


def test_a_chunk_starting_inside_a_doc_comment_calls_nothing_in_it():
    """A chunk the chunker started inside a JSDoc comment: its example ``await ky.retryLater(1)`` is no
    call (ky's ``retry`` was cited as called from the comment's line), the code after the comment is."""
    chunk = "\t * @example\n\t * const x = await ky.retryLater(1);\n\t */\nexport function run(n: number) {\n\treturn api.retryLater(n);\n}\n"
    assert [(u.receiver, u.line) for u in uses_in(chunk, "typescript").of("retryLater")] == [("api", 5)]
    assert [d.name for d in definitions_of(chunk, "typescript")] == ["run"]


def test_a_chunk_starting_inside_a_doc_comments_code_example_calls_nothing_in_it():
    """ky's ``retry`` doc comment holds a fenced example; the chunker cut inside it, so the chunk starts
    with the example's code (``return ky.retry({..})``, no ``*``): no call (``via`` cited it as a caller
    at that line, constants.ts:221); the ``*/`` on a line of its own ends the comment. A glob string
    holding ``*/`` in code is no comment."""
    chunk = "\t\treturn ky.retry({\n\t\t\tcode: 'X'\n\t\t});\n```\n*/\nexport const retry = (o?: number) => make(o);\n"
    assert uses_in(chunk, "typescript").of("retry")[0].line == 6
    assert [u.line for u in uses_in(chunk, "typescript").of("make")] == [6]
    glob = "const files = glob('src/**/*.ts');\nfiles.retry();\n"
    assert [u.line for u in uses_in(glob, "typescript").of("retry")] == [2]


TREE = (
    "package chi\n\ntype methodTyp uint\n\nconst (\n\tmSTUB methodTyp = 1 << iota\n\tmGET\n)\n\n"
    'var methodMap = map[string]methodTyp{\n\t"GET": mGET,\n}\n'
)


def test_a_one_line_go_type_is_defined_on_its_line(tmp_path):
    """``type methodTyp uint`` is one line: cited 3-3, not with the const block and ``methodMap`` after it
    to its chunk's end (chi's ``methodTyp`` was 18-53)."""
    ws = Workspace(
        [
            write_tree(
                tmp_path / "ws",
                {"tree.go": TREE, "mux.go": 'package chi\n\nfunc get() methodTyp {\n\treturn methodMap["GET"]\n}\n'},
            )
        ]
    )
    ws.index(embed=False)
    assert _at(ws, "methodTyp", "definitions") == [(3, 3, "methodTyp")]


def _group(n: int) -> str:
    routes = "".join(
        f'\t\tr.Get("/p{n}/{i}", func(w http.ResponseWriter) {{\n\t\t\tw.Write([]byte("{i}"))\n\t\t}})\n'
        for i in range(30)
    )
    return f"\tr.Group(func(r *Mux) {{\n{routes}\t}})\n"


BIG = {
    "mux.go": "package chi\n\ntype Mux struct{}\n\nfunc (mx *Mux) Group(fn func(r *Mux)) {\n\tfn(mx)\n}\n",
    "mux_test.go": "package chi\n\nfunc bigMux() *Mux {\n\tr := &Mux{}\n"
    + "".join(_group(n) for n in range(2))
    + "\treturn r\n}\n",
}


def test_a_closure_in_a_go_function_the_chunker_split_is_that_function(tmp_path):
    """``bigMux``'s closures call ``r.Group`` in the later chunks of its split body and in its first: one
    caller ``bigMux`` at its whole range (the first chunk's closures were a ``(top level)`` caller
    beside it: its head parsed as one line holding none of them)."""
    ws = Workspace([write_tree(tmp_path / "ws", BIG)])
    ws.index(embed=False)
    assert len(next(iter(ws.indexes.values())).store.rows_for_path("mux_test.go")) > 1
    end = len(BIG["mux_test.go"].split("\n")) - 1
    assert _at(ws, "Mux.Group", "callers") == [(3, end, "bigMux")]


def _py_method(name: str, lines: int) -> str:
    return (
        f"    def {name}(self, r):\n" + "".join(f"        r = r + {i}\n" for i in range(lines)) + "        return r\n\n"
    )


SESSIONS = {
    "web/sessions.py": (
        'class Session:\n    """A session."""\n\n'
        + "".join(_py_method(f"step_{i}", 40) for i in range(4))
        + "\ndef session():\n    return Session()\n"
    ),
}


def test_a_class_stored_as_its_head_and_its_methods_chunks_is_one_definition(tmp_path):
    """``Session``'s definition is the whole class, not its first chunk (requests' ``Session`` was
    356-388 of 356-816, javapoet's ``CodeWriter`` 44-230 of 44-547); ``session()`` after it is its caller."""
    ws = Workspace([write_tree(tmp_path / "ws", SESSIONS)])
    ws.index(embed=False)
    assert len(next(iter(ws.indexes.values())).store.rows_for_path("web/sessions.py")) > 2
    lines = SESSIONS["web/sessions.py"].split("\n")
    last = lines.index("def session():") - 2  # the class's last line, blank lines after it aside
    assert _at(ws, "Session", "definitions") == [(1, last, "Session")]
    assert _at(ws, "Session", "callers") == [(last + 3, last + 4, "session")]


WALK = {
    "src/exec/mod.rs": (
        "pub fn run() -> usize {\n    1\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n"
        "    fn generate_str(input: &str) -> Vec<String> {\n        vec![input.to_string()]\n    }\n\n"
        '    #[test]\n    fn tokens() {\n        assert_eq!(generate_str("foo"), vec!["foo"]);\n    }\n}\n'
    ),
    "src/walk.rs": "pub struct Walk;\n\nimpl Iterator for Walk {\n    type Item = usize;\n    fn next(&mut self) -> Option<usize> {\n        None\n    }\n}\n",
    "src/output.rs": "pub fn print_all<I: Iterator<Item = String>>(items: I) -> usize {\n    items.count()\n}\n",
}


def test_rust_functions_in_a_module_are_called_bare_and_an_associated_type_binding_is_no_use(tmp_path):
    """fd's ``generate_str``, a function of ``mod tests`` called bare inside ``assert_eq!``, has its
    caller (it had none: ``tests.generate_str`` was taken for a method of a type ``tests``); the bound
    ``Iterator<Item = String>`` names the trait's associated type, no use of ``walk.rs``' ``type Item``
    (it was a sure link)."""
    ws = Workspace([write_tree(tmp_path / "ws", WALK)])
    ws.index(embed=False)
    assert [s for _, _, s in _at(ws, "generate_str", "callers")] == ["tests.tokens"]
    assert [x.path for x in ws.related("Item").callers] == []


def test_a_piece_of_a_method_body_defines_no_statement():
    """A later chunk of ky's ``#retryFromError`` (``for (const hook of hooks) {`` ..) defines nothing: read
    inside a class, tree-sitter's recovery took ``for`` for a method (its callers were cited as
    ``Ky.#retryFromError.for``, 984-1020, where ``related`` gives the method 950-1026)."""
    piece = "\t\tfor (const hook of this.#options.hooks) {\n\t\t\tawait hook(this.#getOptions());\n\t\t}\n\n\t\treturn 1;\n\t}\n"
    assert definitions_of(piece, "typescript") == ()


def test_hover_over_a_private_method_lists_its_caller(tmp_path):
    """Hover over ``#small``'s line lists ``Ky.#fetch``, which calls it (hover kept an edge only when its
    name was a word of the selection, read with ``\\b``, which never matches before ``#``: none)."""
    root = write_tree(tmp_path / "ws", {"source/Ky.ts": KY})
    ws = Workspace([root])
    ws.index(embed=False)
    small = KY.split("\n").index("\t#small(): number {") + 1
    got = explain(ws, make_span(ws, str(root / "source/Ky.ts"), small, small), brief=True, no_llm=True)
    assert [(s.symbol, s.via.split(" in ")[0]) for s in got.sources if s.via] == [("Ky.#fetch", "caller of #small")]


def test_hover_on_a_private_name_explains_that_private_method(tmp_path):
    """The editor's word under the cursor stops at ``#`` (``fetch`` of ``ky.#fetch()``): hover explains
    ``Ky.#fetch``, at its name and at a call, not a test's ``fetch()`` elsewhere (it explained
    ``test/retry.ts``'s object method)."""
    test = "const stub = {\n\tasync fetch() {\n\t\treturn 2;\n\t},\n};\nexport default stub;\n"
    root = write_tree(tmp_path / "ws", {"source/Ky.ts": KY, "test/retry.ts": test})
    ws = Workspace([root])
    ws.index(embed=False)
    lines = KY.split("\n")
    for line in (lines.index("\t#fetch(): number {") + 1, lines.index("\t\treturn ky.#fetch();") + 1):
        span = symbol_span(ws, str(root / "source/Ky.ts"), line, "fetch")
        assert span is not None and (span.path, span.symbol) == ("source/Ky.ts", "Ky.#fetch")


def _lines(n: int, indent: str) -> str:
    return "".join(f"{indent}const v{i} = input.length + {i};\n" for i in range(n))


KY_SPLIT = (
    "export class Ky {\n\tstatic create(input: string): number {\n\t\tconst ky = new Ky();\n"
    + _lines(8, "\t\t")
    + "\t\tconst function_ = async () => {\n"
    + _lines(60, "\t\t\t")
    + "\t\t\treturn ky.#fetch();\n\t\t};\n\n\t\tconst result = (async () => {\n"
    + _lines(30, "\t\t\t")
    + "\t\t\treturn function_();\n\t\t})();\n\t\treturn 1;\n\t}\n\n\t#fetch(): number {\n"
    + _lines(5, "\t\t")
    + "\t\treturn 1;\n\t}\n}\n"
)


def test_a_class_head_stored_under_its_first_method_and_a_closure_split_from_its_function(tmp_path):
    """ky's ``export class Ky {`` is stored in the chunk of its first method (``Ky.create``): the class is
    defined at its whole range (it was its head line alone, 151-151). ``create``'s closure ``function_`` is
    split over two chunks; its call ``ky.#fetch()`` in the second is one caller at the closure's range, as
    sure (typed by ``const ky = new Ky()`` in ``create``'s first chunk) as ``create``'s callee is (it was
    the second chunk's lines at 0.3)."""
    ws = Workspace([write_tree(tmp_path / "ws", {"source/Ky.ts": KY_SPLIT})])
    ws.index(embed=False)
    rows = next(iter(ws.indexes.values())).store.rows_for_path("source/Ky.ts")
    assert [r["symbol"] for r in rows[:2]] == ["Ky.create", "Ky.create.function_"]  # the shape under test
    lines = KY_SPLIT.split("\n")
    closure, end = lines.index("\t\tconst function_ = async () => {") + 1, len(lines) - 1
    assert _at(ws, "Ky", "definitions") == [(1, end, "Ky")]
    callers = ws.related("Ky.#fetch").callers
    assert [(x.start_line, x.end_line, x.symbol, x.sure) for x in callers] == [
        (closure, closure + 62, "Ky.create.function_", TYPED)
    ]
    assert [(x.symbol, x.sure) for x in ws.related("Ky.create").callees] == [("Ky.#fetch", TYPED)]


EMITTER = (
    "class TypeSpec {\n  int size(String s) {\n"
    + "".join(f"    int k{i} = s.length() + {i};\n" for i in range(40))
    + "    return 1;\n  }\n\n  void emit(CodeWriter codeWriter, String s) {\n    try {\n      if (s != null) {\n"
    + "".join(f"    int u{i} = s.length() + {i};\n" for i in range(14))
    + '      }\n    for (String part : s.split(",")) {\n      switch (part) {\n'
    + "".join(f'        case "p{i}":\n          s = s + part;\n          break;\n' for i in range(25))
    + "      }\n    codeWriter.popType();\n    }\n"
    + "".join(f"    int w{i} = s.length() + {i};\n" for i in range(60))
    + "    } finally {\n      s = null;\n    }\n  }\n}\n"
)
POPPER = "class CodeWriter {\n  CodeWriter popType() {\n    return this;\n  }\n}\n"


def test_a_caller_the_chunker_split_is_cited_whole_as_sure_as_its_head_makes_it(tmp_path):
    """javapoet's ``TypeSpec.emit`` (its head chunk parses as no definition) calls ``codeWriter.popType()``
    in its last chunk; ``codeWriter`` is its parameter, declared in the head: one caller at the method's
    whole range, typed (it was the last chunk's lines, 0.3 by the name alone)."""
    ws = Workspace([write_tree(tmp_path / "ws", {"src/TypeSpec.java": EMITTER, "src/CodeWriter.java": POPPER})])
    ws.index(embed=False)
    rows = next(iter(ws.indexes.values())).store.rows_for_path("src/TypeSpec.java")
    lines = EMITTER.split("\n")
    head, use, end = (
        lines.index("  void emit(CodeWriter codeWriter, String s) {") + 1,
        lines.index("    codeWriter.popType();") + 1,
        len(lines) - 2,
    )
    assert [(r["start_line"], r["symbol"]) for r in rows][1] == (head, "TypeSpec.emit")  # the head chunk
    assert not any(r["start_line"] <= head and use <= r["end_line"] for r in rows)  # the use in a later chunk
    callers = ws.related("CodeWriter.popType").callers
    assert [(x.start_line, x.end_line, x.symbol, x.sure) for x in callers] == [(head, end, "TypeSpec.emit", TYPED)]


INSTANCE = {
    "source/core/Ky.ts": "export class Ky {\n\tstatic create(input: string): Ky {\n\t\treturn new Ky();\n\t}\n}\n",
    "source/index.ts": (
        "import {Ky} from './core/Ky.js';\n\n"
        "const createInstance = (defaults?: string) => {\n"
        "\tconst ky = (input: string) => Ky.create(input);\n"
        "\tfor (const method of ['get']) {\n"
        "\t\tky[method] = (input: string) => Ky.create(input);\n"
        "\t}\n\n"
        "\treturn ky;\n"
        "};\n\n"
        "export class Client {\n\tstatic make(input: string): Ky {\n\t\treturn Ky.create(input);\n\t}\n\n"
        "\tfetch(input: string): Ky {\n\t\treturn Ky.create(input);\n\t}\n}\n"
    ),
}


def test_a_closure_inside_a_calling_function_is_no_caller_of_its_own(tmp_path):
    """ky's ``createInstance`` calls ``Ky.create`` on its own lines and in its closure ``ky``: one caller,
    the function (it was listed twice, ``createInstance`` 3-10 and ``createInstance.ky`` 4-4, nested
    ranges); two methods of a class stay two callers."""
    ws = Workspace([write_tree(tmp_path / "ws", INSTANCE)])
    ws.index(embed=False)
    lines = INSTANCE["source/index.ts"].split("\n")
    start, end = lines.index("const createInstance = (defaults?: string) => {") + 1, lines.index("};") + 1
    make, fetch = lines.index("\tstatic make(input: string): Ky {") + 1, lines.index("\tfetch(input: string): Ky {") + 1
    assert sorted(_at(ws, "Ky.create", "callers")) == [
        (start, end, "createInstance"),
        (make, make + 2, "Client.make"),
        (fetch, fetch + 2, "Client.fetch"),
    ]
