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


def _slack(chunk_lines: int) -> int:
    """Lines a group may run over ``chunk_lines`` (never ``max_chars``) when what joins it would
    otherwise be a chunk of its own: a sticky tail (a lone ``}`` or blank lines) or a tiny fragment
    (a class header before a docstring that fills a chunk); 3 at the default 60 lines."""
    return max(1, min(3, chunk_lines // 20))


def _fits_with_slack(ctx: Ctx, a: int, b: int) -> bool:
    """Whether rows a..b (0-based, inclusive) fit ``max_chars`` and ``chunk_lines`` plus :func:`_slack`."""
    return b - a < ctx.chunk_lines + _slack(ctx.chunk_lines) and ctx.chars(a, b) <= ctx.max_chars


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
                if _fits_with_slack(ctx, a, atom.end):
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
    or else the previous one, when the result fits and the fragment's symbol is
    empty, equal to or an ancestor of the neighbour's symbol. A fragment
    claiming the definition the next group continues (a header before a body
    that fills a chunk) joins it within :func:`_slack`, so a citation of the
    definition begins at its header, not below it. A nameless fragment (imports
    before a long function) or an enclosing one (``impl WorkerState {`` before
    ``spawn_senders``, a class line and its fields before a method) joins only
    where it fits: in a method's chunk it made the unclosed class the chunk's
    first definition, and the symbol graph read the method's calls as the class's.
    """
    tiny = max(2, ctx.chunk_lines // 10)

    def compatible(frag: str, other: str) -> bool:
        return not frag or frag == other or other.startswith(frag + ".") or other.startswith(frag + " > ")

    def joins_next(frag: Span, nxt: Span) -> bool:
        a, b, sym = frag
        fits = _fits_with_slack(ctx, a, nxt.end) if sym and sym == nxt.symbol else ctx.fits(a, nxt.end)
        return b - a + 1 < tiny and compatible(sym, nxt.symbol) and fits

    ahead: list[Span] = []  # right to left: a header joins its body before a nameless line joins it
    for group in reversed(groups):
        if ahead and joins_next(group, ahead[-1]):
            ahead[-1] = Span(group.start, ahead[-1].end, ahead[-1].symbol)
        else:
            ahead.append(group)
    out: list[Span] = []
    for a, b, sym in reversed(ahead):
        if out and b - a + 1 < tiny and compatible(sym, out[-1].symbol) and ctx.fits(out[-1].start, b):
            out[-1] = Span(out[-1].start, b, out[-1].symbol)
        else:
            out.append(Span(a, b, sym))
    return out


def window_atoms(ctx: Ctx, a: int, b: int, scope: str, claim: str | None) -> list[Atom]:
    """Rows a..b cut into line windows (:meth:`Ctx.windows`), each an atom that starts a new group."""
    return [Atom(s, e, scope, claim, True, False) for s, e in ctx.windows(a, b)]
