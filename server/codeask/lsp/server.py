"""The codeask language server (pygls 2): ``codeask serve [--tcp HOST:PORT]``.

Handlers are module-level functions, each a few lines: they convert LSP types, run the engine in a
worker thread (the event loop never blocks: any request is answered while indexing runs) and convert
the result back (1-based lines -> 0-based ranges, ``file:///abs/path`` locations). The lifecycle and
workspace handlers are in :mod:`codeask.lsp.features`, the commands and the code action in
:mod:`codeask.lsp.commands`, hover in :mod:`codeask.lsp.hover`, their decorators in
:mod:`codeask.lsp.guards`, the server's state in :mod:`codeask.lsp.session`.

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

import logging
import os
import sys
from typing import NoReturn

from codeask.lsp.commands import COMMANDS
from codeask.lsp.features import FEATURES
from codeask.lsp.session import STOP_SECONDS, CodeaskServer
from codeask.lsp.tcp import Gate, serve_tcp

__all__ = ["make_server", "run"]

log = logging.getLogger("codeask.lsp")


def make_server() -> CodeaskServer:
    """A :class:`CodeaskServer` with the LSP features (:data:`~codeask.lsp.features.FEATURES`) and the
    ``codeask.*`` commands (:data:`~codeask.lsp.commands.COMMANDS`) registered; hover is registered by
    ``initialize`` when enabled."""
    server = CodeaskServer()
    for method, handler, options in FEATURES:
        server.feature(method, options)(handler)
    for name, command in COMMANDS.items():
        server.command(name)(command)
    return server


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
