"""Rankings from the parts of a bug-report question: stack frames and string literals.

Used by :class:`~codeask.query.steps.retrieve.HybridRetrieve` next to its keyword, dense and
identifier rankings (each fused with reciprocal rank fusion):

* :func:`frame_ranking`: the chunks that stack frames point at. A frame's path is matched to a
  workspace file by its trailing path components (:func:`match_frame_path`), so install prefixes
  (``/usr/lib/python3.12/site-packages/``, ``C:\\...\\Lib\\``, ``src/``) do not matter; the chunk is the
  one defining the frame's function, else the one holding its line. Innermost frame first.
* :func:`literal_ranking`: the code chunks whose string literals produce text in the question.
  Each literal (adjacent literals joined, as Python and C join them) becomes a pattern where
  format placeholders (``{url!r}``, ``{}``, ``%s``, ``%(name)d``, ``${x}``, ``%v``) are wildcards
  (:func:`literal_pattern`); a literal whose whole fixed text matches, or one of whose long fixed
  pieces occurs verbatim, ranks its chunk. Only code files outside the down-weighted paths take
  part, so the code that emits a message outranks the docs, tests and changelogs that show it.

The literal index is the candidate pool itself (the chunks the keyword searches for the question
and for each message returned), so it needs no second full-text column in the store; the price is
that a literal no such search returns is not found. A separate literal index was not built or
compared (``bench/issues.py`` measures the whole of this module against :data:`REPORT_EVIDENCE` off).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from codeask.index.chunk import TREE_SITTER_LANGUAGES
from codeask.index.records import StoredRow
from codeask.query.report import Frame

if TYPE_CHECKING:
    from codeask.index.rows import Hit
    from codeask.index.store import Store

__all__ = [
    "REPORT_EVIDENCE",
    "frame_ranking",
    "literal_pattern",
    "literal_ranking",
    "match_frame_path",
    "string_literals",
]

#: Whether a question shaped like a bug report is read as one (:mod:`codeask.query.report`): its
#: prose searched without stack frames and template boilerplate, and the files its frames, printed
#: messages and file names point at ranked. On: ``bench/issues.py`` measures it against off (the
#: ``codeask-no-report`` variant, which sets this to ``False``), as do tests. Was
#: ``retrieval.report_evidence``.
REPORT_EVIDENCE = True

#: Fixed (non-placeholder) characters a whole literal needs before it may rank a chunk.
MIN_LITERAL_CHARS = 12
#: Literals with more placeholders than this match by their long pieces only (bounded regex work).
MAX_PLACEHOLDERS = 6
#: Characters a fixed piece of a literal needs to count when it occurs verbatim on its own.
MIN_PIECE_CHARS = 18


def _components(path: str) -> list[str]:
    return [p for p in path.replace("\\", "/").split("/") if p and p != "."]


def match_frame_path(frame_path: str, workspace_paths: Iterable[str]) -> list[str]:
    """Workspace paths that ``frame_path`` points at, by longest common trailing components.

    ``/usr/lib/python3.12/site-packages/requests/adapters.py`` matches ``src/requests/adapters.py``
    (2 components). A match needs at least 2 components, or the whole workspace path (a top-level
    ``app.py`` matches ``/home/me/proj/app.py``), so a user's own ``utils.py`` elsewhere does not
    match a workspace's ``pkg/utils.py``. Ties all return, sorted.
    """
    want = _components(frame_path)
    if not want:
        return []
    best: list[str] = []
    best_n = 0
    for path in workspace_paths:
        have = _components(path)
        if not have or have[-1] != want[-1]:
            continue
        n = 0
        while n < min(len(have), len(want)) and have[-1 - n] == want[-1 - n]:
            n += 1
        if n < 2 and n < len(have):
            continue
        if n > best_n:
            best, best_n = [path], n
        elif n == best_n:
            best.append(path)
    return sorted(best)


def _frame_chunk(rows: Sequence[StoredRow], frame: Frame) -> StoredRow | None:
    if not rows:
        return None
    func = re.split(r"[.:/]", frame.function)[-1] if frame.function else ""
    if func.startswith("<"):  # <module>, <lambda>, <listcomp>
        func = ""
    holding = [r for r in rows if frame.line is not None and r["start_line"] <= frame.line <= r["end_line"]]
    if func:
        defining = [r for r in rows if r["symbol"].rsplit(".", 1)[-1] == func]
        for r in defining:  # prefer the definition that also holds the line (same version)
            if r in holding:
                return r
        if defining:
            return defining[0]
    return holding[0] if holding else None


def frame_ranking(store: Store, frames: Sequence[Frame], *, max_frames: int = 20) -> list[Hit]:
    """Chunks the ``frames`` (innermost first) point at, in frame order, one per frame.

    Frames that map to no workspace file (the user's own code, other installed packages) are
    skipped. Reads the store's path list once and the rows of each matched file.
    """
    from codeask.index.rows import Hit

    if not frames:
        return []
    paths = store.paths()
    rows_of: dict[str, list[StoredRow]] = {}
    ranking: list[Hit] = []
    seen: set[str] = set()
    for frame in frames[:max_frames]:
        for path in match_frame_path(frame.path, paths):
            if path not in rows_of:
                rows_of[path] = store.rows_for_path(path)
            row = _frame_chunk(rows_of[path], frame)
            if row is None or row["id"] in seen:
                continue
            seen.add(row["id"])
            ranking.append(Hit.from_row(row, 1.0 / (len(ranking) + 1)))
    return ranking


# A string literal of Python, JS/TS, Go, Rust, Java, C...: optional prefix, then '...', "..." or `...`.
_LITERAL = re.compile(
    r"""(?<![\w'"])(?:[rRbBuUfF]{1,2})?(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`)"""
)
# Literals separated only by whitespace, line breaks or ``+`` (and backslash continuations) join.
_JOIN = re.compile(r"^[\s+\\]*$")
_PLACEHOLDER = re.compile(
    r"\{[^{}]*\}"  # {url!r} {0} {} {name:>10}
    r"|\$\{[^}]*\}"  # ${name}
    r"|%(?:\([\w.]+\))?[-#+ 0-9.*]*[a-zA-Z]"  # %s %d %(name)s %.2f %v %q
)
_WORDS = re.compile(r"[A-Za-z]{3,}")
_PHRASE = re.compile(r"[A-Za-z]{2,}\W*\s+\W*[A-Za-z]{2,}")  # two words with whitespace between


def _unquote(literal: str) -> str:
    body = literal.lstrip("rRbBuUfF")
    body = body[1:-1]
    return body.replace("\\n", "\n").replace('\\"', '"').replace("\\'", "'").replace("\\\\", "\\")


_TRIPLE = re.compile(r"""(?:[rRbBuUfF]{0,2})(\"\"\"|''')[\s\S]*?\1""")


def string_literals(code: str) -> list[str]:
    """The string literals of ``code``, quotes removed, adjacent ones joined (``"a " "b"`` -> ``a b``).

    Triple-quoted strings (Python docstrings: text that documents, not text a program prints)
    are left out.
    """
    code = _TRIPLE.sub("\x00", code)
    out: list[str] = []
    last_end = -1
    for m in _LITERAL.finditer(code):
        text = _unquote(m.group(0))
        if out and last_end >= 0 and _JOIN.match(code[last_end : m.start()]):
            out[-1] += text
        else:
            out.append(text)
        last_end = m.end()
    return out


@lru_cache(maxsize=4096)
def literal_pattern(literal: str) -> tuple[re.Pattern[str] | None, tuple[str, ...], int]:
    """``(pattern, long fixed pieces, fixed chars)`` for one literal.

    ``pattern`` matches text the literal can produce (placeholders are lazy wildcards within one
    line, whitespace runs match any whitespace, case-insensitive), or is ``None`` when the literal has fewer than
    :data:`MIN_LITERAL_CHARS` fixed characters, fewer than two words of 3+ letters (``"utf-8"``,
    ``"{}: {}"``), or no two words apart by whitespace: a message a program prints is a phrase, while
    a literal such as ``"Content-Length"``, ``"application/json"`` or ``"max_retries"`` is a key or
    constant that a report's prose names without quoting any output. The pieces are the fixed
    runs of at least :data:`MIN_PIECE_CHARS` characters with 3+ words, lower-cased with whitespace
    collapsed.
    """
    pieces = _PLACEHOLDER.split(literal)
    fixed = "".join(pieces)
    fixed_chars = len(fixed.strip())
    if fixed_chars < MIN_LITERAL_CHARS or len(_WORDS.findall(fixed)) < 2 or not _PHRASE.search(fixed):
        return None, (), fixed_chars
    if len(pieces) > MAX_PLACEHOLDERS + 1:
        whole = None
    else:
        whole = re.compile(r"[^\n]*?".join(r"\s+".join(re.escape(w) for w in piece.split()) for piece in pieces), re.I)
    long_pieces = tuple(
        " ".join(p.split()).lower() for p in pieces if len(p.strip()) >= MIN_PIECE_CHARS and len(_WORDS.findall(p)) >= 3
    )
    return whole, long_pieces, fixed_chars


def _is_code(hit: Hit) -> bool:
    return hit.language in TREE_SITTER_LANGUAGES


def literal_ranking(pool: Sequence[Hit], question: str, downweighted: Callable[[str], bool]) -> list[Hit]:
    """Code chunks of ``pool`` whose string literals produce text of ``question``, best first.

    A chunk scores the fixed characters of its best literal: a whole-literal match scores all of
    them, a long fixed piece found verbatim scores that piece. Chunks of non-code files (docs,
    templates, configs) and of ``downweighted`` paths (tests, examples) never rank here.
    """
    if not question.strip():
        return []
    flat = " ".join(question.split()).lower()
    scored: dict[str, tuple[int, int, Hit]] = {}
    for order, hit in enumerate(pool):
        if hit.id in scored or not _is_code(hit) or downweighted(hit.path):
            continue
        best = 0
        for literal in string_literals(hit.content):
            if not any(word.lower() in flat for word in _WORDS.findall(literal)):
                continue  # no word of it in the question: neither its pattern nor a piece can match
            pattern, pieces, fixed_chars = literal_pattern(literal)
            if pattern is None:
                continue
            if pattern.search(question):
                best = max(best, fixed_chars)
                continue
            for piece in pieces:
                if piece in flat:
                    best = max(best, len(piece))
        if best:
            scored[hit.id] = (best, order, hit)
    return [hit for _, _, hit in sorted(scored.values(), key=lambda t: (-t[0], t[1]))]
