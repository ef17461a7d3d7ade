"""Answer generators for explain: the LLM's explanation (:class:`ExplainAnswer`) or, without an
LLM, the related code as links (:class:`RelatedList`).

The selection is ``query.options.selection`` (an :class:`~codeask.query.options.ExplainSelection`
of a :class:`~codeask.query.span.Span`); what may not be sent (its ``withheld_reason``, credentials
in the text) is never sent: the
answer is then the related code with a note. The prompt is fitted to the model's context with the
ask path's budget (:mod:`codeask.query.budget`): the selection gets at most half of the prompt's
tokens (cut to its first lines beyond that, and the prompt says so), the related documents the rest.

A brief explanation (hover) asks for under 80 words and gets :data:`BRIEF_REPLY_TOKENS`; a reply
cut off there ends at its last full sentence, followed by :data:`CUT_MARK` (:func:`cut_at_sentence`).
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache

from codeask.llm import LLM, Completion, ContextLengthError, LLMError
from codeask.query.answer import safe_documents
from codeask.query.budget import Budget, budget_for, document_cap, fit_documents, shorten
from codeask.query.graph import via_parts
from codeask.query.pipeline import Document, Query
from codeask.query.resolve import definitions_of
from codeask.query.result import Withheld, source_link
from codeask.query.templates import Templates, fence, render_documents
from codeask.settings import Settings
from codeask.sureness import via_label
from codeask.uris import file_uri

__all__ = [
    "ExplainAnswer",
    "RelatedList",
    "ExplainCache",
    "CachedReply",
    "cut_at_sentence",
    "related_markdown",
    "BRIEF_REPLY_TOKENS",
    "CUT_MARK",
]

#: ``max_tokens`` of a brief (hover) explanation: the template asks for under 80 words (~110 tokens
#: of English), so a reply that keeps to it is never cut; one that rambles is cut near 120 words.
BRIEF_REPLY_TOKENS = 160
#: What ends a brief explanation cut at its last full sentence.
CUT_MARK = " …"
_SENTENCE_END = re.compile(r"[.!?][)\]\"'*_`]*(?=\s)")


def cut_at_sentence(text: str) -> str:
    """``text`` (a reply cut off mid-sentence) up to its last complete sentence, then :data:`CUT_MARK`;
    never inside an unclosed code fence; up to its last whole word when no sentence ended."""
    fences = [m.start() for m in re.finditer(r"^\s*```", text, re.MULTILINE)]
    if len(fences) % 2:  # an open code block: drop it
        text = text[: fences[-1]]
    body = text.rstrip()
    ends = list(_SENTENCE_END.finditer(body + " "))
    if ends:
        return body[: ends[-1].end()].rstrip() + CUT_MARK
    word = body.rfind(" ")
    return (body[:word] if word > 0 else body).rstrip(" ,;:") + CUT_MARK


def related_markdown(span: Any, documents: list[Document]) -> str:
    """The answer without an LLM: the related locations of ``span`` as numbered markdown links, its
    symbol-graph neighbours (documents with a ``via``) first, each saying how it is linked, then the
    code retrieval found by words alone under a heading of its own (a reader takes every listed
    entry for a caller or callee otherwise)."""
    head = f"**{span.symbol}**" if span.symbol else f"`{span.label}`"
    if not documents:
        return f"{head}: no related code found in the index."
    here = source_link(
        span.display_path, span.start_line, span.end_line, file_uri(span.abs_path, span.start_line, span.end_line)
    )
    linked, similar = [d for d in documents if d.via], [d for d in documents if not d.via]
    lines = [f"Related code for {head} ({here}):", ""]
    lines += [_item(i, d) for i, d in enumerate(linked, 1)] or ["No caller or callee in the symbol graph."]
    if similar:
        lines += ["", "Similar code (shares words; no symbol-graph link):", ""]
        lines += [_item(i, d) for i, d in enumerate(similar, len(linked) + 1)]
    return "\n".join(lines)


def _item(i: int, d: Document) -> str:
    """Entry ``i`` of :func:`related_markdown`: ``d``'s link and symbol, and for a graph neighbour how
    it is linked (``calls `apply_discount```, ``called by it``; ``, by name only`` for a guess)."""
    entry = f"{i}. {source_link(d.label, d.start_line, d.end_line, d.uri)} {_named(d)}"
    if not d.via:
        return entry
    parts = via_parts(d.via)  # "caller of NAME in PATH:LINE" or "calls NAME from PATH:LINE"
    if parts is None:
        return entry
    kind, name, up = parts
    how = f"{kind} `{name}`" if up else f"{_DONE[kind]} by it"
    return f"{entry}: {how}{via_label(d.via_sure)}"


def _named(d: Document) -> str:
    """What entry ``d`` is, for a reader: its symbol, else the definitions its lines hold (a chunk of
    module-level code packing a few), else ``(top level)`` (code outside every definition), as
    ``codeask related`` names a caller."""
    names = d.symbol or ", ".join(x.symbol for x in definitions_of(d.content, d.language)[:3])
    return f"`{names}`" if names else "(top level)"


#: How a graph edge's kind (:func:`codeask.query.graph.edge_kind`) reads from the callee's side.
_DONE = {"calls": "called", "creates": "created", "reads": "read", "uses type": "a type used", "uses": "used"}


@dataclass(frozen=True)
class CachedReply:
    """An LLM explanation kept by :class:`ExplainCache`: its text and how its call ended."""

    text: str
    finish_reason: str | None
    cut_reason: str | None
    model: str


class ExplainCache:
    """LLM explanations by :meth:`key`; a thread-safe :class:`cachetools.LRUCache` of ``size`` entries
    (256 by default: a session's worth of hovers)."""

    def __init__(self, size: int = 256):
        self._data: LRUCache[str, CachedReply] = LRUCache(maxsize=size)
        self._lock = threading.Lock()

    @staticmethod
    def key(selection: Document, brief: bool, model: str) -> str:
        """sha256 hex (64 characters) of the model, ``brief``, the path and the code sent."""
        return hashlib.sha256(f"{model}\0{int(brief)}\0{selection.path}\0{selection.content}".encode()).hexdigest()

    def get(self, key: str) -> CachedReply | None:
        """The reply cached under ``key`` (now the most recently used), or ``None``."""
        with self._lock:
            return self._data.get(key)

    def put(self, key: str, value: CachedReply) -> None:
        """Keep ``value`` under ``key``; the least recently used entry goes when the cache is full."""
        with self._lock:
            self._data[key] = value

    def clear(self) -> None:
        """Forget every reply (new settings: another model or template may answer differently)."""
        with self._lock:
            self._data.clear()


class RelatedList:
    """The explain answer without an LLM: the related code as links (plus the selection's ``note``)."""

    name = "answer"

    def __call__(self, query: Query) -> Query:
        return self.answer(query, query.options.explained().note)

    def answer(self, query: Query, note: str | None) -> Query:
        """``query`` answered with the related code as links and ``note`` (one line) below them."""
        text = related_markdown(query.options.explained().span, query.documents)
        query.answered(self.name, f"{text}\n\n> {note}" if note else text, llm=False)
        return query


class ExplainAnswer:
    """Explains the selection with one streamed LLM call (``explain`` template).

    LLM failures never lose the related code: the error goes on ``query.errors`` and the answer is
    :class:`RelatedList`'s. A cancellation (``query.cancel``) aborts the call (its connection is
    closed) and raises :class:`~codeask.query.pipeline.Cancelled`. Replies are kept in ``cache``
    (when given) by the text sent, the model and ``brief``.
    """

    name = "explain"

    def __init__(
        self, llm: LLM, templates: Templates, settings: Settings, *, brief: bool, cache: ExplainCache | None = None
    ):
        self.llm, self.templates, self.settings = llm, templates, settings
        self.brief, self.cache = brief, cache

    def _fallback(self, query: Query, note: str) -> Query:
        return RelatedList().answer(query, note)

    def prompt(self, query: Query, selection: Document, documents: list[Document], *, cut: bool = False) -> str:
        """The ``explain`` template for ``selection`` and ``documents`` (numbered, fenced); ``cut``
        tells the template that only the selection's first lines are shown.

        Raises:
            TemplateError: the template reads a missing key.
        """
        span = query.options.explained().span
        return self.templates.render(
            "explain",
            path=span.display_path,
            start_line=selection.start_line,
            end_line=selection.end_line,
            symbol=span.symbol,
            definition=span.definition,
            language=span.language,
            selection=fence(selection.content),
            selection_cut=cut,
            documents=render_documents(self.templates, documents),
            brief=self.brief,
        )

    def fit(
        self, query: Query, selection: Document, documents: list[Document]
    ) -> tuple[str, Document, list[Document], Budget]:
        """The prompt fitted to the model's context, the (possibly cut) selection, the documents it
        holds and the budget; the selection keeps at most half of the prompt's tokens."""
        reply = BRIEF_REPLY_TOKENS if self.brief else self.settings.llm.max_tokens
        budget = budget_for(self.llm.context_tokens(), reply)
        count = self.llm.count_tokens
        available = budget.prompt - (count(self.templates.system) if self.templates.system else 0)
        shown, cut = selection, False
        while count(shown.content) > available // 2 and shown.end_line > shown.start_line:
            lines = shown.end_line - shown.start_line + 1
            shown, cut = shorten(shown, max(1, int(lines * min(2 / 3, available / 2 / count(shown.content))))), True
        docs, prompt, _ = fit_documents(
            documents,
            lambda ds: self.prompt(query, shown, ds, cut=cut),
            count,
            available,
            max_documents=document_cap(budget.prompt),
        )
        return prompt, shown, docs, budget

    def __call__(self, query: Query) -> Query:
        selection = self._sendable(query)
        if selection is None:
            return query
        documents = safe_documents(query.documents, self.settings, query.withheld)
        model = self.llm.describe()
        key = ExplainCache.key(selection, self.brief, model)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            query.finish_reason, query.cut_reason = hit.finish_reason, hit.cut_reason
            query.answered(self.name, hit.text, llm=True, model=hit.model, cached=True)
            return query
        prompt, shown, documents, budget = self.fit(query, selection, documents)
        retried = False
        while True:
            try:
                done = self.llm.generate(
                    prompt, system=self.templates.system, max_tokens=budget.reply, cancel=query.cancel
                )
                break
            except ContextLengthError as exc:
                if retried or not documents:
                    query.errors.append(str(exc))
                    return self._fallback(query, f"**LLM error:** {exc}")
                retried = True
                prompt, shown, documents, budget = self.fit(query, shown, documents[: len(documents) // 2])
            except LLMError as exc:
                query.errors.append(str(exc))
                return self._fallback(query, f"**LLM error:** {exc}")
        self._answered(query, done, model, _Sent(selection, shown, documents, budget))
        if self.cache is not None and done.finish_reason in ("stop", "length"):
            self.cache.put(key, CachedReply(query.answer or "", done.finish_reason, query.cut_reason, model))
        return query

    def _sendable(self, query: Query) -> Document | None:
        """The selection as a document the LLM may get, or ``None`` with ``query`` answered by
        :class:`RelatedList` and a note (withheld by ``withheld_reason``, or holding credentials)."""
        span = query.options.explained().span
        reason = query.options.explained().withheld_reason
        if reason:
            where = span.path or span.abs_path
            query.withheld.append(Withheld(where, span.root, span.start_line, span.end_line, "withheld", reason))
            self._fallback(query, f"Not sent to the LLM: {reason}.")
            return None
        selection = Document(
            path=span.path or span.abs_path.rsplit("/", 1)[-1],
            root=span.root,
            start_line=span.start_line,
            end_line=span.end_line,
            symbol=span.symbol,
            language=span.language,
            content=span.text,
        )
        clean = safe_documents([selection], self.settings, query.withheld)
        if not clean:  # a private key: nothing of it goes out
            self._fallback(query, "Not sent to the LLM: it holds credentials.")
            return None
        return clean[0]

    def _answered(self, query: Query, done: Completion, model: str, sent: _Sent) -> None:
        """``query`` answered with ``done``'s text (a brief one cut at its last full sentence)."""
        text = done.text.strip()
        if self.brief and done.truncated and text:
            text = cut_at_sentence(text)
        query.prompt_documents = sent.documents
        query.finish_reason, query.cut_reason = done.finish_reason, done.cut_reason()
        query.answered(
            self.name,
            text,
            llm=True,
            model=model,
            finish_reason=done.finish_reason,
            tokens=done.tokens,
            prompt_tokens=done.prompt_tokens,
            documents_sent=len(sent.documents),
            selection_lines=[sent.shown.start_line, sent.shown.end_line],
            selection_cut=sent.shown.end_line < sent.selection.end_line,
            context_tokens=sent.budget.context,
        )


@dataclass(frozen=True)
class _Sent:
    """What one explain prompt held: the selection, the part of it shown, the documents, the budget."""

    selection: Document
    shown: Document
    documents: list[Document]
    budget: Budget
