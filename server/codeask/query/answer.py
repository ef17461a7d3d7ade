"""The answer step :class:`SimpleAnswer` (one streamed LLM call over the documents; without an LLM,
:class:`~codeask.query.no_llm.NoLLMAnswer` lists the ranked sources), and the secret filter every
document passes before it leaves the process (:func:`safe_documents`).

The answer step follows Swiftide's ``answers::Simple``: the prompt template sees ``question`` and
``original`` (the question as asked, or its digest when it was long: :mod:`codeask.query.digest`,
cut further to a quarter of the prompt budget), ``current`` (what the search looked for) and ``documents``:
each document rendered with the document template and joined with ``---`` lines, or, when a
response transformer replaced ``current`` after retrieval (a summary), that text instead.

Templates live in :mod:`codeask.query.templates`, the :class:`~codeask.query.result.Answer` a
caller gets in :mod:`codeask.query.result`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from codeask.index.folders import cache_root
from codeask.index.walk import is_secret
from codeask.llm import LLM, Completion, ContextLengthError, LLMError, Speed
from codeask.llm.protocol import is_local_url
from codeask.llm.speed import CACHE_FILE, SpeedCache
from codeask.query.budget import (
    TIGHT_DOCUMENT_TOKENS,
    Budget,
    budget_for,
    budget_json,
    call_seconds,
    cut_reason,
    document_cap,
    drop_lowest,
    fit_documents,
    tighten,
    time_budget,
)
from codeask.query.cues import code_cues, cue_line, wants_code
from codeask.query.digest import digest_question
from codeask.query.focus import CHARS_PER_TOKEN, code_names, question_terms, shown
from codeask.query.more import about, continuation, continuation_tokens, joined, remainders, run_second_part, unsent
from codeask.query.no_llm import NOTHING_FOUND, NoLLMAnswer
from codeask.query.pipeline import Document, Query, along_chain
from codeask.query.result import Withheld
from codeask.query.templates import Templates, render_documents
from codeask.settings import Settings

__all__ = [
    "SimpleAnswer",
    "safe_documents",
    "scrub",
    "local_speed",
    "speed_cache",
]


def _note(withheld: list[Withheld] | None, entry: Withheld) -> None:
    if withheld is not None and entry not in withheld:
        withheld.append(entry)


def scrub(document: Document, settings: Settings, withheld: list[Withheld] | None = None) -> Document | None:
    """``document`` as it may be sent to an LLM: ``None`` for a secret file (by name) or text holding a
    private key block, a copy with each line holding a credential redacted, or ``document`` itself.
    What was kept back is appended to ``withheld``. With ``llm.scan_secrets = false`` (trusted
    settings only) just the file-name check applies."""
    if is_secret(document.path, settings.index):
        _note(
            withheld,
            Withheld(document.path, document.root, document.start_line, document.end_line, "withheld", "secret file"),
        )
        return None
    if not settings.llm.scan_secrets:
        return document
    from codeask.query.secrets import redact, scan

    found = scan(document.content, document.path)
    if not found.findings:
        return document
    reason = f"credentials: {', '.join(found.kinds)}"
    if found.whole:
        _note(
            withheld, Withheld(document.path, document.root, document.start_line, document.end_line, "withheld", reason)
        )
        return None
    lines = tuple(sorted({document.start_line + f.line - 1 for f in found.findings}))
    _note(
        withheld,
        Withheld(document.path, document.root, document.start_line, document.end_line, "redacted", reason, lines),
    )
    return replace(document, content=redact(document.content, found))


def safe_documents(
    documents: list[Document], settings: Settings, withheld: list[Withheld] | None = None
) -> list[Document]:
    """``documents`` as they may leave the process: each through :func:`scrub` (secret files and
    private keys dropped, credential lines redacted), whatever the index holds.

    The walker never indexes a secret file, but a pattern added after indexing, or an index written
    by another settings file, could still hold one, and a token can sit in any file: everything that
    leaves the process (LLM prompts, the summary, the eval judge, the Ragas export) goes through this
    filter. What was kept back is appended to ``withheld`` (the answer's ``"withheld"`` metadata).
    """
    out = []
    for d in documents:
        clean = scrub(d, settings, withheld)
        if clean is not None:
            out.append(clean)
    return out


class SimpleAnswer:
    """Answers with one streamed LLM call (``answer`` template); no call when nothing was retrieved.

    When the call fails before any text, the error is recorded on ``query.errors`` and the answer is
    the ranked sources (:class:`NoLLMAnswer`). A local model answers under a time budget
    (:meth:`timed`): a prompt sized to its measured speed, stopped after ``llm.answer_seconds``. An
    answer that was cut off (``max_tokens``, a stream without its final event, a stream that broke,
    the time budget, a reply repeating itself) keeps its text; ``query.finish_reason`` and
    ``query.cut_reason`` say how it ended. A cancellation (``query.cancel``) aborts the call and
    raises :class:`~codeask.query.pipeline.Cancelled`.
    """

    name = "answer"

    def __init__(self, llm: LLM, templates: Templates, settings: Settings, *, stream=None, on_sources=None):
        self.llm = llm
        self.templates = templates
        self.settings = settings
        self.stream = stream
        """Optional ``callable(delta: str)``: the answer is streamed to it as it arrives."""
        self.on_sources = on_sources
        """Optional ``callable(query)``: called with the final documents just before the LLM call, so a
        caller can show where to look whatever the LLM then does."""
        self.speeds = speed_cache(settings)
        """The measured speeds of endpoints (:mod:`codeask.llm.speed`), in codeask's cache folder."""

    def timed(self, budget: Budget, frame: int, spent: float, asked: bool = False) -> Budget:
        """``budget`` under the time budget of a local model (``llm.first_token_seconds``,
        ``llm.answer_seconds``, less the ``spent`` seconds the ask took before this call;
        :func:`~codeask.query.budget.time_budget` with the prompt's ``frame`` tokens) at the speed
        estimated from the cached samples, no faster than this LLM's last call when that call was
        ``asked`` in this ask (its search queries: :meth:`~codeask.llm.speed.SpeedCache.now`); a
        hosted model's budget unchanged."""
        if not is_local_url(self.llm.base_url):
            return budget
        speed = self.speeds.now(self.llm) if asked else self.speeds.record(self.llm, self.llm.speed())
        llm = self.settings.llm
        return time_budget(budget, speed, llm.first_token_seconds, llm.answer_seconds, frame, spent)

    def prompt(self, query: Query, documents: list[Document] | None = None) -> str:
        """The ``answer`` template rendered for ``query``: ``documents`` (default: the query's, secret
        files dropped) numbered and rendered, or ``query.current`` once a response transformer
        replaced it. ``wants_code`` tells the template whether the question asks for code, ``names``
        lists the code the documents show on the question (:mod:`codeask.query.cues`; ``""`` without
        documents or after a response transformer).

        Raises:
            TemplateError: the template reads a missing key.
        """
        names = ""
        if query.response_transformed:
            rendered = query.current
        else:
            if documents is None:
                documents = safe_documents(query.documents, self.settings, query.withheld)
            rendered = render_documents(self.templates, documents)
            names = cue_line(code_cues(documents, question_terms(query.asked, *query.search_texts)))
        return self.templates.render(
            "answer",
            question=query.asked,
            original=query.asked,
            current=query.current,
            documents=rendered,
            wants_code=wants_code(query.asked),
            names=names,
        )

    def fit(self, query: Query, documents: list[Document] | None = None) -> tuple[str, list[Document], Budget]:
        """The prompt fitted to the model's context (:mod:`codeask.query.budget`), the documents it
        holds (numbered ``[1]..[n]`` in this order: the ranked documents that fit, those a graph
        link brought in moved after the file they were reached from, :func:`along_chain`)
        and the budget (a time budget counts the seconds of the steps before, ``query.history``)."""
        budget = budget_for(self.llm.context_tokens(), self.settings.llm.max_tokens)
        spent = elapsed(query)
        fit_question(query, self.llm.count_tokens, budget.prompt // 4)
        if query.response_transformed:
            return self.prompt(query), list(query.documents), self.timed(budget, 0, spent)
        if documents is None:
            documents = safe_documents(query.documents, self.settings, query.withheld)
        frame = self.llm.count_tokens(self.prompt(query, []))
        asked = any(e.step == "subquestions" and not e.data.get("error") for e in query.history)
        budget = self.timed(budget, frame, spent, asked)
        limit = budget.prompt - (self.llm.count_tokens(self.templates.system) if self.templates.system else 0)
        most = document_cap(budget.prompt)
        sent = self.sent(query, budget)
        if budget.documents is not None:  # a local model's time budget: tight documents, fewer tokens
            measure = lambda ds: self.llm.count_tokens(sent(ds)) - frame  # noqa: E731
            documents = self.tight(query, documents, budget.documents, measure, most)
            limit = min(limit, frame + budget.documents)
            most = len(documents)
        docs, prompt, _ = fit_documents(documents, sent, self.llm.count_tokens, limit, max_documents=most)
        chained = along_chain(docs)  # the fitted documents, in call-chain order for the prompt
        if chained != docs:
            prompt = sent(chained)
        return prompt, chained, budget

    def sent(self, query: Query, budget: Budget) -> Callable[[list[Document]], str]:
        """The prompt sent for ``query`` with a list of documents under ``budget`` (:meth:`prompt` over :meth:`shown`):
        what the time budget's plan (:meth:`tight`) and the fit (:func:`~codeask.query.budget.fit_documents`) count."""
        return lambda documents: self.prompt(query, self.shown(query, documents, budget))

    def shown(self, query: Query, documents: list[Document], budget: Budget) -> list[Document]:
        """``documents`` as the prompt shows them: under a time budget without their quiet runs (:func:`shown`)."""
        if budget.documents is None:
            return documents
        terms = question_terms(query.asked, *query.search_texts)
        return [shown(d, terms) for d in documents]

    def tight(
        self, query: Query, documents: list[Document], tokens: int, measure: Callable[[list[Document]], int], most: int
    ) -> list[Document]:
        """``documents`` under a time budget of ``tokens`` document tokens (:func:`~codeask.query.budget.tighten`,
        ``measure`` counting what a list of documents adds to the prompt sent): each trimmed to the definition
        around the lines naming the question's words (the question and its search queries), with the characters per
        token of these documents as the endpoint counts them."""
        if not documents:
            return documents
        text = "\n".join(d.content for d in documents[:most])
        chars_per_token = len(text) / max(1, self.llm.count_tokens(text)) if text.strip() else CHARS_PER_TOKEN
        terms = question_terms(query.asked, *query.search_texts)
        names = code_names(query.asked, *query.search_texts)
        return tighten(documents, tokens, most, measure, terms, chars_per_token, names)

    def second_part(
        self, query: Query, prompt: str, documents: list[Document], budget: Budget, done: Completion
    ) -> tuple[Completion, list[Document], dict[str, object] | None]:
        """``(done, documents, record)`` with a second part (:mod:`codeask.query.more`) when the time left
        after the first part ``done`` (its speed recorded) reads more of the retrieved documents: the
        lines the first part cut from its best documents (:func:`~codeask.query.more.remainders`), then
        the next-ranked ones not sent, trimmed as the first part's (:meth:`tight`), numbered on from ``documents``, appended to
        ``prompt`` after the first part's text, within the model's context and its document cap
        (:func:`~codeask.query.budget.document_cap`). Unchanged when there is no time or room for
        it, nothing more to send, or the second call failed before any text. ``record`` (the answer's
        ``second_part``, ``None`` when none ran): ``{"sent": ["path:first-last", ...], "lines_kept"}``."""
        speed = self.speeds.record(self.llm, done.speed)
        part = continuation_tokens(budget, speed, done, self.settings.llm.answer_seconds - elapsed(query))
        safe = safe_documents(query.documents, self.settings, query.withheld)
        rest = [*remainders(safe, documents), *unsent(safe, documents)]  # the best documents' cut lines first
        rest = about(rest, question_terms(query.asked, *query.search_texts))  # something to say on the question
        most = document_cap(budget.prompt) - len(documents)
        if part is None or not rest or most < 1:
            return done, documents, None
        system = self.llm.count_tokens(self.templates.system) if self.templates.system else 0
        head = self.llm.count_tokens(prompt + continuation(done.text, "", []))
        room = min(part.documents, budget.prompt - system - head)  # within the context
        if room < TIGHT_DOCUMENT_TOKENS:
            return done, documents, None

        def sent(ds: list[Document]) -> str:  # the second part's prompt with documents ds
            rendered = render_documents(self.templates, self.shown(query, ds, budget), first=len(documents) + 1)
            return prompt + continuation(done.text, rendered, ds)

        more = self.tight(query, rest, room, lambda ds: self.llm.count_tokens(sent(ds)) - head, most)
        second = sent(more)
        part = replace(part, seconds=round(self.settings.llm.answer_seconds - elapsed(query), 1))  # after counting
        extra = run_second_part(self.llm, second, self.templates.system, part, self.stream, query.cancel, done.text)
        record = {"sent": [f"{d.label}:{d.start_line}-{d.end_line}" for d in more], "lines_kept": 0}
        if extra is None:
            return done, documents, record
        self.speeds.record(self.llm, extra.speed.writing() if extra.speed else None)  # its prompt was cached
        return joined(done, extra), [*documents, *more], {**record, "lines_kept": len(extra.text.splitlines())}

    def __call__(self, query: Query) -> Query:
        if not query.documents:
            query.answered(self.name, NOTHING_FOUND, llm=False)
            return query
        prompt, documents, budget = self.fit(query)
        query.prompt_documents = documents  # the sources shown now are the documents sent
        if self.on_sources is not None:
            self.on_sources(query)
        retried = False
        while True:
            try:
                done = self.llm.generate(
                    prompt,
                    system=self.templates.system,
                    max_tokens=budget.reply,
                    on_delta=self.stream,
                    cancel=query.cancel,
                    deadline=call_seconds(budget, elapsed(query)),
                )
                break
            except ContextLengthError as exc:  # the count was off: once more with half the documents
                if retried or len(documents) <= 1 or query.response_transformed:
                    query.errors.append(str(exc))
                    query.prompt_documents = None
                    return NoLLMAnswer()(query)
                retried = True
                fewer = list(documents)
                while len(fewer) > max(1, len(documents) // 2):
                    drop_lowest(fewer)  # added spans first, then the lowest-ranked files
                prompt, documents, budget = self.fit(query, fewer)
            except LLMError as exc:  # the sources are still worth returning
                query.errors.append(str(exc))
                query.prompt_documents = None
                return NoLLMAnswer()(query)
        second = None
        if budget.seconds is not None:
            done, documents, second = self.second_part(query, prompt, documents, budget, done)
        query.prompt_documents = documents
        query.finish_reason = done.finish_reason
        query.cut_reason = cut_reason(done, budget, self.settings.llm, elapsed(query))
        query.answered(
            self.name,
            done.text.strip(),
            llm=True,
            model=self.llm.describe(),
            prompt_chars=len(prompt),
            finish_reason=done.finish_reason,
            tokens=done.tokens,
            prompt_tokens=done.prompt_tokens,
            first_token_seconds=done.first_token_seconds,
            documents_sent=len(documents),
            context_tokens=budget.context,
            retried_with_fewer=retried,
            seconds=round(done.seconds, 2),
            time_budget=budget_json(budget),
            second_part=second,
        )
        return query


def elapsed(query: Query) -> float:
    """Seconds since ``query`` was asked (``Query.started``): a time budget counts the whole ask."""
    return time.monotonic() - query.started


def speed_cache(settings: Settings) -> SpeedCache:
    """The endpoints' measured speeds, ``llm-speed.json`` in codeask's cache folder
    (``index.cache_dir``, ``CODEASK_CACHE_DIR``)."""
    return SpeedCache(cache_root(settings) / CACHE_FILE)


def local_speed(llm: LLM, settings: Settings) -> Speed | None:
    """The speed of a local endpoint (``None`` for a hosted one): measured on ``llm``'s calls so far,
    else cached from earlier runs."""
    if not is_local_url(llm.base_url):
        return None
    return speed_cache(settings).record(llm, llm.speed())


def fit_question(query: Query, count: Callable[[str], int], limit: int) -> None:
    """Cut ``query``'s question to a digest of at most ``limit`` tokens (``count`` counts them) when it
    is longer: a long report must leave the prompt room for the code. Sets ``query.digest``."""
    asked = query.asked
    tokens = count(asked)
    if tokens <= limit:
        return
    chars = max(200, len(asked) * limit // tokens)
    query.digest = digest_question(query.original, min(chars, len(asked) - 1))
