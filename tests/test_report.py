"""Questions shaped like bug reports: parsing frames/messages/prose, frame and string-literal rankings,
non-code project files down-weighted; end to end on a small workspace and on the requests sdist."""

from __future__ import annotations

import shutil

import pytest

from codeask.index.rows import Hit
from codeask.query.pipeline import Query
from codeask.query.report import parse_question
from codeask.query.steps import evidence
from codeask.query.steps.evidence import literal_pattern, literal_ranking, match_frame_path, string_literals
from codeask.query.steps.retrieve import named_file_ranking
from codeask.workspace import Workspace
from tests.workspaces import write_tree

PY_TRACE = """I get this when the server is down:

```
Traceback (most recent call last):
  File "/home/me/app/main.py", line 12, in <module>
    r = requests.get(url, timeout=3)
  File "C:\\Python312\\Lib\\site-packages\\requests\\api.py", line 73, in get
    return request("get", url, params=params, **kwargs)
  File "/usr/lib/python3.12/site-packages/requests/adapters.py", line 675, in send
    raise ConnectionError(e, request=request)
    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
requests.exceptions.ConnectionError: HTTPSConnectionPool(host='x.invalid', port=443): Max retries exceeded
```
"""


def test_python_traceback_frames_innermost_first_and_message():
    parts = parse_question(PY_TRACE)
    assert [(f.path, f.line, f.function) for f in parts.frames] == [
        ("/usr/lib/python3.12/site-packages/requests/adapters.py", 675, "send"),
        ("C:/Python312/Lib/site-packages/requests/api.py", 73, "get"),
        ("/home/me/app/main.py", 12, "<module>"),
    ]
    assert parts.messages == (
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='x.invalid', port=443): Max retries exceeded",
    )
    # frames, the source lines under them and the ^^^ markers leave the search text; prose and message stay
    assert "File " not in parts.search_text and "request(" not in parts.search_text and "^^^" not in parts.search_text
    assert "I get this when the server is down" in parts.search_text
    assert "Max retries exceeded" in parts.search_text
    assert parts.is_report


def test_other_stack_shapes():
    js = parse_question(
        "TypeError: Cannot read properties of undefined (reading 'id')\n"
        "    at getUser (/srv/app/src/users/service.ts:42:17)\n"
        "    at async Router.handle (file:///srv/app/node_modules/express/lib/router.js:10:3)\n"
        "    at http://localhost:3000/static/js/main.chunk.js:88:9\n"
    )
    assert [(f.path, f.line, f.function, f.style) for f in js.frames] == [
        ("/srv/app/src/users/service.ts", 42, "getUser", "javascript"),
        ("/srv/app/node_modules/express/lib/router.js", 10, "Router.handle", "javascript"),
        ("/static/js/main.chunk.js", 88, "", "javascript"),
    ]
    assert js.messages == ("TypeError: Cannot read properties of undefined (reading 'id')",)

    java = parse_question(
        'Exception in thread "main" java.lang.IllegalStateException: cart is closed\n'
        "\tat com.acme.shop.Cart.add(Cart.java:57)\n"
        "\tat com.acme.shop.Main.main(Main.java:9)\n"
    )
    assert [(f.path, f.line, f.function) for f in java.frames] == [
        ("com/acme/shop/Cart.java", 57, "com.acme.shop.Cart.add"),
        ("com/acme/shop/Main.java", 9, "com.acme.shop.Main.main"),
    ]
    assert java.messages == ('Exception in thread "main" java.lang.IllegalStateException: cart is closed',)

    go = parse_question(
        "panic: runtime error: index out of range [3] with length 3\n\n"
        "goroutine 1 [running]:\n"
        "github.com/acme/shop/cart.(*Cart).Total(...)\n"
        "\t/home/me/go/src/github.com/acme/shop/cart/cart.go:31 +0x1d\n"
        "main.main()\n"
        "\t/home/me/go/src/github.com/acme/shop/main.go:12 +0x25\n"
    )
    assert [(f.path, f.line, f.function) for f in go.frames] == [
        ("/home/me/go/src/github.com/acme/shop/cart/cart.go", 31, "github.com/acme/shop/cart.(*Cart).Total"),
        ("/home/me/go/src/github.com/acme/shop/main.go", 12, "main.main"),
    ]
    assert go.messages == ("runtime error: index out of range [3] with length 3",)

    rust = parse_question(
        "thread 'main' panicked at src/parser.rs:88:14:\ncalled `Option::unwrap()` on a `None` value\n"
        "stack backtrace:\n   0: shop::parser::parse_line\n             at ./src/parser.rs:88:14\n"
    )
    assert [(f.path, f.line, f.function) for f in rust.frames] == [
        ("src/parser.rs", 88, ""),
        ("src/parser.rs", 88, "shop::parser::parse_line"),
    ]

    pytest_out = parse_question(
        "    def test_total():\n>       assert cart.total() == 10\n"
        "E       AssertionError: assert 9.99 == 10\n\n"
        "src/shop/cart.py:19: in total\n    return apply_discount(subtotal, coupon)\n"
        "src/shop/pricing.py:8: ValueError\n"
    )
    assert [(f.path, f.line, f.function) for f in pytest_out.frames] == [
        ("src/shop/cart.py", 19, "total"),
        ("src/shop/pricing.py", 8, ""),
    ]
    assert pytest_out.messages == ("AssertionError: assert 9.99 == 10",)


def test_plain_question_is_unchanged_and_template_boilerplate_leaves_search_text():
    plain = "How does the session resolve redirects? It keeps the method since 2.3"
    parts = parse_question(plain)
    assert parts.search_text == plain and not parts.is_report

    report = (
        "<!-- Please fill in every section below. -->\n"
        "### Describe the bug\n\nThe checker crashes on tabs.\n\n"
        "### Checklist\n- [x] I searched existing issues\n\n"
        "### Environment\n- OS: Ubuntu 24.04\n- tabcheck: 1.4.0\n- Python version: 3.12.1\n"
    )
    parts = parse_question(report)
    assert parts.search_text == "The checker crashes on tabs."


def test_named_file_ranking_skips_names_several_files_carry():
    def hit(path, n):
        return Hit(str(n), path, "python", 1, 5, "", "pass", 0.0)

    pool = [hit("src/flask/app.py", 1), hit("src/flask/sansio/app.py", 2), hit("src/flask/helpers.py", 3)]
    paths = ["src/flask/app.py", "src/flask/sansio/app.py", "src/flask/helpers.py", "docs/conf.py"]
    question = "Consider this route and test in `app.py`: stream_with_context fails in helpers.py"
    ranked = named_file_ranking(pool, question, lambda: paths)
    assert [h.path for h in ranked] == ["src/flask/helpers.py"]  # app.py: the reporter's or one of two
    assert named_file_ranking(pool, "what does helpers.py do?", lambda: paths)[0].path == "src/flask/helpers.py"
    assert named_file_ranking(pool, "how does routing work?", lambda: paths) == []


def test_frame_paths_match_by_trailing_components():
    ws = ["src/requests/adapters.py", "src/requests/api.py", "tests/test_adapters.py", "app.py", "docs/api.rst"]
    assert match_frame_path("/usr/lib/python3.12/site-packages/requests/adapters.py", ws) == [
        "src/requests/adapters.py"
    ]
    assert match_frame_path("C:/Python312/Lib/site-packages/requests/api.py", ws) == ["src/requests/api.py"]
    assert match_frame_path("/home/me/proj/app.py", ws) == ["app.py"]
    assert match_frame_path("/home/me/other/adapters.py", ws) == []  # one component is not enough
    assert match_frame_path("<frozen importlib._bootstrap>", ws) == []


def test_string_literals_with_placeholders_match_messages():
    code = '''
def prepare_url(url):
    """Prepares the given HTTP URL. No scheme supplied here is documentation."""
    raise MissingSchema(
        f"Invalid URL {url!r}: No scheme supplied. "
        f"Perhaps you meant https://{url}?"
    )
    log.warning("retrying %s after %d seconds", url, delay)
'''
    literals = string_literals(code)
    assert "Invalid URL {url!r}: No scheme supplied. Perhaps you meant https://{url}?" in literals
    assert not any("documentation" in lit for lit in literals)  # docstrings are not output
    pattern, _, _ = literal_pattern("Invalid URL {url!r}: No scheme supplied. Perhaps you meant https://{url}?")
    assert pattern.search("Invalid URL 'abc': No scheme supplied. Perhaps you meant https://abc?")
    pattern, _, _ = literal_pattern("retrying %s after %d seconds")
    assert pattern.search("WARNING retrying http://x after 30 seconds")
    assert not pattern.search("retrying later")
    assert literal_pattern("utf-8")[0] is None and literal_pattern("{}: {}")[0] is None
    # keys and constants are not messages: prose that names a header is no quoted output
    assert literal_pattern("Content-Length")[0] is None
    assert literal_pattern("application/x-www-form-urlencoded")[0] is None
    assert literal_pattern("Content-Length is {length}")[0] is not None

    def hit(path, language, content, n):
        return Hit(str(n), path, language, 1, 5, "", content, 0.0)

    pool = [
        hit("docs/quickstart.rst", "rst", '"Invalid URL {url!r}: No scheme supplied."', 1),
        hit("tests/test_models.py", "python", 'assert str(e) == "Invalid URL \'abc\': No scheme supplied."', 2),
        hit("src/requests/adapters.py", "python", 'x = "adapter"', 3),
        hit("src/requests/models.py", "python", code, 4),
    ]
    ranked = literal_ranking(pool, "Invalid URL 'abc': No scheme supplied. Perhaps you meant https://abc?",
                             lambda p: p.startswith(("tests/", "docs/")))
    assert [h.path for h in ranked] == ["src/requests/models.py"]


TEMPLATE_PROJECT = {
    "src/tabcheck/checker.py": '''"""Indentation checks."""

import re

MIXED = re.compile(r"^( +\\t|\\t+ )")


def check_indentation(path, lines):
    """Yield one problem per line whose indentation mixes tabs and spaces."""
    for lineno, line in enumerate(lines, 1):
        if MIXED.match(line):
            yield f"{path}:{lineno}: mixed tabs and spaces in indentation"


def expand_tabs(line, width):
    """Replace leading tabs with ``width`` spaces each."""
    stripped = line.lstrip("\\t")
    return " " * width * (len(line) - len(stripped)) + stripped
''',
    "src/tabcheck/cli.py": '''"""Command line entry point."""

import sys

from tabcheck.checker import check_indentation


def main(argv=None):
    """Check each file named on the command line; exit 1 when any problem is found."""
    problems = 0
    for name in argv or sys.argv[1:]:
        with open(name, encoding="utf-8") as fh:
            for problem in check_indentation(name, fh.read().splitlines()):
                print(problem)
                problems += 1
    return 1 if problems else 0
''',
    ".github/ISSUE_TEMPLATE/bug_report.yml": """name: Bug report
description: Report a wrong indentation check
body:
  - type: textarea
    attributes:
      label: Describe the bug
      description: What did tabcheck report about tabs and spaces in indentation?
  - type: textarea
    attributes:
      label: Steps to reproduce
      description: The file and the tabcheck command you ran
  - type: textarea
    attributes:
      label: Actual output
      description: Paste the output of tabcheck
  - type: textarea
    attributes:
      label: Expected behavior
  - type: input
    attributes:
      label: tabcheck version
""",
    "ChangeLog": """2024-03-02  tabcheck 1.4.0

\t* Report mixed tabs and spaces in indentation only once per line.
\t* Bug report template: ask for the output and the tabcheck version.

2023-11-20  tabcheck 1.3.0

\t* Expand tabs in indentation before checking line width.
""",
    ".pylintrc": """[FORMAT]
# tabs and spaces in indentation: the project uses spaces
indent-string='    '
max-line-length=100

[MESSAGES CONTROL]
disable=mixed-indentation,bad-indentation
""",
    "README.md": "# tabcheck\n\nReports mixed tabs and spaces in indentation.\n",
}

TEMPLATE_QUESTION = """### Describe the bug

tabcheck reports lines that are indented with tabs only

### Steps to reproduce

Run tabcheck on a Makefile indented with tabs.

### Actual output

```
Makefile:3: mixed tabs and spaces in indentation
```

### Expected behavior

No report for a line indented with tabs only.

### tabcheck version

1.4.0
"""


def _ranked(ws: Workspace, question: str) -> list[str]:
    files: list[str] = []
    for s in ws.ask(question, no_llm=True, max_files=20).sources:
        if s.path not in files:
            files.append(s.path)
    return files


def test_template_shaped_question_puts_the_source_first(tmp_path):
    ws = Workspace([write_tree(tmp_path / "tabcheck", TEMPLATE_PROJECT)])
    ws.index()
    ranked = _ranked(ws, TEMPLATE_QUESTION)
    assert ranked[0] == "src/tabcheck/checker.py", ranked
    # the non-code files are down-weighted, not excluded: a question naming one still finds it
    assert _ranked(ws, "What changed in the ChangeLog for tabcheck 1.4.0?")[0] == "ChangeLog"
    assert _ranked(ws, "which checks does .pylintrc disable?")[0] == ".pylintrc"


CLI_TRACE = """tabcheck crashes on a folder

Traceback (most recent call last):
  File "/home/me/.venv/bin/tabcheck", line 8, in <module>
    sys.exit(main())
  File "/home/me/.venv/lib/python3.12/site-packages/tabcheck/cli.py", line 9, in main
    with open(name, encoding="utf-8") as fh:
IsADirectoryError: [Errno 21] Is a directory: 'src'
"""


def test_report_evidence_constant_turns_the_reading_of_reports_off(tmp_path, monkeypatch):
    root = write_tree(tmp_path / "tabcheck", TEMPLATE_PROJECT)
    Workspace([root]).index()

    def run():
        return Workspace([root]).build_pipeline(llm=None).run(Query(CLI_TRACE))

    on = run()
    assert on.parts.frames[0].path.endswith("site-packages/tabcheck/cli.py")
    assert on.search_texts[0] != CLI_TRACE  # frame lines and the source under them left the search text
    retrieve = next(e for e in on.history if e.step == "retrieve")
    assert retrieve.data["frame_hits"] >= 1
    assert on.retrieved_documents[0].path == "src/tabcheck/cli.py"

    monkeypatch.setattr(evidence, "REPORT_EVIDENCE", False)
    off = run()
    assert off.parts is None and off.search_texts == [CLI_TRACE]
    retrieve = next(e for e in off.history if e.step == "retrieve")
    assert retrieve.data["frame_hits"] == 0 and retrieve.data["literal_hits"] == 0


@pytest.fixture(scope="module")
def requests_ws(requests_sdist, tmp_path_factory):
    root = tmp_path_factory.mktemp("report") / "requests-2.34.2"
    shutil.copytree(requests_sdist, root)
    mp = pytest.MonkeyPatch()
    mp.setenv("CODEASK_CACHE_DIR", str(tmp_path_factory.mktemp("report-cache")))
    ws = Workspace([root])
    ws.index()
    yield ws
    mp.undo()


@pytest.mark.slow
def test_requests_message_and_traceback(requests_ws):
    ranked = _ranked(requests_ws, "Invalid URL 'abc': No scheme supplied. Perhaps you meant https://abc?")
    assert ranked[0] == "src/requests/models.py", ranked
    ranked = _ranked(requests_ws, PY_TRACE)
    assert ranked[0] == "src/requests/adapters.py", ranked
    # the same traceback pasted with the innermost frame in sessions.py points there instead
    moved = PY_TRACE.replace("requests/adapters.py\", line 675, in send", "requests/sessions.py\", line 703, in send")
    assert _ranked(requests_ws, moved)[0] == "src/requests/sessions.py"
