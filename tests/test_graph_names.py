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
