"""A real local HTTP server speaking enough of the OpenAI chat completions and Anthropic messages
APIs for the real ``openai`` and ``anthropic`` SDK clients (tests never touch the network).

    server = FakeLLMServer()
    server.responder = lambda req: "scripted text"      # or a dict for structured replies
    server.fail_next(500, "boom")                       # then the SDK retries
    OpenAI(base_url=server.openai_base_url, api_key="k")
    Anthropic(base_url=server.anthropic_base_url, api_key="k")
    server.requests, server.prompts(), server.close()

Routes: ``POST /v1/chat/completions`` (JSON or ``stream: true`` SSE ending ``data: [DONE]``;
``response_format`` json_schema and forced tools get the scripted JSON) and ``POST /v1/messages``
(JSON or Anthropic's SSE event sequence; a forced tool gets a ``tool_use`` block).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "FakeLLMServer",
    "default_responder",
    "example_from_schema",
    "request_text",
    "DEFAULT_ANSWER",
    "DEFAULT_FOLLOWUPS",
]

DEFAULT_ANSWER = "FAKE ANSWER"
DEFAULT_FOLLOWUPS = "- What calls it?\n- Where is it configured?"

Responder = Callable[[dict[str, Any]], "str | dict[str, Any] | list[Any]"]


# --- request helpers --------------------------------------------------------------------------


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    return ""


def request_text(request: dict[str, Any]) -> str:
    """All the text of one request: Anthropic's ``system`` then every message, newline-joined."""
    parts = []
    if request.get("system"):
        parts.append(_content_text(request["system"]))
    for message in request.get("messages") or []:
        parts.append(_content_text(message.get("content")))
    return "\n".join(p for p in parts if p)


def requested_schema(request: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a request asks the reply to follow (response_format or a forced tool)."""
    fmt = request.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema") or {}
    tool = _forced_tool(request)
    if tool is not None:
        if "input_schema" in tool:  # anthropic
            return tool["input_schema"]
        return (tool.get("function") or {}).get("parameters") or {}  # openai tools
    return None


def _forced_tool(request: dict[str, Any]) -> dict[str, Any] | None:
    tools = request.get("tools") or []
    if not tools:
        return None
    choice = request.get("tool_choice")
    name = None
    if isinstance(choice, dict):
        name = choice.get("name") or (choice.get("function") or {}).get("name")
    for tool in tools:
        tool_name = tool.get("name") or (tool.get("function") or {}).get("name")
        if name is None or tool_name == name:
            return tool
    return tools[0]


def example_from_schema(schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """A minimal instance of a JSON schema (strings ``"FAKE ANSWER"``, numbers 0, lists empty)."""
    root = root if root is not None else schema
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target.get(part, {})
        return example_from_schema(target, root)
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return example_from_schema(options[0], root)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        return {
            name: example_from_schema(sub, root) for name, sub in (schema.get("properties") or {}).items()
        }
    if kind == "array":
        return []
    if kind == "string":
        return DEFAULT_ANSWER
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    return None


def default_responder(request: dict[str, Any]) -> str | dict[str, Any]:
    """Follow-up questions when the prompt asks for them, a schema-shaped object for structured
    requests, else ``DEFAULT_ANSWER``."""
    schema = requested_schema(request)
    if schema is not None:
        return example_from_schema(schema)
    if "follow-up questions" in request_text(request).lower():
        return DEFAULT_FOLLOWUPS
    return DEFAULT_ANSWER


def _pieces(text: str, size: int = 3) -> list[str]:
    """Split text into a few chunks on word boundaries (whitespace kept), for streaming."""
    if not text:
        return []
    words = text.split(" ")
    chunks, current = [], []
    for i, word in enumerate(words):
        current.append(word + (" " if i < len(words) - 1 else ""))
        if len(current) >= size:
            chunks.append("".join(current))
            current = []
    if current:
        chunks.append("".join(current))
    return chunks


def _tokens(text: str) -> int:
    return max(1, len(text.split()))


# --- the server -------------------------------------------------------------------------------


class FakeLLMServer:
    """OpenAI- and Anthropic-compatible stand-in on ``127.0.0.1``, port chosen by the OS.

    Attributes:
        url: ``http://127.0.0.1:<port>``.
        openai_base_url: ``<url>/v1`` (the OpenAI SDK's ``base_url``).
        anthropic_base_url: ``<url>`` (the Anthropic SDK appends ``/v1/messages``).
        requests: JSON bodies of every request received (failed ones included), in order.
        disconnects: ``time.monotonic()`` of each streamed reply the client closed mid-stream.
        calls: ``{"path", "headers", "body"}`` for every request; header names lowercased.
        responder: ``(request_json) -> str | dict``; a ``str`` is the reply text, a ``dict``/``list``
            the JSON (content of a json_schema reply, or a forced tool's input). Assign to script.
        answer / followups: texts the default responder uses.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        answer: str = DEFAULT_ANSWER,
        followups: str = DEFAULT_FOLLOWUPS,
        stream_delay: float = 0.0,
    ) -> None:
        self.answer = answer
        self.followups = followups
        self.responder: Responder = responder or self._default_responder
        self.stream_delay = stream_delay
        self.requests: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []
        self.stream_script: dict[str, Any] = {}
        """How streamed replies go wrong (both APIs): ``first_delay`` seconds before the headers (a
        prompt being evaluated); ``stall_after`` pieces then ``stall_seconds`` of silence;
        ``break_after`` pieces then the connection is cut (a dead server); ``end``: ``"length"``
        (finish reason ``length`` / ``max_tokens``) or ``"no_final"`` (the stream just ends)."""
        self.timings: dict[str, Any] | None = None
        """When set, the last chunk of a streamed OpenAI reply carries it as llama.cpp's ``timings``
        (``prompt_n``, ``prompt_per_second``, ``predicted_n``, ``predicted_per_second``...)."""
        self.context_limit: int | None = None
        """When set, a request whose prompt has more words than this gets llama.cpp's 400
        ("the request exceeds the available context size")."""
        #: ``time.monotonic()`` of each stream the client closed while it was being sent.
        self.disconnects: list[float] = []
        self._failures: list[tuple[int, str, float | None]] = []
        self._lock = threading.Lock()
        self._httpd = _QuietServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.openai_base_url = f"{self.url}/v1"
        self.anthropic_base_url = self.url
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True,
            name=f"FakeLLMServer:{self.port}",
        )
        self._thread.start()
        self._closed = False

    # --- scripting ----------------------------------------------------------------------------

    def _default_responder(self, request: dict[str, Any]) -> str | dict[str, Any]:
        schema = requested_schema(request)
        if schema is not None:
            return example_from_schema(schema)
        text = request_text(request).lower()
        if "follow-up questions" in text or "search queries" in text:
            return self.followups
        return self.answer

    def reply_with(self, value: str | dict[str, Any]) -> None:
        """Answer every following request with ``value``."""
        self.responder = lambda request: value

    def fail_next(
        self, status: int, message: str = "injected error", times: int = 1, *, retry_after: float | None = None
    ) -> None:
        """The next ``times`` requests get HTTP ``status`` with a provider-shaped error body.
        ``retry_after`` (seconds) adds ``retry-after-ms``/``retry-after`` headers, which the SDKs
        honour instead of their own ~0.5 s backoff."""
        with self._lock:
            self._failures.extend([(status, message, retry_after)] * times)

    def prompts(self) -> list[str]:
        """Per request, the concatenated text of its system prompt and messages."""
        return [request_text(r) for r in self.requests]

    def user_prompts(self) -> list[str]:
        """Per request, the text of its user messages only (no system prompt)."""
        return [
            "\n".join(_content_text(m.get("content")) for m in r.get("messages") or [] if m.get("role") == "user")
            for r in self.requests
        ]

    def system_prompts(self) -> list[str]:
        """Per request, its system prompt (Anthropic ``system``, or OpenAI ``system`` role messages); ``""`` if none."""
        out = []
        for r in self.requests:
            parts = [_content_text(r["system"])] if r.get("system") else []
            parts += [_content_text(m.get("content")) for m in r.get("messages") or [] if m.get("role") == "system"]
            out.append("\n".join(parts))
        return out

    def reset(self) -> None:
        with self._lock:
            self.stream_script = {}
            self.context_limit = None
            self.timings = None
            self.requests.clear()
            self.calls.clear()
            self._failures.clear()
        self.responder = self._default_responder

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLMServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- used by the handler ------------------------------------------------------------------

    def _record(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, str, float | None] | None:
        with self._lock:
            self.requests.append(body)
            self.calls.append({"path": path, "headers": headers, "body": body})
            return self._failures.pop(0) if self._failures else None


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return  # the client gave up (timeout tests, closed streams)
        super().handle_error(request, client_address)


def _error_type(status: int, provider: str) -> str:
    if provider == "anthropic":
        return {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            413: "request_too_large",
            429: "rate_limit_error",
            529: "overloaded_error",
        }.get(status, "api_error")
    return {
        400: "invalid_request_error",
        401: "invalid_request_error",
        404: "invalid_request_error",
        429: "rate_limit_exceeded",
    }.get(status, "server_error")


def _make_handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "FakeLLM/1.0"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        # --- plumbing -----------------------------------------------------------------------

        def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

        def _start_sse(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True

        def _sse(self, data: Any, event: str | None = None) -> None:
            text = data if isinstance(data, str) else json.dumps(data)
            frame = (f"event: {event}\n" if event else "") + f"data: {text}\n\n"
            try:
                self.wfile.write(frame.encode())
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                with server._lock:
                    server.disconnects.append(time.monotonic())
                raise
            if server.stream_delay:
                time.sleep(server.stream_delay)

        def _cut(self) -> None:
            """Cut the connection as a dead server would: a TCP reset, no final event, no [DONE]."""
            import socket as _socket
            import struct

            try:
                self.wfile.flush()
                self.connection.setsockopt(_socket.SOL_SOCKET, _socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
            except OSError:
                pass
            self.close_connection = True

        def _stream_pieces(self, frames: list[tuple[Any, str | None]]) -> bool:
            """Send ``frames`` following ``stream_script``; ``False`` when the connection was cut."""
            script = server.stream_script
            for i, (data, event) in enumerate(frames):
                if script.get("break_after") is not None and i == script["break_after"]:
                    self._cut()
                    return False
                if script.get("stall_after") is not None and i == script["stall_after"]:
                    time.sleep(script.get("stall_seconds", 1.0))
                self._sse(data, event)
            return True

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0].rstrip("/")
            if path.endswith("/models"):
                self._send_json(200, {"object": "list", "data": []})
            else:
                self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

        def do_POST(self) -> None:
            path = self.path.split("?", 1)[0].rstrip("/")
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"_raw": raw.decode("utf-8", "replace")}
            provider = "anthropic" if path.endswith("/messages") else "openai"
            if not path.endswith(("/chat/completions", "/messages")):  # e.g. Ollama's /api/show probe
                self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            failure = server._record(path, {k.lower(): v for k, v in self.headers.items()}, body)
            if failure is not None:
                status, message, retry_after = failure
                headers = {}
                if retry_after is not None:
                    headers["retry-after-ms"] = str(int(retry_after * 1000))
                    headers["retry-after"] = f"{retry_after:g}"
                if provider == "anthropic":
                    payload: dict[str, Any] = {
                        "type": "error",
                        "error": {"type": _error_type(status, provider), "message": message},
                    }
                else:
                    payload = {
                        "error": {
                            "message": message,
                            "type": _error_type(status, provider),
                            "param": None,
                            "code": "invalid_api_key" if status == 401 else None,
                        }
                    }
                self._send_json(status, payload, headers)
                return
            if server.context_limit is not None and _tokens(request_text(body)) > server.context_limit:
                n = _tokens(request_text(body))
                message = (
                    f"the request exceeds the available context size, try increasing it "
                    f"(n_prompt_tokens = {n}, n_ctx = {server.context_limit})"
                )
                self._send_json(400, {"error": {"code": 400, "message": message, "type": "exceed_context_size_error"}})
                return
            delay = server.stream_script.get("first_delay") if body.get("stream") else None
            if delay:
                time.sleep(delay)
            try:
                if path.endswith("/chat/completions"):
                    self._openai(body)
                elif path.endswith("/messages"):
                    self._anthropic(body)
                else:
                    self._send_json(
                        404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}}
                    )
            except (BrokenPipeError, ConnectionResetError):  # recorded in ``disconnects`` by _sse
                self.close_connection = True

        def _reply(self, body: dict[str, Any]) -> str | dict[str, Any] | list[Any]:
            return server.responder(body)

        # --- OpenAI -------------------------------------------------------------------------

        def _openai(self, body: dict[str, Any]) -> None:
            reply = self._reply(body)
            model = body.get("model", "fake-model")
            forced = _forced_tool(body) if body.get("tools") else None
            tool_call = None
            if forced is not None and body.get("tool_choice") not in (None, "none", "auto") and not isinstance(reply, str):
                name = (forced.get("function") or {}).get("name") or forced.get("name") or "tool"
                tool_call = {
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(reply)},
                }
                text = ""
            else:
                text = reply if isinstance(reply, str) else json.dumps(reply)
            prompt_tokens = _tokens(request_text(body))
            usage = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": _tokens(text),
                "total_tokens": prompt_tokens + _tokens(text),
            }
            cid = f"chatcmpl-{uuid.uuid4().hex[:12]}"
            created = int(time.time())
            if not body.get("stream"):
                message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None}
                if tool_call:
                    message["tool_calls"] = [tool_call]
                self._send_json(
                    200,
                    {
                        "id": cid,
                        "object": "chat.completion",
                        "created": created,
                        "model": model,
                        "choices": [
                            {
                                "index": 0,
                                "message": message,
                                "logprobs": None,
                                "finish_reason": "tool_calls" if tool_call else "stop",
                            }
                        ],
                        "usage": usage,
                    },
                )
                return
            self._start_sse()

            def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
                return {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
                }

            self._sse(chunk({"role": "assistant", "content": ""}))
            if not self._stream_pieces([(chunk({"content": piece}), None) for piece in _pieces(text)]):
                return
            end = server.stream_script.get("end")
            if end == "no_final":
                return
            if tool_call:
                self._sse(chunk({"tool_calls": [dict(tool_call, index=0)]}))
            final = chunk({}, "length" if end == "length" else "tool_calls" if tool_call else "stop")
            if server.timings is not None:
                final["timings"] = server.timings
            self._sse(final)
            if (body.get("stream_options") or {}).get("include_usage"):
                self._sse(
                    {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                     "choices": [], "usage": usage}
                )
            self._sse("[DONE]")

        # --- Anthropic ----------------------------------------------------------------------

        def _anthropic(self, body: dict[str, Any]) -> None:
            reply = self._reply(body)
            model = body.get("model", "fake-model")
            tool = _forced_tool(body) if body.get("tools") else None
            mid = f"msg_{uuid.uuid4().hex[:12]}"
            tool_input: Any = None
            if tool is not None:
                if isinstance(reply, str):
                    try:
                        tool_input = json.loads(reply)
                    except ValueError:
                        tool_input = None
                else:
                    tool_input = reply
            if tool is not None and isinstance(tool_input, dict):
                block: dict[str, Any] = {
                    "type": "tool_use",
                    "id": f"toolu_{uuid.uuid4().hex[:12]}",
                    "name": tool.get("name", "tool"),
                    "input": tool_input,
                }
                text = json.dumps(tool_input)
                stop_reason = "tool_use"
            else:
                text = reply if isinstance(reply, str) else json.dumps(reply)
                block = {"type": "text", "text": text}
                stop_reason = "end_turn"
            usage = {"input_tokens": _tokens(request_text(body)), "output_tokens": _tokens(text)}
            if not body.get("stream"):
                self._send_json(
                    200,
                    {
                        "id": mid,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [block],
                        "stop_reason": stop_reason,
                        "stop_sequence": None,
                        "usage": usage,
                    },
                )
                return
            self._start_sse()
            self._sse(
                {
                    "type": "message_start",
                    "message": {
                        "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
                        "stop_reason": None, "stop_sequence": None,
                        "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 1},
                    },
                },
                "message_start",
            )
            if block["type"] == "text":
                start = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": p} for p in _pieces(text)]
            else:
                start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                deltas = [{"type": "input_json_delta", "partial_json": text}]
            self._sse({"type": "content_block_start", "index": 0, "content_block": start}, "content_block_start")
            self._sse({"type": "ping"}, "ping")
            frames = [({"type": "content_block_delta", "index": 0, "delta": d}, "content_block_delta") for d in deltas]
            if not self._stream_pieces(frames):
                return
            end = server.stream_script.get("end")
            if end == "no_final":
                return
            self._sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
            self._sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "max_tokens" if end == "length" else stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": usage["output_tokens"]},
                },
                "message_delta",
            )
            self._sse({"type": "message_stop"}, "message_stop")

    return Handler
