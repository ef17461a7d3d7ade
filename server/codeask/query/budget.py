"""The token budget of a prompt: what fits the model's context once room is left for the reply.

A model's context (``llm.context_tokens``, or what the endpoint reports, see
:meth:`codeask.llm.base.BaseLLM.context_tokens`) holds the prompt *and* the reply. The reply gets
``min(llm.max_tokens, context / 2)`` tokens; the prompt gets the rest, less a margin for the chat
template's own tokens (:data:`CHAT_OVERHEAD`). :func:`fit_documents` then fits documents into it:

1. at most :func:`document_cap` documents (one per :data:`TOKENS_PER_DOCUMENT` tokens of the
   prompt's budget), each span counting as one (so a small local context gets a few whole documents
   rather than many cut ones; at least 1);
2. while the rendered prompt is too long: drop the lowest-ranked document (keeping 2; spans the
   ``widen`` step added go first, see :func:`drop_lowest`), then
   shorten the longest document to two thirds of its lines (its ``end_line`` follows, so its link
   stays true), and finally drop down to one document.

Tokens are counted by the endpoint's tokenizer where it has one (llama.cpp ``/tokenize``), else
estimated (:func:`codeask.llm.protocol.estimate_tokens`).

A local model also has a time budget (:func:`time_budget`): from the endpoint's measured speed
(:mod:`codeask.llm.speed`), the documents get the tokens it reads in what is left of
``llm.first_token_seconds`` and the reply the tokens it writes in what is left of
``llm.answer_seconds``, both counted from when the user asked (retrieval and the search queries
before the call use some of them); the documents are
then planned at :data:`TIGHT_DOCUMENT_TOKENS` each and cut to that (:func:`tighten`): each to the
definition around its lines that name the question's words (:mod:`codeask.query.focus`), so the
prompt holds the few functions the question is about rather than one long span.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

from codeask.lines import split_lines
from codeask.llm.protocol import Completion, Speed
from codeask.query.focus import CHARS_PER_TOKEN, MIN_LINES, focus
from codeask.query.pipeline import Document
from codeask.query.uses import uses_in
from codeask.settings import LLMSettings

__all__ = [
    "Budget",
    "budget_for",
    "time_budget",
    "subquestions_in_time",
    "tighten",
    "called",
    "drop_lowest",
    "fit_documents",
    "shorten",
    "document_cap",
    "CHAT_OVERHEAD",
    "TIGHT_DOCUMENT_TOKENS",
    "TOKENS_PER_DOCUMENT",
    "READING_SHARE",
    "PLAN_SHARE",
    "FIRST_SHARES",
    "call_seconds",
    "SUBQUESTIONS_SHARE",
    "cut_reason",
    "budget_json",
]

#: Tokens the chat template and role markers add around a prompt (llama.cpp's Qwen and SmolLM2
#: templates add under 30; a margin for others).
CHAT_OVERHEAD = 64
#: Prompt tokens one document is planned at (:func:`document_cap`): a whole retrieved chunk, up to
#: 60 lines (``codeask.index.chunking.CHUNK_LINES``) at ~12 tokens a line (the measure of
#: :data:`TIGHT_DOCUMENT_TOKENS`), so a 4096-token context (3,008 prompt tokens after a 1,024-token
#: reply and :data:`CHAT_OVERHEAD`) gets 4 documents and 8192 gets 10. Was ``llm.tokens_per_document``;
#: the settings for it are ``llm.context_tokens`` and ``retrieval.max_files``.
TOKENS_PER_DOCUMENT = 700
#: Tokens one document is planned at under a time budget, its header included: ~15 lines of Python
#: (12 tokens a line measured with Qwen2.5's tokenizer on requests' code), the definition around the
#: lines naming the question's words (:func:`codeask.query.focus.focus`). Issue 30's idle run at 300
#: (a document's first ~20 lines) fit 2-3 documents in the 20 s first-token budget at 63 prompt
#: tokens/s, and the key facts in them fell from 0.917 to 0.611 of those 8-10 whole chunks held.
TIGHT_DOCUMENT_TOKENS = 200
#: The share of a time budget's document tokens the documents are cut to (:func:`tighten`): the lines
#: kept are costed at their documents' average characters per token, and a few lines dense in
#: identifiers count more; a prompt over its limit loses its lowest-ranked document
#: (:func:`fit_documents`), so the plan stays under it.
PLAN_SHARE = 0.9
#: Shares of a time budget's document tokens the first (best-ranked) document gets, the others one
#: each (:func:`tighten`): its window is the one most likely to hold the rule the question asks
#: about (issue 30: ``raise_for_status`` cut to its first 12 lines lost the ``status_code`` test and
#: the ``HTTPError`` it raises). Measured offline on the whole chunks of issue 30's 12 questions,
#: top ``tokens // 200`` documents: the key facts kept were 0.708 -> 0.778 at 900 document tokens
#: and 0.736 -> 0.806 at 1,100 with 2 shares (1.5 for the second as well: 0.750 and 0.806; 3 for
#: the first: 0.736 and 0.764).
FIRST_SHARES = 2.0
#: Cuts of one document :func:`tighten` tries before it keeps one over its share and margin (:func:`_cut_to`).
CUT_TRIES = 3
#: The least reply a time budget leaves, tokens (a few sentences).
MIN_REPLY_TOKENS = 64
#: The share of the first token's seconds left that the documents are planned to fill: the rest is
#: the margin for what the plan does not count (the prompt's token-counting round trips, the first
#: decode step, a prompt read slower than the median of the measured speeds), so that the first
#: word comes within ``llm.first_token_seconds`` rather than around it. The documents are cut to
#: :data:`PLAN_SHARE` of it, so the prompt read is ~0.85 of the seconds left. Was 0.85 (~0.77 read):
#: issue 30's runs of Qwen2.5-Coder-1.5B on 2 idle threads had their first word at a median of
#: 13.4-13.6 s of the 20 allowed (a31's 12 questions, 13.5 s on a32's first 9).
READING_SHARE = 0.95
#: Tokens in and out of the ``subquestions`` step's call: Qwen2.5-Coder-1.5B read 322 and wrote 31
#: for a one-line question (llama.cpp's timings, bench/answers.py).
SUBQUESTION_CALL = (330, 40)
#: The share of ``llm.first_token_seconds`` a local model's ``subquestions`` call may take when its
#: measured speed planned it (its deadline; after it the question is searched alone): issue 30's
#: newcomer saw that call take 36.8 s on a machine at load 4-7, more than the whole 20 s to the
#: first token, because its speed was measured idle. Idle, Qwen2.5-Coder-1.5B took ~9 s (322 tokens
#: read at 63/s, 31 written at 8.8/s). Without a measured speed the call has no deadline: it is the
#: measurement (a cold llama.cpp server gave no first token in 10 s, and every answer after it was
#: then sent a whole-context prompt).
SUBQUESTIONS_SHARE = 0.5


@dataclass(frozen=True)
class Budget:
    """Token counts for one LLM call: ``context`` (the model's window), ``reply`` (``max_tokens`` sent)
    and ``prompt`` (what the prompt may use). Under a time budget also ``documents`` (tokens the
    documents may take), ``seconds`` (the call's deadline: ``llm.answer_seconds`` less ``spent``,
    the seconds the ask took before the call) and the expected seconds from the ask's start to the
    first token and to the end at the measured speed."""

    context: int
    reply: int
    prompt: int
    documents: int | None = None
    seconds: float | None = None
    expected_first_token: float | None = None
    expected_end: float | None = None
    spent: float = 0.0


def budget_for(context: int, max_tokens: int) -> Budget:
    """The :class:`Budget` of a call with ``max_tokens`` in a ``context``-token window."""
    reply = max(16, min(max_tokens, context // 2))
    return Budget(context=context, reply=reply, prompt=max(64, context - reply - CHAT_OVERHEAD))


def document_cap(prompt_tokens: int) -> int:
    """The most documents a prompt budget of ``prompt_tokens`` holds: one per
    :data:`TOKENS_PER_DOCUMENT` tokens, at least 1."""
    return max(1, prompt_tokens // TOKENS_PER_DOCUMENT)


def time_budget(
    budget: Budget,
    speed: Speed | None,
    first_token_seconds: float,
    answer_seconds: float,
    frame: int = 0,
    spent: float = 0.0,
) -> Budget:
    """``budget`` with the time budget of a local model at ``speed`` (see the module docstring),
    counted from when the user asked: ``spent`` seconds went before this call (retrieval, search
    queries). The documents get what ``speed.prompt`` reads in :data:`READING_SHARE` of the
    ``first_token_seconds`` left (at least a quarter of them) less the ``frame`` (the prompt's tokens around the documents; the
    system prompt before it is the server's cached prefix), at least half a tight document; the
    reply what ``speed.generated`` writes in the seconds left of ``answer_seconds`` (at least
    :data:`MIN_REPLY_TOKENS`, at most ``budget.reply``); the call's deadline is the ``answer_seconds``
    left (at least ``first_token_seconds``, or ``answer_seconds`` when that is shorter). Without a measured speed only the deadline is set."""
    seconds = round(max(min(first_token_seconds, answer_seconds), answer_seconds - spent), 1)
    if speed is None or not speed.prompt:
        return replace(budget, seconds=seconds, spent=round(spent, 1))
    first = READING_SHARE * max(first_token_seconds / 4, first_token_seconds - spent)
    documents = max(TIGHT_DOCUMENT_TOKENS // 2, min(budget.prompt, int(speed.prompt * first) - frame))
    reading = (documents + frame) / speed.prompt
    reply, end = budget.reply, None
    if speed.generated:
        reply = max(MIN_REPLY_TOKENS, min(budget.reply, int(speed.generated * (seconds - reading))))
        end = round(spent + reading + reply / speed.generated, 1)
    return replace(
        budget, reply=reply, documents=documents, seconds=seconds, spent=round(spent, 1),
        expected_first_token=round(spent + reading, 1), expected_end=end,
    )  # fmt: skip


def subquestions_in_time(speed: Speed | None, first_token_seconds: float) -> bool:
    """Whether a local model at ``speed`` writes the search queries of the ``subquestions`` step
    (:data:`SUBQUESTION_CALL` tokens in and out) in a quarter of ``first_token_seconds``: their
    seconds come out of the answer prompt's reading time (:func:`time_budget` counts from the
    ask), and at Qwen2.5-Coder-1.5B's idle speed on 2 threads (63 / 8.8 tokens/s, issue 30) they
    would take ~10 s, half of the default 20 s, leaving a prompt of one or two documents; ``True``
    while the speed is not known (that call measures it)."""
    if speed is None or not speed.prompt or not speed.generated:
        return True
    prompt, reply = SUBQUESTION_CALL
    return prompt / speed.prompt + reply / speed.generated <= first_token_seconds / 4


def tighten(
    documents: list[Document],
    tokens: int,
    most: int,
    measure: Callable[[list[Document]], int],
    terms: frozenset[str] = frozenset(),
    chars_per_token: float = CHARS_PER_TOKEN,
    names: frozenset[str] = frozenset(),
) -> list[Document]:
    """The best-ranked ``most`` and ``tokens // TIGHT_DOCUMENT_TOKENS`` documents (at least one), a
    span the ``widen`` step added kept where it is ranked (:func:`drop_lowest` dropped such spans
    first, and issue 30's key facts sat in them: ``prepare_request`` after ``Session``'s first
    chunk, ``merge_environment_settings``; offline, on a32's retrieved documents of the 20 bench
    questions at its idle speed, the key facts in the first prompt went from 0.692 to 0.742 of all),
    each cut to the lines that fit its share of what is left of :data:`PLAN_SHARE` of ``tokens``
    (the first, best-ranked document :data:`FIRST_SHARES` shares, the others one each).

    What is left is measured, never estimated: ``measure(docs)`` is the tokens ``docs`` add to the
    prompt as it will be sent (their headers, their text as :func:`~codeask.query.focus.shown`, the
    cue line naming their code), the count :func:`fit_documents` then checks. A document's share
    (its header included) is taken from the plan less the measure of the documents cut so far; its
    header is the measure with it empty, so the cue line's sentence is counted once, with the first
    document. A document that takes less than its share (its quiet runs left out, or short) leaves
    the rest to the next ones (offline on main's retrieved documents of the 24 bench questions at
    Qwen2.5-Coder-1.5B's idle speed, key facts in the first prompt 0.681 -> 0.733, median prompt
    tokens 945 -> 1,089), one that takes more leaves them less; a cut over its share and its part
    of the margin (``tokens`` less the plan) is cut again (:func:`_cut_to`), so the prompt stays
    within ``tokens`` and the fit drops no document.

    Each is cut to the definition around the lines naming the question's ``terms``
    (:func:`codeask.query.focus.focus`, ``chars_per_token`` characters a token; at least five lines),
    one named in ``names`` (the question's code names, :func:`codeask.query.focus.code_names`) first;
    for the other documents also one the first document's window calls (:func:`called`)."""
    docs = list(documents)
    del docs[max(1, min(most, tokens // TIGHT_DOCUMENT_TOKENS)) :]  # the lowest-ranked, spans or not
    weights = [FIRST_SHARES if i == 0 and len(docs) > 1 else 1.0 for i in range(len(docs))]
    plan, weight = int(tokens * PLAN_SHARE), sum(weights)
    out: list[Document] = []
    spent = measure(out)  # then what the last cut took: each list of documents is measured once
    for d, w in zip(docs, weights):
        base = measure([*out, replace(d, content="")])  # with d's header
        share = int((plan - spent) * w / weight) - (base - spent)
        most_tokens = share + int((tokens - plan) * w / weight)  # its part of the margin
        taken = partial(_taken, measure, list(out), base)
        cut, used = _cut_to(d, share, most_tokens, taken, terms, chars_per_token, names)
        out.append(cut)
        spent = base + used
        weight -= w
        if len(out) == 1:
            names = names | called(out[0].content, out[0].language)
    return out


def _taken(measure: Callable[[list[Document]], int], before: list[Document], base: int, cut: Document) -> int:
    """The tokens ``cut``'s lines add to the prompt after the documents ``before``: ``measure`` of
    them all less ``base``, their measure with ``cut`` empty."""
    return measure([*before, cut]) - base


def _cut_to(
    document: Document,
    share: int,
    most: int,
    measure: Callable[[Document], int],
    terms: frozenset[str],
    chars_per_token: float,
    names: frozenset[str],
) -> tuple[Document, int]:
    """``(cut, tokens it takes)``: ``document`` cut by :func:`~codeask.query.focus.focus` to ``share``
    tokens, as ``measure`` counts a cut of it in the prompt: a cut measured over ``most`` (its share and its part of the
    plan's margin) is cut again, at the density measured, up to :data:`CUT_TRIES` cuts in all; the
    last one when none fits. Focus costs lines at ``chars_per_token``, the documents' average, and
    a docstring left out only when it is whole: bench/answers.py's flask question on
    ``before_request`` (Qwen2.5's tokenizer) had a window ending above a docstring's closing quotes,
    167 tokens for a share of 149, and 297 once cut shorter, so the fit dropped a whole document."""
    tokens = share
    for _ in range(CUT_TRIES):
        cut = focus(document, terms, tokens, chars_per_token, names)
        used = measure(cut)
        if used <= most or tokens <= 0:
            break
        tokens = int(tokens * share / used)
    return cut, used


def called(code: str, language: str) -> frozenset[str]:
    """The names ``code`` (a window of a document in ``language``) calls, as tree-sitter reads them
    (:func:`codeask.query.uses.uses_in`, ``name(`` and ``obj.name(``; not the words of comments and
    strings, nor keywords such as ``if (``; the window dedented first, so a method out of its class
    parses): in the best-ranked document's window, the definitions the other documents are best
    cut to (issue 30: ``full_dispatch_request``'s window calls ``finalize_request``, which a later
    document of the same file holds)."""
    return frozenset(u.name for u in uses_in(textwrap.dedent(code), language).uses if u.kind == "call")


def shorten(document: Document, lines: int) -> Document:
    """``document`` cut to its first ``lines`` lines (``end_line`` adjusted)."""
    kept = split_lines(document.content)[: max(1, lines)]  # the line model of every line number (codeask.lines)
    return replace(document, content="\n".join(kept), end_line=document.start_line + len(kept) - 1)


def drop_lowest(docs: list[Document]) -> None:
    """Remove, in place, the document to lose first: the last span the ``widen`` step added
    (``Document.extra``) if any, else the last (lowest-ranked) document."""
    for i in range(len(docs) - 1, -1, -1):
        if docs[i].extra:
            del docs[i]
            return
    docs.pop()


def fit_documents(
    documents: list[Document],
    render: Callable[[list[Document]], str],
    count: Callable[[str], int],
    limit: int,
    *,
    max_documents: int | None = None,
) -> tuple[list[Document], str, int]:
    """The documents (best first) and prompt that fit ``limit`` tokens: ``(documents, prompt, tokens)``.

    ``render(documents)`` builds the whole prompt; ``count(text)`` counts its tokens. When even one
    document cut to a few lines does not fit, that smallest prompt is returned (the caller's
    context-length error handling takes over).
    """
    docs = list(documents)
    while max_documents and len(docs) > max_documents:
        drop_lowest(docs)
    prompt = render(docs)
    tokens = count(prompt)
    while tokens > limit and docs:
        if len(docs) > 2:
            drop_lowest(docs)
        else:
            longest = max(range(len(docs)), key=lambda i: len(docs[i].content))
            n_lines = len(split_lines(docs[longest].content))
            if n_lines > MIN_LINES:
                # shrink by the overflow ratio (at least by a third), so few counts are needed
                ratio = min(2 / 3, limit / tokens)
                docs[longest] = shorten(docs[longest], max(MIN_LINES, int(n_lines * ratio)))
            elif len(docs) > 1:
                docs.pop()
            else:
                break
        prompt = render(docs)
        tokens = count(prompt)
    return docs, prompt, tokens


def call_seconds(budget: Budget, elapsed: float) -> float | None:
    """The deadline of the call planned with ``budget`` when it starts ``elapsed`` seconds into the
    ask: ``budget.seconds`` less the seconds since the plan (``elapsed - budget.spent``: the prompt's
    token counts), at least one; ``None`` without a time budget."""
    if budget.seconds is None:
        return None
    return max(1.0, round(budget.seconds - max(0.0, elapsed - budget.spent), 1))


def cut_reason(done: Completion, budget: Budget, llm: LLMSettings, elapsed: float) -> str | None:
    """Why the answer is cut off, ``elapsed`` seconds into the ask: the time budget when the call
    ran out of it (counted over the whole ask, not the call: the steps before it, the first and the
    second part) or stopped at a ``max_tokens`` the time budget lowered (below ``llm.max_tokens``),
    else the completion's reason; ``None`` when it is complete."""
    if done.finish_reason == "deadline":
        return f"the answer's time budget ran out after {elapsed:.0f}s of the ask (llm.answer_seconds = {llm.answer_seconds:g}s)"
    if done.finish_reason == "length" and budget.seconds is not None and budget.reply < llm.max_tokens:
        return (
            f"the reply's time budget was used up ({budget.reply} tokens at the endpoint's measured speed, "
            f"llm.answer_seconds = {llm.answer_seconds:g}s)"
        )
    return done.cut_reason()


def budget_json(budget: Budget) -> dict[str, float | int | None] | None:
    """The answer metadata's ``time_budget``: the call's deadline, the seconds the ask took before
    the call, the expected seconds from the ask's start to the first token and to the end, and the
    documents' and reply's tokens; ``None`` without a time budget (a hosted model)."""
    if budget.seconds is None:
        return None
    return {
        "answer_seconds": budget.seconds,
        "seconds_before_call": budget.spent,
        "expected_first_token_seconds": budget.expected_first_token,
        "expected_seconds": budget.expected_end,
        "document_tokens": budget.documents,
        "reply_tokens": budget.reply,
    }
