"""Uses the symbol graph missed by how they are spelled: a module constant read beside its
definition (``LIMIT_MS = 500``; ``slow`` reads it), a Java method reference (``Util::checkArgument``). Real parts: tree-sitter parsing, LanceDB in a
temp dir, the CLI as a subprocess."""

from __future__ import annotations

from tests.workspaces import indexed, related_json

CONSTANTS = {
    "app/local.py": "LIMIT_MS = 500\n\n\ndef slow(elapsed):\n    return elapsed > LIMIT_MS\n",
    "app/client.py": "from app.local import LIMIT_MS\n\n\ndef fetch(wait):\n    return min(wait, LIMIT_MS)\n",
}


def test_a_module_constant_is_read_by_its_own_files_functions(tmp_path):
    """``related LIMIT_MS`` lists ``slow`` beside it (its module-level binding made it a local: no
    reader) and ``fetch`` in another file; the constant lists neither itself nor its file's other
    names among its callees."""
    root = tmp_path / "ws"
    indexed(root, CONSTANTS)
    got = related_json(root, "LIMIT_MS")
    assert [(d["path"], d["start_line"]) for d in got["definitions"]] == [("app/local.py", 1)]
    assert {(c["path"], c["symbol"], c["sure"]) for c in got["callers"]} == {
        ("app/local.py", "slow", 1.0),
        ("app/client.py", "fetch", 1.0),
    }
    assert got["callees"] == []


def _filler(i: int) -> str:
    """A 30-line function: four of them put a chunk boundary between a constant and its reader."""
    return f"def filler_{i}(x):\n" + "".join(f"    x = x + {j}\n" for j in range(30)) + "    return x\n\n\n"


def test_a_default_argument_reads_a_constant_and_binds_only_its_parameter(tmp_path):
    """requests' ``DEFAULT_POOLSIZE`` had no caller: ``HTTPAdapter.__init__(self, pool_connections=DEFAULT_POOLSIZE)``
    170 lines below it counted the default value as a bound parameter name (a local), so its reads were no uses."""
    adapter = "class Adapter:\n    def __init__(self, size=POOL_SIZE, tries: int = RETRIES):\n        self.size = size\n"
    files = {
        "app/adapters.py": "POOL_SIZE = 10\nRETRIES = 0\n\n\n" + "".join(_filler(i) for i in range(4)) + adapter,
    }
    root = tmp_path / "ws"
    indexed(root, files)
    for name, caller in (("POOL_SIZE", "Adapter.__init__"), ("RETRIES", "Adapter.__init__")):
        assert [c["symbol"] for c in related_json(root, name)["callers"]] == [caller], name


METHOD_REFERENCES = {
    "src/Util.java": "final class Util {\n  static void checkArgument(boolean ok, String m) {\n  }\n}\n",
    "src/Writer.java": "final class Writer {\n  void emitLiteral(Object value) {\n  }\n}\n",
    "src/Spec.java": (
        "import java.util.List;\n\nfinal class Spec {\n"
        "  void write(Writer writer, List<Object> values) {\n    values.forEach(writer::emitLiteral);\n  }\n\n"
        "  Object checker() {\n    return Util::checkArgument;\n  }\n}\n"
    ),
}


def test_a_java_method_reference_is_a_use_of_the_method(tmp_path):
    """``writer::emitLiteral`` and ``Util::checkArgument`` passed as values make their enclosing
    methods callers (the index kept only invoked names: no caller in another file)."""
    root = tmp_path / "ws"
    indexed(root, METHOD_REFERENCES)
    for name, caller in (("emitLiteral", "Spec.write"), ("checkArgument", "Spec.checker")):
        assert {c["symbol"] for c in related_json(root, name)["callers"]} == {caller}
