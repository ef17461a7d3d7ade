"""What the answer template is told beside the documents: whether the question asks for code
(:func:`wants_code`), and the code names an answer should use (:func:`code_cues`): the definitions
the documents sent hold and the code-like identifiers on their lines about the question, each with
the number of the document showing it.

A small local model drops names it was shown: in issue 30's runs Qwen2.5-Coder-1.5B was sent the
key facts of the first 12 questions 0.85 of the time but named 0.36-0.49 of them, writing "the URL
rule" for ``url_rule``, "the view functions dictionary" for ``view_functions``, and "the
Authorization header is removed" beside a snippet defining ``should_strip_auth``. It copies what the
prompt spells out near its end, so the answer template lists these names there (``names``) with the
snippet numbers, in the form its points take (``[2] `should_strip_auth```).

The names come from workspace text, but only as identifiers (:data:`~codeask.index.rows.IDENT`: letters,
digits, underscores) in backticks: no sentence of a file reaches the instructions this way.
"""

from __future__ import annotations

import re
from functools import lru_cache

from codeask.index.rows import IDENT
from codeask.lines import split_lines
from codeask.query.focus import line_score
from codeask.query.pipeline import Document

__all__ = ["code_cues", "cue_line", "wants_code", "MAX_CUES"]

#: The most names listed: the answer template asks for at most six points. With 8, Qwen2.5-Coder-1.5B
#: wrote a point per name, up to 11 (a35's run, bench/results/answers-a35.md).
MAX_CUES = 6
_WANTS_CODE = re.compile(
    r"\b(example|snippet|sample|show me|write|implement|code for|how (do|can|would|should) i (use|call|write))\b",
    re.IGNORECASE,
)


def _code_like(line: str, match: re.Match[str]) -> bool:
    """Whether the identifier ``match`` on ``line`` is a name of the code a reader looks up rather
    than a word or a local variable: four characters or more, not a dunder, and either a constant
    (``REQUESTS_CA_BUNDLE``), an attribute or a call with an inner underscore or capital
    (``req.url_rule``, ``self.from_pyfile(..)``, ``iterContent(..)``), or a capitalized call (a class
    built or raised: ``Retry(..)``, ``HTTPError(..)``). A local variable (``app_ctx``) or a type in
    an annotation (``-> ft.ResponseReturnValue``: a capitalized name not called) is left out."""
    name = match.group()
    bare = name.strip("_")
    if len(bare) < 4 or name.startswith("__"):
        return False
    if bare.isupper() and "_" in bare:
        return True
    attribute = line[: match.start()].rstrip().endswith(".")
    called = line[match.end() :].lstrip().startswith("(")
    if bare[0].isupper():
        return called
    return (attribute or called) and ("_" in bare or any(c.isupper() for c in bare[1:]))


def _label_names(document: Document) -> list[str]:
    """The short names of ``document``'s label (``"Session.send, Session.merge"`` -> ``send, merge``)."""
    names = [part.strip().rsplit(".", 1)[-1] for part in document.symbol.split(",")]
    return [name for name in names if IDENT.fullmatch(name) and not name.startswith("__")]


@lru_cache(maxsize=1024)
def _line_names(content: str, terms: frozenset[str]) -> tuple[tuple[int, str], ...]:
    """``(score, name)`` for the code-like identifiers on a document's ``content`` lines naming ``terms``
    (:func:`~codeask.query.focus.line_score` of their line), kept for the next time the prompt is
    rendered with it (a time budget's plan renders it once per cut of each later document)."""
    out: list[tuple[int, str]] = []
    for line in split_lines(content):
        score = line_score(line, terms)
        if score:
            out.extend((score, m.group()) for m in IDENT.finditer(line) if _code_like(line, m))
    return tuple(out)


def code_cues(documents: list[Document], terms: frozenset[str], most: int = MAX_CUES) -> list[tuple[int, str]]:
    """``(document number from 1, name)``, at most ``most``, each name once at its first document:
    first every document's label names (the definitions it shows), in document order, then the
    names of code (:func:`_code_like`) on lines naming the question's ``terms``
    (:func:`~codeask.query.focus.question_terms`), the best-scored lines first."""
    seen: set[str] = set()
    cues: list[tuple[int, str]] = []

    def add(n: int, name: str) -> None:
        if name and name not in seen and len(cues) < most:
            seen.add(name)
            cues.append((n, name))

    for n, document in enumerate(documents, 1):
        for name in _label_names(document):
            add(n, name)
    scored = [(-score, n, name) for n, d in enumerate(documents, 1) for score, name in _line_names(d.content, terms)]
    for _, n, name in sorted(scored):
        add(n, name)
    return cues


def cue_line(cues: list[tuple[int, str]]) -> str:
    """``cues`` as the answer template shows them: ``"[2] `should_strip_auth`, [4] `rebuild_auth`"``
    (``""`` for none)."""
    return ", ".join(f"[{n}] `{name}`" for n, name in cues)


def wants_code(question: str) -> bool:
    """Whether the question asks for code (an example, a snippet, how to call or write something)."""
    return bool(_WANTS_CODE.search(question))
