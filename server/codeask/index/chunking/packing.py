"""Atoms and packing: the language-independent half of chunking.

The code and document parsers (:mod:`.code`, :mod:`.docs`) turn a file into
:class:`Atom` s that tile its rows; :func:`pack` groups consecutive atoms of the
same scope into :class:`Span` s, the line ranges that become chunks.  Rows are
0-based and inclusive here; :class:`codeask.index.chunking.Chunk` lines are 1-based.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["Atom", "Ctx", "Span", "pack", "window_atoms"]


@dataclass(frozen=True, slots=True)
class Atom:
    """An indivisible range of rows the packer may group with its neighbours.

    ``claim`` is the qualified symbol the atom defines (or None);
    ``breaks_before`` forces a new group (line windows); ``sticky`` marks
    blank / closing lines after a node, which join the preceding group
    whatever its scope.
    """

    start: int  # 0-based row, inclusive
    end: int  # 0-based row, inclusive
    scope: str  # enclosing qualified name ("" at top level, "Guide > Install" in docs)
    claim: str | None = None
    breaks_before: bool = False
    sticky: bool = False


class Span(NamedTuple):
    """A packed range of rows (0-based, inclusive) and the symbol of the chunk made from it."""

    start: int
    end: int
    symbol: str


class Ctx:
    """Per-call state: lines, limits and a prefix sum of line lengths."""

    __slots__ = ("chunk_lines", "lines", "max_chars", "prefix")

    def __init__(self, lines: Sequence[str], chunk_lines: int, max_chars: int):
        self.lines = lines
        self.chunk_lines = max(1, chunk_lines)
        self.max_chars = max(1, max_chars)
        prefix = [0]
        acc = 0
        for line in lines:
            acc += len(line) + 1
            prefix.append(acc)
        self.prefix = prefix

    def chars(self, a: int, b: int) -> int:
        """Length of rows a..b (0-based, inclusive) joined with newlines."""
        return self.prefix[b + 1] - self.prefix[a] - 1

    def fits(self, a: int, b: int) -> bool:
        """Whether rows a..b (0-based, inclusive) obey both limits: at most ``chunk_lines`` lines and
        ``max_chars`` characters."""
        return b - a + 1 <= self.chunk_lines and self.chars(a, b) <= self.max_chars

    def windows(self, a: int, b: int) -> list[tuple[int, int]]:
        """Cut rows a..b into windows obeying both limits."""
        out = []
        start = a
        while start <= b:
            end = start
            limit = min(b, start + self.chunk_lines - 1)
            while end < limit and self.chars(start, end + 1) <= self.max_chars:
                end += 1
            out.append((start, end))
            start = end + 1
        return out


# An atom is a tuple (start_row, end_row, scope, claim, breaks_before, sticky):
# ``claim`` is the symbol it defines (or None); ``breaks_before`` forces a new
# group (line windows); ``sticky`` marks blank / closing lines after a node,
# which join the preceding group whatever its scope.
# A sticky tail may make a group overflow chunk_lines by this many lines (and


# A sticky tail may make a group overflow chunk_lines by this many lines (and
# never max_chunk_chars): it avoids chunks made of a lone "}" or blank lines.
def _slack(chunk_lines: int) -> int:
    return max(1, min(3, chunk_lines // 20))


def pack(ctx: Ctx, atoms: Sequence[Atom]) -> list[Span]:
    """Greedily group consecutive same-scope atoms into spans.

    A group's symbol is the single claim among its atoms if there is exactly
    one, otherwise its scope.  Tiny leftover groups are then merged into a
    neighbour (:func:`_merge_fragments`).
    """
    out: list[Span] = []
    cur: list[Atom] = []

    def flush() -> None:
        if not cur:
            return
        claims = {c.claim for c in cur if c.claim is not None}
        symbol = next(iter(claims)) if len(claims) == 1 else cur[0].scope
        out.append(Span(cur[0].start, cur[-1].end, symbol))
        cur.clear()

    for atom in atoms:
        if cur:
            if atom.sticky:
                a = cur[0].start
                if ctx.fits(a, atom.end) or (
                    atom.end - a < ctx.chunk_lines + _slack(ctx.chunk_lines) and ctx.chars(a, atom.end) <= ctx.max_chars
                ):
                    cur.append(atom)
                    continue
                flush()
            elif atom.scope != cur[0].scope or atom.breaks_before or not ctx.fits(cur[0].start, atom.end):
                flush()
        cur.append(atom)
    flush()
    return _merge_fragments(ctx, out)


def _merge_fragments(ctx: Ctx, groups: list[Span]) -> list[Span]:
    """Merge tiny groups (a lone class header, a stray line) into a neighbour.

    Scope barriers can leave e.g. ``module Shop`` alone before its expanded
    class; such a fragment joins the next group (taking that group's symbol)
    or else the previous one, when the result still fits and the fragment's
    symbol is empty, equal to or an ancestor of the neighbour's symbol.
    """
    tiny = max(2, ctx.chunk_lines // 10)

    def compatible(frag: str, other: str) -> bool:
        return not frag or frag == other or other.startswith(frag + ".") or other.startswith(frag + " > ")

    out: list[Span] = []
    i = 0
    while i < len(groups):
        a, b, sym = groups[i]
        if b - a + 1 < tiny and len(groups) > 1:
            if i + 1 < len(groups) and compatible(sym, groups[i + 1].symbol) and ctx.fits(a, groups[i + 1].end):
                groups[i + 1] = Span(a, groups[i + 1].end, groups[i + 1].symbol)
                i += 1
                continue
            if out and compatible(sym, out[-1].symbol) and ctx.fits(out[-1].start, b):
                out[-1] = Span(out[-1].start, b, out[-1].symbol)
                i += 1
                continue
        out.append(Span(a, b, sym))
        i += 1
    return out


def window_atoms(ctx: Ctx, a: int, b: int, scope: str, claim: str | None) -> list[Atom]:
    """Rows a..b cut into line windows (:meth:`Ctx.windows`), each an atom that starts a new group."""
    return [Atom(s, e, scope, claim, True, False) for s, e in ctx.windows(a, b)]
