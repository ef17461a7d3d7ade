"""A long pasted question cut to a bounded digest: what is embedded, searched and sent to the LLM.

A question may be a whole bug report (prose, a traceback, a long log: 25,000 characters is a real
one). Report reading (:func:`codeask.query.report.parse_question`: frames, messages, named files)
runs over all of it; the texts whose cost grows with the question (the embedding, the keyword
search, the prompts) get :func:`digest_question`'s digest, at most ``max_chars`` characters
(:data:`QUESTION_DIGEST_CHARS` for a question), made in one pass, in linear time:

1. a line seen before (digits ignored: timestamps, ids, addresses) is dropped: repeated log lines,
   the frames of a recursion, the same warning a thousand times;
2. the remaining lines are kept by priority, in question order, until ``max_chars`` is reached:
   the evidence (stack frames, error lines) in up to half of it, then the prose (every line that is
   neither evidence nor a log line), then the rest of the evidence, then log lines (a timestamp or
   a log level first) from the last one back, since a log's end is nearest the failure;
3. each run of left-out lines becomes one ``[... N lines left out ...]`` line; a line over
   :data:`MAX_LINE_CHARS` is cut.

A question within ``max_chars`` is its own digest, unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["QuestionDigest", "digest_question", "MAX_LINE_CHARS", "QUESTION_DIGEST_CHARS"]

#: Longest text of a question that is embedded, searched and put in a prompt, characters: a page,
#: what codeask accepted before longer questions were (the prompt may cut it further, to a quarter
#: of the model's prompt budget). Was ``retrieval.question_digest_chars``.
QUESTION_DIGEST_CHARS = 4000

#: Longest line kept whole in a digest, characters (a minified JSON blob pasted on one line).
MAX_LINE_CHARS = 500

_DIGITS = re.compile(r"\d+")
_LOG_LINE = re.compile(
    r"^\s*(?:\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[?\d\d:\d\d:\d\d|\[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|"
    r"CRITICAL|FATAL)\b|[IWEDF]\d{4} \d\d:\d\d)"
)
_FRAME_LINE = re.compile(r'^\s*(?:File "|at \S|\S+\.\w+:\d+)')
_ERROR_LINE = re.compile(
    r"(?:Error|Exception|Failure|Fault|Panic|panicked)\b[^\n]{0,40}?:|^E {2,}|^\s*\[?(?:ERROR|FATAL|CRITICAL)\b"
)


@dataclass(frozen=True)
class QuestionDigest:
    """A question's ``text`` as the model and the search get it, its length as asked (``chars_in``)
    and as sent (``chars_sent``, characters)."""

    text: str
    chars_in: int
    chars_sent: int

    @property
    def shortened(self) -> bool:
        """Whether the digest is shorter than the question."""
        return self.chars_sent < self.chars_in

    def to_json(self) -> dict[str, int]:
        """``{"chars_in", "chars_sent"}``."""
        return {"chars_in": self.chars_in, "chars_sent": self.chars_sent}


def digest_question(question: str, max_chars: int) -> QuestionDigest:
    """The digest of ``question`` (see the module docstring) in at most ``max_chars`` characters.
    Never raises."""
    if len(question) <= max_chars:
        return QuestionDigest(question, len(question), len(question))
    lines, repeats = _distinct_lines(question.splitlines())
    ranks = [_rank(line) for line in lines]
    keep = [False] * len(lines)
    forward = range(len(lines))
    room = _fill(lines, ranks, keep, 0, forward, max_chars // 2)  # evidence: at most half
    room = _fill(lines, ranks, keep, 1, forward, room + max_chars - max_chars // 2)
    room = _fill(lines, ranks, keep, 0, forward, room)
    _fill(lines, ranks, keep, 2, range(len(lines) - 1, -1, -1), room)
    text = _join(lines, keep, repeats)[:max_chars]  # the left-out markers may overshoot by a few lines
    return QuestionDigest(text, len(question), len(text))


def _distinct_lines(lines: list[str]) -> tuple[list[str], list[int]]:
    """``lines`` cut to :data:`MAX_LINE_CHARS`, without repeats (digits ignored) and blank runs, and
    for each line kept the number of repeats left out just before it (one more entry: at the end)."""
    seen: set[str] = set()
    out: list[str] = []
    repeats = [0]
    for line in lines:
        if not line.strip():
            if out and out[-1]:
                out.append("")
                repeats.append(0)
            continue
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + " [...]"
        key = _DIGITS.sub("0", line.strip())
        if key in seen:
            repeats[-1] += 1
            continue
        seen.add(key)
        out.append(line)
        repeats.append(0)
    return out, repeats


def _rank(line: str) -> int:
    """0: evidence (a stack frame, an error line), 1: prose, 2: a log line."""
    if _FRAME_LINE.match(line) or _ERROR_LINE.search(line):
        return 0
    return 2 if _LOG_LINE.match(line) else 1


def _fill(lines: list[str], ranks: list[int], keep: list[bool], rank: int, order: range, room: int) -> int:
    """Mark the lines of ``rank`` kept, in ``order``, while they fit ``room`` characters (a blank line
    is free); returns the room left."""
    for i in order:
        if ranks[i] != rank or keep[i]:
            continue
        cost = len(lines[i]) + 1
        if cost > room:
            if rank < 2:
                continue  # a shorter line of the same rank may still fit
            break
        keep[i] = True
        room -= cost
    return room


def _join(lines: list[str], keep: list[bool], repeats: list[int]) -> str:
    """The kept lines, each run of left-out lines (``repeats[i]`` repeats before line ``i`` among
    them) as one ``[... N lines left out ...]`` line."""
    out: list[str] = []
    left_out = 0
    for line, kept, repeated in zip(lines, keep, repeats):
        left_out += repeated
        if kept or not line:
            if left_out:
                out.append(_left_out(left_out))
                left_out = 0
            out.append(line)
        else:
            left_out += 1
    left_out += repeats[-1]
    if left_out:
        out.append(_left_out(left_out))
    return "\n".join(out).strip()


def _left_out(count: int) -> str:
    return f"[... {count} line{'' if count == 1 else 's'} left out ...]"
