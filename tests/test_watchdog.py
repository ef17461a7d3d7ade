"""The watchdog learns each socket an SDK's request opens (:func:`codeask.llm.watchdog.http_client`,
through httpx's request hook and httpcore's ``trace`` extension), so aborting a call wakes a request
still waiting for the server's first byte: the real SDK httpx clients against a socket that reads the
request and never answers."""

from __future__ import annotations

import socket
import threading

import anthropic
import openai
import pytest

from codeask.llm.watchdog import Guard, current_call, http_client, httpx_module


@pytest.mark.parametrize("sdk", [openai, anthropic], ids=["openai", "anthropic"])
def test_abort_wakes_a_request_waiting_for_its_first_byte(sdk) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    received = threading.Event()
    held: list[socket.socket] = []

    def silent_server() -> None:  # reads the request, never answers
        conn, _ = listener.accept()
        held.append(conn)
        conn.recv(65536)
        received.set()

    threading.Thread(target=silent_server, daemon=True).start()
    guard = Guard(lambda: False, first_token=60.0, idle=60.0)
    threading.Thread(target=lambda: received.wait(30) and guard.abort("first_token"), daemon=True).start()
    httpx = httpx_module(sdk.DefaultHttpxClient)
    client = http_client(sdk.DefaultHttpxClient)
    current_call.guard = guard
    try:
        with pytest.raises(httpx.TransportError) as info:
            client.post(f"http://127.0.0.1:{port}/v1/chat", content=b"{}", timeout=httpx.Timeout(60.0, read=30.0))
    finally:
        current_call.guard = None
        client.close()
        listener.close()
        for conn in held:
            conn.close()
    assert received.is_set() and guard.reason == "first_token"
    # the socket was shut down under the waiting read (the server's silence would end in a timeout)
    assert not isinstance(info.value, httpx.TimeoutException), repr(info.value)
