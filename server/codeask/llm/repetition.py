"""Telling when a streamed reply has started repeating itself, so the call can stop it early.

A small local model over many snippets can fall into a loop: the same sentence again and again, or
the same sentence *shape* with another name in it (Qwen2.5-Coder-1.5B wrote ``- [3] `x` is defined
in [3].``-style items 20 times, until ``max_tokens``, on a held-out question of issue 30). Two
signs are watched:

* a line shape seen :data:`SHAPE_REPEATS` times: a finished line, lowercased, with code in
  backticks, ``[n]`` citations and digits blanked out, that still has at least
  :data:`MIN_SHAPE_WORDS` words (so a list of bare names, ``- `a`: `b```, never counts); a shape at
  least :data:`NEAR_SHAPE` similar to one seen before counts as that one (a newcomer's four bullets
  differing by a word, "high-level" and "low-level", did not stop the reply);
* the text ending in the same stretch of :data:`MIN_LOOP_CHARS` or more characters written
  :data:`LOOP_REPEATS` times in a row (a loop inside one line), checked every
  :data:`CHECK_EVERY` characters on the last :data:`TAIL_CHARS` characters.
"""

from __future__ import annotations

import re
from collections import Counter
from difflib import SequenceMatcher

__all__ = ["RepetitionWatch", "line_shape"]

SHAPE_REPEATS = 4
#: How similar (:class:`difflib.SequenceMatcher`'s ratio) two line shapes must be to count as one:
#: restated bullets of Qwen2.5-Coder-1.5B ("... a high-level interface for making http requests." and
#: "... a low-level ...") are 0.95-0.98; two points of a good answer differing in a word of their
#: own ("... when the host changes." / "... when the scheme changes.") 0.89.
NEAR_SHAPE = 0.9
#: The most distinct shapes a line is compared with (the newest), so a long reply stays cheap to watch.
MAX_SHAPES = 64
MIN_SHAPE_WORDS = 3
MIN_LOOP_CHARS = 20
LOOP_REPEATS = 4
CHECK_EVERY = 64
TAIL_CHARS = 1600

_CODE = re.compile(r"`[^`\n]*`")
_CITE = re.compile(r"\[\d+\]")
_DIGITS = re.compile(r"\d+")
_WORD = re.compile(r"[a-z]{2,}")
_LOOP = re.compile(rf"(.{{{MIN_LOOP_CHARS},400}}?)(?:\s*\1){{{LOOP_REPEATS - 1},}}\s*$", re.DOTALL)


def line_shape(line: str) -> str | None:
    """The shape of one line of a reply (see the module docstring), or ``None`` for a line with too
    few words of its own to say it repeats."""
    text = _DIGITS.sub("0", _CITE.sub(" ", _CODE.sub(" ` ", line.lower())))
    if len(_WORD.findall(text)) < MIN_SHAPE_WORDS:
        return None
    return " ".join(text.split())


class RepetitionWatch:
    """Fed the deltas of one reply in order; :meth:`feed` says ``True`` once the reply repeats itself."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._line = ""
        self._unchecked = 0
        self._shapes: Counter[str] = Counter()

    def feed(self, delta: str) -> bool:
        """Take the next ``delta``; whether the reply now repeats itself."""
        self._text.append(delta)
        *done, self._line = (self._line + delta).split("\n")
        for line in done:
            shape = line_shape(line)
            if shape is not None:
                shape = self._seen(shape)
                self._shapes[shape] += 1
                if self._shapes[shape] >= SHAPE_REPEATS:
                    return True
        self._unchecked += len(delta)
        if self._unchecked < CHECK_EVERY:
            return False
        self._unchecked = 0
        tail = "".join(self._text)[-TAIL_CHARS:]
        self._text = [tail]
        return _LOOP.search(tail) is not None

    def _seen(self, shape: str) -> str:
        """``shape``, or the newest of the last :data:`MAX_SHAPES` shapes seen that is at least
        :data:`NEAR_SHAPE` similar to it."""
        if shape in self._shapes:
            return shape
        for seen in list(self._shapes)[-MAX_SHAPES:][::-1]:
            match = SequenceMatcher(None, seen, shape, autojunk=False)
            if min(match.real_quick_ratio(), match.quick_ratio()) >= NEAR_SHAPE and match.ratio() >= NEAR_SHAPE:
                return seen
        return shape
