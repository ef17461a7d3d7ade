"""The provider-neutral LLM interface, its error types and the streamed call every adapter shares.

Every call is streamed (:meth:`BaseLLM.generate`), whatever the caller wants: the whole text, the
deltas as they come, or a structured object. That is what makes timeouts mean something with a
slow local model: instead of one read timeout covering prompt evaluation plus the whole answer,
a call has

* a connect timeout (``llm.connect_timeout``);
* a time to first token (``llm.first_token_timeout``, by default scaled to the prompt's size and
  more generous for a local endpoint, see :func:`first_token_seconds`);
* an idle gap between two stream events (``llm.timeout``).

Retries (``llm.max_retries``) happen only before the first byte of a reply: a refused
connection, a connect timeout, HTTP 408/409/429/5xx. A request that timed out waiting for its
first token is not sent again (the server is still working on it); it is aborted, which closes
its connection so the server stops computing it.

Cancellation: pass ``cancel=`` a :class:`CancelToken` (or a ``threading.Event``, or a callable
returning ``True`` once cancelled) to :meth:`BaseLLM.generate`, ``complete``, ``stream`` or
``structured``. A watchdog thread checks it (every 50 ms, or at once for a :class:`CancelToken`),
shuts the request's socket down, and the call raises :class:`Cancelled`.

How a call ended is recorded on the :class:`Completion`: ``finish_reason`` is ``stop``,
``length`` (cut at ``max_tokens``), ``content_filter``, ``incomplete`` (the stream ended without
its final event) or ``error`` (the stream broke after some text; ``error`` says what happened).
"""

from __future__ import annotations

import contextvars
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable
from urllib.parse import urlsplit

import pydantic

from codeask.settings import safe_url  # re-exported: the adapters import it from here

__all__ = [
    "LLM",
    "LLMError",
    "Cancelled",
    "CancelToken",
    "LLMCancelled",
    "cancel_scope",
    "Completion",
    "extract_json_object",
    "schema_name",
    "safe_url",
    "estimate_tokens",
    "is_local_url",
    "first_token_seconds",
]

M = TypeVar("M", bound=pydantic.BaseModel)


class LLMError(RuntimeError):
    """One clear line naming provider and model, e.g.
    ``openai model 'gpt-x' at http://..: 401 invalid api key``.

    Attributes ``provider``, ``model``, ``base_url`` and ``status`` (the HTTP status code, or
    ``None`` for connection errors, timeouts and bad replies) are set when known. The API key
    never appears in the message.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.model = model
        self.base_url = base_url
        self.status = status


class PassThrough(Exception):
    """An adapter's own signal raised from ``_open`` that the call passes on unchanged (not retried)."""


class ContextLengthError(LLMError):
    """The server refused the prompt as longer than the model's context (HTTP 400 naming the context)."""


class Cancelled(Exception):
    """The caller cancelled (LSP ``$/cancelRequest``, a closed editor, Ctrl-C); the LLM request, if one
    was running, was aborted and its connection closed."""


class CancelToken:
    """A cancellation handle for LLM calls (and anything else that wants to be told).

    ``cancel()`` sets the flag and runs every callback registered with :meth:`on_cancel` (once; a
    callback registered after cancellation runs at once). Thread-safe.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._event.is_set()

    def __call__(self) -> bool:
        """Same as :attr:`cancelled` (so a token is also a ``cancelled()`` callable)."""
        return self._event.is_set()

    def cancel(self) -> None:
        """Cancel: set the flag, then run the callbacks (errors in them are ignored)."""
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # pragma: no cover - a callback must not stop the others
                pass

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` on cancellation; returns a function that unregisters it."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return lambda: self._remove(callback)
        callback()
        return lambda: None

    def _remove(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` seconds passed; returns :attr:`cancelled`."""
        return self._event.wait(timeout)


#: The language server's seam: LLM calls made inside ``with cancel_scope(token):`` (this thread or
#: task) are cancelled by ``token`` too, without passing ``cancel=`` through every layer.
_scope: contextvars.ContextVar[CancelToken | None] = contextvars.ContextVar("codeask_llm_cancel", default=None)


@contextmanager
def cancel_scope(token: CancelToken | None):
    """Make ``token`` cancel the LLM calls made in this context (this thread, or this task)."""
    reset = _scope.set(token)
    try:
        yield token
    finally:
        _scope.reset(reset)


#: The name the first cancellation seam used; the same class as :class:`Cancelled`.
LLMCancelled = Cancelled


#: What ``cancel=`` accepts: a :class:`CancelToken`, a ``threading.Event``, or ``() -> bool``.
CancelLike = CancelToken | threading.Event | Callable[[], bool] | None


def is_cancelled(cancel: CancelLike) -> bool:
    """Whether ``cancel`` (any :data:`CancelLike`) says cancelled."""
    if cancel is None:
        return False
    if isinstance(cancel, CancelToken):
        return cancel.cancelled
    if isinstance(cancel, threading.Event):
        return cancel.is_set()
    return bool(cancel())


#: Finish reasons after which the text is complete.
COMPLETE_REASONS = frozenset({"stop", "tool_calls"})

_REASON_TEXT = {
    "length": "the max_tokens limit was reached",
    "content_filter": "the provider's content filter stopped it",
    "incomplete": "the stream ended without its final event",
    "error": "the stream broke",
}


@dataclass
class Completion:
    """How one streamed LLM call ended.

    Attributes:
        text: everything received (partial when cut off).
        finish_reason: ``stop``, ``length``, ``content_filter``, ``tool_calls``, ``incomplete`` (no
            final event) or ``error`` (broken after some text); ``None`` never leaves :meth:`BaseLLM.generate`.
        tokens: text deltas received (llama.cpp and OpenAI send about one token per delta).
        prompt_tokens: the prompt's size, tokens (the server's count when it reported usage, else
            :func:`estimate_tokens`).
        error: what broke the stream (``finish_reason == "error"``), one line.
        first_token_seconds / seconds: from the request to the first delta / to the end.
    """

    text: str
    finish_reason: str | None = None
    tokens: int = 0
    prompt_tokens: int = 0
    error: str | None = None
    first_token_seconds: float | None = None
    seconds: float = 0.0

    @property
    def truncated(self) -> bool:
        """Whether the text is cut off (any finish reason but ``stop`` / ``tool_calls``)."""
        return self.finish_reason not in COMPLETE_REASONS

    def cut_reason(self) -> str | None:
        """``"max_tokens reached"``-style words for a cut-off answer, ``None`` when complete."""
        if not self.truncated:
            return None
        if self.finish_reason == "error" and self.error:
            return self.error
        return _REASON_TEXT.get(self.finish_reason or "", f"finish reason {self.finish_reason}")


def estimate_tokens(text: str) -> int:
    """A calibrated token estimate for chat prompts over code: one token per 3 characters.

    Measured with llama.cpp's ``/tokenize`` on this repository's prompts: Qwen2.5 and SmolLM2 BPE
    tokenizers give 3.3-3.9 characters per token on Python code and English; 3 errs on the high
    side so a budget built on it does not overflow. Used where the endpoint cannot count.
    """
    return (len(text) + 2) // 3


_LOCAL_HOSTS = ("localhost", "127.", "::1", "[::1]", "0.0.0.0", "host.docker.internal")


def is_local_url(url: str | None) -> bool:
    """Whether ``url`` points at this machine or a private network (a local model server)."""
    if not url:
        return False
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    if host.startswith(_LOCAL_HOSTS) or host.endswith(".local") or host == "::1":
        return True
    return host.startswith(("10.", "192.168.")) or bool(re.match(r"^172\.(1[6-9]|2\d|3[01])\.", host))


def first_token_seconds(prompt_tokens: int, *, base: float, local: bool) -> float:
    """Default time to first token, seconds: ``base`` (``llm.timeout``) plus the prompt's evaluation
    time at a slow rate, 4 tokens/s for a local endpoint and 200 tokens/s for a hosted one.

    The local rate is below the slowest measured on this project's 2-core machine under load:
    Qwen2.5-Coder-1.5B (Q4_K_M, llama.cpp) evaluated prompts at 4.8-12 tokens/s at load average 15-29
    (25-60 when idle); at 20 tokens/s a 4,257-token prompt timed out after 273 s while the server
    was 70% through it. The request is streamed and closed on timeout, so a long wait costs no
    server work, and the sources are shown before the call."""
    rate = 4.0 if local else 200.0
    return base + prompt_tokens / rate


@runtime_checkable
class LLM(Protocol):
    """A chat model: one prompt in, text (whole, streamed) or a validated pydantic object out.

    All methods raise :class:`LLMError` on any failure.
    """

    provider: str
    model: str

    def describe(self) -> str:
        """``provider:model``, e.g. ``openai:gpt-4o-mini``."""
        ...

    def complete(self, prompt: str, *, system: str | None = None, max_tokens: int | None = None) -> str:
        """The whole answer text."""
        ...

    def stream(self, prompt: str, *, system: str | None = None, max_tokens: int | None = None) -> Iterator[str]:
        """The answer as text deltas, in order; their concatenation is the answer."""
        ...

    def structured(
        self, prompt: str, schema: type[pydantic.BaseModel], *, system: str | None = None
    ) -> pydantic.BaseModel:
        """An instance of ``schema`` produced by the model and validated."""
        ...


# --- helpers shared by the adapters ---------------------------------------------------------


def one_line(text: str, limit: int = 500) -> str:
    """Collapse whitespace to single spaces and cap the length."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by ``***``; unchanged when ``secret`` is
    ``None`` or shorter than 4 characters."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, "***")
    return text


def schema_name(schema: type[pydantic.BaseModel]) -> str:
    """A tool / response-format name from the model class: ``[a-zA-Z0-9_-]{1,64}``."""
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", schema.__name__)[:64]
    return name or "result"


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def extract_json_object(text: str) -> Any:
    """The first JSON object (or array) in ``text``: the whole text, a fenced block, or the
    first balanced ``{...}`` that parses. Raises ``ValueError`` when there is none."""
    stripped = text.strip()
    if stripped:
        try:
            return json.loads(stripped)
        except ValueError:
            pass
    for match in _FENCE.finditer(text):
        try:
            return json.loads(match.group(1).strip())
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                value, _ = decoder.raw_decode(text, i)
            except ValueError:
                continue
            if isinstance(value, dict) or (ch == "[" and isinstance(value, list) and value):
                return value
    raise ValueError("no JSON object found in the reply")


class _Aborted(Exception):
    """The watchdog aborted a stream that the SDK then saw end cleanly."""


class _RecordingBackend:
    """An httpcore network backend that tells the running call (thread-local) about each socket it
    opens, so a watchdog can shut that socket down (which wakes a blocked read at once)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def connect_tcp(self, *args: Any, **kwargs: Any) -> Any:
        stream = self._inner.connect_tcp(*args, **kwargs)
        _note_stream(stream)
        return stream

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
        stream = self._inner.connect_unix_socket(*args, **kwargs)
        _note_stream(stream)
        return stream

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


_current = threading.local()


def _note_stream(stream: Any) -> None:
    guard = getattr(_current, "guard", None)
    if guard is not None:
        try:
            guard.add_socket(stream.get_extra_info("socket"))
        except Exception:  # pragma: no cover - a backend without sockets
            pass


def httpx_module(client_class: type) -> Any:
    """The httpx module an SDK is built on (``httpx``, or its fork ``httpx2`` in newer SDKs), from the
    SDK's ``DefaultHttpxClient`` class."""
    import importlib

    base = next(c for c in client_class.__mro__ if c.__name__ == "Client" and c is not client_class)
    return importlib.import_module(base.__module__.split(".")[0])


def http_client(client_class: type) -> Any:
    """An httpx ``Client`` for an SDK (``client_class`` is the SDK's ``DefaultHttpxClient``): no
    keep-alive (each call owns its connection, so aborting it affects nothing else) and sockets
    reported to the running call's watchdog."""
    httpx = httpx_module(client_class)
    transport = httpx.HTTPTransport(limits=httpx.Limits(max_keepalive_connections=0))
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is not None:  # httpcore >= 1.0; without it aborts still close the response
        pool._network_backend = _RecordingBackend(backend)
    return client_class(transport=transport)


class _Guard:
    """The watchdog of one call: aborts it when cancelled, when no first token came within
    ``first_token`` seconds, or when no stream event came for ``idle`` seconds after that.

    Aborting shuts the call's sockets down (the server sees the connection close and stops
    generating) and closes the SDK stream; :attr:`reason` then says why.
    """

    POLL = 0.05

    def __init__(self, cancel: CancelLike, first_token: float, idle: float, token: CancelToken | None = None) -> None:
        self.cancel = cancel
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

    def __enter__(self) -> _Guard:
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
            if self.last is None and now - self.start > self.first_token:
                self.abort("first_token")
            elif self.last is not None and now - self.last > self.idle:
                self.abort("idle")


def _shutdown(sock: Any) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class BaseLLM:
    """Shared state, the streamed call (:meth:`generate`) and error formatting for the adapters.

    An adapter implements ``_open(messages, system, max_tokens, timeout, **extra)`` (start one
    streamed request with the SDK, raising the SDK's own exceptions), ``_events(stream)``
    (yield ``(text, finish_reason, prompt_tokens)`` per stream event, each possibly ``None``),
    ``_retryable(exc)`` and ``_convert(exc)``.
    """

    provider: str = "llm"
    _httpx: Any = None  # the SDK's httpx module, set by the adapter

    #: Where to get a key, for the "no API key" error.
    key_hint: str = "llm.api_key"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str | None,
        timeout: float = 60.0,
        max_retries: int = 3,
        max_tokens: int = 1024,
        temperature: float | None = 0.0,
        connect_timeout: float = 10.0,
        first_token_timeout: float | None = None,
        context_tokens: int | None = None,
    ) -> None:
        """Store the shared settings: ``context_tokens`` (``None``: asked from the endpoint), ``timeout`` seconds of silence allowed between stream events,
        ``connect_timeout`` seconds to connect, ``first_token_timeout`` seconds to the first token
        (``None``: :func:`first_token_seconds` of the prompt), ``max_retries`` (only before the first
        byte), ``max_tokens`` per answer, ``temperature`` (``None``: not sent).

        Raises:
            LLMError: neither a key nor a base URL (a local server needs no key).
        """
        self.model = model
        self.base_url = base_url
        self._api_key = api_key
        if not api_key and not base_url:
            raise self._error(f"no API key (set {self.key_hint} or llm.api_key)")
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.first_token_timeout = first_token_timeout
        self._context: int | None = context_tokens
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._send_temperature = temperature is not None

    def describe(self) -> str:
        """``provider:model``, e.g. ``openai:gpt-4o-mini`` (no base URL, never the key)."""
        return f"{self.provider}:{self.model}"

    def __repr__(self) -> str:  # never shows the key
        where = f" at {safe_url(self.base_url)}" if self.base_url else ""
        return f"<{type(self).__name__} {self.describe()}{where}>"

    # --- the model's context and token counts ---------------------------------------------------

    #: Context assumed when neither ``llm.context_tokens`` nor the endpoint says (tokens).
    DEFAULT_LOCAL_CONTEXT = 4096
    DEFAULT_HOSTED_CONTEXT = 128000

    def context_tokens(self) -> int:
        """The model's context window, tokens: ``llm.context_tokens`` when set, else what the endpoint
        says (:meth:`_discover_context`, asked once), else 4096 for a local endpoint (Ollama's and
        LM Studio's usual default) and 128000 for a hosted one."""
        if self._context is None:
            found = None
            try:
                found = self._discover_context()
            except Exception:  # discovery is best effort; the defaults below are safe
                found = None
            local = is_local_url(self.base_url)
            self._context = int(found or (self.DEFAULT_LOCAL_CONTEXT if local else self.DEFAULT_HOSTED_CONTEXT))
        return self._context

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text``: the endpoint's own tokenizer where it has one (llama.cpp ``/tokenize``),
        else :func:`estimate_tokens`."""
        return estimate_tokens(text)

    def _discover_context(self) -> int | None:
        """The context the endpoint reports, or ``None`` (adapters override)."""
        return None

    # --- the streamed call ----------------------------------------------------------------------

    def first_token_deadline(self, prompt_tokens: int) -> float:
        """Seconds allowed to the first token for a prompt of ``prompt_tokens`` tokens."""
        if self.first_token_timeout:
            return float(self.first_token_timeout)
        return first_token_seconds(prompt_tokens, base=self.timeout, local=is_local_url(self.base_url))

    def generate(
        self,
        prompt: str,
        *,
        system: str | None = None,
        max_tokens: int | None = None,
        on_delta: Callable[[str], None] | None = None,
        cancel: CancelLike = None,
    ) -> Completion:
        """One streamed call: every text delta goes to ``on_delta`` as it arrives; returns the
        :class:`Completion` (text, finish reason, token count).

        A stream that breaks after some text does not raise: the completion has ``finish_reason
        "error"`` and ``error`` says what happened ("connected, then the stream broke after N tokens").

        Raises:
            LLMError: the call failed before any text (``ContextLengthError`` for a prompt over the
                model's context).
            Cancelled: ``cancel`` said so; the request was aborted and its connection closed.
        """
        run = self._run(prompt, system, max_tokens, cancel, {})
        while True:
            try:
                delta = next(run)
            except StopIteration as stop:
                return stop.value
            if on_delta is not None:
                on_delta(delta)

    def complete(
        self, prompt: str, *, system: str | None = None, max_tokens: int | None = None, cancel: CancelLike = None
    ) -> str:
        """The whole answer text (streamed underneath; partial when cut off, see :meth:`generate`).

        Raises:
            LLMError, Cancelled: as :meth:`generate`.
        """
        return self.generate(prompt, system=system, max_tokens=max_tokens, cancel=cancel).text

    def stream(
        self, prompt: str, *, system: str | None = None, max_tokens: int | None = None, cancel: CancelLike = None
    ) -> TextStream:
        """The answer as text deltas, in order (a :class:`TextStream`: iterate it; ``completion`` is set
        once it is exhausted). Raises as :meth:`generate`, while iterating."""
        return TextStream(self._run(prompt, system, max_tokens, cancel, {}))

    def _run(
        self,
        prompt: str,
        system: str | None,
        max_tokens: int | None,
        cancel: CancelLike,
        extra: dict[str, Any],
    ) -> Generator[str, None, Completion]:
        prompt_tokens = estimate_tokens((system or "") + prompt)
        first_token = self.first_token_deadline(prompt_tokens)
        completion = Completion("", prompt_tokens=prompt_tokens)
        parts: list[str] = []
        scoped = _scope.get()
        if scoped is not None and scoped is not cancel:
            outer = cancel
            cancel = scoped if outer is None else (lambda: scoped.cancelled or is_cancelled(outer))
        if is_cancelled(cancel) or (scoped is not None and scoped.cancelled):
            raise Cancelled("cancelled before the LLM call")
        with _Guard(cancel, first_token, self.timeout, scoped) as guard:
            stream = self._open_with_retries(guard, prompt, system, max_tokens, first_token, extra)
            try:
                for text, finish, usage in self._events(stream):
                    guard.tick()
                    if usage:
                        completion.prompt_tokens = usage
                    if finish:
                        completion.finish_reason = finish
                    if text:
                        if not completion.tokens:
                            completion.first_token_seconds = time.monotonic() - guard.start
                        completion.tokens += 1
                        parts.append(text)
                        yield text
                if guard.reason is not None:  # the watchdog shut the socket: the SDK saw a clean end
                    raise _Aborted(guard.reason)
            except Exception as exc:
                if guard.reason == "cancelled":
                    raise Cancelled("cancelled while the LLM was answering") from exc
                detail = (
                    self._abort_detail(guard, first_token, prompt_tokens)
                    or self._convert(exc).message.split(": ", 1)[-1]
                )
                if not completion.tokens:
                    raise self._error(detail) from exc
                completion.finish_reason = "error"
                completion.error = f"connected, then the stream broke after {completion.tokens} tokens: {detail}"
            finally:
                try:
                    stream.close()
                except Exception:
                    pass
        if guard.reason == "cancelled":
            raise Cancelled("cancelled while the LLM was answering")
        if completion.finish_reason is None:
            completion.finish_reason = "incomplete"
        completion.text = "".join(parts)
        completion.seconds = time.monotonic() - guard.start
        return completion

    def _abort_detail(self, guard: _Guard, first_token: float, prompt_tokens: int) -> str | None:
        if guard.reason == "first_token":
            return (
                f"no first token after {first_token:.3g}s (prompt ~{prompt_tokens} tokens; the server may "
                "still be evaluating it): raise llm.first_token_timeout (CODEASK_LLM_FIRST_TOKEN_TIMEOUT) "
                "or send fewer documents (retrieval.max_files)"
            )
        if guard.reason == "idle":
            return f"no data for {self.timeout:g}s (llm.timeout, CODEASK_LLM_TIMEOUT)"
        return None

    def _open_with_retries(
        self,
        guard: _Guard,
        prompt: str,
        system: str | None,
        max_tokens: int | None,
        first_token: float,
        extra: dict[str, Any],
    ) -> Any:
        httpx = self._httpx
        read = max(first_token, self.timeout) + 30.0  # a backstop: the watchdog acts first
        timeout = httpx.Timeout(
            connect=self.connect_timeout, read=read, write=max(self.timeout, 60.0), pool=self.connect_timeout
        )
        attempt = 0
        while True:
            _current.guard = guard
            try:
                stream = self._open(prompt, system, max_tokens, timeout, **extra)
                guard.add_stream(stream)
                return stream
            except Exception as exc:
                if guard.reason == "cancelled":
                    raise Cancelled("cancelled before the LLM answered") from exc
                detail = self._abort_detail(guard, first_token, guard_tokens(prompt, system))
                if detail:
                    raise self._error(detail) from exc
                if isinstance(exc, (LLMError, PassThrough)):
                    raise
                if attempt >= self.max_retries or not self._retryable(exc):
                    error = self._convert(exc)
                    if attempt and error.status is None:
                        error = self._error(f"{error.message.split(': ', 1)[-1]} (after {attempt} retries)")
                    raise error from exc
                guard.wait(self._retry_delay(exc, attempt))
                attempt += 1
            finally:
                _current.guard = None

    @staticmethod
    def _retry_delay(exc: BaseException, attempt: int) -> float:
        """Seconds before retry ``attempt + 1``: the server's ``retry-after(-ms)`` (at most 30 s), else
        0.5 s doubling up to 8 s."""
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None) or {}
        try:
            if headers.get("retry-after-ms"):
                return min(30.0, float(headers["retry-after-ms"]) / 1000)
            if headers.get("retry-after"):
                return min(30.0, float(headers["retry-after"]))
        except ValueError:
            pass
        return min(8.0, 0.5 * 2**attempt)

    # --- adapter hooks ------------------------------------------------------------------------

    def _open(self, prompt: str, system: str | None, max_tokens: int | None, timeout: Any, **extra: Any) -> Any:
        raise NotImplementedError

    def _events(self, stream: Any) -> Iterator[tuple[str | None, str | None, int | None]]:
        raise NotImplementedError

    def _retryable(self, exc: BaseException) -> bool:
        raise NotImplementedError

    def _convert(self, exc: BaseException) -> LLMError:
        raise NotImplementedError

    def _error(self, detail: str, status: int | None = None, cls: type[LLMError] = LLMError) -> LLMError:
        where = f" at {safe_url(self.base_url)}" if self.base_url else ""
        head = f"{self.provider} model {self.model!r}{where}: "
        message = redact(one_line(head + detail), self._api_key)
        return cls(
            message,
            provider=self.provider,
            model=self.model,
            base_url=safe_url(self.base_url),
            status=status,
        )

    def _structured_text(
        self,
        prompt: str,
        schema: type[pydantic.BaseModel],
        system: str | None,
        cancel: CancelLike,
        extra: dict[str, Any],
    ) -> str:
        """The streamed reply text of a structured call; an error when it was cut off or is empty."""
        run = self._run(prompt, system, None, cancel, extra)
        while True:
            try:
                next(run)
            except StopIteration as stop:
                completion: Completion = stop.value
                break
        if completion.truncated:
            raise self._error(
                f"reply for {schema.__name__} was cut off ({completion.cut_reason()}; max_tokens={self.max_tokens})"
            )
        if not completion.text.strip():
            raise self._error(f"empty reply where a {schema.__name__} JSON object was expected")
        return completion.text

    def _validate(self, schema: type[M], data: Any, raw: str | None = None) -> M:
        try:
            if isinstance(data, str):
                try:
                    return schema.model_validate_json(data)
                except pydantic.ValidationError:
                    data = extract_json_object(data)
            return schema.model_validate(data)
        except ValueError as exc:  # includes pydantic.ValidationError
            if isinstance(exc, pydantic.ValidationError):
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()[:5]
                )
            else:
                problems = str(exc)
            shown = raw if raw is not None else (data if isinstance(data, str) else json.dumps(data))
            raise self._error(
                f"reply does not match {schema.__name__}: {problems} (reply: {one_line(shown, 200)})"
            ) from exc


class TextStream:
    """The deltas of one streamed call (iterate once); :attr:`completion` is set when exhausted."""

    def __init__(self, run: Generator[str, None, Completion]) -> None:
        self._run = run
        self.completion: Completion | None = None

    def __iter__(self) -> Iterator[str]:
        self.completion = yield from self._run

    def close(self) -> None:
        """Stop early: the request is aborted and its connection closed."""
        self._run.close()


#: httpx / httpcore (and their ``*2`` forks) errors raised while connecting.
_CONNECT_ERRORS = frozenset({"ConnectError", "ConnectTimeout", "PoolTimeout"})


def before_connect(exc: BaseException) -> bool:
    """Whether a transport error happened while connecting (nothing was sent: safe to retry)."""
    cur: BaseException | None = exc
    for _ in range(6):
        if cur is None:
            return False
        if isinstance(cur, ConnectionRefusedError) or type(cur).__name__ in _CONNECT_ERRORS:
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def guard_tokens(prompt: str, system: str | None) -> int:
    """:func:`estimate_tokens` of a call's prompt and system message."""
    return estimate_tokens((system or "") + prompt)


_CONTEXT_WORDS = (
    "context size",
    "context length",
    "context window",
    "maximum context",
    "prompt is too long",
    "too many tokens",
    "exceeds the available context",
    "n_ctx",
)


def mentions_context_overflow(text: str) -> bool:
    """Whether an error text says the prompt does not fit the model's context."""
    text = text.lower()
    return any(word in text for word in _CONTEXT_WORDS)


def status_detail(status: int | None, message: str | None, fallback: str) -> str:
    """``"401 invalid api key"``; strips the SDKs' ``Error code: 401 - `` prefix from fallbacks."""
    text = message or re.sub(r"^Error code: \d+\s*-?\s*", "", fallback or "").strip()
    if not text:
        text = "error"
    return f"{status} {text}" if status is not None else text


def cause_chain(exc: BaseException) -> str:
    """The innermost useful cause text of a connection error, e.g. ``[Errno 111] Connection refused``."""
    seen: list[str] = []
    cur: BaseException | None = exc.__cause__ or exc.__context__
    depth = 0
    while cur is not None and depth < 6:
        text = str(cur).strip()
        if text and text not in seen:
            seen.append(text)
        cur = cur.__cause__ or cur.__context__
        depth += 1
    return seen[-1] if seen else ""
