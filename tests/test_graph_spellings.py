"""Uses the symbol graph missed by how they are spelled: a module constant read beside its
definition (``LIMIT_MS = 500``; ``slow`` reads it), a Java method reference (``Util::checkArgument``),
``super().__init__(..)`` (a base's method, no other class's), a name imported under another name
(``from .exceptions import HTTPError as _HTTPError``), a TypeScript module's ``export const``. Real parts: tree-sitter parsing, LanceDB in a
temp dir, the CLI as a subprocess."""

from __future__ import annotations

from tests.workspaces import codeask, indexed, related_json

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
    adapter = (
        "class Adapter:\n    def __init__(self, size=POOL_SIZE, tries: int = RETRIES):\n        self.size = size\n"
    )
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


SUPERS = {
    "app/base.py": (
        "class Base:\n    def __init__(self, name):\n        super().__init__()\n        self.name = name\n\n\n"
        "class Unrelated:\n    def __init__(self, size):\n        self.size = size\n"
    ),
    "app/child.py": (
        "from app.base import Base\n\n\nclass Child(Base):\n    def __init__(self, name, extra):\n"
        "        super().__init__(name)\n        self.extra = extra\n\n\n"
        "class Grand(Child):\n    def __init__(self):\n        super(Grand, self).__init__('g', 1)\n"
    ),
}


def test_super_reaches_the_bases_method_and_no_other_class(tmp_path):
    """``super().__init__(name)`` in ``Child(Base)`` calls ``Base.__init__`` (sure), never ``Unrelated.__init__``
    (it was a by-name guess at 0.3 for every ``__init__``), nor a subclass's: ``Base``'s own ``super().__init__()``
    reaches past the project; ``super(Grand, self)`` (the two-argument spelling) reaches ``Child.__init__``."""
    root = tmp_path / "ws"
    indexed(root, SUPERS)
    callers = {
        s: [(c["symbol"], c["sure"]) for c in related_json(root, s)["callers"]]
        for s in ("Base.__init__", "Unrelated.__init__", "Child.__init__", "Grand.__init__")
    }
    assert callers == {
        "Base.__init__": [("Child.__init__", 1.0)],
        "Unrelated.__init__": [],
        "Child.__init__": [("Grand.__init__", 1.0)],
        "Grand.__init__": [],
    }


NAMED_BASES = {
    "app/base.py": (
        "class Base:\n    def __init__(self, name):\n        self.name = name\n\n\n"
        "class Unrelated:\n    def __init__(self, size):\n        self.size = size\n"
    ),
    "app/errors.py": (
        "from json import JSONDecodeError as CompatJSONDecodeError\n\nfrom app.base import Base\n\n\n"
        "class DecodeError(Base, CompatJSONDecodeError):\n    def __init__(self, *args):\n"
        "        CompatJSONDecodeError.__init__(self, *args)\n        Base.__init__(self, 'decode')\n"
    ),
}


def test_a_method_called_through_its_class_name_is_that_classs(tmp_path):
    """``Base.__init__(self, ..)`` calls ``Base.__init__``; ``CompatJSONDecodeError.__init__(self, ..)``
    (``json``'s class under another name, as requests' ``JSONDecodeError`` calls it) calls no project
    method: it was listed at 0.3 as a caller of every ``__init__`` (the newcomer's finding)."""
    root = tmp_path / "ws"
    indexed(root, NAMED_BASES)
    callers = {s: [c["symbol"] for c in related_json(root, s)["callers"]] for s in ("Base.__init__", "Unrelated.__init__")}
    assert callers == {"Base.__init__": ["DecodeError.__init__"], "Unrelated.__init__": []}


ALIASES = {
    "app/exceptions.py": "class HTTPError(Exception):\n    pass\n",
    "app/models.py": (
        "from .exceptions import HTTPError as _HTTPError\nfrom urllib3.exceptions import HTTPError as _Urllib3Error\n\n\n"
        + "".join(_filler(i) for i in range(4))
        + "def check(code):\n    if code >= 400:\n        raise _HTTPError(code)\n\n\n"
        + "def stream(chunks):\n    try:\n        return list(chunks)\n    except _Urllib3Error as e:\n        raise ValueError(e)\n"
    ),
}


def test_a_name_imported_under_another_name_is_used_under_it(tmp_path):
    """``raise _HTTPError(code)`` 130 lines below ``from .exceptions import HTTPError as _HTTPError`` (another
    chunk: the import block is rarely in the chunk using it) calls the project's ``HTTPError``; urllib3's
    ``HTTPError`` imported ``as _Urllib3Error`` is another package's (requests' ``models.py`` imports both)."""
    root = tmp_path / "ws"
    indexed(root, ALIASES)
    got = related_json(root, "HTTPError")
    assert [(c["path"], c["symbol"], c["sure"]) for c in got["callers"]] == [("app/models.py", "check", 1.0)]
    assert got["alias"] is None


def test_a_name_imported_under_another_name_is_asked_for_under_it(tmp_path):
    """``related _HTTPError`` (the name ``models.py`` uses) said "no definition or use" (requests'
    ``RequestsSSLError``); it answers for the project's ``HTTPError`` and says which import named it so.
    urllib3's, imported ``as _Urllib3Error``, is not in the index: still no definition."""
    root = tmp_path / "ws"
    indexed(root, ALIASES)
    got = related_json(root, "_HTTPError")
    assert got["symbol"] == "HTTPError" and [d["path"] for d in got["definitions"]] == ["app/exceptions.py"]
    assert [c["symbol"] for c in got["callers"]] == ["check"]
    assert {k: got["alias"][k] for k in ("name", "path", "line")} == {"name": "_HTTPError", "path": "app/models.py", "line": 1}
    text = codeask("related", str(root), "_HTTPError").stdout
    assert text.startswith("_HTTPError is HTTPError, imported under that name at app/models.py:1\n\ndefinitions of HTTPError:")
    refused = codeask("related", str(root), "_Urllib3Error", check=False)
    assert refused.returncode == 1 and "_Urllib3Error: no definition or use in the index" in refused.stderr


TS_CONSTANTS = {
    "source/core/constants.ts": (
        "export const stop = Symbol('stop');\n\nexport const RETRY_METHODS = ['get', 'put', 'head'] as const;\n"
    ),
    "source/core/retry.ts": (
        "import {RETRY_METHODS} from './constants.js';\n\n"
        "export function canRetry(method: string): boolean {\n"
        "\treturn (RETRY_METHODS as readonly string[]).includes(method);\n}\n"
    ),
}


def test_a_typescript_modules_const_is_a_definition_read_by_its_users(tmp_path):
    """ky's ``export const RETRY_METHODS = [..] as const`` was no definition (only a function's ``const`` was):
    ``related RETRY_METHODS`` found nothing. Its reader ``canRetry`` is its caller; its own declaration, the
    one use in a chunk with no function to narrow to, is not."""
    root = tmp_path / "ws"
    indexed(root, TS_CONSTANTS)
    got = related_json(root, "RETRY_METHODS")
    assert [(d["path"], d["start_line"]) for d in got["definitions"]] == [("source/core/constants.ts", 3)]
    assert [(c["path"], c["symbol"]) for c in got["callers"]] == [("source/core/retry.ts", "canRetry")]
