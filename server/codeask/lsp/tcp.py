"""``codeask serve --tcp HOST:PORT FOLDER...``: the language server on a TCP port, closed to strangers.

* One client at a time: a connection waits while another does its handshake, and is closed at once
  while an admitted client is connected.
* A new connection's first message must be ``initialize`` carrying the token
  (``initializationOptions: {"token": "..."}``, :mod:`codeask.listen`) and naming only folders that
  are, or are inside, the served ``FOLDER``\\ s (``workspaceFolders``, ``rootUri``, ``rootPath``; none
  named: the served folders are the workspace). Anything else gets an error response (``-32803``
  RequestFailed, the reason in its message) and the connection is closed: nothing reaches the
  handlers. A connection that sends no ``initialize`` within :data:`HANDSHAKE_SECONDS`, or a
  message over :data:`MAX_HANDSHAKE_BYTES` before it, is closed too.
* Each refused peer is logged once (:class:`~codeask.listen.Refusals`).
* When the admitted client's connection ends, the server ends (as pygls' own ``start_tcp``); a
  refused connection leaves it listening.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.io_ import run_async
from pygls.lsp.server import LanguageServer

from codeask.listen import Listener, token_matches
from codeask.lsp.convert import uri_to_path

__all__ = ["Gate", "serve_tcp", "HANDSHAKE_SECONDS", "MAX_HANDSHAKE_BYTES"]

log = logging.getLogger("codeask.lsp")

#: Seconds a new connection has to send an accepted ``initialize``.
HANDSHAKE_SECONDS = 10.0
#: Largest message accepted before ``initialize`` is (VS Code's is about 15 KB).
MAX_HANDSHAKE_BYTES = 1 << 20


@dataclass
class Gate:
    """The served folders and the token, and the state of the current connection."""

    listener: Listener
    folders: list[Path]
    writer: Any = None
    peer: str = ""
    admitted: bool = False
    closed: bool = False
    _real: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._real = [os.path.realpath(f) for f in self.folders]

    def serves(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` is a served folder or inside one (symlinks resolved)."""
        real = os.path.realpath(path)
        return any(real == f or real.startswith(f.rstrip(os.sep) + os.sep) for f in self._real)

    def refusal(self, params: lsp.InitializeParams) -> str | None:
        """Why ``initialize`` with ``params`` is refused, or ``None``; the token is removed from
        ``params.initialization_options`` (it never reaches the settings)."""
        options = params.initialization_options
        given = options.pop("token", None) if isinstance(options, dict) else None
        if not token_matches(given, self.listener.token):
            return "initializationOptions.token is missing or wrong (`codeask token` prints it)"
        uris = [f.uri for f in params.workspace_folders or []] + [params.root_uri or ""]
        named = [p for u in uris if u and (p := uri_to_path(u))] + ([params.root_path] if params.root_path else [])
        outside = [p for p in named if not self.serves(p)]
        if outside:
            served = ", ".join(map(str, self.folders))
            return f"{outside[0]} is outside the folders this server serves ({served})"
        return None

    def admit(self, protocol: Any, message: Any) -> bool:
        """Whether ``message`` goes on to pygls' handlers; a refused one is answered with an error
        (a request) and closes the connection."""
        if self.admitted:
            return True
        if self.closed:
            return False
        method = getattr(message, "method", None)
        if method == lsp.INITIALIZE:
            reason = self.refusal(message.params)
        else:
            reason = f"{method or 'a response'} before an accepted initialize"
        if reason is None:
            self.admitted = True
            return True
        self.listener.refusals.refuse(self.peer, reason)
        if getattr(message, "id", None) is not None and method is not None:
            error = lsp.ResponseError(code=lsp.LSPErrorCodes.RequestFailed, message=f"codeask: refused: {reason}")
            protocol._send_response(message.id, error=error)
        self.close()
        return False

    def close(self) -> None:
        """End the current connection: the reply, then end of stream. What the peer still sends is
        read and dropped until it closes (or :data:`HANDSHAKE_SECONDS` pass): closing a socket with
        unread input would reset it, and the peer could lose the reply."""
        self.closed = True
        if self.writer is not None and self.writer.can_write_eof():
            self.writer.write_eof()
        elif self.writer is not None:
            self.writer.close()


class _Screened:
    """The connection's reader as pygls' ``run_async`` reads it: before ``initialize`` is admitted,
    a body over :data:`MAX_HANDSHAKE_BYTES` ends the connection (an empty read) instead of being read."""

    def __init__(self, reader: asyncio.StreamReader, gate: Gate):
        self.reader, self.gate = reader, gate

    async def readline(self) -> bytes:
        return await self.reader.readline()

    async def readexactly(self, n: int) -> bytes:
        if n > MAX_HANDSHAKE_BYTES and not self.gate.admitted:
            self.gate.listener.refusals.refuse(self.gate.peer, f"a {n:,}-byte message before initialize")
            return b""
        return await self.reader.readexactly(n)


def serve_tcp(server: LanguageServer, gate: Gate) -> None:
    """Listen on ``gate.listener``'s address and serve one admitted client (see the module
    docstring); returns when its connection ends. pygls' ``start_tcp`` with the gate in front."""
    server._stop_event = stop_event = threading.Event()
    turn = asyncio.Lock()  # one connection at a time: the next waits for a handshake to end

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = str((writer.get_extra_info("peername") or ("unknown",))[0])
        if not gate.admitted:
            async with turn:
                await serve(reader, writer, peer)
        if gate.admitted and gate.writer is not writer:
            gate.listener.refusals.refuse(peer, "another client is connected")
            writer.close()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: str) -> None:
        if gate.admitted:
            return
        gate.writer, gate.peer, gate.admitted, gate.closed = writer, peer, False, False
        server.protocol.set_writer(writer)

        def failed(exc: Exception, source: Any) -> None:  # a message pygls could not read or handle
            if gate.admitted:
                server.report_server_error(exc, source)
            elif not gate.closed:
                gate.listener.refusals.refuse(peer, f"an unreadable message before initialize ({exc})")
                gate.close()

        expire = asyncio.get_running_loop().call_later(HANDSHAKE_SECONDS, _expire, gate)
        try:
            await run_async(
                stop_event=stop_event, reader=_Screened(reader, gate), protocol=server.protocol, error_handler=failed
            )
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:  # a peer gone mid-message
            log.info("connection from %s ended: %s", peer, exc)
        except SystemExit:  # ``exit``: pygls ends the process from a callback; the server ends instead
            pass
        finally:
            expire.cancel()
        if gate.admitted:
            server.shutdown()  # the session is over
        else:
            writer.close()

    async def listen() -> None:
        server._server = await asyncio.start_server(connection, gate.listener.host, gate.listener.port)
        async with server._server:
            await server._server.serve_forever()

    try:
        asyncio.run(listen())
    except asyncio.CancelledError:
        pass


def _expire(gate: Gate) -> None:
    if gate.admitted:
        return
    if not gate.closed:
        gate.listener.refusals.refuse(gate.peer, f"no initialize within {HANDSHAKE_SECONDS:.0f} s")
    gate.closed = True
    gate.writer.close()
