"""The watchdog of one streamed call: it enforces the time to first token and the idle gap, and
aborts the call's socket when it is cancelled (:class:`Guard`); the SDKs' httpx clients report
their sockets to it (:func:`http_client`).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from codeask.llm.cancel import CancelLike, CancelToken, is_cancelled

__all__ = ["Guard", "Aborted", "current_call", "http_client", "httpx_module"]


class Aborted(Exception):
    """The watchdog aborted a stream that the SDK then saw end cleanly."""


#: The running call of this thread: ``current_call.guard`` is its :class:`Guard` while
#: :meth:`~codeask.llm.base.BaseLLM.generate` opens the request (sockets opened then are reported to it).
current_call = threading.local()


#: httpcore's trace events (the ``trace`` request extension) that carry a connection it just opened,
#: as ``info["return_value"]``: a TCP or Unix socket stream (a TLS stream wraps the same socket).
CONNECTED = frozenset({"connection.connect_tcp.complete", "connection.connect_unix_socket.complete"})


def _trace(event: str, info: dict[str, Any]) -> None:
    """httpcore's ``trace`` extension: tells the running call (thread-local) about each socket its
    request opens, so its watchdog can shut that socket down (which wakes a blocked read at once)."""
    guard = getattr(current_call, "guard", None)
    stream = info.get("return_value")
    if guard is not None and stream is not None and event in CONNECTED:
        guard.add_socket(stream.get_extra_info("socket"))


def _traced(request: Any) -> None:
    """An httpx ``request`` event hook: the request reports its connections (:func:`_trace`)."""
    request.extensions["trace"] = _trace


def httpx_module(client_class: type) -> Any:
    """The httpx module an SDK is built on (``httpx``, or its fork ``httpx2`` in newer SDKs), from the
    SDK's ``DefaultHttpxClient`` class."""
    import importlib

    base = next(c for c in client_class.__mro__ if c.__name__ == "Client" and c is not client_class)
    return importlib.import_module(base.__module__.split(".")[0])


def http_client(client_class: type) -> Any:
    """An httpx ``Client`` for an SDK (``client_class`` is the SDK's ``DefaultHttpxClient``): no
    keep-alive (each call owns its connection, so aborting it affects nothing else) and each
    request's sockets reported to the running call's watchdog, through httpx's ``request`` event
    hook and httpcore's ``trace`` request extension (both public: httpx "Event Hooks", httpcore
    "Extensions")."""
    httpx = httpx_module(client_class)
    transport = httpx.HTTPTransport(limits=httpx.Limits(max_keepalive_connections=0))
    return client_class(transport=transport, event_hooks={"request": [_traced]})


class Guard:
    """The watchdog of one call: aborts it when cancelled, when no first token came within
    ``first_token`` seconds, when no stream event came for ``idle`` seconds after that, or when the
    call has run ``deadline`` seconds (``None``: no deadline).

    Aborting shuts the call's sockets down (the server sees the connection close and stops
    generating) and closes the SDK stream; :attr:`reason` then says why.
    """

    POLL = 0.05

    def __init__(
        self,
        cancel: CancelLike,
        first_token: float,
        idle: float,
        token: CancelToken | None = None,
        *,
        deadline: float | None = None,
    ) -> None:
        self.cancel = cancel
        self.deadline = deadline
        self.token = token if token is not None else (cancel if isinstance(cancel, CancelToken) else None)
        self.first_token = first_token
        self.idle = idle
        self.reason: str | None = None
        self.start = time.monotonic()
        self.last: float | None = None
        self._sockets: list[socket.socket] = []
        self._streams: list[Any] = []
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._unregister: Callable[[], None] | None = None
        self._thread = threading.Thread(target=self._watch, name="codeask-llm-watchdog", daemon=True)

    def __enter__(self) -> Guard:
        if self.token is not None:
            self._unregister = self.token.on_cancel(lambda: self.abort("cancelled"))
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self._unregister is not None:
            self._unregister()

    def tick(self) -> None:
        """A stream event arrived (resets the idle clock)."""
        self.last = time.monotonic()

    def add_socket(self, sock: Any) -> None:
        if sock is None:
            return
        with self._lock:
            self._sockets.append(sock)
            aborted = self.reason is not None
        if aborted:
            _shutdown(sock)

    def add_stream(self, stream: Any) -> None:
        """The SDK stream (closed on abort); its socket is recorded too when httpcore exposes it."""
        with self._lock:
            self._streams.append(stream)
        response = getattr(stream, "response", None)
        network = (getattr(response, "extensions", None) or {}).get("network_stream")
        if network is not None:
            try:
                self.add_socket(network.get_extra_info("socket"))
            except Exception:  # pragma: no cover
                pass

    def abort(self, reason: str) -> None:
        with self._lock:
            if self.reason is not None or self._done.is_set():
                return
            self.reason = reason
            sockets = list(self._sockets)
        for sock in sockets:
            _shutdown(sock)

    def wait(self, seconds: float) -> None:
        """Sleep ``seconds`` (a retry backoff) unless the call is aborted first."""
        end = time.monotonic() + seconds
        while self.reason is None and time.monotonic() < end:
            self._done.wait(min(self.POLL, max(0.0, end - time.monotonic())))

    def _watch(self) -> None:
        while not self._done.wait(self.POLL):
            if self.reason is not None:
                return
            if is_cancelled(self.cancel):
                self.abort("cancelled")
                return
            now = time.monotonic()
            if self.deadline is not None and now - self.start > self.deadline:
                self.abort("deadline")
            elif self.last is None and now - self.start > self.first_token:
                self.abort("first_token")
            elif self.last is not None and now - self.last > self.idle:
                self.abort("idle")

    def detail(self, prompt_tokens: int) -> str | None:
        """Why the watchdog aborted the call, one line for the error (a prompt of ``prompt_tokens``
        tokens); ``None`` when it did not (or when cancelled: the caller raises ``Cancelled``)."""
        budget = self.deadline is not None and self.first_token >= self.deadline
        if self.reason == "deadline" and self.last is not None:
            return f"the answer's time budget ran out after {self.deadline:g}s (llm.answer_seconds)"
        if self.reason == "deadline" or (self.reason == "first_token" and budget):
            return (
                f"no first token within the answer's time budget of {self.first_token:g}s (llm.answer_seconds; "
                f"prompt ~{prompt_tokens} tokens): the endpoint is slower now than when it was measured"
            )
        if self.reason == "first_token":
            return (
                f"no first token after {self.first_token:.3g}s (prompt ~{prompt_tokens} tokens; the server may "
                "still be evaluating it): raise llm.first_token_timeout (CODEASK_LLM_FIRST_TOKEN_TIMEOUT) "
                "or send fewer documents (retrieval.max_files)"
            )
        if self.reason == "idle":
            return f"no data for {self.idle:g}s (llm.timeout, CODEASK_LLM_TIMEOUT)"
        return None


def _shutdown(sock: Any) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
