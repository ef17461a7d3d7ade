"""The codeask language server (pygls 2): ``codeask serve [--tcp HOST:PORT]``.

Handlers are thin: each converts LSP types, runs :class:`~codeask.workspace.Workspace` or
:mod:`codeask.query.explain` in a worker thread (the event loop never blocks: any request is
answered while indexing runs) and converts the result back (1-based lines -> 0-based ranges,
``file:///abs/path`` locations).

Commands (``workspace/executeCommand``):

* ``codeask.ask`` ``[question]`` or ``[{"question", "top_k"?, "max_files"?, "no_llm"?, "askId"?}]`` ->
  ``Answer.to_json()`` plus ``locations`` (LSP Location[] of the sources); with ``askId`` (a string
  the client chose) the answer's text is streamed meanwhile as ``codeask/answerDelta`` notifications
  ``{"askId", "delta"}``, in order, all before the response (:class:`~codeask.lsp.work.AnswerDeltas`);
* ``codeask.explain`` ``[uri, range]`` -> ``{"markdown", "sources", "locations"}``;
* ``codeask.related`` ``[symbol]`` or ``[{"symbol"}]`` -> ``RelatedCode.to_json()`` (``symbol``,
  ``definitions``, ``callers``, ``callees``), each entry with an LSP ``location``;
* ``codeask.resolveCitation`` ``[{"uri" | "path", "start_line", "end_line", "symbol"?, "hash"?}]``
  (or those five positionally) -> where the cited code is now: ``{"status": "same" | "moved" |
  "changed" | "gone", "note", "start_line", "end_line", "uri", "path", "location"}``
  (:func:`codeask.query.anchors.resolve_file`; ``location`` an LSP Location);
* ``codeask.reindex`` ``[]`` -> ``IndexStats.to_json()``;
* ``codeask.status`` ``[]`` -> ``{"indexing", "indexed", "read_only", "files", "chunks_total",
  "vectors_pending", "index_dir", "llm", "watch": {"mode": "native" | "polling" | "off", "warning"}, ...}``
  (answered from the last snapshot when the index is busy).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams

from codeask.imports import start_preload
from codeask.index.watch import is_relevant
from codeask.llm import CancelToken
from codeask.lsp.convert import (
    location,
    related_locations,
    selection_lines,
    settings_from,
    source_locations,
    uri_to_path,
    word_at,
    word_range,
)
from codeask.lsp.indexing import IndexScheduler
from codeask.lsp.session import STOP_SECONDS, CodeaskServer
from codeask.lsp.tcp import Gate, serve_tcp
from codeask.lsp.watched import is_watched, watchers_for
from codeask.lsp.work import AnswerDeltas, Lane
from codeask.projects import project_root_of
from codeask.query.anchors import resolve_file
from codeask.query.explain import NotExplainable, explain, explain_source, make_span, symbol_span
from codeask.query.pipeline import Cancelled
from codeask.uris import file_uri
from codeask.workspace import Workspace

__all__ = ["CodeaskServer", "make_server", "run", "COMMANDS"]

log = logging.getLogger("codeask.lsp")

COMMANDS = [
    "codeask.ask",
    "codeask.explain",
    "codeask.related",
    "codeask.reindex",
    "codeask.resolveCitation",
    "codeask.status",
]
#: Debounce of hovers without the LLM, seconds (a mouse sweep runs only the hover it rests on).
_CHEAP_HOVER_DELAY = 0.1


def make_server() -> CodeaskServer:
    """A :class:`CodeaskServer` with the LSP features and the ``codeask.*`` commands (:data:`COMMANDS`)
    registered, each handler wrapped by :func:`guard` (hover by :func:`quiet`)."""
    server = CodeaskServer()

    @server.feature(lsp.INITIALIZE)
    @guard
    def initialize(ls: CodeaskServer, params: lsp.InitializeParams):
        """Answer ``initialize``: create the :class:`Workspace` for the workspace folders (no index
        is opened and nothing heavy is imported here)."""
        ls.loop = asyncio.get_running_loop()
        start_preload()  # heavy imports in one thread, before any worker needs them
        ls.init_settings = settings_from(params.initialization_options)
        uris = [f.uri for f in params.workspace_folders or []]
        if not uris and params.root_uri:
            uris = [params.root_uri]
        roots = [p for u in uris if (p := uri_to_path(u)) and Path(p).is_dir()]
        if not uris and params.root_path and Path(params.root_path).is_dir():
            roots = [params.root_path]
        if not uris and not params.root_path and ls.gate is not None:  # over TCP: the served folders
            roots = [str(f) for f in ls.gate.folders]
        try:
            ls.ws = Workspace(roots, editor=ls.init_settings, background_indexing=True)  # searches meanwhile
        except Exception as exc:  # a bad setting must not keep the server from starting
            log.exception("workspace settings")
            ls.show(f"codeask: {exc}")
            ls.ws = Workspace(roots, background_indexing=True)
        ls.scheduler = IndexScheduler(
            ls.ws,
            reporter=ls.reporter,
            show=lambda message, error: ls.show(message, lsp.MessageType.Error if error else lsp.MessageType.Info),
            on_synced=ls.on_synced,
        )
        # An index from an earlier run answers at once (its manifest is a small SQLite file).
        if any(index.manifest.count() > 0 for index in list(ls.ws.indexes.values())):
            ls.scheduler.mark_existing()

    @server.feature(lsp.INITIALIZED)
    @guard
    async def initialized(ls: CodeaskServer, params: lsp.InitializedParams):
        """Handle ``initialized``: pull settings, choose the change source, index if configured."""
        try:
            await ls.pull_settings()
        except Exception as exc:
            ls.show(f"codeask: settings: {exc}")
        if ls.caps("workspace", "did_change_watched_files", "dynamic_registration"):
            options = lsp.DidChangeWatchedFilesRegistrationOptions(watchers=watchers_for(ls.ws))
            reg = lsp.Registration(
                id="codeask-watch", method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options
            )
            try:
                await ls.client_register_capability_async(lsp.RegistrationParams(registrations=[reg]))
                ls.client_watches = True
            except Exception as exc:  # then watchfiles is the change source
                log.warning("registering file watchers failed: %s", exc)
        await ls.reads.run(ls.start_indexing_if_configured)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @guard
    async def did_change_configuration(ls: CodeaskServer, params: lsp.DidChangeConfigurationParams):
        """Handle ``workspace/didChangeConfiguration``: reload the settings."""
        try:
            await ls.pull_settings(params.settings)
        except Exception as exc:
            ls.show(f"codeask: settings: {exc}")

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    @guard
    async def did_change_folders(ls: CodeaskServer, params: lsp.DidChangeWorkspaceFoldersParams):
        """Handle ``workspace/didChangeWorkspaceFolders``: remove and add roots, then index (if the
        workspace was indexed already)."""
        for folder in params.event.removed:
            if path := uri_to_path(folder.uri):
                await ls.reads.run(functools.partial(ls.ws.remove_root, path))
        for folder in params.event.added:
            if (path := uri_to_path(folder.uri)) and not ls.serves(path):
                ls.show(f"codeask: {path} is outside the folders this server serves: not added")
            elif path and Path(path).is_dir():
                await ls.reads.run(functools.partial(ls.ws.add_root, path))
        if ls.scheduler.started:
            ls.scheduler.request()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    @guard
    async def did_open(ls: CodeaskServer, params: lsp.DidOpenTextDocumentParams):
        """Handle ``textDocument/didOpen``: with no workspace folder (``rootUri`` null, single-file
        mode), serve the opened file's project, or say once that no folder is open."""
        if not ls.ready or ls.ws.indexes or not (path := uri_to_path(params.text_document.uri)):
            return
        root = await ls.reads.run(lambda: project_root_of(path))
        if root is not None and not ls.serves(root):
            return  # over TCP, outside the served folders
        if root is None:
            if not ls.no_folder_said:
                ls.no_folder_said = True
                ls.show(
                    f"codeask: no workspace folder is open and {path} is in no project (no .git or project "
                    "file above it): open a folder to index it and ask questions",
                    lsp.MessageType.Warning,
                )
            return
        await ls.reads.run(lambda: ls.ws.add_root(root))
        ls.show(
            f"codeask: no workspace folder is open: indexing {root}, the project of {Path(path).name}",
            lsp.MessageType.Info,
        )
        ls.scheduler.request()

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    @guard
    async def did_save(ls: CodeaskServer, params: lsp.DidSaveTextDocumentParams):
        """Handle ``textDocument/didSave``: only for a file no change source covers (the client
        watches known file types; ``watchfiles`` sees everything), so no change is read twice."""
        path = uri_to_path(params.text_document.uri)
        if path and ls.client_watches and not is_watched(path) and is_relevant(ls.ws, os.path.abspath(path)):
            await ls.changed([path])

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @guard
    async def did_change_watched(ls: CodeaskServer, params: lsp.DidChangeWatchedFilesParams):
        """Handle ``workspace/didChangeWatchedFiles`` (the change source when the client watches):
        changes to ignored or non-indexed paths are dropped before any file is read."""
        paths = {p for c in params.changes if (p := uri_to_path(c.uri)) and is_relevant(ls.ws, os.path.abspath(p))}
        if paths:
            await ls.changed(sorted(paths))

    @server.feature(lsp.SHUTDOWN)
    @guard
    async def shutdown(ls: CodeaskServer, params: None):
        """Answer ``shutdown``: cancel requests, stop the watcher and the index thread in order."""
        ls.shutdown_received = True
        await Lane("stop", 1, imports=False).run(ls.stop_all)

    @server.feature(lsp.EXIT)
    def exit_(ls: CodeaskServer, params: None):
        """Handle ``exit``: stop taking work (pygls then ends the loop)."""
        ls.stopping.set()

    @server.command("codeask.status")
    @command_guard
    async def status(ls: CodeaskServer, *args):
        """Answer ``workspace/executeCommand`` ``codeask.status``."""
        return await ls.status()

    @server.command("codeask.reindex")
    @command_guard
    async def reindex(ls: CodeaskServer, *args):
        """Answer ``workspace/executeCommand`` ``codeask.reindex``: index now (coalesced with a run
        under way) -> ``IndexStats.to_json()``."""
        stats = await ls.run_request(None, lambda cancelled, progress: ls.scheduler.run_now(cancelled))
        return stats.to_json()

    @server.command("codeask.ask")
    @command_guard
    async def ask(ls: CodeaskServer, *args):
        """Answer ``workspace/executeCommand`` ``codeask.ask``: an InvalidParams error, its message the
        one line to show, without a question or a workspace folder, for a question longer than
        ``retrieval.max_question_chars`` or a bad ``top_k`` / ``max_files``. Before the first index
        has its keyword phase, the ask starts indexing and waits for it."""
        opts = args[0] if args and isinstance(args[0], dict) else {"question": " ".join(str(a) for a in args)}
        question = str(opts.get("question") or "").strip()
        if not question:
            raise JsonRpcInvalidParams("ask: no question")
        if not ls.ws.indexes:
            raise JsonRpcInvalidParams("ask: no workspace folder is open: open a folder (or a file inside a project)")
        kwargs = {k: opts.get(k) for k in ("top_k", "max_files")}
        no_llm = bool(opts.get("no_llm"))
        ask_id = opts.get("askId")
        if ask_id is not None and not isinstance(ask_id, str):
            raise JsonRpcInvalidParams("ask: askId must be a string")
        stream = AnswerDeltas(ls.loop, ls.protocol.notify, ask_id) if ask_id is not None else None

        def run(cancelled, progress):
            ls.wait_for_keywords(cancelled, progress)
            try:
                answer = ls.ws.ask(
                    question,
                    no_llm=no_llm,
                    cancelled=cancelled,
                    progress=progress,
                    stream=stream,
                    sources_on_llm_error=True,
                    **kwargs,
                )
            except ValueError as exc:  # the question or top_k / max_files the client sent (QuestionError too)
                raise JsonRpcInvalidParams(f"ask: {exc}") from None
            finally:
                if stream is not None:
                    stream.flush()  # before the response: every delta arrives before the answer
            return answer.to_json()

        result = await ls.run_request("codeask: asking", run)
        if result.get("error"):
            ls.show(f"codeask: LLM error: {result['error']}")
        result["locations"] = source_locations(result["sources"], ls.position_encoding())
        return result

    @server.command("codeask.resolveCitation")
    @command_guard
    async def resolve_citation(ls: CodeaskServer, *args):
        """Answer ``workspace/executeCommand`` ``codeask.resolveCitation``: re-find a cited span in
        the file as it is now (the editor's buffer when open); InvalidParams for bad arguments or a
        file codeask does not read."""
        keys = ("uri", "start_line", "end_line", "symbol", "hash")
        opts = args[0] if args and isinstance(args[0], dict) else dict(zip(keys, args))
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
        symbol, digest = str(opts.get("symbol") or ""), str(opts.get("hash") or "")
        text = ls.buffer_text(file_uri(path))
        try:
            found = await asyncio.to_thread(resolve_file, ls.ws, path, start, end, symbol, digest, text=text)
        except NotExplainable as exc:
            raise JsonRpcInvalidParams(f"resolveCitation: {exc}") from None
        found["location"] = location("", path, found["start_line"], found["end_line"], encoding=ls.position_encoding())
        return found

    @server.command("codeask.explain")
    @command_guard
    async def explain_command(ls: CodeaskServer, uri: str, rng: Any, *rest):
        """Answer ``workspace/executeCommand`` ``codeask.explain`` (waits for the keyword index too).

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
        text = ls.buffer_text(uri)

        def run(cancelled, progress):
            ls.wait_for_keywords(cancelled, progress)
            span = make_span(ls.ws, path, start, end, text=text)
            return explain(ls.ws, span, cancelled=cancelled, progress=progress, cache=ls.cache)

        try:
            explain_source(ls.ws, path, text=text)  # a file codeask never reads: refused before any wait
            result = await ls.run_request("codeask: explaining", run)
        except NotExplainable as exc:  # secret, binary, minified, a link out of its folder, blank lines
            said = str(exc)  # blank lines already say "nothing to explain: ..."
            raise JsonRpcInvalidParams(said if exc.reason == "blank" else f"cannot explain: {said}") from None
        if result.error:
            ls.show(f"codeask: LLM error: {result.error}")
        out = result.to_json()
        out["locations"] = source_locations(out["sources"], ls.position_encoding())
        return out

    @server.command("codeask.related")
    @command_guard
    async def related(ls: CodeaskServer, *args):
        """Answer ``codeask.related``: a symbol's definitions, callers and callees from the symbol
        graph (waits for the keyword index); an InvalidParams error for a missing or bad symbol."""
        opts = args[0] if args and isinstance(args[0], dict) else {"symbol": args[0] if args else ""}

        def run(cancelled, progress):
            ls.wait_for_keywords(cancelled, progress)
            try:
                return ls.ws.related(str(opts.get("symbol") or "")).to_json()
            except ValueError as exc:
                raise JsonRpcInvalidParams(f"related: {exc}") from None

        return related_locations(await ls.run_request(None, run), ls.position_encoding())

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    @quiet
    async def hover(ls: CodeaskServer, params: lsp.HoverParams):
        """Answer ``textDocument/hover``: for the symbol under the cursor (its definition, see
        :func:`~codeask.query.explain.symbol_span`) the related code as links (no LLM), or with
        ``hover.llm`` a short LLM explanation; ``None`` outside indexed code. The range is the word's."""
        if not ls.ready or ls.stopping.is_set() or not ls.ws.settings.hover.enabled:
            return None
        uri, pos = params.text_document.uri, params.position
        path = ls.hover_target(uri)
        if path is None or not ls.serves(path) or not ls.scheduler.keyword_ready():
            return None  # a hover never starts indexing
        text = ls.buffer_text(uri)
        try:  # the indexer's rules: a file codeask never reads gets no hover
            shown = explain_source(ls.ws, path, text=text)
        except NotExplainable:
            return None
        word = word_at(shown, pos.line, pos.character, ls.position_encoding())
        if not word.isidentifier():
            return None
        settings = ls.ws.settings.hover
        # The newest hover wins: an older one still waiting returns nothing, one running is cancelled.
        ls._hover_seq += 1
        seq = ls._hover_seq
        if ls._hover_token is not None:
            ls._hover_token.cancel()
        await asyncio.sleep(settings.delay_ms / 1000 if settings.llm else _CHEAP_HOVER_DELAY)
        if seq != ls._hover_seq:
            return None
        token = ls._hover_token = CancelToken()
        llm = ls.hover_llm()

        def run(cancelled, progress):
            if cancelled():
                return None
            try:
                span = symbol_span(ls.ws, path, pos.line + 1, word, text=text)
            except NotExplainable:  # changed on disk since the check above
                return None
            if span is None or cancelled():
                return None
            return explain(ls.ws, span, brief=True, llm=llm, no_llm=llm is None, cancelled=cancelled, cache=ls.cache)

        try:
            got = await ls.run_request(None, run, lane=ls.hovers, token=token)
        except Cancelled:
            return None
        if got is None:
            return None
        markdown = got.markdown
        if got.error:
            log.warning("hover LLM: %s", got.error)
            markdown = markdown.split("\n\n> **LLM error:**", 1)[0]
        return lsp.Hover(
            contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=markdown),
            range=word_range(shown, pos.line, pos.character, ls.position_encoding()),
        )

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.Refactor]),
    )
    @guard
    def code_action(ls: CodeaskServer, params: lsp.CodeActionParams):
        """Answer ``textDocument/codeAction``: an ``Explain selection`` refactor action."""
        r = params.range
        only = params.context.only
        if r.start == r.end or (only and not any(lsp.CodeActionKind.Refactor.startswith(k) for k in only)):
            return None
        command = lsp.Command(
            title="Explain selection", command="codeask.explain", arguments=[params.text_document.uri, r]
        )
        return [lsp.CodeAction(title="Explain selection", kind=lsp.CodeActionKind.Refactor, command=command)]

    return server


def guard(fn, *, command: bool = False):
    """Log an unexpected error of a handler with its traceback and say it once (the server lives): a
    ``command``'s request fails with an internal error carrying the exception's text (every client
    shows a failed command: VS Code's extension, Neovim's plugin), any other handler's is shown with
    ``window/showMessage`` (a notification has no response to carry it).

    A ``command`` handler cancelled as a task (only the event loop's teardown at the end of input does
    that: ``$/cancelRequest`` stops a command's work through :meth:`CodeaskServer.cancel_request`)
    returns ``None``: pygls runs commands inside its ``workspace/executeCommand`` generator, which
    would log a cancelled task's ``CancelledError`` as an error with a traceback.
    """
    name = fn.__name__

    if asyncio.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def guarded(ls, *args, **kwargs):
            try:
                return await fn(ls, *args, **kwargs)
            except asyncio.CancelledError:
                if command:
                    log.info("%s cancelled: the server is stopping", name)
                    return None
                raise
            except (Cancelled, JsonRpcException):  # a deliberate error response, reported by the handler
                raise
            except Exception as exc:
                log.exception("%s failed", name)
                if command:  # the clients prefix it ("codeask: ask failed: ...")
                    raise JsonRpcInternalError(str(exc) or type(exc).__name__) from None
                ls.show(f"codeask: {name} failed: {exc}")
                raise

    else:

        @functools.wraps(fn)
        def guarded(ls, *args, **kwargs):
            try:
                return fn(ls, *args, **kwargs)
            except Exception as exc:
                log.exception("%s failed", name)
                ls.show(f"codeask: {name} failed: {exc}")
                raise

    return guarded


def command_guard(fn):
    """:func:`guard` for a ``workspace/executeCommand`` handler."""
    return guard(fn, command=True)


def quiet(fn):
    """For passive features (hover): an error is logged and the answer is ``None``, never a popup."""

    @functools.wraps(fn)
    async def quieted(ls, *args, **kwargs):
        try:
            return await fn(ls, *args, **kwargs)
        except (asyncio.CancelledError, Cancelled):
            raise
        except Exception:
            log.exception("%s failed", fn.__name__)
            return None

    return quieted


def run(gate: Gate | None = None) -> NoReturn:
    """Serve over stdio (or, with ``gate``, over TCP to one client showing the token:
    :func:`codeask.lsp.tcp.serve_tcp`) until ``exit`` or the end of input, then end the
    process: exit code 0 after a ``shutdown``, else 1 (``exit`` without ``shutdown``, or a bare end
    of input). Never returns.

    Work is stopped in order first (:meth:`CodeaskServer.stop_all`: requests and LLM streams
    cancelled, watcher and index thread stopped between commits). The process then ends with
    ``os._exit``: the interpreter's own teardown of native thread pools (ONNX Runtime, LanceDB's
    runtime) takes 2-3 s on this machine and aborts with a signal when a thread is still inside
    native code; nothing is left to flush by then (every commit is atomic, logs are flushed).
    """
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    logging.getLogger("codeask").setLevel(logging.INFO)
    # Indexing threads run Python code (chunking, row building): hand the GIL back to the event
    # loop sooner than the default 5 ms so that requests stay fast while indexing.
    sys.setswitchinterval(0.001)
    server = make_server()
    try:
        if gate is not None:
            server.gate = gate
            serve_tcp(server, gate)
        else:
            server.start_io()
    except (SystemExit, KeyboardInterrupt):
        pass
    code = 0 if server.shutdown_received else 1
    if not server.stop_all(timeout=0.5 if server.shutdown_received else STOP_SECONDS):
        log.info("work still running at exit; ending the process")
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # stdout is closed after ``exit``
            pass
    os._exit(code)
