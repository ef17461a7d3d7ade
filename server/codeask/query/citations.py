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
The sources of an answer never come from here: they are the documents; this only checks the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from codeask.query.pipeline import Document

__all__ = ["CitationCheck", "check_citations"]

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


def check_citations(text: str, documents: list[Document]) -> CitationCheck:
    """Check and render the ``[n]`` citations of ``text`` against ``documents`` (prompt order)."""
    valid: list[int] = []
    invalid: list[int] = []
    out_lines: list[str] = []
    paragraphs: list[bool] = []  # per paragraph: has a valid citation
    in_code = False
    in_paragraph = False
    cited = False  # set by replace(): the line being rendered has a valid citation

    def replace(match: re.Match) -> str:
        links = []
        for part in re.findall(r"\d+", match.group(1)):
            n = int(part)
            if 1 <= n <= len(documents):
                if n not in valid:
                    valid.append(n)
                links.append(f"[[{n}]]({documents[n - 1].uri})")
            elif n not in invalid:
                invalid.append(n)
        nonlocal cited
        cited = cited or bool(links)
        return "".join(links)

    for line in text.splitlines():
        if _FENCE.match(line):
            in_code = not in_code
            out_lines.append(line)
            in_paragraph = False
            continue
        if in_code:
            out_lines.append(line)
            continue
        stripped = line.strip()
        if not stripped:
            in_paragraph = False
            out_lines.append(line)
            continue
        if stripped.startswith("#"):
            in_paragraph = False
            out_lines.append(_render(line, replace))
            continue
        cited = False
        rendered = _render(line, replace)
        starts_item = bool(re.match(r"^\s*(?:[-*+]|\d+[.)])\s+", line))
        if not in_paragraph or starts_item:
            paragraphs.append(False)
            in_paragraph = True
        if cited:
            paragraphs[-1] = True
        out_lines.append(rendered)
    markdown = "\n".join(out_lines)
    share = sum(paragraphs) / len(paragraphs) if paragraphs else 0.0
    return CitationCheck(markdown=markdown, valid=valid, invalid=invalid, share=round(share, 3))


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
