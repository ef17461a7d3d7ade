"""A second part of a local model's answer, from more documents, in the time the first part left.

Under a time budget (:mod:`codeask.query.budget`) the first part's prompt holds what the endpoint
reads before ``llm.first_token_seconds``, a few documents, and the answer often ends long before
``llm.answer_seconds`` (issue 30's idle run of Qwen2.5-Coder-1.5B: the first word at a median of
14.8 s, the end at 19.8 s of the 90 allowed, the key facts in the documents sent 0.68 of those the
question needs). :func:`more_documents` spends that slack: when the first part ended by itself, the
next-ranked documents that the endpoint reads, with the reply it writes, in what is left of
``llm.answer_seconds`` are appended to the *same* prompt after the first part's text
(:data:`CONTINUE`), so the server's prompt cache reuses everything before them and reads only the
new tokens. The documents are numbered on from the first part's, the answer is both parts, and the
Sources list is every document sent, in that order.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from codeask.lines import split_lines
from codeask.llm import LLM, Completion, LLMError, Speed
from codeask.llm.cancel import Cancelled, CancelLike, is_cancelled
from codeask.query.budget import MIN_REPLY_TOKENS, READING_SHARE, TIGHT_DOCUMENT_TOKENS, Budget
from codeask.query.focus import MIN_LINES, labelled, line_score
from codeask.query.pipeline import Document
from codeask.query.steps.widen import overlaps

__all__ = [
    "CONTINUE",
    "Part",
    "Lines",
    "continuation",
    "continuation_tokens",
    "unsent",
    "about",
    "STALE_LINES",
    "remainders",
    "run_second_part",
    "joined",
    "REMAINDERS",
]

#: What follows the first part's prompt in the second part's: the first part's answer, the new
#: documents, and what to add. Its numbering example follows the answer template's.
CONTINUE = (
    "\n\n## Your answer so far\n\n{answer}\n\n## More snippets\n\n{documents}\n\n"
    "Add at most three points that these snippets show and the answer so far does not say{names}, in the same "
    "form: each point a list item, a dash, the number of the snippet that shows it in square brackets, then one "
    "sentence that names in backticks every function, method, class, attribute and setting the point relies on. "
    "Never repeat a point of the answer so far. Write nothing else."
)
#: The most names of the new snippets' code the second part is pointed at (:func:`continuation`).
MAX_NAMES = 6
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_CITED = re.compile(r"\[\d+(?:\s*,\s*\d+)*\]")


def continuation(answer: str, rendered: str, documents: list[Document]) -> str:
    """:data:`CONTINUE` filled in: the first part's ``answer``, the new documents ``rendered``, and the
    names of the code they hold (their symbols, at most :data:`MAX_NAMES`) that ``answer`` does not
    name, so the second part is pointed at what the first did not say rather than restating it
    (issue 30: Qwen2.5-Coder-1.5B's second parts mostly restated the first)."""
    names: list[str] = []
    for document in documents:
        for part in document.symbol.split(","):
            name = part.strip().rsplit(".", 1)[-1]
            if name and name not in names and not re.search(rf"(?<![\w$#]){re.escape(name)}(?![\w$])", answer):
                names.append(name)
    shown = ", ".join(f"`{name}`" for name in names[:MAX_NAMES])
    return CONTINUE.format(
        answer=answer.strip(), documents=rendered, names=f" (such as what {shown} do)" if shown else ""
    )


@dataclass(frozen=True)
class Part:
    """The second part's plan: ``documents`` tokens for its documents, ``reply`` tokens
    (``max_tokens``) and ``seconds``, its call's deadline."""

    documents: int
    reply: int
    seconds: float


def continuation_tokens(budget: Budget, speed: Speed | None, done: Completion, left: float) -> Part | None:
    """The plan of a second part after the first part ``done`` of a call under the time ``budget``,
    at the endpoint's ``speed``; ``None`` when there is no time budget, the first part did not end
    by itself, or the ``left`` seconds of ``llm.answer_seconds`` (counted from the ask's start,
    ``Query.started``) read fewer than :data:`TIGHT_DOCUMENT_TOKENS` after writing a reply as
    long as the first part's (at least two :data:`MIN_REPLY_TOKENS`, at most ``budget.reply``) and
    reading that part's text again. The documents get :data:`READING_SHARE` of the reading time,
    at most ``budget.documents`` (what the first part had: issue 30's run with twice as many ran two
    second parts into the deadline, and their cut lines were dropped)."""
    if budget.documents is None or done.finish_reason != "stop" or not done.text.strip():
        return None
    if speed is None or not speed.prompt or not speed.generated:
        return None
    reply = min(budget.reply, max(2 * MIN_REPLY_TOKENS, done.tokens))
    reading = READING_SHARE * (left - reply / speed.generated)
    documents = min(budget.documents, int(speed.prompt * reading) - done.tokens)
    if documents < TIGHT_DOCUMENT_TOKENS:
        return None
    return Part(documents=documents, reply=reply, seconds=round(left, 1))


#: The best-ranked documents whose lines the first part left out are offered first to the second
#: part (:func:`remainders`): in issue 30's 12 questions (this sitting's before run), 9 key facts
#: missing from the documents sent sat in the cut-off lines of the first or second document
#: (``finalize_request`` after ``full_dispatch_request``'s window, ``should_strip_auth`` before
#: ``rebuild_auth``'s), 5 in documents not sent at all.
REMAINDERS = 2


def remainders(documents: list[Document], sent: list[Document], top: int = REMAINDERS) -> list[Document]:
    """The lines of the ``top`` best-ranked ``documents`` (whole, as retrieved) that were ``sent`` cut:
    for each, the lines after the window sent, then those before it (each a contiguous document of
    at least :data:`~codeask.query.focus.MIN_LINES` lines, its label cut to the definitions it holds),
    best-ranked first."""
    out: list[Document] = []
    for whole in [d for d in documents if any(s.key() == d.key() and overlaps(s, d) for s in sent)][:top]:
        window = next(s for s in sent if s.key() == whole.key() and overlaps(s, whole))
        lines = split_lines(whole.content)
        after, before = window.end_line - whole.start_line + 1, window.start_line - whole.start_line
        for first, last in ((after, len(lines)), (0, before)):
            if last - first >= MIN_LINES:
                part = replace(
                    whole,
                    content="\n".join(lines[first:last]),
                    start_line=whole.start_line + first,
                    end_line=whole.start_line + last - 1,
                )
                out.append(labelled(part))
    return out


def about(documents: list[Document], terms: frozenset[str]) -> list[Document]:
    """``documents`` whose code or label names at least one of the question's ``terms``
    (:func:`codeask.query.focus.question_terms`), in order: one naming none has nothing new to say
    about the question, and a second part over such snippets only restates the first (issue 30:
    Qwen2.5-Coder-1.5B's second parts over ``status_codes.py``'s table)."""
    return [d for d in documents if line_score(f"{d.symbol}\n{d.content}", terms)]


def unsent(documents: list[Document], sent: list[Document]) -> list[Document]:
    """``documents`` none of whose lines were ``sent`` (same root and path, overlapping lines), in order."""
    return [d for d in documents if not any(s.key() == d.key() and overlaps(s, d) for s in sent)]


#: Lines in a row a second part may restate (:class:`Lines` drops them) before it is stopped: it is
#: asked for at most three new points, so two restated ones mean it has nothing new to say, and the
#: rest of its time would go to more of them (issue 30: second parts that kept no line still ran
#: until they ended by themselves, up to 86 s into the ask).
STALE_LINES = 2


class Lines:
    """A stream callback that passes the second part on whole lines only, each after a line break,
    and drops a line that restates the answer so far (a small model's habit): one the answer
    already holds, or one whose code in backticks was all named before (it says nothing about new
    code); lines are compared without their ``[n]`` citations and case (the same sentence cited to
    another snippet restates it too). ``said`` holds the lines already shown; :attr:`kept` the lines
    passed on. After :data:`STALE_LINES` restated lines in a row nothing more is passed on (the call
    is stopped, :func:`run_second_part`)."""

    def __init__(self, stream: Callable[[str], None] | None, said: set[str]):
        self.stream, self.said = stream, {_said(line) for line in said}
        self.kept: list[str] = []
        self.pending = ""
        self.named = {name for line in said for name in _BACKTICKED.findall(line)}
        self.restated = 0
        """Lines dropped in a row (for restating what was said)."""
        self.deltas = 0

    def __call__(self, delta: str) -> None:
        self.deltas += 1
        self.pending += delta
        while "\n" in self.pending:
            line, self.pending = self.pending.split("\n", 1)
            self.emit(line)

    def emit(self, line: str) -> None:
        """Pass ``line`` on unless it is blank or restates what was said."""
        names = set(_BACKTICKED.findall(line))
        if not line.strip() or self.restated >= STALE_LINES:  # stale: nothing after it is kept
            return
        if _said(line) in self.said or (names and names <= self.named):
            self.restated += 1
            return
        self.restated = 0
        self.said.add(_said(line))
        self.named |= names
        self.kept.append(line)
        if self.stream is not None:
            self.stream("\n" + line)


def _said(line: str) -> str:
    """What ``line`` says: without ``[n]`` citations, list marks, case and repeated spaces."""
    return " ".join(_CITED.sub(" ", line).lower().lstrip(" -*").split())


def run_second_part(
    llm: LLM,
    prompt: str,
    system: str | None,
    part: Part,
    stream: Callable[[str], None] | None,
    cancel: CancelLike,
    said: str,
) -> Completion | None:
    """The second part's call on ``prompt`` (the first part's prompt with :data:`CONTINUE` filled in),
    streamed to ``stream`` by whole lines (:class:`Lines`, without those of ``said``, the first
    part's text). Its text is the lines kept: a last line the call's ``max_tokens``, deadline or
    repetition stop cut off is dropped, so the answer still ends on a whole point and as the first
    part ended (``stop``). The call is stopped once :data:`STALE_LINES` lines in a row restated the
    answer. ``None`` when it failed before any text or kept no line (the answer keeps its first part).

    Raises:
        Cancelled: ``cancel`` said so.
    """
    lines = Lines(stream, {line.strip() for line in said.splitlines()})
    started = time.monotonic()
    try:
        done = llm.generate(
            prompt,
            system=system,
            max_tokens=part.reply,
            on_delta=lines,
            cancel=lambda: is_cancelled(cancel) or lines.restated >= STALE_LINES,
            deadline=part.seconds,
        )
    except Cancelled:
        if is_cancelled(cancel):
            raise
        lines.pending = ""  # stopped: it had started restating the answer (a partial line is dropped)
        done = Completion("\n".join(lines.kept), "stop", lines.deltas, seconds=time.monotonic() - started)
    except LLMError:
        return None
    if done.finish_reason == "stop":
        lines.emit(lines.pending)
    if not lines.kept:
        return None
    return replace(done, text="\n".join(lines.kept), finish_reason="stop", error=None)


def joined(first: Completion, second: Completion) -> Completion:
    """One completion of both parts: the texts on separate lines, tokens and seconds added, the
    first part's first token, the second part's end and speed."""
    return replace(
        second,
        text=first.text.rstrip() + "\n" + second.text,
        tokens=first.tokens + second.tokens,
        prompt_tokens=first.prompt_tokens + second.prompt_tokens,
        first_token_seconds=first.first_token_seconds,
        seconds=first.seconds + second.seconds,
    )
