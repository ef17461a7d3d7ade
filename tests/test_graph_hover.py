"""Hover's related code (the explain answer without an LLM) lists the symbol graph's callers and
callees as such and marks the code retrieval found by words alone as another kind (the VS Code
hover over ``apply_discount`` listed ``shipping_cost``, unmarked, beside its real caller
``Cart.total``). Real parts: tree-sitter parsing, LanceDB in a temp dir, the explain pipeline."""

from __future__ import annotations

from codeask.query.explain import Explanation, explain, make_span, symbol_span
from codeask.workspace import Workspace
from tests.conftest import SAMPLE
from tests.workspaces import write_tree


def test_hover_marks_which_related_code_the_graph_links(tmp_path):
    """``apply_discount``'s related code: ``Cart.total`` (its caller, at that method's lines, not the
    ``Cart`` chunk's) under "Related code", saying it calls ``apply_discount``; the code found by
    words only (the README; with vectors, ``shipping_cost``) under "Similar code"."""
    root = write_tree(tmp_path / "shop", SAMPLE)
    ws = Workspace([root])
    ws.index(embed=False)
    start = SAMPLE["src/shop/pricing.py"].splitlines().index("def apply_discount(amount, coupon):") + 1
    span = make_span(ws, str(root / "src/shop/pricing.py"), start, start + 3)
    got = explain(ws, span, brief=True, no_llm=True)
    linked, _, similar = got.markdown.partition("Similar code (shares words; no symbol-graph link):")
    total = SAMPLE["src/shop/cart.py"].splitlines().index("    def total(self, coupon=None):") + 1
    caller = next(line for line in linked.splitlines() if "`Cart.total`" in line)
    assert f"[src/shop/cart.py:{total}-{total + 3}]" in caller and caller.endswith(": calls `apply_discount`")
    by_path = {s.path: s for s in got.sources}
    assert by_path["src/shop/cart.py"].via.startswith("caller of apply_discount")
    words_only = [s for s in got.sources if not s.via]
    assert words_only and all(f"[{s.path}:{s.start_line}-{s.end_line}]" in similar for s in words_only)
    assert not any(f"[{s.path}:" in linked for s in words_only)


REDIRECTS = {
    "web/auth.py": "def rebuild_auth(r):\n    return r\n",
    "web/sessions.py": (
        "from web.auth import rebuild_auth\n\n\nclass Mixin:\n    def resolve_redirects(self, resp):\n        total = 0\n"
        + "        total += 1\n" * 150
        + "        return rebuild_auth(resp)\n"
    ),
}


def _hovered(tmp_path, files: dict[str, str], path: str, lines: tuple[int, int]) -> tuple[Workspace, Explanation]:
    """``files`` indexed keyword-only, then hover's related code (explain, brief, no LLM) of
    ``path``'s 1-based ``lines``."""
    root = write_tree(tmp_path / "ws", files)
    ws = Workspace([root])
    ws.index(embed=False)
    return ws, explain(ws, make_span(ws, str(root / path), *lines), brief=True, no_llm=True)


def test_hover_cites_a_split_caller_at_its_whole_definition(tmp_path):
    """requests' ``resolve_redirects`` calls ``rebuild_auth`` from a later chunk of its split body:
    hover's related code cites it at the lines ``codeask related`` gives (it cited that chunk,
    219-261 for 159-281)."""
    ws, got = _hovered(tmp_path, REDIRECTS, "web/auth.py", (1, 2))
    (definition,) = ws.related("resolve_redirects").definitions
    caller = next(s for s in got.sources if s.path == "web/sessions.py")
    assert (caller.symbol, caller.start_line, caller.end_line) == (
        "Mixin.resolve_redirects",
        definition.start_line,
        definition.end_line,
    )


STORE = {
    "web/store.py": (
        "class OrderStore:\n    def __init__(self):\n        self.rows = {}\n\n"
        "    def put_order(self, key, row):\n        self.rows[key] = row\n\n"
        "    def load_order(self, key):\n        row = self.rows[key]\n        return row\n\n"
        "    def drop_order(self, key):\n        del self.rows[key]\n"
    ),
    "web/api.py": "def show_order(store, key):\n    return store.load_order(key)\n",
}


def test_hover_cites_a_callee_packed_with_others_at_its_own_lines(tmp_path):
    """``show_order`` calls ``OrderStore.load_order``, packed in one chunk with its class's other
    methods: hover's related code cites that method's lines, as ``codeask related`` does (it cited
    the whole chunk: requests' ``RequestsCookieJar.get`` as 176-233 for 194-204)."""
    ws, got = _hovered(tmp_path, STORE, "web/api.py", (1, 2))
    (definition,) = ws.related("OrderStore.load_order").definitions
    callee = next(s for s in got.sources if s.path == "web/store.py" and s.via)
    assert (callee.symbol, callee.start_line, callee.end_line) == (
        "OrderStore.load_order",
        definition.start_line,
        definition.end_line,
    )


def test_hover_cites_a_split_caller_once(tmp_path):
    """The chunk holding the call of a split caller that hover cites whole (keyword search finds it
    too) is not listed again below it: requests' ``resolve_redirects`` 159-280 was followed by its
    own chunk 219-261 under "Similar code"."""
    sessions = REDIRECTS["web/sessions.py"].removeprefix("from web.auth import rebuild_auth\n\n\n")  # no import chunk
    _, got = _hovered(tmp_path, {**REDIRECTS, "web/sessions.py": sessions}, "web/auth.py", (1, 2))
    cited = [(s.start_line, s.end_line) for s in got.sources if s.path == "web/sessions.py"]
    assert len(cited) == 1, cited


def test_every_similar_code_item_is_named():
    """A "Similar code" entry whose chunk has no symbol (module-level code, or a chunk packing a few
    definitions stored under none) names what its lines hold, or says ``(top level)`` (it had no label)."""
    from types import SimpleNamespace

    from codeask.query.pipeline import Document
    from codeask.query.steps.explain_answer import related_markdown

    span = SimpleNamespace(symbol="f", label="f", display_path="a.py", start_line=1, end_line=2, abs_path="/w/a.py")
    loose = Document("b.py", "/w", 1, 2, "", "python", "x = 1\nprint(x)\n")
    packed = Document("c.py", "/w", 1, 5, "", "python", "def g():\n    pass\n\n\ndef h():\n    pass\n")
    items = related_markdown(span, [loose, packed]).split("Similar code (shares words; no symbol-graph link):")[1]
    assert [line.split(") ", 1)[1] for line in items.strip().splitlines()] == ["(top level)", "`g, h`"]



def test_hover_items_say_the_kind_of_link():
    """Hover's related list words each link as its ``via`` names it (every caller-side link read
    "calls" before): a class created or named as a type, a constant read, from either end."""
    from types import SimpleNamespace

    from codeask.query.pipeline import Document
    from codeask.query.steps.explain_answer import related_markdown

    span = SimpleNamespace(symbol="f", label="f", display_path="a.py", start_line=1, end_line=2, abs_path="/w/a.py")
    vias = [
        "caller of f in a.py:1",
        "creates Session in a.py:1",
        "uses type Session in a.py:1",
        "reads LIMIT in a.py:1",
        "calls g from a.py:1",
        "creates Retry from a.py:1",
        "uses type Retry from a.py:1",
        "reads LIMIT from a.py:1",
    ]
    docs = [Document("b.py", "/w", i, i, "g", "python", "x", via=via, via_sure=1.0) for i, via in enumerate(vias, 1)]
    said = [line.split(": ", 1)[1] for line in related_markdown(span, docs).splitlines() if line[:1].isdigit()]
    assert said == [
        "calls `f`",
        "creates `Session`",
        "uses type `Session`",
        "reads `LIMIT`",
        "called by it",
        "created by it",
        "a type used by it",
        "read by it",
    ]

def test_hover_keeps_a_caller_when_callees_fill_its_page(tmp_path):
    """A method calling more definitions than hover lists still shows its one caller (ky's ``#fetch``:
    six callees listed, its caller ``Ky.create`` left out; the docs say hover shows "its callers and
    the definitions it calls first")."""
    steps = {
        f"src/step{i}.ts": f"export function step{i}(x: number): number {{\n  return x + {i};\n}}\n" for i in range(8)
    }
    imports = "".join(f'import {{step{i}}} from "./step{i}";\n' for i in range(8))
    calls = "".join(f"    n = step{i}(n);\n" for i in range(8))
    ky = f"{imports}\nexport class Ky {{\n  run(n: number): number {{\n{calls}    return n;\n  }}\n}}\n"
    client = 'import {Ky} from "./ky";\n\nexport function go(k: Ky): number {\n  return k.run(1);\n}\n'
    _, got = _hovered(tmp_path, {**steps, "src/ky.ts": ky, "src/client.ts": client}, "src/ky.ts", (11, 20))
    vias = [s.via for s in got.sources if s.via]
    assert len(vias) == 6 and vias[0] == "caller of run in src/ky.ts:11", vias


def test_hover_on_a_constants_line_lists_its_readers(tmp_path):
    """Hover on ``LIMIT_MS = 500`` (no definition to narrow to: the chunk's code outside definitions)
    listed what the line calls and nothing else; it lists the functions reading the constant, in its
    file and in another, as ``codeask related LIMIT_MS`` lists them."""
    files = {
        "app/local.py": "LIMIT_MS = 500\n\n\ndef slow(elapsed):\n    return elapsed > LIMIT_MS\n",
        "app/client.py": "from app.local import LIMIT_MS\n\n\ndef fetch(wait):\n    return min(wait, LIMIT_MS)\n",
    }
    ws, got = _hovered(tmp_path, files, "app/local.py", (1, 1))
    readers = {(s.path, s.start_line) for s in got.sources if s.via == "reads LIMIT_MS in app/local.py:1"}
    assert readers == {(c.path, c.start_line) for c in ws.related("LIMIT_MS").callers} == {
        ("app/local.py", 4),
        ("app/client.py", 4),
    }


def test_hover_on_a_constant_explains_its_statement_not_its_chunk(tmp_path):
    """A hover on ``DEFAULT_POOLSIZE`` in a chunk of constants and functions (requests' adapters.py)
    explained the whole chunk, listing its neighbours' readers; it explains the constant's line and
    lists the readers of that constant only (the newcomer's finding in Neovim)."""
    local = (
        "LIMIT_MS = 500\nRETRIES = 3\n\n\ndef slow(elapsed):\n    return elapsed > LIMIT_MS\n\n\n"
        "def again(n):\n    return n < RETRIES\n"
    )
    root = write_tree(tmp_path / "ws", {"app/local.py": local})
    ws = Workspace([root])
    ws.index(embed=False)
    span = symbol_span(ws, str(root / "app/local.py"), 2, "RETRIES")
    assert (span.start_line, span.end_line, span.symbol) == (2, 2, "")
    got = explain(ws, span, brief=True, no_llm=True)
    assert {(s.path, s.start_line, s.via) for s in got.sources if s.via} == {
        ("app/local.py", 9, "reads RETRIES in app/local.py:2")
    }
