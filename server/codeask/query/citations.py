"""Numbered citations: the answer cites ``[n]`` for the n-th document of its prompt; codeask checks them.

The ``document`` template numbers each document (``[1]``, ``[2]``, ... in prompt order) and the
``answer`` template asks the model to cite those numbers. :func:`check_citations` then reads the
answer:

* a ``[n]`` with ``1 <= n <= len(documents)`` is valid and rendered as a markdown link to that
  document's line range (``[[2]](file:///abs/path#L10-L20)``);
* a ``[n]`` naming no document is removed from the markdown and listed in ``invalid``;
* ``share`` is the share of the answer's paragraphs (blocks of text separated by blank lines,
  outside code blocks, headings and list markers alone excluded) that carry at least one valid
  citation.

Citations inside code blocks or inline code are left alone (``a[1]`` is code, not a citation).

**Attributed citations.** Small local models often name the right code without writing ``[n]``.
For each paragraph with no valid model-written citation, codeask attributes citations from what the
paragraph names verifiably (:func:`attribute`): a backticked name, or a dotted, snake_case or
CamelCase identifier, or a file path, that one document defines (``def name``, ``class name``,
``fn``/``function``/``struct``... ``name``, ``name =`` at a line start, or the document's own
symbol) or, failing a definition, that occurs (whole word) in exactly one document's text; a path
names the first document of that file. A dotted name is tried whole, then by its last part
(``PreparedRequest.prepare_cookies`` -> ``prepare_cookies``). Names defined or mentioned by several
documents, language keywords and builtins attribute nothing. Attributed citations are shown apart
from the model's: the paragraph ends with ``*(named here: [[2]](uri), [[5]](uri))*`` and they are
counted separately (``attributed_share``); ``share`` stays the model-written one. A paragraph whose
model-written ``[n]`` cite none of the documents its names point to (a small model may cite ``[1]``
everywhere) is listed in ``mismatched`` and gets the ``named here`` links too.

The sources of an answer never come from here: they are the documents; this only checks the text.
"""

from __future__ import annotations

import builtins
import keyword
import re
from dataclasses import dataclass, field

from codeask.query.pipeline import Document

__all__ = ["Attribution", "CitationCheck", "attribute", "check_citations"]

# [3], [1, 2], [1][2]; not [x], not [3](link) (an existing markdown link), not a[3] (indexing).
_CITE = re.compile(r"(?<![\w\]\)])((?:\[\d{1,3}(?:\s*,\s*\d{1,3})*\])+)(?![(\[])")
_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"`[^`\n]*`")


@dataclass
class CitationCheck:
    """The result of :func:`check_citations`.

    Attributes:
        markdown: the answer with valid ``[n]`` as links and invalid ones removed.
        valid: document numbers cited that exist (1-based, in order of first use).
        invalid: numbers cited that name no document.
        share: share in ``[0, 1]`` of paragraphs with at least one valid citation (``0.0`` for an
            answer without paragraphs).
    """

    markdown: str
    valid: list[int] = field(default_factory=list)
    invalid: list[int] = field(default_factory=list)
    share: float = 0.0
    attributed: list[Attribution] = field(default_factory=list)
    """Citations codeask attributed from the names paragraphs use, in order: to paragraphs without a
    valid model-written one, and to :attr:`mismatched` ones."""
    attributed_share: float = 0.0
    """Share in ``[0, 1]`` of paragraphs with no valid model-written citation but at least one
    attributed one; ``share + attributed_share`` is the share with any valid citation."""
    paragraphs: int = 0
    """How many paragraphs the answer has (the denominator of the shares)."""
    mismatched: list[int] = field(default_factory=list)
    """Paragraphs (0-based) whose valid model-written ``[n]`` cite none of the documents the names
    they use point to (e.g. every item citing ``[1]``): re-pointed when one document defines what
    they name, else their attributed citations are shown too."""
    repointed: list[dict[str, object]] = field(default_factory=list)
    """Model citations moved to the one document defining what their paragraph names:
    ``{"paragraph", "from", "to", "name"}`` (shown as ``[[to]](uri)`` with a note)."""
    unverified: list[dict[str, int]] = field(default_factory=list)
    """Model citations of a paragraph naming code that is not in the cited document, and not
    re-pointed: ``{"paragraph", "n"}`` (shown followed by ``*(unverified)*``)."""

    @property
    def mismatched_share(self) -> float:
        """Share in ``[0, 1]`` of paragraphs in :attr:`mismatched`."""
        return round(len(self.mismatched) / self.paragraphs, 3) if self.paragraphs else 0.0


@dataclass(frozen=True)
class Attribution:
    """One attributed citation: paragraph ``paragraph`` (0-based, in answer order) names ``name``,
    which document ``n`` (1-based prompt number) defines (``how="defined"``) or alone mentions
    (``how="mentioned"``, or ``"path"`` for a file path)."""

    paragraph: int
    n: int
    name: str
    how: str

    def to_json(self) -> dict[str, object]:
        """``{"paragraph", "n", "name", "how"}``."""
        return {"paragraph": self.paragraph, "n": self.n, "name": self.name, "how": self.how}


def check_citations(text: str, documents: list[Document]) -> CitationCheck:
    """Check and render the ``[n]`` citations of ``text`` against ``documents`` (prompt order)."""
    r = _Renderer(documents)
    for line in text.splitlines():
        r.read(line)
    paragraphs_lines = [(texts, rows) for texts, rows, _ in r.paragraphs]
    cites = [c for _, _, c in r.paragraphs]
    attributed, mismatched, repointed, unverified = _verify(paragraphs_lines, cites, documents, r.out_lines)
    count = len(r.paragraphs)
    share = sum(1 for c in cites if c) / count if count else 0.0
    attributed_share = len({a.paragraph for a in attributed if not cites[a.paragraph]}) / count if count else 0.0
    return CitationCheck(
        markdown="\n".join(r.out_lines),
        valid=r.valid,
        invalid=r.invalid,
        share=round(share, 3),
        attributed=attributed,
        attributed_share=round(attributed_share, 3),
        paragraphs=count,
        mismatched=mismatched,
        repointed=repointed,
        unverified=unverified,
    )


class _Renderer:
    """One pass over an answer's lines: ``[n]`` citations become links to ``documents[n - 1]``
    (``valid`` and ``invalid`` numbers in order of first use), code fences and headings pass
    through, and each paragraph (or list item) outside code is recorded as ``(its lines, their
    indices in out_lines, the valid numbers it cites)``."""

    def __init__(self, documents: list[Document]):
        self.documents = documents
        self.valid: list[int] = []
        self.invalid: list[int] = []
        self.out_lines: list[str] = []
        self.paragraphs: list[tuple[list[str], list[int], set[int]]] = []
        self.in_code = False
        self.in_paragraph = False
        self.cited: set[int] = set()  # filled by _link(): the valid numbers of the line being rendered

    def _link(self, match: re.Match) -> str:
        links = []
        for part in re.findall(r"\d+", match.group(1)):
            n = int(part)
            if 1 <= n <= len(self.documents):
                if n not in self.valid:
                    self.valid.append(n)
                links.append(f"[[{n}]]({self.documents[n - 1].uri})")
                self.cited.add(n)
            elif n not in self.invalid:
                self.invalid.append(n)
        return "".join(links)

    def read(self, line: str) -> None:
        """Render ``line`` onto ``out_lines``, recording its paragraph."""
        if _FENCE.match(line):
            self.in_code = not self.in_code
            self.in_paragraph = False
            self.out_lines.append(line)
            return
        if self.in_code:
            self.out_lines.append(line)
            return
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):  # a blank line or a heading ends a paragraph
            self.in_paragraph = False
            self.out_lines.append(_render(line, self._link) if stripped else line)
            return
        self.cited.clear()
        rendered = _render(line, self._link)
        starts_item = bool(re.match(r"^\s*(?:[-*+]|\d+[.)])\s+", line))
        if not self.in_paragraph or starts_item:
            self.paragraphs.append(([], [], set()))
            self.in_paragraph = True
        texts, rows, cites = self.paragraphs[-1]
        cites |= self.cited
        texts.append(line)
        rows.append(len(self.out_lines))
        self.out_lines.append(rendered)


# what a paragraph may name: `code`, paths, dotted names, snake_case, CamelCase / camelCase
_PATH = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)+[\w-]+\.\w+|[\w-]+\.(?:py|pyi|js|jsx|ts|tsx|rs|go|java|rb|c|h|cc|cpp|hpp|cs|kt|swift|php|toml|json|yaml|yml|cfg|ini|md|rst))\b"
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_SNAKE = re.compile(r"^_*[A-Za-z0-9]+(?:_+[A-Za-z0-9]+)+_*$")
_CAMEL = re.compile(r"^[A-Za-z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+$")
_BUILTINS = frozenset(dir(builtins))
_COMMON = frozenset(keyword.kwlist) | _BUILTINS | {"self", "cls", "this", "true", "false", "null"}
_DEFINES = r"(?:def|class|function|fn|struct|enum|trait|interface|type|func|const|let|var)\s+"


def _names(text: str) -> list[tuple[str, bool]]:
    """``(name, is_path)`` of what ``text`` names, in order, once each: paths, the identifiers inside
    backticks (any form), and dotted, snake_case or CamelCase identifiers in the prose."""
    out: dict[str, bool] = {}
    for m in _PATH.finditer(text):
        out.setdefault(m.group(1), True)
    prose = _INLINE_CODE.sub(" ", _PATH.sub(" ", text))
    for code in _INLINE_CODE.finditer(text):
        for m in _NAME.finditer(code.group(0)):
            if not _PATH.fullmatch(m.group(0)):
                out.setdefault(m.group(0), False)
    for m in _NAME.finditer(prose):
        name = m.group(0).rstrip(".")
        if "." in name or _SNAKE.match(name) or _CAMEL.match(name):
            out.setdefault(name, False)
    return list(out.items())


def _resolve(name: str, documents: list[Document]) -> tuple[int, str] | None:
    """``(n, how)`` of the one document that defines ``name`` (else alone mentions it), or ``None``."""
    if len(name) < 3 or name in _COMMON or name.split(".", 1)[0] in _BUILTINS:
        return None
    defined = [i for i, d in enumerate(documents, 1) if _defines(d, name)]
    if len(defined) == 1:
        return defined[0], "defined"
    if defined:
        return None
    word = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
    mentioned = [i for i, d in enumerate(documents, 1) if word.search(d.content)]
    if len(mentioned) == 1:
        return mentioned[0], "mentioned"
    return None


def _defines(document: Document, name: str) -> bool:
    """Whether ``document`` defines ``name``: its symbol is the name or ends with its last part, or
    its text defines that last part (``def name``, ``name =``...)."""
    last = name.rsplit(".", 1)[-1]
    defines = re.compile(rf"(?m)(?:\b{_DEFINES}{re.escape(last)}\b|^{re.escape(last)}\s*[:=](?!=))")
    return (
        document.symbol == name or document.symbol.rsplit(".", 1)[-1] == last or bool(defines.search(document.content))
    )


def attribute(text: str, documents: list[Document], *, paragraph: int = 0) -> list[Attribution]:
    """The citations ``text`` (one paragraph) earns from the names it uses (see the module
    docstring): at most one per document, in the order the names appear; a document both named by
    its path and defining a later name is attributed for the definition (so a model citation of
    another window of that file is re-pointed to it: "- [2] `send_static_file` in `flask/app.py`",
    defined in [1], the `Flask` class head in [2])."""
    found: list[Attribution] = []
    seen: set[int] = set()
    for name, is_path in _names(text):
        hit: tuple[int, str] | None = None
        if is_path:
            files = [i for i, d in enumerate(documents, 1) if d.label == name or d.label.endswith("/" + name)]
            if files and len({documents[i - 1].label for i in files}) == 1:
                hit = (files[0], "path")
        else:
            hit = _resolve(name, documents)
            if hit is None and "." in name:
                hit = _resolve(name.rsplit(".", 1)[-1], documents)
        if hit is not None and hit[0] not in seen:
            seen.add(hit[0])
            found.append(Attribution(paragraph, hit[0], name, hit[1]))
        elif hit is not None and hit[1] == "defined":  # a definition outranks the file's path or a mention
            found = [
                Attribution(paragraph, a.n, name, "defined") if a.n == hit[0] and a.how != "defined" else a
                for a in found
            ]
    return found


def _checkable(text: str) -> list[str]:
    """The names of ``text`` a cited document can be checked against (:func:`_names`, long enough
    and not keywords or builtins)."""
    return [n for n, _ in _names(text) if len(n) >= 3 and n not in _COMMON and n.split(".", 1)[0] not in _BUILTINS]


def _holds(document: Document, name: str) -> bool:
    """Whether ``document`` holds ``name`` (a path: its label ends with it; else the name or its last
    part as a whole word of its text or its symbol)."""
    if "/" in name or _PATH.fullmatch(name):
        return document.label == name or document.label.endswith("/" + name)
    last = name.rsplit(".", 1)[-1]
    word = re.compile(rf"(?<!\w)(?:{re.escape(name)}|{re.escape(last)})(?!\w)")
    return bool(word.search(document.content) or word.search(document.symbol))


def _rerender(line: str, documents: list[Document], remap: dict[int, int], flagged: set[int]) -> str:
    """``line`` rendered with model citation ``n`` linking document ``remap.get(n, n)`` (each once),
    and ``*(unverified)*`` after those in ``flagged``."""

    def sub(match: re.Match) -> str:
        shown: list[int] = []
        for part in re.findall(r"\d+", match.group(1)):
            n = remap.get(int(part), int(part))
            if 1 <= n <= len(documents) and n not in shown:
                shown.append(n)
        return "".join(f"[[{n}]]({documents[n - 1].uri})" + (" *(unverified)*" if n in flagged else "") for n in shown)

    return _render(line, sub)


def _verify(
    paragraphs: list[tuple[list[str], list[int]]],
    cites: list[set[int]],
    documents: list[Document],
    out_lines: list[str],
) -> tuple[list[Attribution], list[int], list[dict[str, object]], list[dict[str, int]]]:
    """Check each paragraph's citations against the names it uses, editing ``out_lines`` in place:
    attributed citations (``named here``), model citations re-pointed to the one document defining
    what the paragraph names, the others that name none of its code flagged unverified.
    Returns ``(attributed, mismatched, repointed, unverified)``."""
    attributed: list[Attribution] = []
    mismatched: list[int] = []
    repointed: list[dict[str, object]] = []
    unverified: list[dict[str, int]] = []
    for i, (lines, rows) in enumerate(paragraphs):
        text = "\n".join(lines)
        found = attribute(text, documents, paragraph=i)
        names = _checkable(text) if cites[i] else []
        wrong = {n for n in cites[i] if names and not any(_holds(documents[n - 1], name) for name in names)}
        # the model cites a document its names point to, or one defining a name it uses (one
        # defined in several documents points to none: a function sent in two windows, issue 30)
        agrees = bool(cites[i] & {a.n for a in found}) or any(
            _defines(documents[n - 1], name) for n in cites[i] for name in names
        )
        if not agrees:
            attributed.extend(found)
        defined = [a for a in found if a.how == "defined"]
        if cites[i] and found and not agrees:
            mismatched.append(i)
            if len({a.n for a in defined}) == 1:
                to, name = defined[0].n, defined[0].name
                for row, raw in zip(rows, lines):
                    out_lines[row] = _rerender(raw, documents, {n: to for n in cites[i]}, set())
                moved = ", ".join(f"[{n}]" for n in sorted(cites[i]))
                out_lines[rows[-1]] = _noted(
                    out_lines[rows[-1]], f"re-pointed from {moved}: `{name}` is defined in [{to}]"
                )
                repointed.extend({"paragraph": i, "from": n, "to": to, "name": name} for n in sorted(cites[i]))
                continue
        if wrong:
            for row, raw in zip(rows, lines):
                out_lines[row] = _rerender(raw, documents, {}, wrong)
            unverified.extend({"paragraph": i, "n": n} for n in sorted(wrong))
        if found and not agrees:
            links = ", ".join(f"[[{a.n}]]({documents[a.n - 1].uri})" for a in found)
            if cites[i]:  # the model's numbers point elsewhere: say so beside the right links
                links += "; not in the cited " + ", ".join(f"[{n}]" for n in sorted(cites[i]))
            out_lines[rows[-1]] = _noted(out_lines[rows[-1]], f"named here: {links}")
    return attributed, mismatched, repointed, unverified


def _noted(line: str, note: str) -> str:
    """``line`` with `` *(note)*`` after it; an inline code span the line leaves open (a cut-off last
    line, ``calls `retry_``) is closed first, so the note is not read as code."""
    return f"{line}{'`' if line.count('`') % 2 else ''} *({note})*"


def _render(line: str, replace) -> str:
    """``line`` with citations outside inline code replaced; spaces left before a removed one dropped."""
    pieces = []
    last = 0
    for code in _INLINE_CODE.finditer(line):
        pieces.append(_CITE.sub(replace, line[last : code.start()]))
        pieces.append(code.group(0))
        last = code.end()
    pieces.append(_CITE.sub(replace, line[last:]))
    return re.sub(r"[ \t]+([.,;:])", r"\1", "".join(pieces)).rstrip()
