"""``textDocument/hover``: the symbol under the cursor explained, registered only when ``hover.enabled``
(:func:`register_hover`, called by ``initialize``).

Without ``hover.llm`` the hover lists the related code (the definition's callers and the definitions
it calls, from the symbol graph) as links, no LLM; with it, a short LLM explanation. Hovers are
debounced (:func:`~codeask.lsp.guards.debounce`): a mouse sweep runs only the hover it rests on, and
a newer hover cancels the LLM call of an older one. A hover never starts indexing and never shows an
error (:func:`~codeask.lsp.guards.quiet`).
"""

from __future__ import annotations

import logging
import os

from lsprotocol import types as lsp

from codeask.index.chunk import TREE_SITTER_LANGUAGES, language_for
from codeask.index.watch import is_relevant
from codeask.llm import CancelToken, make_llm
from codeask.lsp.convert import uri_to_path, word_at, word_range
from codeask.lsp.guards import debounce, quiet
from codeask.lsp.session import CodeaskServer
from codeask.query.explain import NotExplainable, explain, explain_source, symbol_span

__all__ = ["register_hover", "hover"]

log = logging.getLogger("codeask.lsp")

#: Debounce of hovers without the LLM, seconds (a mouse sweep runs only the hover it rests on).
CHEAP_HOVER_DELAY = 0.1


def register_hover(ls: CodeaskServer) -> None:
    """Offer ``textDocument/hover`` when the settings read at ``initialize`` enable it (``hover.enabled``;
    turning it off later makes every hover answer ``None``, turning it on needs a restart)."""
    if ls.ws.settings.hover.enabled:
        ls.feature(lsp.TEXT_DOCUMENT_HOVER)(hover)


def hover_delay(ls: CodeaskServer) -> float:
    """Seconds a hover waits for a newer one: ``hover.delay_ms`` with the LLM, else :data:`CHEAP_HOVER_DELAY`."""
    settings = ls.ws.settings.hover if ls.ready else None
    if settings is None:
        return 0.0
    return settings.delay_ms / 1000 if settings.llm else CHEAP_HOVER_DELAY


@quiet
@debounce(hover_delay)
async def hover(ls: CodeaskServer, params: lsp.HoverParams, token: CancelToken):
    """The hover of the symbol under the cursor (see :func:`~codeask.query.explain.symbol_span`); the
    range is the word's; ``None`` outside indexed code, before the keyword index, or while stopping."""
    if not ls.ready or ls.stopping.is_set() or not ls.ws.settings.hover.enabled:
        return None
    uri, pos = params.text_document.uri, params.position
    path = hover_target(ls, uri)
    if path is None or not ls.scheduler.keyword_ready():
        return None  # a hover never starts indexing
    text = ls.buffer_text(uri)
    try:  # the indexer's rules: a file codeask never reads gets no hover
        shown = explain_source(ls.ws, path, text=text)
    except NotExplainable:
        return None
    word = word_at(shown, pos.line, pos.character, ls.position_encoding())
    if not word.isidentifier():
        return None
    markdown = await ls.run_request(None, explainer(ls, path, pos.line + 1, word, text), lane=ls.hovers, token=token)
    if markdown is None:
        return None
    return lsp.Hover(
        contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=markdown),
        range=word_range(shown, pos.line, pos.character, ls.position_encoding()),
    )


def explainer(ls: CodeaskServer, path: str, line: int, word: str, text: str | None):
    """The worker of a hover: ``run(cancelled, progress)`` -> the markdown of the definition of
    ``word`` used at 1-based ``line`` of ``path`` explained briefly, or ``None`` (no definition, the
    file changed on disk, cancelled). An LLM error leaves the related code (logged, not shown)."""
    llm = hover_llm(ls)

    def run(cancelled, progress) -> str | None:
        try:
            span = None if cancelled() else symbol_span(ls.ws, path, line, word, text=text)
        except NotExplainable:  # changed on disk since the check
            return None
        if span is None or cancelled():
            return None
        got = explain(ls.ws, span, brief=True, llm=llm, no_llm=llm is None, cancelled=cancelled, cache=ls.cache)
        if not got.error:
            return got.markdown
        log.warning("hover LLM: %s", got.error)
        return got.markdown.split("\n\n> **LLM error:**", 1)[0]

    return run


def hover_llm(ls: CodeaskServer):
    """The LLM for hovers (``hover.llm`` on): ``hover.timeout`` seconds, one attempt, or ``None``."""
    s = ls.ws.settings
    resolved = s.resolved_llm()
    if not s.hover.llm or resolved is None:
        return None
    options = s.llm.model_copy(update={"timeout": min(s.llm.timeout, s.hover.timeout), "max_retries": 0})
    return make_llm(resolved, options)


def hover_target(ls: CodeaskServer, uri: str) -> str | None:
    """The path of a document hovers are offered for: a ``file:`` URI inside a root this server
    serves, in a language codeask chunks by syntax, not ignored; else ``None``."""
    path = uri_to_path(uri)
    if path is None or language_for(path) not in TREE_SITTER_LANGUAGES or not ls.serves(path):
        return None
    return path if is_relevant(ls.ws, os.path.abspath(path)) else None
