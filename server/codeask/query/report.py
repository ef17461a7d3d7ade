"""The parts of a question pasted from a bug report: stack frames, error messages and prose.

Developers often ask by pasting what went wrong: a traceback, an error line, a failing assertion's
output, or a whole report written in their project's issue template. Each part is evidence of a
different kind, so :func:`parse_question` splits the text (pure string work, no I/O):

* **frames**: one :class:`Frame` per stack-trace line that names a source file: Python
  (``File "...", line N, in f``, pytest's ``path.py:N: in f``), JavaScript/TypeScript
  (``at f (path.js:N:C)``), Java/Kotlin (``at pkg.Class.method(Class.java:N)``), Go (``pkg.f(...)``
  then ``\\tpath.go:N +0x..``), Rust (``at path.rs:N:C``, ``panicked at path.rs:N:C``) and
  compiler-style ``path.ext:N[:C]`` / ``--> path:N:C`` locations. Ordered innermost first.
* **messages**: exception lines (``requests.exceptions.MissingSchema: Invalid URL ...``), pytest's
  ``E   ...`` lines, ``error:`` / ``Error:`` / ``warning:`` lines and the other lines of code fences
  (program output), without their prefixes.
* **search_text**: the question without frame lines, the source lines Python prints under them,
  and issue-template boilerplate (short headings, ``<!-- instructions -->``, ``- [x]`` checklists,
  ``name: 1.2.3`` version lists), which is what hybrid search should read. A question with none of
  these is returned unchanged.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["Frame", "QuestionParts", "parse_question"]


@dataclass(frozen=True)
class Frame:
    """One stack frame that names a file.

    Attributes:
        path: the file as written, POSIX separators, ``file://`` and ``./`` removed
            (``/usr/lib/python3.12/site-packages/requests/adapters.py``).
        line: 1-based line number, or ``None`` when the trace gives none.
        function: the function or method name as written (``send``, ``Session.send``,
            ``com.acme.Cart.total``), ``""`` when unknown.
        style: ``python``, ``javascript``, ``java``, ``go``, ``rust`` or ``location`` (a bare
            ``path:line`` such as a compiler or linter prints).
    """

    path: str
    line: int | None
    function: str
    style: str


@dataclass(frozen=True)
class QuestionParts:
    """What :func:`parse_question` found in a question.

    Attributes:
        frames: innermost first (for Python's "most recent call last" tracebacks that is the last
            frame printed; for JavaScript, Java, Go and Rust the first). With several traces, the
            innermost frames of all traces come before the next level of any.
        messages: error messages and program output lines, prefixes (``E``, ``Error:``) removed,
            in question order, without duplicates.
        search_text: the text for keyword and dense search (see the module docstring).
    """

    frames: tuple[Frame, ...] = ()
    messages: tuple[str, ...] = ()
    search_text: str = ""
    dropped_lines: int = field(default=0, compare=False)

    @property
    def is_report(self) -> bool:
        """Whether the question carries frames or messages (it is shaped like a bug report)."""
        return bool(self.frames or self.messages)


# ------------------------------------------------------------------ frame shapes
_CODE_EXT = (
    r"(?:py|pyi|pyx|js|mjs|cjs|jsx|ts|mts|cts|tsx|java|kt|kts|scala|groovy|go|rs|rb|php|c|cc|cpp|h|hpp|"
    r"cs|swift|m|mm|lua|pl|ex|exs|erl|dart|zig|vue|svelte)"
)
_PY_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>[^\s]+))?')
_PYTEST_FRAME = re.compile(rf"^(?P<path>[^\s:]+\.{_CODE_EXT}):(?P<line>\d+): in (?P<func>\S+)\s*$")
_JS_FRAME = re.compile(
    r"^\s*at (?:(?P<func>(?:async |new )?[^\s(]+(?: \[as [^\]]+\])?) \()?"
    r"(?P<path>[^\s()]+?):(?P<line>\d+)(?::\d+)?\)?\s*$"
)
_JAVA_FRAME = re.compile(
    r"^\s*at (?P<func>[\w$.<>/]+)\((?P<file>[\w$-]+\.(?:java|kt|kts|scala|groovy|clj)):(?P<line>\d+)\)"
)
_GO_FUNC = re.compile(r"^(?P<func>[\w./*()\[\]-]+?)\((?:[^()]*)\)\s*$")
_GO_FILE = re.compile(r"^\s+(?P<path>\S+\.go):(?P<line>\d+)(?: \+0x[0-9a-f]+)?\s*$")
_RUST_AT = re.compile(r"^\s*at (?P<path>\S+\.rs):(?P<line>\d+)(?::\d+)?\s*$")
_RUST_FUNC = re.compile(r"^\s*\d+:\s+(?:0x[0-9a-f]+ - )?(?P<func>\S+)\s*$")
_RUST_PANIC = re.compile(r"panicked at (?:'.*', )?(?P<path>\S+\.rs):(?P<line>\d+)(?::\d+)?")
_LOCATION = re.compile(
    rf"(?:^|[\s(\[\"'])(?:--> )?(?P<path>(?:[A-Za-z]:)?[\w.~@+/\\-]*[\w-]\.{_CODE_EXT})"
    rf"(?::(?P<line>\d+)(?::\d+)?|\((?P<pline>\d+),\d+\))"
)
_FAKE_PATHS = ("<", "[")  # <frozen importlib._bootstrap>, <stdin>, <string>, [native code]

# ---------------------------------------------------------------- message shapes
_EXC_LINE = re.compile(
    r"^\s*(?:Uncaught |Exception in thread \"[^\"]*\" |Caused by: |raise )?"
    r"(?P<type>[A-Za-z_$][\w.$]{0,200}(?:Error|Exception|Warning|Exit|Interrupt|Failure|Fault|Panic|Invalid\w{0,60}|"
    r"Missing\w{0,60}|NotFound|Timeout))(?::\s*(?P<msg>.*))?\s*$"
)
_E_LINE = re.compile(r"^E\s{2,}(?P<msg>\S.*)$")
_PREFIXED = re.compile(
    r"^\s*(?:\[?(?:ERROR|Error|error|FATAL|Fatal|fatal|CRITICAL|WARNING|Warning|warning|panic)\]?"
    r"(?:\[[\w-]+\])?[:!]\s*)(?P<msg>\S.*)$"
)
_FENCE = re.compile(r"^\s*(```|~~~)")

# --------------------------------------------------------------- boilerplate shapes
_HEADING = re.compile(r"^\s*(?:#{1,6}\s+(?P<h>.*?)\s*#*\s*|\*\*(?P<b>[^*]+)\*\*:?\s*|__(?P<u>[^_]+)__:?\s*)$")
_CHECKBOX = re.compile(r"^\s*[-*] \[[ xX]\]")
_VERSION_LINE = re.compile(
    r"^\s*(?:[-*]\s*)?[\w.()/+-]+(?: [\w.()/+-]+){0,2}\s*(?::|==|>=)\s*(?:[A-Za-z][\w.-]*\s+)?v?\d+(?:\.[\w+-]+)+\s*(?:\(.*\))?\s*$"
)
_HTML_TAG_LINE = re.compile(r"^\s*</?(?:details|summary|br|p)\b[^>]*>\s*$", re.I)


def _without_html_comments(text: str) -> str:
    """``text`` without ``<!-- ... -->`` comments (an unclosed one stays), in one pass: the regex
    ``<!--.*?-->`` rescans to the end from every unclosed ``<!--``, quadratic in a long paste."""
    out: list[str] = []
    i = 0
    while (start := text.find("<!--", i)) >= 0 and (end := text.find("-->", start + 4)) >= 0:
        out.append(text[i:start])
        i = end + 3
    out.append(text[i:])
    return "".join(out)


def _clean_path(path: str) -> str:
    path = path.strip().replace("\\", "/")
    for prefix in ("file://", "webpack:///", "webpack://"):
        if path.startswith(prefix):
            path = path[len(prefix) :]
    path = re.sub(r"^https?://[^/]*", "", path).split("?", 1)[0]
    while path.startswith("./"):
        path = path[2:]
    return path


def _java_path(func: str, file: str) -> str:
    # com.acme.shop.Cart.total -> com/acme/shop/Cart.java (package dirs + file name)
    parts = func.split("/")[-1].split(".")
    package = [p for p in parts[:-2] if p and p[0].islower()]
    return "/".join([*package, file])


def _heading_text(line: str) -> str | None:
    m = _HEADING.match(line)
    if not m:
        return None
    return (m.group("h") or m.group("b") or m.group("u") or "").strip()


def parse_question(question: str) -> QuestionParts:
    """Split ``question`` into frames, messages and the text to search (see :class:`QuestionParts`).

    Never raises; a question that is plain prose gives no frames, no messages and
    ``search_text == question``. Linear in the question's length (a pasted report may be 200,000
    characters): every pattern's backtracking is bounded, and repeats are found through sets.
    """
    text = _without_html_comments(question)
    reader = _Reader(text.splitlines())
    for i, line in enumerate(reader.lines):
        reader.read(i, line)
    if not reader.dropped and text == question:
        search_text = question
    else:
        search_text = re.sub(r"\n{3,}", "\n\n", "\n".join(reader.keep)).strip() or question
    return QuestionParts(_innermost_first(reader.found), tuple(reader.messages), search_text, reader.dropped)


def _innermost_first(found: list[tuple[int, int, Frame]]) -> tuple[Frame, ...]:
    """The frames of ``found`` (``(block, order in block, frame)``, blocks are traces in text order)
    innermost first, without duplicates: Python blocks print their innermost frame last."""
    sizes = Counter(b for b, _, _ in found)
    ordered = []
    for b, k, frame in found:
        depth = (sizes[b] - 1 - k) if frame.style == "python" else k
        ordered.append((depth, b, frame))
    ordered.sort(key=lambda t: (t[0], t[1]))
    return tuple(dict.fromkeys(frame for _, _, frame in ordered))


def _is_template_line(line: str) -> bool:
    """Whether ``line`` (outside a code fence) is issue-template boilerplate: a short heading (six
    words at most), a ``- [x]`` checkbox, a bare ``<details>``-like tag or a ``name: 1.2.3`` version."""
    heading = _heading_text(line)
    if heading is not None and len(heading.split()) <= 6:
        return True
    return bool(_CHECKBOX.match(line) or _HTML_TAG_LINE.match(line) or _VERSION_LINE.match(line))


class _Reader:
    """One pass over a question's lines: frames (``found``: ``(block, order in block, frame)``),
    messages in question order, the lines kept for the search text and the count ``dropped``."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.found: list[tuple[int, int, Frame]] = []
        self.messages: dict[str, None] = {}  # in question order, without duplicates
        self.keep: list[str] = []
        self.dropped = 0
        self.block, self.block_style, self.block_count = 0, "", 0
        self.in_fence = False
        self.after_frame = 0  # 1: a Python frame line came last, 2: then its source line
        self.pending_func = ""  # a Rust or Go function line waiting for its file line

    def read(self, i: int, line: str) -> None:
        """Read line ``i``: a frame line (or a line printed with one) is dropped from the search
        text; other lines give locations and messages, and stay unless they are template boilerplate."""
        if _FENCE.match(line):
            self.in_fence = not self.in_fence
            self.keep.append(line)
            self.after_frame = 0
            return
        stripped = line.strip()
        if self._python_frame(line, stripped) or self._other_frame(i, line, stripped):
            self.dropped += 1
            return
        self._locations(line)
        self._message(line, stripped)
        if not self.in_fence and _is_template_line(line):
            self.dropped += 1
            return
        self.keep.append(line)

    def _add_frame(self, frame: Frame) -> None:
        if frame.path.startswith(_FAKE_PATHS) or not frame.path:
            return
        if frame.style != self.block_style:
            self.block, self.block_style, self.block_count = self.block + 1, frame.style, 0
        self.found.append((self.block, self.block_count, frame))
        self.block_count += 1

    def _add_message(self, msg: str) -> None:
        msg = msg.strip()
        if len(msg) >= 3:
            self.messages.setdefault(msg)

    def _python_frame(self, line: str, stripped: str) -> bool:
        """Whether ``line`` belongs to a Python traceback: its header, a frame, the source line
        under a frame or the 3.11+ error markers under that."""
        if "Traceback (most recent call last)" in line:
            self.block_style = ""  # a new Python trace starts a new block
            return True
        m = _PY_FRAME.match(line)
        if m:
            self._add_frame(Frame(_clean_path(m["path"]), int(m["line"]), m["func"] or "", "python"))
            self.after_frame = 1
            return True
        if self.after_frame and stripped and set(stripped) <= {"^", "~", " "}:
            return True  # Python 3.11+ error markers under the source line
        if self.after_frame == 1 and stripped and line[:1].isspace():
            self.after_frame = 2  # the source line Python prints under a frame
            return True
        self.after_frame = 0
        return False

    def _other_frame(self, i: int, line: str, stripped: str) -> bool:
        """Whether ``line`` is a pytest, Java, Rust, JavaScript or Go frame line, or a Rust or Go
        function line whose file line follows (its name goes to that frame)."""
        following = self.lines[i + 1] if i + 1 < len(self.lines) else ""
        if m := _PYTEST_FRAME.match(stripped):
            self._add_frame(Frame(_clean_path(m["path"]), int(m["line"]), m["func"], "python"))
        elif m := _JAVA_FRAME.match(line):
            self._add_frame(Frame(_java_path(m["func"], m["file"]), int(m["line"]), m["func"], "java"))
        elif m := _RUST_AT.match(line):
            self._add_frame(Frame(_clean_path(m["path"]), int(m["line"]), self.pending_func, "rust"))
            self.pending_func = ""
        elif m := _JS_FRAME.match(line):
            func = (m["func"] or "").removeprefix("async ")
            self._add_frame(Frame(_clean_path(m["path"]), int(m["line"]), func, "javascript"))
        elif m := _GO_FILE.match(line):
            self._add_frame(Frame(_clean_path(m["path"]), int(m["line"]), self.pending_func, "go"))
            self.pending_func = ""
        elif ((m := _RUST_FUNC.match(line)) and _RUST_AT.match(following)) or (
            (m := _GO_FUNC.match(stripped)) and _GO_FILE.match(following)
        ):
            self.pending_func = m["func"]
        else:
            return False
        return True

    def _locations(self, line: str) -> None:
        """The frames a line that stays names: a Rust panic's location, else ``path:line`` locations."""
        if m := _RUST_PANIC.search(line):
            self._add_frame(Frame(_clean_path(m["path"]), int(m["line"]), "", "rust"))
            return
        for m in _LOCATION.finditer(line):
            path = _clean_path(m["path"])
            lineno = m["line"] or m["pline"]
            if lineno:
                self._add_frame(Frame(path, int(lineno), "", "location"))

    def _message(self, line: str, stripped: str) -> None:
        """The message a line that stays carries (the line stays in the search text)."""
        if m := _E_LINE.match(line):
            self._add_message(m["msg"])
        elif (m := _EXC_LINE.match(line)) and (m["msg"] or "." in m["type"] or self.in_fence):
            self._add_message(stripped.removeprefix("raise ").removeprefix("Caused by: "))
        elif m := _PREFIXED.match(line):
            self._add_message(m["msg"])
        elif self.in_fence and stripped:
            self._add_message(stripped)
