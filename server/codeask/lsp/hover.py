"""``textDocument/hover``: the symbol under the cursor explained, registered only when ``hover.enabled``
(:func:`register_hover`, called by ``initialize``).

Without ``hover.llm`` the hover lists the related code (the definition's callers and the definitions
it calls, from the symbol graph) as links, no LLM; with it, a short LLM explanation. Hovers are
debounced (:func:`~codeask.lsp.guards.debounce`): a mouse sweep runs only the hover it rests on, and
a newer hover cancels the LLM call of an older one. A hover never starts indexing and never shows an
error (:func:`~codeask.lsp.guards.quiet`).
"""

from __future__ import annotations

import dataclasses
import logging
import os

from lsprotocol import types as lsp

from codeask.llm import CancelToken, make_llm
from codeask.lsp.convert import uri_to_path, word_at, word_range
from codeask.lsp.guards import debounce, quiet
from codeask.lsp.session import CodeaskServer
from codeask.service import ExplainRequest, NotExplainable

__all__ = ["register_hover", "hover"]

log = logging.getLogger("codeask.lsp")

#: Debounce of hovers without the LLM, seconds (a mouse sweep runs only the hover it rests on).
CHEAP_HOVER_DELAY = 0.1
#: Debounce of LLM hovers, milliseconds: hovers replaced by a newer one within this time never
#: reach the LLM; about the pause of a pointer that stops to read (VS Code's own hover delay,
#: ``editor.hover.delay``, is 300 ms). Was ``hover.delay_ms``.
HOVER_DELAY_MS = 350
#: Seconds an LLM hover may take (one attempt, no retries); then the related code is shown. A
#: hover is read while the pointer rests: a short explanation streams well within it on a hosted
#: model. Was ``hover.timeout``.
HOVER_LLM_TIMEOUT = 15.0


def register_hover(ls: CodeaskServer) -> None:
    """Offer ``textDocument/hover`` when the settings read at ``initialize`` enable it (``hover.enabled``;
    turning it off later makes every hover answer ``None``, turning it on needs a restart)."""
    if ls.service.settings.hover.enabled:
        ls.feature(lsp.TEXT_DOCUMENT_HOVER)(hover)


def hover_delay(ls: CodeaskServer) -> float:
    """Seconds a hover waits for a newer one: :data:`HOVER_DELAY_MS` with the LLM, else :data:`CHEAP_HOVER_DELAY`."""
    settings = ls.service.settings.hover if ls.ready else None
    if settings is None:
        return 0.0
    return HOVER_DELAY_MS / 1000 if settings.llm else CHEAP_HOVER_DELAY


@quiet
@debounce(hover_delay)
async def hover(ls: CodeaskServer, params: lsp.HoverParams, token: CancelToken):
    """The hover of the symbol under the cursor (see :func:`~codeask.query.explain.symbol_span`); the
    range is the word's; ``None`` outside indexed code, before the keyword index, or while stopping."""
    if not ls.ready or ls.stopping.is_set() or not ls.service.settings.hover.enabled:
        return None
    uri, pos = params.text_document.uri, params.position
    path = hover_target(ls, uri)
    if path is None or not ls.service.keyword_ready():
        return None  # a hover never starts indexing
    text = ls.buffer_text(uri)
    try:  # the indexer's rules: a file codeask never reads gets no hover
        shown = ls.service.read_source(path, text=text)
    except NotExplainable:
        return None
    word = word_at(shown, pos.line, pos.character, ls.position_encoding())
    if not word.isidentifier():
        return None
    request = ExplainRequest(path, pos.line + 1, pos.line + 1, text=text, word=word, brief=True)
    markdown = await ls.run_request(None, explainer(ls, request), lane=ls.hovers, token=token)
    if markdown is None:
        return None
    return lsp.Hover(
        contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=markdown),
        range=word_range(shown, pos.line, pos.character, ls.position_encoding()),
    )


def explainer(ls: CodeaskServer, request: ExplainRequest):
    """The worker of a hover: ``run(cancelled, progress)`` -> the markdown of the definition that
    ``request.word`` names, explained briefly, or ``None`` (no definition, the file changed on disk,
    cancelled). An LLM error leaves the related code (logged, not shown)."""
    llm = hover_llm(ls)
    if llm is None:
        request = dataclasses.replace(request, no_llm=True)

    def run(cancelled, progress) -> str | None:
        if cancelled():
            return None
        try:
            got = ls.service.explain(request, cancelled=cancelled, cache=ls.cache, llm=llm)
        except NotExplainable:  # no definition of the word, or the file changed on disk since the check
            return None
        if not got.error:
            return got.markdown
        log.warning("hover LLM: %s", got.error)
        return got.markdown.split("\n\n> **LLM error:**", 1)[0]

    return run


def hover_llm(ls: CodeaskServer):
    """The LLM for hovers (``hover.llm`` on): at most :data:`HOVER_LLM_TIMEOUT` seconds, one attempt, or ``None``."""
    s = ls.service.settings
    resolved = s.resolved_llm()
    if not s.hover.llm or resolved is None:
        return None
    options = s.llm.model_copy(update={"timeout": min(s.llm.timeout, HOVER_LLM_TIMEOUT)})
    return make_llm(resolved, options, max_retries=0)


def hover_target(ls: CodeaskServer, uri: str) -> str | None:
    """The path of a document hovers are offered for: a ``file:`` URI inside a root this server
    serves, in a language codeask chunks by syntax, not ignored; else ``None``."""
    path = uri_to_path(uri)
    if path is None or not ls.service.chunked_by_syntax(path) or not ls.serves(path):
        return None
    return path if ls.service.is_relevant(os.path.abspath(path)) else None
