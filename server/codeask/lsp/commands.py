"""The ``codeask.*`` commands (``workspace/executeCommand``) and the ``Explain selection`` code action.

Each handler reads its arguments, runs the engine in a worker lane through
:meth:`CodeaskServer.run_request <codeask.lsp.session.CodeaskServer.run_request>` (the event loop never
blocks) and converts the result (1-based lines -> 0-based LSP ranges). Bad arguments are an
InvalidParams error whose message is the one line to show. :data:`COMMANDS` maps each name to its
handler; :func:`codeask.lsp.server.make_server` registers them.
"""

from __future__ import annotations

import asyncio
import os
from functools import partial
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams

from codeask.lsp.convert import location, related_locations, selection_lines, source_locations, uri_to_path
from codeask.lsp.guards import command_guard, guard
from codeask.lsp.session import CodeaskServer
from codeask.lsp.work import AnswerDeltas
from codeask.service import ExplainRequest, NotExplainable, UnknownSymbol
from codeask.uris import file_uri

__all__ = ["COMMANDS", "code_action"]


@command_guard
async def status(ls: CodeaskServer, *args):
    """``codeask.status`` ``[]`` -> the status (:meth:`CodeaskServer.status`)."""
    return await ls.status()


@command_guard
async def reindex(ls: CodeaskServer, *args):
    """``codeask.reindex`` ``[]``: index now (coalesced with a run under way) -> ``IndexStats.to_json()``."""
    stats = await ls.run_request(None, lambda cancelled, progress: ls.service.reindex(cancelled))
    return stats.to_json()


@command_guard
async def ask(ls: CodeaskServer, *args):
    """``codeask.ask`` ``[question]`` or ``[{"question", "top_k"?, "max_files"?, "no_llm"?, "askId"?}]``
    -> ``Answer.to_json()`` plus ``locations``; with ``askId`` the answer's text is streamed first as
    ``codeask/answerDelta`` notifications (:class:`~codeask.lsp.work.AnswerDeltas`). InvalidParams (the
    one line to show) without a question or a workspace folder, for a question longer than
    ``retrieval.max_question_chars``, a bad ``top_k`` / ``max_files`` or a non-string ``askId``.
    Before the first index has its keyword phase, the ask starts indexing and waits for it."""
    opts: dict[str, Any] = args[0] if args and isinstance(args[0], dict) else {"question": " ".join(map(str, args))}
    question = str(opts.get("question") or "").strip()
    if not question:
        raise JsonRpcInvalidParams("ask: no question")
    if not ls.service.roots:
        raise JsonRpcInvalidParams("ask: no workspace folder is open: open a folder (or a file inside a project)")
    ask_id = opts.get("askId")
    if ask_id is not None and not isinstance(ask_id, str):
        raise JsonRpcInvalidParams("ask: askId must be a string")
    stream = AnswerDeltas(ls.loop, ls.protocol.notify, ask_id) if ask_id is not None else None
    try:  # the question or top_k / max_files the client sent (QuestionError is a ValueError)
        request = ls.service.ask_request(
            question,
            top_k=opts.get("top_k"),
            max_files=opts.get("max_files"),
            no_llm=bool(opts.get("no_llm")),
            sources_on_llm_error=True,
        )
    except ValueError as exc:
        raise JsonRpcInvalidParams(f"ask: {exc}") from None

    def run(cancelled, progress):
        ls.wait_for_keywords(cancelled, progress)
        try:
            return ls.service.ask(request, cancelled=cancelled, progress=progress, stream=stream).to_json()
        finally:
            if stream is not None:
                stream.flush()  # before the response: every delta arrives before the answer

    result = await ls.run_request("codeask: asking", run)
    return with_locations(ls, result)


@command_guard
async def resolve_citation(ls: CodeaskServer, *args):
    """``codeask.resolveCitation`` ``[{"uri" | "path", "start_line", "end_line", "symbol"?, "hash"?,
    "open_line"?}]`` (or those six positionally): re-find a cited span in the file as it is now (the
    editor's buffer when open) -> ``{"status", "note", "start_line", "end_line", "open_line", "uri",
    "path", "location"}``; InvalidParams for bad arguments or a file codeask does not read."""
    keys = ("uri", "start_line", "end_line", "symbol", "hash", "open_line")
    opts = args[0] if args and isinstance(args[0], dict) else dict(zip(keys, args))
    path, start, end = citation_span(opts)
    symbol, digest = str(opts.get("symbol") or ""), str(opts.get("hash") or "")
    opened = opts.get("open_line")
    text = ls.buffer_text(file_uri(path))
    call = partial(ls.service.resolve_citation, open_line=opened if type(opened) is int else 0, text=text)
    try:
        found = await asyncio.to_thread(call, path, start, end, symbol, digest)
    except NotExplainable as exc:
        raise JsonRpcInvalidParams(f"resolveCitation: {exc}") from None
    found["location"] = location("", path, found["start_line"], found["end_line"], encoding=ls.position_encoding())
    return found


def citation_span(opts: dict[str, Any]) -> tuple[str, int, int]:
    """``(absolute path, start_line, end_line)`` of a ``codeask.resolveCitation`` argument object.

    Raises:
        JsonRpcInvalidParams: lines that are not integers ``1 <= start <= end``, or no file: URI or
            absolute path.
    """
    target = str(opts.get("uri") or opts.get("path") or "")
    path = uri_to_path(target) if target.startswith("file:") else target
    try:
        start, end = int(opts["start_line"]), int(opts["end_line"])
    except (KeyError, TypeError, ValueError):
        raise JsonRpcInvalidParams("resolveCitation: start_line and end_line must be integers") from None
    if not path or not os.path.isabs(path) or start < 1 or end < start:
        raise JsonRpcInvalidParams(
            "resolveCitation: need a file: uri (or absolute path) and 1 <= start_line <= end_line"
        )
    return path, start, end


@command_guard
async def explain_selection(ls: CodeaskServer, uri: str, rng: Any, *rest):
    """``codeask.explain`` ``[uri, range]`` -> ``{"markdown", "sources", "locations", ...}`` (waits for
    the keyword index too).

    Input it will not explain (not a file on disk; secret, binary, too large, minified, a link out
    of its folder, not a regular file, blank lines) is refused with an InvalidParams error whose
    message is the one line to show (``cannot explain: ...``, ``nothing to explain: ...``). The
    client shows it: no ``window/showMessage`` as well, or every client would show it twice."""
    path = uri_to_path(uri)
    if path is None:
        raise JsonRpcInvalidParams(f"cannot explain: {uri} is not a file on disk")
    if not ls.serves(path):
        raise JsonRpcInvalidParams(f"cannot explain: {path} is outside the folders this server serves")
    start, end = selection_lines(rng)
    try:
        request = ExplainRequest(path, start, end, text=ls.buffer_text(uri))
    except ValueError as exc:  # lines out of range
        raise JsonRpcInvalidParams(f"cannot explain: {exc}") from None

    def run(cancelled, progress):
        ls.wait_for_keywords(cancelled, progress)
        return ls.service.explain(request, cancelled=cancelled, progress=progress, cache=ls.cache).to_json()

    try:
        await ls.reads.run(lambda: ls.service.check_explain(request))  # refused before any wait
        result = await ls.run_request("codeask: explaining", run)
    except NotExplainable as exc:  # secret, binary, minified, a link out of its folder, blank lines
        said = str(exc)  # blank lines already say "nothing to explain: ..."
        raise JsonRpcInvalidParams(said if exc.reason == "blank" else f"cannot explain: {said}") from None
    return with_locations(ls, result)


def with_locations(ls: CodeaskServer, result: dict[str, Any]) -> dict[str, Any]:
    """An ask's or explain's JSON plus ``locations`` (LSP Location[] of its sources); an LLM error
    in it is shown (``window/showMessage``)."""
    if result.get("error"):
        ls.show(f"codeask: LLM error: {result['error']}")
    result["locations"] = source_locations(result["sources"], ls.position_encoding())
    return result


@command_guard
async def related(ls: CodeaskServer, *args):
    """``codeask.related`` ``[symbol]`` or ``[{"symbol"}]``: a symbol's definitions, callers and callees
    from the symbol graph (waits for the keyword index), each with an LSP ``location``; InvalidParams
    for a missing or bad symbol, or one the index knows nothing of (the message names it)."""
    opts = args[0] if args and isinstance(args[0], dict) else {"symbol": args[0] if args else ""}

    def run(cancelled, progress):
        ls.wait_for_keywords(cancelled, progress)
        try:
            return ls.service.related(str(opts.get("symbol") or "")).to_json()
        except (ValueError, UnknownSymbol) as exc:
            raise JsonRpcInvalidParams(f"related: {exc}") from None

    return related_locations(await ls.run_request(None, run), ls.position_encoding())


@guard
def code_action(ls: CodeaskServer, params: lsp.CodeActionParams):
    """``textDocument/codeAction``: an ``Explain selection`` refactor action running ``codeask.explain``."""
    r = params.range
    only = params.context.only
    if r.start == r.end or (only and not any(lsp.CodeActionKind.Refactor.startswith(k) for k in only)):
        return None
    command = lsp.Command(title="Explain selection", command="codeask.explain", arguments=[params.text_document.uri, r])
    return [lsp.CodeAction(title="Explain selection", kind=lsp.CodeActionKind.Refactor, command=command)]


#: The commands in ``workspace/executeCommand`` and their handlers (names are a contract).
COMMANDS = {
    "codeask.ask": ask,
    "codeask.explain": explain_selection,
    "codeask.related": related,
    "codeask.reindex": reindex,
    "codeask.resolveCitation": resolve_citation,
    "codeask.status": status,
}
