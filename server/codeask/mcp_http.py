"""``codeask mcp PATH --http HOST:PORT``: the MCP server's streamable HTTP app (built by the SDK,
:meth:`mcp.server.MCPServer.streamable_http_app`) behind a bearer token, served by uvicorn.

* Every HTTP request must carry ``Authorization: Bearer TOKEN`` (:mod:`codeask.listen`); without it,
  or with another token, the answer is ``401`` and nothing reaches the SDK or the engine.
* The SDK's DNS-rebinding checks stay on for every address (``TransportSecuritySettings``): a
  ``Host`` outside :attr:`Listener.allowed_hosts <codeask.listen.Listener.allowed_hosts>` gets 421,
  a foreign ``Origin`` 403.
* A refused peer is logged once (:class:`~codeask.listen.Refusals`), not per request: the SDK's own
  per-request warnings about hosts and origins are silenced.
"""

from __future__ import annotations

import logging
import sys

import anyio
from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from codeask.listen import Listener, Refusals, token_matches

__all__ = ["BearerToken", "serve_http", "transport_security"]

#: Statuses of the SDK's header checks, and what each means.
_SDK_REFUSALS = {421: "Host header not allowed", 403: "Origin header not allowed"}


class BearerToken:
    """ASGI middleware: an HTTP request without ``Authorization: Bearer <token>`` gets ``401`` (with
    ``WWW-Authenticate: Bearer``); the others go on, and a 421/403 the SDK answers is noted as a
    refusal of that peer."""

    def __init__(self, app: ASGIApp, *, token: str, refusals: Refusals):
        self.app, self.token, self.refusals = app, token, refusals

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan: the SDK's session manager
            await self.app(scope, receive, send)
            return
        peer = (scope.get("client") or ("unknown", 0))[0]
        scheme, _, given = Headers(scope=scope).get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token_matches(given.strip(), self.token):
            self.refusals.refuse(peer, "no bearer token or a wrong one (HTTP 401)")
            response = PlainTextResponse(
                "codeask: this server needs 'Authorization: Bearer <token>' (`codeask token` prints it)\n",
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="codeask"'},
            )
            await response(scope, receive, send)
            return

        async def noting(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] in _SDK_REFUSALS:
                status = message["status"]
                self.refusals.refuse(peer, f"{_SDK_REFUSALS[status]} (HTTP {status})")
            await send(message)

        await self.app(scope, receive, noting)


def transport_security(listener: Listener) -> TransportSecuritySettings:
    """The SDK's Host/Origin checks for ``listener``: any port of each allowed name, ``http`` and
    ``https`` origins (a TLS proxy in front)."""
    names = [f"[{h}]" if ":" in h else h for h in listener.allowed_hosts]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:*" for name in names],
        allowed_origins=[f"{scheme}://{name}:*" for name in names for scheme in ("http", "https")],
    )


def serve_http(server: MCPServer, listener: Listener) -> None:
    """Serve ``server`` at ``http://HOST:PORT/mcp`` until interrupted (as the SDK's
    ``run("streamable-http")``, with :class:`BearerToken` in front)."""
    import uvicorn

    logging.getLogger("mcp.server.transport_security").setLevel(logging.ERROR)  # said per peer instead
    app = server.streamable_http_app(transport_security=transport_security(listener), host=listener.host)
    app.add_middleware(BearerToken, token=listener.token, refusals=listener.refusals)
    config = uvicorn.Config(app, host=listener.host, port=listener.port, log_level="warning")
    host = f"[{listener.host}]" if ":" in listener.host else listener.host
    print(
        f"codeask mcp: serving http://{host}:{listener.port}/mcp; clients send 'Authorization: Bearer <token>' "
        "(`codeask token` prints it)",
        file=sys.stderr,
        flush=True,
    )
    anyio.run(uvicorn.Server(config).serve)
