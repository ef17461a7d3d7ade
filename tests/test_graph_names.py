"""Names the symbol graph reads as a newcomer asks for them (findings on ky and javapoet): a
TypeScript private name (``#retry``) is called like any other and asked for with its ``#``, and a
caller question's ``via`` names the definition each caller links to. Real parts: tree-sitter
parsing, LanceDB in a temp dir."""

from __future__ import annotations

from codeask.query.graph import edge_kind
from codeask.query.intent import caller_symbols
from codeask.query.more import continuation
from codeask.query.pipeline import Document
from codeask.query.steps.callers import caller_documents
from codeask.query.steps.retrieve import SearchTarget
from codeask.workspace import Workspace
from tests.workspaces import write_tree


def test_a_call_of_a_private_name_is_a_call():
    """A word boundary never matches before ``#``: ky's ``this.#createManagedSignal()`` read as a use."""
    assert edge_kind("#createManagedSignal", "this.#createManagedSignal();") == "calls"
    assert edge_kind("#createManagedSignal", "const f = this.#createManagedSignal;") == "uses"
    assert edge_kind("retry", "this.#retry();") == "uses"  # another name
    assert edge_kind("$get", "return $get(x);") == "calls"


def test_a_second_part_does_not_point_at_a_private_name_already_named():
    docs = [Document("a.ts", "/ws", 1, 3, "Ky.#retry", "typescript", "x", 1.0)]
    assert "such as" not in continuation("- [1] `#retry` waits, then fetches again.", "R", docs)


def test_a_caller_question_may_name_a_private_name():
    assert caller_symbols("who calls #retry") == ["#retry"]
    assert caller_symbols("who calls Ky.#retry?") == ["Ky.#retry"]
    assert caller_symbols("callers of `#fetch`") == ["#fetch"]


def test_via_names_the_definition_each_caller_links_to(tmp_path):
    """Two classes define ``emitAll``, each with a bare call of its own: each caller's ``via`` cites
    its own class's definition (javapoet's ``ArrayTypeName.emitBrackets`` cited ``CodeWriter`` for
    the ``TypeName.emitAnnotations`` it calls)."""
    method = "  void emitAll(String s) {\n  }\n\n  void {caller}(String s) {\n    emitAll(s);\n  }\n"
    files = {
        f"src/{cls}.java": f"class {cls} {{\n" + method.replace("{caller}", f"go{cls}") + "}\n" for cls in ("A", "B")
    }
    root = write_tree(tmp_path / "ws", files)
    ws = Workspace([root])
    ws.index(embed=False)
    index = next(iter(ws.indexes.values()))
    target = SearchTarget(str(root), lambda: index.store)
    vias = {(d.symbol, d.via, d.via_path) for d, _ in caller_documents(target, ["emitAll"], 1.0)}
    assert vias == {
        ("A.goA", "caller of emitAll in src/A.java:2", "src/A.java"),
        ("B.goB", "caller of emitAll in src/B.java:2", "src/B.java"),
    }


OVERLOADS = {
    "src/Writer.java": (
        "class Writer {\n"
        "  Writer emit(String s) {\n    return this;\n  }\n\n"
        "  Writer emit(String s, boolean nl) {\n    return this;\n  }\n\n"
        "  Writer emit(String f, Object... args) {\n    return this;\n  }\n\n"
        "  Writer indent() {\n    return this;\n  }\n\n"
        "  void emitAll(java.util.List<Spec> specs) {\n"
        '    for (Spec spec : specs) {\n      spec.emit(this, true);\n      emit("x");\n    }\n  }\n'
        "}\n"
    ),
    "src/Spec.java": "class Spec {\n  void emit(Writer w, boolean inline) {\n  }\n}\n",
    "src/Page.java": "class Page {\n  void emit(Writer w, String a, String b) {\n  }\n}\n",
    "src/Method.java": (
        'class Method {\n  void emit(Writer w) {\n    w.emit("$T $L", 1, 2);\n    w.indent().emit("b");\n  }\n}\n'
    ),
}


def test_an_overload_is_matched_on_the_calls_through_its_own_class(tmp_path):
    """A call through a value of another class is no call of the overload asked about: javapoet's
    ``CodeWriter.emitAnnotations`` (``annotationSpec.emit(this, inline)``, then a bare ``emit(s)``) was a
    sure caller of ``CodeWriter.emit(CodeBlock, boolean)``, and ``MethodSpec.emit`` (``codeWriter.emit(..)``
    with three arguments) a caller of ``TypeSpec.emit(CodeWriter, String, Set)``."""
    ws = Workspace([write_tree(tmp_path / "ws", OVERLOADS)])
    ws.index(embed=False)
    callees = {(x.path, x.start_line) for x in ws.related("Writer.emitAll").callees}
    assert ("src/Writer.java", 2) in callees and ("src/Spec.java", 2) in callees
    assert ("src/Writer.java", 6) not in callees, callees
    assert [x.symbol for x in ws.related("Page.emit").callers] == []
