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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.io_ import run_async
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCProtocol, JsonRPCRequestMessage

from codeask.listen import Listener, token_matches
from codeask.lsp.convert import uri_to_path

__all__ = ["Gate", "Refused", "serve_tcp", "HANDSHAKE_SECONDS", "MAX_HANDSHAKE_BYTES", "REFUSE"]

log = logging.getLogger("codeask.lsp")

#: Seconds a new connection has to send an accepted ``initialize``.
HANDSHAKE_SECONDS = 10.0
#: Largest message accepted before ``initialize`` is (VS Code's is about 15 KB).
MAX_HANDSHAKE_BYTES = 1 << 20
#: The method a refused request is answered under: the gate hands pygls a request for it carrying the
#: refused request's id, and its handler (registered by :func:`serve_tcp`) raises :class:`Refused`,
#: so pygls' own error path writes the answer.
REFUSE = "codeask/refuse"


class Refused(JsonRpcException):
    """The error answer to a refused request: ``RequestFailed`` (-32803), the reason in its message."""

    CODE = int(lsp.LSPErrorCodes.RequestFailed)


class _QuietRefusals(logging.Filter):
    """Drops pygls' traceback of a :class:`Refused` answer: each refused peer is logged once, by
    :class:`~codeask.listen.Refusals`."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], Refused))


@dataclass
class Gate:
    """The served folders and the token, and the state of the current connection."""

    listener: Listener
    folders: list[Path]
    writer: Any = None
    peer: str = ""
    admitted: bool = False
    closed: bool = False
    reason: str | None = None
    """Why the last request was refused (what :data:`REFUSE`'s answer says)."""
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

    def admit(self, message: Any, dispatch: Callable[[Any], None]) -> bool:
        """Whether ``message`` goes on to pygls' handlers; a refused one closes the connection, a
        refused request being answered first: ``dispatch`` (pygls' ``handle_message``) gets a
        :data:`REFUSE` request with its id, which pygls answers with :class:`Refused`."""
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
            self.reason = reason
            dispatch(JsonRPCRequestMessage(id=message.id, method=REFUSE, jsonrpc=JsonRPCProtocol.VERSION, params=None))
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
    docstring); returns when its connection ends. pygls' ``start_tcp`` with the gate in front, made
    of pygls' public parts: its message loop (``run_async``) over each accepted connection, its
    protocol's ``set_writer``, and a :data:`REFUSE` feature whose error pygls writes."""

    def refuse(ls: LanguageServer, params: object) -> NoReturn:
        raise Refused(f"codeask: refused: {gate.reason}")

    server.feature(REFUSE)(refuse)
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_QuietRefusals())
    connections = _Connections(server, gate)
    try:
        asyncio.run(connections.listen())
    except asyncio.CancelledError:
        pass


class _Connections:
    """The listening socket and its connections: one handshake at a time, then one admitted client,
    whose end ends the server."""

    def __init__(self, server: LanguageServer, gate: Gate) -> None:
        self.server, self.gate = server, gate
        self.stop = threading.Event()  # ends pygls' message loop (``run_async``)
        self.turn = asyncio.Lock()  # held by the connection doing its handshake
        self.listening: asyncio.Server | None = None

    async def listen(self) -> None:
        self.listening = await asyncio.start_server(self.connection, self.gate.listener.host, self.gate.listener.port)
        async with self.listening:
            await self.listening.serve_forever()

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        gate = self.gate
        peer = str((writer.get_extra_info("peername") or ("unknown",))[0])
        if not gate.admitted:
            async with self.turn:
                await self.serve(reader, writer, peer)
        if gate.admitted and gate.writer is not writer:
            gate.listener.refusals.refuse(peer, "another client is connected")
            writer.close()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: str) -> None:
        gate = self.gate
        if gate.admitted:
            return
        gate.writer, gate.peer, gate.admitted, gate.closed = writer, peer, False, False
        self.server.protocol.set_writer(writer)
        expire = asyncio.get_running_loop().call_later(HANDSHAKE_SECONDS, _expire, gate)
        try:
            await run_async(
                stop_event=self.stop,
                reader=_Screened(reader, gate),
                protocol=self.server.protocol,
                error_handler=self.failed,
            )
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:  # a peer gone mid-message
            log.info("connection from %s ended: %s", peer, exc)
        except SystemExit:  # ``exit``: pygls ends the process from a callback; the server ends instead
            pass
        finally:
            expire.cancel()
        if not gate.admitted:
            writer.close()
            return
        self.stop.set()  # the session is over: the server ends
        self.server.shutdown()
        if self.listening is not None:
            self.listening.close()

    def failed(self, exc: Exception, source: Any) -> None:
        """pygls' error handler: a message it could not read or handle."""
        gate = self.gate
        if gate.admitted:
            self.server.report_server_error(exc, source)
        elif not gate.closed:
            gate.listener.refusals.refuse(gate.peer, f"an unreadable message before initialize ({exc})")
            gate.close()


def _expire(gate: Gate) -> None:
    if gate.admitted:
        return
    if not gate.closed:
        gate.listener.refusals.refuse(gate.peer, f"no initialize within {HANDSHAKE_SECONDS:.0f} s")
    gate.closed = True
    gate.writer.close()
