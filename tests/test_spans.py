"""The right piece of each file: boilerplate chunks never lead a file, and widening adds its other spans."""

from __future__ import annotations

import re
import textwrap
from dataclasses import replace

from codeask.index.chunking import chunk_text
from codeask.index.rows import Hit
from codeask.llm.protocol import estimate_tokens
from codeask.lsp.convert import location
from codeask.query.anchors import text_hash
from codeask.query.boilerplate import is_boilerplate
from codeask.query.budget import fit_documents
from codeask.query.no_llm import NoLLMAnswer
from codeask.query.opening import open_line
from codeask.query.options import RetrievalOptions
from codeask.query.pipeline import Document, Query
from codeask.query.question_words import matched_symbol, names_definition, question_terms
from codeask.query.result import Answer
from codeask.query.steps import widen
from codeask.query.steps.fusion import fuse
from codeask.query.steps.widen import Widen
from codeask.query.templates import Templates, render_documents
from codeask.settings import load_settings
from codeask.workspace import Workspace

HEADER = textwrap.dedent(
    '''\
    """Sessions: cookies persisted across requests.

    Long module docstring naming cookies, sessions and requests.
    """

    from __future__ import annotations

    import os
    from .cookies import (
        CookieJar,
        merge_cookies,
        extract_cookies,
    )
    from .models import Request, Response  # noqa: F401

    __all__ = ["Session"]
    '''
)

PERSIST = textwrap.dedent(
    '''\
    def persist_cookies(session, response):
        """Store the cookies a response sets on the session, so later requests send them."""
        jar = session.cookies
        extract_cookies(jar, response)
        merge_cookies(jar, response.cookies)
        return jar
    '''
)


def _hit(path: str, id_: str, content: str, line: int = 1, symbol: str = "") -> Hit:
    return Hit(id_, path, "python", line, line + len(content.splitlines()) - 1, symbol, content, 1.0)


def test_headers_are_boilerplate_by_their_parse_and_code_is_not():
    assert is_boilerplate(HEADER, "python")
    assert not is_boilerplate(PERSIST, "python")  # a function body, even without a claimed symbol
    assert not is_boilerplate(HEADER, "python", symbol="Session")  # a chunk that claims a symbol never is
    script = "import sys\nimport os\n\nfor name in sys.argv[1:]:\n    os.remove(name)\n    print(name)\n"
    assert not is_boilerplate(script, "python")  # a script's statements are its code
    assert is_boilerplate("use std::io;\nuse crate::jar::{Jar, merge};\n// cookies\n", "rust")
    assert is_boilerplate('#include <stdio.h>\n#include "jar.h"\n', "c")
    assert not is_boilerplate("", "python")


def test_a_matching_definition_leads_its_file_and_files_keep_their_order():
    header = _hit("sessions.py", "s-head", HEADER)
    persist = _hit("sessions.py", "s-def", PERSIST, 40, "persist_cookies")
    other = _hit("cookies.py", "c-def", "def merge_cookies(a, b):\n    a.update(b)\n    return a\n", 1, "merge_cookies")
    only_header = _hit("models.py", "m-head", HEADER)
    keyword = [header, other, persist, only_header]
    dense = [header, persist, other, only_header]

    def first_chunks(rankings):
        fused = fuse(rankings, rrf_k=60, downweighted=lambda p: False, factor=0.5)
        firsts: dict[str, tuple[str, float]] = {}
        for score, file_score, _, hit in fused:
            firsts.setdefault(hit.path, (hit.id, file_score))
            assert score <= firsts[hit.path][1]  # no chunk outranks its file's lead
        return firsts, [h.path for _, _, _, h in fused]

    firsts, order = first_chunks([(1.0, "/ws", keyword), (1.0, "/ws", dense)])
    assert firsts["sessions.py"][0] == "s-def"  # the import block ranked first in both, the def leads
    assert firsts["models.py"][0] == "m-head"  # only boilerplate matched: it stays
    # the same rankings with the header replaced by plain code give the same file scores and order
    plain = _hit("sessions.py", "s-head", "x = compute()\ny = x + 1\nprint(y)\n")
    swap = lambda ranking: [plain if h is header else h for h in ranking]  # noqa: E731
    firsts_plain, order_plain = first_chunks([(1.0, "/ws", swap(keyword)), (1.0, "/ws", swap(dense))])
    assert {p: s for p, (_, s) in firsts.items()} == {p: s for p, (_, s) in firsts_plain.items()}
    assert list(dict.fromkeys(order)) == list(dict.fromkeys(order_plain))
    assert firsts_plain["sessions.py"][0] == "s-head"  # plain code that matches best still leads


def _doc(path, start, end, score, content=None, symbol="", extra=False):
    content = content if content is not None else "\n".join(f"{path} line {n}" for n in range(start, end + 1))
    return Document(path, "/ws", start, end, symbol, "python", content, score, id=f"{path}:{start}", extra=extra)


def _retrieved(docs, kept):
    q = Query("how are cookies persisted?")
    q.retrieved("retrieve", docs)
    q.reordered("one_per_file", kept)
    return q


def test_widen_adds_the_files_next_spans_merging_adjacent_ones_and_skipping_boilerplate():
    lead = _doc("a.py", 10, 20, 0.9, symbol="Session.send")
    adjacent = _doc("a.py", 21, 30, 0.8, symbol="Session.merge")
    far = _doc("a.py", 50, 60, 0.7, symbol="Session.close")
    header = _doc("a.py", 1, len(HEADER.splitlines()), 0.85, content=HEADER)
    beyond = _doc("a.py", 80, 90, 0.6)
    b = _doc("b.py", 1, 9, 0.75)
    docs = [lead, header, adjacent, b, far, beyond]
    q = Widen(spans_per_file=3)(_retrieved(docs, [lead, b]))
    got = [(d.path, d.start_line, d.end_line, d.extra, d.symbol) for d in q.documents]
    assert got == [
        ("a.py", 10, 30, False, "Session.send, Session.merge"),  # lead + adjacent, merged; still the file's first
        ("a.py", 50, 60, True, "Session.close"),
        ("b.py", 1, 9, False, ""),
    ]
    merged = q.documents[0]
    assert merged.content.splitlines() == lead.content.splitlines() + adjacent.content.splitlines()
    assert q.history[-1].data["added"] == 2

    assert Widen(spans_per_file=3)(_retrieved([], [])).documents == []
    q = _retrieved(docs, [lead, b])
    q.options = RetrievalOptions(spans_per_file=1)
    assert Widen()(q).documents == [lead, b]


def test_widen_merges_overlapping_spans_without_repeating_lines():
    lead = _doc("a.py", 10, 20, 0.9)
    overlapping = _doc("a.py", 5, 12, 0.8)
    q = Widen(spans_per_file=2)(_retrieved([lead, overlapping], [lead]))
    # overlapping chunks are not added twice: a span that overlaps the lead is skipped
    assert [(d.start_line, d.end_line) for d in q.documents] == [(10, 20)]
    touching = _doc("a.py", 1, 9, 0.8)
    q = Widen(spans_per_file=2)(_retrieved([lead, touching], [lead]))
    (only,) = q.documents
    assert (only.start_line, only.end_line, only.extra) == (1, 20, False)
    assert only.content.splitlines() == touching.content.splitlines() + lead.content.splitlines()


def test_a_merged_span_keeps_each_line_on_its_line_number():
    """The chunks of two methods, the first ending in the blank line between them (its text ends in
    ``"\\n"``), merge into one span whose every line is the file's line of that number: the merge
    dropped the blank line, and flask's ``config.py`` 126-254 held 127 lines, ``from_pyfile`` shown
    one line above its own (a citation of it was cut one line short)."""
    source = "class Config:\n" + "".join(
        f"    def m{k}(self):\n" + "".join(f"        x{i} = {i}\n" for i in range(4)) + "\n" for k in range(3)
    )
    lines = source.split("\n")
    chunks = [c for c in chunk_text("config.py", source, chunk_lines=6) if c.symbol in ("Config.m1", "Config.m2")]
    assert chunks[0].content.endswith("\n") and chunks[1].start_line == chunks[0].end_line + 1
    first, second = (
        Document("config.py", "/ws", c.start_line, c.end_line, c.symbol, "python", c.content, 1.0 - k / 10, id=str(k))
        for k, c in enumerate(chunks)
    )
    (merged,) = Widen(spans_per_file=2)(_retrieved([first, second], [first])).documents
    assert (merged.start_line, merged.end_line) == (first.start_line, second.end_line)
    assert merged.content == "\n".join(lines[merged.start_line - 1 : merged.end_line])  # as a chunk holds its lines


def test_a_location_ends_on_its_last_line_even_a_blank_one():
    """A span's Location ends at the end of its own last line: a chunk ending in a blank line (its
    text ends in ``"\\n"``) ends at column 0 of that line. flask's ``Flask.run`` (546-668) ended at
    column 43 of its blank line 668, the length of line 667, past the end of the line."""
    ends = location("/ws", "a.py", 10, 12, "    def run(self):\n        return 1\n").range.end
    assert (ends.line, ends.character) == (11, 0)
    ends = location("/ws", "a.py", 10, 11, "    def run(self):\n        return 1\n").range.end
    assert (ends.line, ends.character) == (10, len("        return 1"))


def test_budget_drops_added_spans_before_any_files_best_span():
    a = _doc("a.py", 1, 30, 0.9)
    a2 = _doc("a.py", 40, 70, 0.8, extra=True)
    b = _doc("b.py", 1, 30, 0.7)
    c = _doc("c.py", 1, 30, 0.6)

    def render(ds):
        return "\n".join(d.content for d in ds)

    full = estimate_tokens(render([a, a2, b, c]))
    docs, _, _ = fit_documents([a, a2, b, c], render, estimate_tokens, full - 1)
    assert [d.path for d in docs] == ["a.py", "b.py", "c.py"]
    docs, _, _ = fit_documents([a, a2, b, c], render, estimate_tokens, full, max_documents=2)
    assert [d.path for d in docs] == ["a.py", "b.py"]


def test_every_span_is_numbered_in_the_prompt_listed_under_its_source_and_linked_by_citations(tmp_path):
    lead = _doc("a.py", 10, 30, 0.9, symbol="Session.send")
    extra = _doc("a.py", 50, 60, 0.7, symbol="Session.close", extra=True)
    b = _doc("b.py", 1, 9, 0.75)
    q = Query("q")
    q.retrieved("retrieve", [lead, extra, b])
    rendered = render_documents(Templates(load_settings(tmp_path, env={})), q.documents)
    assert [line for line in rendered.splitlines() if line.startswith("[")] == [
        "[1] a.py:10-30 (Session.send)",
        "[2] a.py:50-60 (Session.close)",
        "[3] b.py:1-9",
    ]
    q.prompt_documents = list(q.documents)
    q.answered("answer", "Closing is in [2]; sending in [1].")
    ans = Answer.from_query(q)
    # with an LLM, source n is what the answer cites as [n]: one per document sent, spans included
    assert [(s.path, s.start_line) for s in ans.sources] == [("a.py", 10), ("a.py", 50), ("b.py", 1)]
    assert [[(x["start_line"], x["end_line"], x["uri"]) for x in s.spans] for s in ans.sources[:2]] == [
        [(10, 30, lead.uri)],
        [(50, 60, extra.uri)],
    ]
    assert f"[[2]]({extra.uri})" in ans.markdown and f"[[1]]({lead.uri})" in ans.markdown
    hashes = [s.spans[0]["anchor"]["hash"] for s in ans.sources]
    assert hashes[0] == text_hash(lead.content.splitlines())  # the anchor is the cited text's
    assert (
        f'1. [a.py:10-30]({lead.uri} "codeask:{hashes[0]} Session.send")\n'
        f'2. [a.py:50-60]({extra.uri} "codeask:{hashes[1]} Session.close")\n'
        f'3. [b.py:1-9]({b.uri} "codeask:{hashes[2]}")'
    ) in ans.markdown
    assert [(d["n"], d["start_line"]) for d in ans.to_json()["documents"]] == [(1, 10), (2, 50), (3, 1)]


def _untitled(markdown: str) -> list[str]:
    """``markdown``'s lines, each link's anchor title (``"codeask:<hash> <symbol>"``) left out."""
    return [re.sub(r' "codeask:[0-9a-f]{16}[^"]*"\)', ")", line) for line in markdown.splitlines()]


def test_the_answer_without_an_llm_numbers_files_as_the_sources_list_does():
    """One item per file, its spans under it: item n is source n (a file's second span is not a new number)."""
    lead = _doc("a.py", 10, 30, 0.9, symbol="Session.send")
    b = _doc("b.py", 1, 9, 0.75)
    extra = _doc("a.py", 50, 60, 0.7, symbol="Session.close", extra=True)
    docs = [lead, b, extra] + [_doc(f"m{i}.py", 1, 3, 0.5 - i / 100) for i in range(9)]
    q = Query("how is a session sent?")
    q.retrieved("retrieve", docs)
    q = NoLLMAnswer()(q)
    ans = Answer.from_query(q)
    items = [line for line in ans.answer.splitlines() if line[:1].isdigit()]
    assert [line.split(" ", 1)[0] for line in items] == [f"{n}." for n in range(1, len(ans.sources) + 1)]
    for line, source in zip(items, ans.sources):
        assert line.split(" ", 1)[1].startswith(f"[{source.path}:{source.start_line}-{source.end_line}]")
    lines = ans.answer.splitlines()
    # under item 1, after its snippet; each link's title its anchor, what cite-check re-finds it by
    digest = text_hash(extra.content.splitlines())
    second = lines.index(f'   [a.py:50-60]({extra.uri} "codeask:{digest} Session.close") `Session.close`')
    assert lines.index(items[0]) < second < lines.index(items[1])
    # item 10's content is indented under its text ("10. " is 4 wide), so its snippet stays in the item
    tenth = lines.index(items[9])
    assert lines[tenth + 1].startswith("    ```")


def test_the_snippet_without_an_llm_opens_where_the_labelled_definition_does():
    """flask's ``RequestContext.copy, RequestContext.push`` (337-395) showed eight lines of ``copy``'s
    docstring for a question about pushing a context, and ``with_appcontext`` (375-404) the two
    statements before its ``def``: each snippet now opens on the definition its label names last."""
    copy = "    def copy(self):\n" + '        """Copy it."""\n' + "".join(f"        x{n} = {n}\n" for n in range(10))
    push = "    def push(self):\n        ctx = self.app.app_context()\n        ctx.push()\n"
    merged = _doc(
        "ctx.py",
        40,
        55,
        0.9,
        "class RequestContext:\n" + copy + "\n" + push,
        "RequestContext.copy, RequestContext.push",
    )
    lead = "F = TypeVar('F')\n\n\ndef with_appcontext(f):\n    return f\n"
    wrapped = _doc("cli.py", 10, 14, 0.8, lead, "with_appcontext")
    whole = _doc("app.py", 1, 3, 0.7, "def run(self):\n    return 1\n", "Flask.run")
    q = Query("how is the request context pushed?")
    q.retrieved("retrieve", [merged, wrapped, whole])
    answer = _untitled(NoLLMAnswer()(q).answer)
    fence = answer.index(f"1. [ctx.py:40-55]({merged.uri}) `RequestContext.copy, RequestContext.push`") + 1
    assert answer[fence : fence + 6] == [
        "   ```python",
        "   ...",
        "       def push(self):",
        "           ctx = self.app.app_context()",
        "           ctx.push()",
        "   ```",
    ]
    fence = answer.index(f"2. [cli.py:10-14]({wrapped.uri}) `with_appcontext`") + 1
    assert answer[fence : fence + 3] == ["   ```python", "   ...", "   def with_appcontext(f):"]
    fence = answer.index(f"3. [app.py:1-3]({whole.uri}) `Flask.run`") + 1
    assert answer[fence : fence + 2] == ["   ```python", "   def run(self):"]  # from its first line: nothing left out
    # a merged span's label names its chunks' definitions in the file's order: the snippet opens on
    # the one holding most of the question's words (flask's app.py 864-951 showed finalize_request)
    merged = "".join(
        f"    def {name}(self):\n        return self.{body}()\n\n"
        for name, body in (("log_exception", "log"), ("dispatch_request", "dispatch"), ("finalize_request", "finish"))
    )
    label = "Flask.log_exception, Flask.dispatch_request, Flask.finalize_request"
    q = Query("how does flask dispatch a request?")
    q.retrieved("retrieve", [Document("app.py", "/ws", 864, 872, label, "python", merged, 0.9, id="app.py:864")])
    answer = _untitled(NoLLMAnswer()(q).answer)
    assert answer[3:6] == ["   ```python", "   ...", "       def dispatch_request(self):"], answer
    # a Go doc comment above the type opens its snippet with it (chi's context.go)
    go = "var RouteCtxKey = 1\n\n// Context tracks route patterns.\n//\n// NOTE: deep-copy new fields.\ntype Context struct {\n\tRoutes []string\n}\n"
    q = Query("what does the routing context hold?")
    q.retrieved("retrieve", [Document("context.go", "/ws", 40, 47, "Context", "go", go, 0.9, id="context.go:40")])
    answer = _untitled(NoLLMAnswer()(q).answer)
    assert answer[3:7] == ["   ```go", "   ...", "   // Context tracks route patterns.", "   //"], answer


def test_a_later_window_of_a_long_definition_opens_on_its_lines_naming_the_question():
    """flask's ``App.__init__`` is cut in windows; its 330-389 opens in the docstring of an attribute
    above, and holds no definition's start to open on: it opens (``open_line``, and the snippet) on its
    first line holding the most of the question's words. A span with no label opens on its first line."""
    window = (
        "        #: is active. Used for handling JSON requests.\n"
        "        #: .. versionadded:: 2.2\n"
        "        self.json: JSONProvider = self.json_provider_class(self)\n"
        "\n"
        "        #: A list of functions to call on the URL map.\n"
        "        self.url_build_error_handlers = []\n"
    )
    doc = _doc("sansio/app.py", 330, 335, 0.9, window, "App.__init__")
    assert open_line(doc, question_terms("how is the json provider created for the app")) == 332
    assert open_line(doc, question_terms("what does the cache warm up")) == 330  # no word held: its first line
    assert open_line(replace(doc, symbol=""), question_terms("how is the json provider created")) == 330
    assert open_line(replace(doc, kind="docs"), question_terms("how is the json provider created")) == 330
    # the line is one of a comment's: from the comment's first (sansio App's 211 opened mid-comment)
    comment = "        x = 1\n        #: The interface used\n        #: for the session cookie.\n        self.si = None\n"
    in_comment = _doc("sansio/app.py", 208, 211, 0.9, comment, "App")
    assert open_line(in_comment, question_terms("where is the session cookie kept")) == 209
    q = Query("how is the json provider created for the app")
    q.retrieved("retrieve", [doc])
    answer = _untitled(NoLLMAnswer()(q).answer)
    assert answer[3:6] == ["   ```python", "   ...", "           self.json: JSONProvider = self.json_provider_class(self)"]


CHI_THROTTLE = """// ThrottleOpts represents a set of throttling options.
type ThrottleOpts struct {
\tLimit          int
\tBacklogLimit   int
}

// Throttle is a middleware that limits number of currently processed requests
// at a time across all users.
func Throttle(limit int) func(http.Handler) http.Handler {
\treturn ThrottleWithOpts(ThrottleOpts{Limit: limit})
}

// ThrottleBacklog is a middleware that limits number of currently processed
// requests at a time and provides a backlog.
func ThrottleBacklog(limit, backlogLimit int) func(http.Handler) http.Handler {
\treturn ThrottleWithOpts(ThrottleOpts{Limit: limit, BacklogLimit: backlogLimit})
}
"""  # chi's middleware/throttle.go 19-41, shortened


def test_the_definition_whose_whole_name_the_question_spells_labels_and_opens_the_span():
    """A newcomer's "how does the Throttle middleware limit concurrent requests" cited chi's
    ``throttle.go`` labelled ``ThrottleOpts`` and opened on the options struct: the three
    definitions' own lines hold as many of its words, and the first won. The one whose whole name
    the question spells wins now; a closure opens on the function around it (flask's
    ``with_appcontext.decorator`` opened on the inner ``def``, past the docstring)."""
    terms = question_terms("How does the Throttle middleware limit concurrent requests?")
    hit = Hit("t", "middleware/throttle.go", "go", 19, 35, "ThrottleOpts", CHI_THROTTLE, 1.0)
    assert matched_symbol(hit, terms) == "ThrottleOpts, Throttle"
    doc = Document("middleware/throttle.go", "/ws", 19, 35, "ThrottleOpts, Throttle", "go", CHI_THROTTLE, 1.0)
    assert open_line(doc, terms) == 19 + 6  # its doc comment's first line
    closure = (
        "def with_appcontext(f):\n"
        '    """Wraps a callback so that it runs in the app context."""\n'
        "\n"
        "    @click.pass_context\n"
        "    def decorator(ctx, *args, **kwargs):\n"
        "        return ctx.invoke(f, *args, **kwargs)\n"
        "\n"
        "    return update_wrapper(decorator, f)\n"
    )
    doc = _doc("cli.py", 380, 387, 0.9, closure, "with_appcontext.decorator")
    assert open_line(doc, question_terms("how does a command run in the app context")) == 380
    # a class local to a test function, two definitions deep: from the test (flask's test_views.py)
    local = (
        "def test_endpoint_override(app):\n"
        "    app.debug = True\n"
        "\n"
        "    class Index(flask.views.MethodView):\n"
        "        methods = ['GET', 'POST']\n"
        "\n"
        "        def dispatch_request(self):\n"
        "            return flask.request.method\n"
    )
    doc = _doc("tests/test_views.py", 171, 178, 0.9, local, "test_endpoint_override.Index.dispatch_request")
    assert open_line(doc, question_terms("how does a view dispatch the request")) == 171
    # a class of several methods: the method, not the class
    cart = "class Cart:\n    def add(self, item):\n        pass\n\n    def total(self):\n        return 0\n"
    doc = _doc("cart.py", 1, 6, 0.9, cart, "Cart.total")
    assert open_line(doc, question_terms("how is the cart total computed")) == 5


GO_PACKED = (  # chi's mux.go 502-532: three functions packed in one chunk, stored under no symbol
    "// Recursively update data on child routers.\n"
    "func (mx *Mux) updateSubRoutes(fn func(subMux *Mux)) {\n\tfor _, r := range mx.tree.routes() {\n\t\tfn(r)\n\t}\n}\n\n"
    "// updateRouteHandler builds the single mux handler.\n"
    "func (mx *Mux) updateRouteHandler() {\n\tmx.handler = chain(mx.middlewares, http.HandlerFunc(mx.routeHTTP))\n}\n\n"
    "func methodNotAllowedHandler(methodsAllowed ...methodTyp) func(w http.ResponseWriter, r *http.Request) {\n"
    "\treturn nil\n}\n"
)


def test_a_packed_chunk_is_labelled_by_an_inflected_word_and_never_left_blank():
    """A newcomer's "how is middleware chained" cited chi's ``mux.go:502-532`` with no label: the
    chunk is stored under no symbol, and no definition held "middleware" or "chained" as written
    (``mx.middlewares``, ``chain(...)``). An inflection either way now counts; with no word held,
    the chunk is named by its first definition."""
    hit = Hit("m", "mux.go", "go", 502, 520, "", GO_PACKED, 1.0)
    assert (
        matched_symbol(hit, question_terms("how is middleware chained"))
        == "Mux.updateSubRoutes, Mux.updateRouteHandler"
    )
    assert matched_symbol(hit, question_terms("where are sessions stored")) == "Mux.updateSubRoutes"


def test_of_definitions_holding_as_many_words_the_one_named_by_one_labels_the_chunk():
    """flask's ``RequestContext.copy`` (its docstring says "flask", "app", "request", "context") and
    ``push`` hold as many of "how does flask push the app context for a request"; the label named
    ``copy`` alone, the first of the two, and the snippet showed its docstring. The one whose name
    spells a word of the question (``push``) wins the tie; function words ("how", "the", "for") count
    for neither."""
    content = (
        "    def copy(self):\n"
        '        """A copy of this request context for the flask app, the same for how it runs."""\n'
        "        return self\n\n"
        "    def push(self):\n        app_ctx = self.app.app_context(self.request)\n        app_ctx.enter()\n"
    )
    hit = Hit("c", "ctx.py", "python", 337, 343, "RequestContext.copy", content, 1.0)
    terms = question_terms("how does flask push the app context for a request")
    assert matched_symbol(hit, terms) == "RequestContext.copy, RequestContext.push"


def test_ask_sends_the_definition_not_the_import_block(tmp_path):
    root = tmp_path / "ws"
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    # a header as long as requests' sessions.py one (a chunk of its own) that names the question's words
    imports = "".join(
        f"from .session_cookies_{i} import persist_cookies_{i}, requests_cookies_{i}\n" for i in range(40)
    )
    helpers = "\n\n".join(
        f"def helper_{i}(value):\n"
        + "".join(f"    value = value * {i} + {n}\n" for n in range(25))
        + "    return value\n"
        for i in range(3)
    )
    source = HEADER + imports + "\n\n" + helpers + "\n\n" + PERSIST
    (pkg / "sessions.py").write_text(source, encoding="utf-8")
    (pkg / "other.py").write_text("def unrelated():\n    return 42\n", encoding="utf-8")
    ws = Workspace([root], env={})
    ws.index()
    answer = ws.ask("How are cookies persisted across requests in a session?", no_llm=True)
    first = answer.sources[0]
    assert first.path == "pkg/sessions.py"
    text = (pkg / "sessions.py").read_text().splitlines()
    def_line = text.index("def persist_cookies(session, response):") + 1
    assert first.start_line <= def_line <= first.end_line, (first.start_line, first.end_line)
    assert all(not is_boilerplate(x["content"], "python", x["symbol"]) for x in first.spans)


def test_widening_is_on_by_default_and_off_at_one_span_per_file(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text("def a():\n    return 1\n", encoding="utf-8")
    on = Workspace([tmp_path], env={}).build_pipeline(llm=None)
    assert [s.name for s in on.response_transformers] == ["neighbours", "one_per_file", "widen"]
    monkeypatch.setattr(widen, "SPANS_PER_FILE", 1)
    off = Workspace([tmp_path], env={}).build_pipeline(llm=None)
    assert [s.name for s in off.response_transformers] == ["neighbours", "one_per_file"]


def test_a_merged_span_is_named_by_the_definitions_it_holds():
    """A neighbour before the lead merged into its span: the span opens on the neighbour's definition,
    so it is named first (``BaseAdapter, HTTPAdapter``; it was ``HTTPAdapter`` alone); a neighbour holding
    the lead's own class head adds nothing to ``BaseAdapter.close``; one after the lead is named after it
    (``HTTPAdapter, Retry``: it was ``HTTPAdapter`` alone, hiding the ``Retry`` the span ends in)."""

    def merged(*docs: Document) -> list[str]:
        return [d.symbol for d in Widen(spans_per_file=2)(_retrieved(list(docs), [docs[0]])).documents]

    http = _doc("a.py", 20, 40, 0.9, symbol="HTTPAdapter")
    assert merged(http, _doc("a.py", 1, 19, 0.8, symbol="BaseAdapter")) == ["BaseAdapter, HTTPAdapter"]
    assert merged(http, _doc("a.py", 41, 60, 0.8, symbol="Retry")) == ["HTTPAdapter, Retry"]
    assert merged(http, _doc("a.py", 41, 60, 0.8, symbol="HTTPAdapter")) == ["HTTPAdapter"]
    close = _doc("a.py", 20, 40, 0.9, symbol="BaseAdapter.close")
    assert merged(close, _doc("a.py", 1, 19, 0.8, symbol="BaseAdapter")) == ["BaseAdapter.close"]
    assert merged(close, _doc("a.py", 1, 19, 0.8, symbol="")) == ["BaseAdapter.close"]


def test_the_question_names_a_definition_in_words():
    named = names_definition("How does a request context get pushed, and popped around a view call?")
    level = lambda symbol: named(_hit("ctx.py", symbol, "pass\n", 1, symbol))  # noqa: E731
    assert level("RequestContext") == level("request_context") == level("AppContext.push, RequestContext") == 2
    assert level("RequestContext.push") == 2  # a method of the class named
    assert level("Request.context_push") == 0  # "request context get pushed": not consecutive
    assert level("AppContext") == 0 and level("View.call") == 2  # "app" is not in the question; "view call" is
    assert level("push") == level("View") == 0  # one word names no definition
    assert level("RequestContextManager") == 0  # a name's last parts must be spelled
    assert level("WsgiRequestContext") == 2  # a kind of request context, as English names one
    assert level("copy_current_request_context") == 0  # a function that copies one is not
    blueprints = names_definition("How are blueprints registered on an application?")
    hit = lambda symbol: _hit("b.py", symbol, "pass\n", 1, symbol)  # noqa: E731
    assert blueprints(hit("Blueprint.register")) == 2 and blueprints(hit("App.register_blueprint")) == 0
    assert blueprints(hit("AppBlueprint")) == 0  # "application" is another word than "app", not an inflection
    assert names_definition("Rebuild proxies on Session#send")(hit("Session.send")) == 2
    assert names_definition("the session sends a request")(hit("Session.request")) == 0
    assert names_definition("the session sends a request")(hit("Session.send")) == 2
    cookie = names_definition("How does the session interface save the session cookie?")
    assert cookie(hit("SecureCookieSessionInterface.save_session")) == 4  # determiners skipped
    assert cookie(hit("SessionInterface.make_null_session")) == 2  # named less fully: it comes after
    assert cookie(hit("NullSession.save_session")) == 2  # the method's own name spelled
    pyfile = names_definition("How does Flask load config from a Python file?")
    assert pyfile(hit("Config.from_pyfile")) == 3  # "python file" written as one part
    assert pyfile(hit("Config.from_file")) == pyfile(hit("Config.from_envvar")) == 0  # not spelled in order
    assert names_definition("join a url to the base name")(hit("urljoin")) == 0  # words out of order
    assert names_definition("the base name of a path")(hit("basename")) == 0  # one part: no definition
    assert names_definition("get the base name of a path")(hit("get_basename")) == 2
    assert names_definition("the remote version")(hit("Remote.remove_version")) == 0  # "remote" is no "remo"
    client = names_definition("How does the test client open a request?")
    packed = "    def _copy_environ(self, other):\n        return other\n\n    def open(self, *args):\n        return self.run(args)\n"
    assert client(_hit("testing.py", "c", packed, 193, "FlaskClient")) == 2  # a method packed in its class's chunk
    assert client(_hit("testing.py", "c", packed.replace("def open", "def run"), 193, "FlaskClient")) == 0


_METHODS = "".join(
    f"\n    def {name}(self, *args):\n        return self.{name}_hook(*args)\n"
    for name in ("enter", "leave", "copy", "match", "bind", "close", "reset", "lookup", "attach", "detach")
)
CONTEXTS = (
    textwrap.dedent(
        '''\
        class AppContext:
            """The application context. It is pushed when a request context is pushed and popped when
            the request context is popped, around every view call; a request context pushes and pops it."""

            def push(self):
                _app_stack.append(self)

            def pop(self):
                _app_stack.pop()
        '''
    )
    + _METHODS
    + textwrap.dedent(
        """\


        class RequestContext:
            def __init__(self, app, environ):
                self.app = app
                self.request = app.request_class(environ)

            def push(self):
                app_ctx = self.app.app_context()
                app_ctx.push()
                _request_stack.append(self)

            def pop(self):
                _request_stack.pop()
                self.app.do_teardown_request()
        """
    )
    + _METHODS
)


def test_the_definition_a_question_names_leads_its_file(tmp_path, monkeypatch):
    """A question naming ``RequestContext`` in words gets ``ctx.py`` led by it, not by the
    ``AppContext`` whose docstring repeats the question's words (flask's ``ctx.py`` did so); one span
    per file, so the lead is not merged with its neighbour."""
    monkeypatch.setattr(widen, "SPANS_PER_FILE", 1)
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "ctx.py").write_text(CONTEXTS, encoding="utf-8")
    (root / "pkg" / "views.py").write_text("def dispatch(view, request):\n    return view(request)\n", encoding="utf-8")
    ws = Workspace([root], env={})
    ws.index()
    answer = ws.ask("How does a request context get pushed and popped around a view call?", no_llm=True)
    [ctx] = [s for s in answer.sources if s.path == "pkg/ctx.py"]
    assert ctx.start_line == CONTEXTS.splitlines().index("class RequestContext:") + 1
    assert ctx.symbol.startswith("RequestContext"), ctx.symbol
