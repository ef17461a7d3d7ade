"""The token budget of a prompt: what fits the model's context once room is left for the reply.

A model's context (``llm.context_tokens``, or what the endpoint reports, see
:meth:`codeask.llm.base.BaseLLM.context_tokens`) holds the prompt *and* the reply. The reply gets
``min(llm.max_tokens, context / 2)`` tokens; the prompt gets the rest, less a margin for the chat
template's own tokens (:data:`CHAT_OVERHEAD`). :func:`fit_documents` then fits documents into it:

1. at most ``available / llm.tokens_per_document`` documents, each span counting as one (so a small local context gets a few
   whole documents rather than many cut ones; at least 1);
2. while the rendered prompt is too long: drop the lowest-ranked document (keeping 2; spans the
   ``widen`` step added go first, see :func:`drop_lowest`), then
   shorten the longest document to two thirds of its lines (its ``end_line`` follows, so its link
   stays true), and finally drop down to one document.

Tokens are counted by the endpoint's tokenizer where it has one (llama.cpp ``/tokenize``), else
estimated (:func:`codeask.llm.base.estimate_tokens`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from codeask.query.pipeline import Document

__all__ = ["Budget", "budget_for", "drop_lowest", "fit_documents", "shorten", "CHAT_OVERHEAD"]

#: Tokens the chat template and role markers add around a prompt (llama.cpp's Qwen and SmolLM2
#: templates add under 30; a margin for others).
CHAT_OVERHEAD = 64
_MIN_LINES = 5


@dataclass(frozen=True)
class Budget:
    """Token counts for one LLM call: ``context`` (the model's window), ``reply`` (``max_tokens`` sent)
    and ``prompt`` (what the prompt may use)."""

    context: int
    reply: int
    prompt: int


def budget_for(context: int, max_tokens: int) -> Budget:
    """The :class:`Budget` of a call with ``max_tokens`` in a ``context``-token window."""
    reply = max(16, min(max_tokens, context // 2))
    return Budget(context=context, reply=reply, prompt=max(64, context - reply - CHAT_OVERHEAD))


def shorten(document: Document, lines: int) -> Document:
    """``document`` cut to its first ``lines`` lines (``end_line`` adjusted)."""
    kept = document.content.splitlines()[: max(1, lines)]
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
            n_lines = len(docs[longest].content.splitlines())
            if n_lines > _MIN_LINES:
                # shrink by the overflow ratio (at least by a third), so few counts are needed
                ratio = min(2 / 3, limit / tokens)
                docs[longest] = shorten(docs[longest], max(_MIN_LINES, int(n_lines * ratio)))
            elif len(docs) > 1:
                docs.pop()
            else:
                break
        prompt = render(docs)
        tokens = count(prompt)
    return docs, prompt, tokens
