"""The symbol graph at the front doors, as a newcomer met it on main: a value of another package's
type ends the chain (Go, Rust, Java, TypeScript), a definition the chunker split is one definition
with the callees of all its chunks, a variable bound by ``with X() as v`` is typed, a Rust path
from this crate resolves, a chunk-mate is a callee, a caller question keeps its callers within
``--max-files``, ``related`` says when it cut a list, and an unknown symbol is an error at every
door. Real parts: LanceDB in a temp dir, the CLI as a subprocess, the MCP engine."""

from __future__ import annotations

import ast
import re
import shutil

import pytest

from codeask.query.resolve import NAME_ONLY, TYPED
from codeask.workspace import Workspace
from tests.tables import tables
from tests.test_cli import codeask
from tests.workspaces import caller_spans, related_json, write_tree

FOREIGN = {
    "web/handler.go": "package web\n\ntype Handler struct{}\n\nfunc (h *Handler) ServeHTTP(w int, r int) {\n}\n",
    "web/mux.go": (
        'package web\n\nimport "sync"\n\ntype Mux struct {\n\tpool sync.Pool\n}\n\n'
        "func (mx *Mux) Get(p string) {\n}\n\nfunc (mx *Mux) handle() {\n\tmx.pool.Get()\n}\n"
    ),
    "mw/logger.go": (
        'package mw\n\nimport "net/http"\n\nfunc Logger(next http.Handler) http.Handler {\n'
        "\tnext.ServeHTTP(1, 2)\n\treturn next\n}\n\nfunc Own(h *web.Handler) {\n\th.ServeHTTP(1, 2)\n}\n"
    ),
    "src/client.rs": "pub struct Client;\n\nimpl Client {\n    pub fn send(&self) -> u32 {\n        1\n    }\n}\n",
    "src/fetch.rs": (
        "fn fetch(c: reqwest::Client) -> u32 {\n    c.send()\n}\n\nfn own(c: &Client) -> u32 {\n    c.send()\n}\n"
    ),
    "app/Cache.java": "class Cache {\n  Object get(String k) {\n    return null;\n  }\n}\n",
    "app/Lookup.java": (
        'class Lookup {\n  Object find(com.google.common.cache.Cache c) {\n    return c.get("k");\n  }\n\n'
        '  Object mine(Cache c) {\n    return c.get("k");\n  }\n}\n'
    ),
    "web/router.ts": "export class Router {\n  route(): void {}\n}\n",
    "web/server.ts": (
        "export function serve(next: express.Router) {\n  next.route();\n}\n\n"
        "export function own(r: Router) {\n  r.route();\n}\n"
    ),
}


def _callers(ws: Workspace, symbol: str) -> list[tuple[str, str, float]]:
    return [(x.path, x.symbol, x.sure) for x in ws.related(symbol).callers]


def test_a_value_of_another_packages_type_ends_the_chain(tmp_path):
    """``next http.Handler`` is net/http's, not the project's ``Handler``; ``mx.pool`` is a
    ``sync.Pool``, not a ``Mux``: as a package qualifier ends the chain, so does a package-qualified
    parameter or field type (Rust ``reqwest::Client``, Java ``com.google.common.cache.Cache``,
    TypeScript ``express.Router``). The project's own type still links, typed."""
    ws = Workspace([write_tree(tmp_path / "foreign", FOREIGN)])
    ws.index(embed=False)
    assert _callers(ws, "Handler.ServeHTTP") == [("mw/logger.go", "Own", TYPED)]
    assert _callers(ws, "Mux.Get") == []
    assert _callers(ws, "Client.send") == [("src/fetch.rs", "own", TYPED)]
    assert _callers(ws, "Cache.get") == [("app/Lookup.java", "Lookup.mine", TYPED)]
    assert _callers(ws, "Router.route") == [("web/server.ts", "own", TYPED)]


SPLIT = {
    "web/helpers.py": (
        "def early_helper(x):\n    return x\n\n\ndef late_helper(x):\n    return x\n\n\n"
        "def outer(x):\n    return inner(x)\n\n\ndef inner(x):\n    return x\n"
    ),
    "web/big.py": (
        "from web.helpers import early_helper, late_helper\n\n\ndef big(x):\n    early_helper(x)\n"
        + "".join(f"    x = x + {i}\n" for i in range(150))
        + "    return late_helper(x)\n"
    ),
    "src/error.rs": 'pub fn print_error(msg: &str) {\n    eprintln!("{}", msg);\n}\n',
    "src/main.rs": (
        "mod error;\n\nfn helper() {}\n\nfn main() {\n    let mut x = 0;\n"
        + "    x += 1;\n" * 150
        + '    crate::error::print_error("done");\n    self::helper();\n}\n'
    ),
    "src/walk/mod.rs": "pub fn run() {\n    super::helper2();\n}\n",
    "src/lib.rs": "pub fn helper2() {}\n",
}


def test_a_definition_whose_docstring_the_chunker_cut_is_one_with_its_callees(tmp_path, flask_sdist):
    """flask's ``Flask.run``: its signature and 52-line docstring start its chunks, the docstring runs
    past the first one, and that chunk's text, the string left open, parses as a function ending
    mid-docstring (the apostrophes of ``won't`` pair up as strings). ``related`` gave it as 546-580
    of 546-668, with no callee; now whole, with what its body calls."""
    root = tmp_path / "flask"
    for name in ("app.py", "helpers.py", "cli.py"):
        (root / "src" / "flask").mkdir(parents=True, exist_ok=True)
        shutil.copy(flask_sdist / "src" / "flask" / name, root / "src" / "flask" / name)
    app = (root / "src" / "flask" / "app.py").read_text(encoding="utf-8")
    flask = next(n for n in ast.parse(app).body if isinstance(n, ast.ClassDef) and n.name == "Flask")
    run = next(n for n in flask.body if isinstance(n, ast.FunctionDef) and n.name == "run")
    ws = Workspace([root])
    ws.index(embed=False)
    found = ws.related("Flask.run")
    assert [(x.path, x.start_line, x.end_line) for x in found.definitions] == [
        ("src/flask/app.py", run.lineno, run.end_lineno)
    ]
    assert {"get_debug_flag", "get_load_dotenv", "load_dotenv", "show_server_banner"} <= {x.name for x in found.callees}


def test_a_split_definition_is_one_with_the_callees_of_all_its_chunks(tmp_path):
    """A 150-line function is stored as three chunks; ``related`` gives it once, whole, with what
    its last chunk calls (``late_helper``; Rust's ``crate::error::print_error``, ``self::helper``)."""
    root = write_tree(tmp_path / "split", SPLIT)
    ws = Workspace([root])
    ws.index(embed=False)
    big = ws.related("big")
    last = SPLIT["web/big.py"].count("\n")
    assert [(x.path, x.start_line, x.end_line) for x in big.definitions] == [("web/big.py", 4, last)]
    assert {x.name for x in big.callees} == {"early_helper", "late_helper"}
    main = ws.related("main")
    assert [(x.start_line, x.end_line) for x in main.definitions] == [(5, SPLIT["src/main.rs"].count("\n"))]
    assert {x.name for x in main.callees} == {"print_error", "helper"}
    found = related_json(root, "main")
    assert found["definitions"][0]["end_line"] == main.definitions[0].end_line


def test_rust_paths_and_chunk_mates_are_callees(tmp_path):
    """``super::helper2()`` is this crate's (surer than a name alone); ``inner`` called by its
    chunk-mate ``outer`` is a callee (a chunk's stored names leave out what it defines)."""
    ws = Workspace([write_tree(tmp_path / "split", SPLIT)])
    ws.index(embed=False)
    assert [(x.name, x.sure > NAME_ONLY) for x in ws.related("run").callees] == [("helper2", True)]
    assert [(x.path, x.symbol) for x in ws.related("outer").callees] == [("web/helpers.py", "inner")]
    assert ("web/helpers.py", "outer", 1.0) in _callers(ws, "inner")


BOUND = {
    "web/sessions.py": "class Session:\n    def request(self, method, url):\n        return (method, url)\n",
    "web/api.py": (
        "from web import sessions\n\n\ndef request(method, url):\n"
        "    with sessions.Session() as session:\n        return session.request(method, url)\n\n\n"
        "def other(method, url):\n    sock = sessions.open_socket()\n    return sock.request(method)\n"
    ),
}


def test_a_variable_bound_by_with_as_calls_its_types_method(tmp_path):
    """requests' ``api.request`` (``with sessions.Session() as session: session.request(...)``) is a
    caller of ``Session.request``, typed, though its chunk defines a ``request`` of its own; a
    variable of another value is a name-only link."""
    ws = Workspace([write_tree(tmp_path / "bound", BOUND)])
    ws.index(embed=False)
    assert _callers(ws, "Session.request") == [("web/api.py", "request", TYPED), ("web/api.py", "other", NAME_ONLY)]


def test_a_local_variable_named_like_a_method_is_no_caller(tmp_path):
    """requests' tests ``request = requests.Request(...); session.send(request.prepare())`` were listed
    as callers of ``Session.request`` (a newcomer's finding): a bare name that is not called never
    means a method; the test that calls ``session.request(...)`` still is one."""
    files = {
        **BOUND,
        "tests/test_send.py": (
            "from web import sessions\n\n\ndef test_send(session):\n"
            "    request = sessions.Request('GET', 'u')\n    return session.send(request.prepare())\n\n\n"
            "def test_request(session):\n    return session.request('GET', 'u')\n"
        ),
    }
    ws = Workspace([write_tree(tmp_path / "local", files)])
    ws.index(embed=False)
    callers = {(path, symbol) for path, symbol, _ in _callers(ws, "Session.request")}
    assert ("tests/test_send.py", "test_request") in callers and ("tests/test_send.py", "test_send") not in callers


NOTES = {
    "web/strip.py": "def should_strip(old, new):\n    return old != new\n",
    "tests/test_strip.py": (
        "from web.strip import should_strip\n\n\ndef test_strip_on_change():\n    assert should_strip('a', 'b')\n"
    ),
    **{
        f"web/notes_{i}.py": (
            f'"""Whether we should strip auth: callers decide, strip it when the host changes ({i})."""\n\n\n'
            f"def note_{i}(should, strip):\n    return should and strip\n"
        )
        for i in range(6)
    },
}


def test_a_caller_question_keeps_its_callers_within_max_files(tmp_path):
    """Files that only share the question's words filled ``--max-files 2`` and cut the test that
    calls ``should_strip`` (which ``related`` lists): the callers come before them."""
    root = write_tree(tmp_path / "notes", NOTES)
    ws = Workspace([root])
    ws.index(embed=False)
    callers = {(x.path, x.symbol) for x in ws.related("should_strip").callers}
    assert callers == {("tests/test_strip.py", "test_strip_on_change")}
    for limit in ("2", "3"):
        assert callers <= caller_spans(root, "should_strip", "--max-files", limit), limit


CALLERS = {
    "web/target.py": "def target():\n    return 1\n",
    "web/callers.py": "".join(f"def caller_{i}():\n    return target() + {i}\n\n\n" for i in range(55)),
}


def test_related_says_when_it_cut_the_callers(tmp_path):
    """55 callers, 50 listed: ``counts`` and ``truncated`` in JSON, a line in the text."""
    root = write_tree(tmp_path / "many", CALLERS)
    Workspace([root]).index(embed=False)
    found = related_json(root, "target")
    assert len(found["callers"]) == 50 and found["counts"]["callers"] == 55 and found["truncated"] is True
    assert found["counts"]["definitions"] == 1 and not found["callees"] and found["counts"]["callees"] == 0
    text = codeask("related", str(root), "target").stdout
    assert "  ... 5 more (the 50 surest of 55 are listed)" in text
    assert related_json(root, "caller_3")["truncated"] is False


def test_related_on_a_keyword_only_index_says_what_it_lacks(tmp_path):
    """``related --json`` on an index with no vectors yet says so in ``index.note`` (it was ``null``): the
    graph is whole, only similar code waits for the vectors."""
    root = write_tree(tmp_path / "many", CALLERS)
    Workspace([root]).index(embed=False)
    index = related_json(root, "target")["index"]
    assert index["state"] == "keyword-only" and index["vectors_pending"] > 0
    assert (
        index["note"].startswith(f"{index['vectors_pending']} chunks have no vectors yet") and "graph" in index["note"]
    )


def test_an_unknown_symbol_is_an_error_at_the_mcp_door(tmp_path):
    """MCP ``related_code`` on a symbol the index does not know is a tool error naming it, as the
    CLI exits 1 (and the LSP command answers InvalidParams: tests/test_lsp.py)."""
    from mcp.server.mcpserver.exceptions import ToolError

    from codeask.mcp_server import CodeaskMCP

    root = write_tree(tmp_path / "bound", BOUND)
    Workspace([root]).index(embed=False)
    engine = CodeaskMCP([root])
    with pytest.raises(ToolError, match=f"^no_such_symbol: no definition or use in the index of {re.escape(str(root))}$"):
        engine.related_code("no_such_symbol")
    assert engine.related_code("Session.request").counts["callers"] == 2


def test_a_split_definition_whose_chunk_ends_in_a_blank_line_is_one(tmp_path):
    """requests' ``resolve_redirects`` is stored as chunks 159-218, 219-261, 262-281, the first ending
    in a blank line after the body's statement: ``related`` gave 159-217 and missed the later chunks'
    callees (``rebuild_auth``, ``Session.send``). Here every statement is followed by a blank line."""
    text = (
        "from web.helpers import early_helper, late_helper\n\n\ndef big(x):\n    early_helper(x)\n\n"
        + "".join(f"    x = x + {i}\n\n" for i in range(150))
        + "    return late_helper(x)\n"
    )
    root = write_tree(tmp_path / "split", {**SPLIT, "web/big.py": text})
    ws = Workspace([root])
    ws.index(embed=False)
    chunks = [r for r in tables(ws.indexes[str(root)].store)[0].to_arrow().to_pylist() if r["path"] == "web/big.py"]
    lines = text.splitlines()
    assert len(chunks) > 1 and any(lines[r["end_line"] - 1] == "" for r in chunks[:-1])
    big = ws.related("big")
    assert [(x.start_line, x.end_line) for x in big.definitions] == [(4, len(lines))]
    assert {x.name for x in big.callees} == {"early_helper", "late_helper"}


def test_a_top_level_caller_reads_top_level_at_the_cli_and_mcp_doors(tmp_path):
    """A caller outside every definition (``VALUE = target()``) is ``(top level)`` in ``codeask related``
    and in MCP ``related_code``'s text alike (MCP printed the symbol's own name, ``target``, as if the
    caller were its definition: a newcomer's finding)."""
    from codeask.mcp_results import related_lines
    from codeask.mcp_server import CodeaskMCP

    files = {"app/a.py": "def target():\n    return 1\n", "app/b.py": "from app.a import target\n\nVALUE = target()\n"}
    root = write_tree(tmp_path / "top", files)
    Workspace([root]).index(embed=False)
    cli = codeask("related", str(root), "target").stdout
    mcp = related_lines(CodeaskMCP([root]).related_code("target"))
    callers = [re.search(r"callers of target:\n(.*?)(\n\n|$)", text, re.S).group(1) for text in (cli, mcp)]
    assert all("app/b.py:" in c and "(top level)" in c for c in callers), callers
