"""Markdown and reStructuredText chunking: headings build a section tree.

Headings (ATX ``#`` and setext for Markdown; underlined / over-and-underlined
titles for reST) become :class:`Heading` s.  A section that fits the limits is
one atom claiming its heading path (``"Guide > Install"``), a larger one is
split into its intro plus its subsections, and a section still too long is
windowed; the atoms are then packed like code atoms (:func:`.packing.pack`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from codeask.index.chunking.packing import Atom, Ctx, Span, pack, window_atoms

__all__ = ["Heading", "doc_chunks", "markdown_headings", "rst_headings"]


class Heading(NamedTuple):
    """A section title: its first row (0-based), its level (1 = top) and its text."""

    row: int
    level: int
    title: str


_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_RST_ADORN = re.compile(r"""^([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])\1{2,}[ \t]*$""")


def markdown_headings(lines: Sequence[str]) -> list[Heading]:
    """(start_row, level, title) for each Markdown heading."""
    out: list[Heading] = []
    fence: str | None = None
    start = 0
    n = len(lines)
    if n and lines[0].strip() in ("---", "+++"):  # front matter
        marker = lines[0].strip()
        for i in range(1, n):
            if lines[i].strip() == marker:
                start = i + 1
                break
    prev_para = False  # previous line is a plain paragraph line
    for i in range(start, n):
        line = lines[i]
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            prev_para = False
            continue
        if m:
            fence = m.group(1)
            prev_para = False
            continue
        if not line.strip():
            prev_para = False
            continue
        m = _ATX.match(line)
        if m:
            out.append(Heading(i, len(m.group(1)), (m.group(2) or "").strip()))
            prev_para = False
            continue
        m = _SETEXT.match(line)
        if m and prev_para and not (out and out[-1].row == i - 1):
            out.append(Heading(i - 1, 1 if m.group(1)[0] == "=" else 2, lines[i - 1].strip()))
            prev_para = False
            continue
        prev_para = not line.startswith(("    ", "\t")) and not line.lstrip().startswith((">", "|", "<"))
    return out


def rst_headings(lines: Sequence[str]) -> list[Heading]:
    """(start_row, level, title) for each reStructuredText section title."""
    out: list[Heading] = []
    styles: list[tuple[str, bool]] = []
    n = len(lines)
    i = 0
    while i < n:
        line = lines[i]
        # over- and underlined title
        m = _RST_ADORN.match(line)
        if (
            m
            and i + 2 < n
            and lines[i + 1].strip()
            and _RST_ADORN.match(lines[i + 2])
            and lines[i + 2].strip() == line.strip()
            and (i == 0 or not lines[i - 1].strip())
        ):
            style = (m.group(1), True)
            if style not in styles:
                styles.append(style)
            out.append(Heading(i, styles.index(style) + 1, lines[i + 1].strip()))
            i += 3
            continue
        # underlined title
        if (
            line.strip()
            and not line[0].isspace()
            and i + 1 < n
            and (i == 0 or not lines[i - 1].strip())
            and not _RST_ADORN.match(line)
        ):
            u = _RST_ADORN.match(lines[i + 1])
            if u and len(lines[i + 1].rstrip()) >= min(len(line.rstrip()), 4):
                style = (u.group(1), False)
                if style not in styles:
                    styles.append(style)
                out.append(Heading(i, styles.index(style) + 1, line.strip()))
                i += 2
                continue
        i += 1
    return out


def _section_atoms(
    ctx: Ctx,
    heads: list[Heading],
    lo: int,
    hi: int,
    scope: str,
    header_claim: str | None,
    depth: int,
) -> list[Atom]:
    """Atoms tiling rows lo..hi given the headings inside (all deeper than ``depth``)."""
    if not heads:
        if ctx.fits(lo, hi):
            return [Atom(lo, hi, scope, header_claim, False, False)]
        return window_atoms(ctx, lo, hi, scope, header_claim)
    top = min(h.level for h in heads)
    idx = [k for k, h in enumerate(heads) if h.level == top]
    atoms: list[Atom] = []
    first = heads[idx[0]].row
    if first > lo:  # intro / preamble before the first section
        intro_heads = heads[: idx[0]]
        atoms.extend(_section_atoms(ctx, intro_heads, lo, first - 1, scope, header_claim, depth))
    for j, k in enumerate(idx):
        a = heads[k].row
        b = heads[idx[j + 1]].row - 1 if j + 1 < len(idx) else hi
        title = heads[k].title
        path = f"{scope} > {title}" if scope else title
        sub_heads = heads[k + 1 : idx[j + 1] if j + 1 < len(idx) else len(heads)]
        if ctx.fits(a, b):
            atoms.append(Atom(a, b, scope, path, False, False))
            continue
        atoms.extend(_section_atoms(ctx, sub_heads, a, b, path, path, top))
    return atoms


def doc_chunks(ctx: Ctx, heads: list[Heading], n: int) -> list[Span]:
    """Spans tiling rows ``0..n-1`` of a document with headings ``heads``."""
    atoms = _section_atoms(ctx, heads, 0, n - 1, "", None, 0)
    return pack(ctx, atoms)
