"""The provider-neutral LLM interface, its one error type and shared helpers.

Every adapter (:mod:`codeask.llm.openai_llm`, :mod:`codeask.llm.anthropic_llm`) uses the
provider's own sync SDK client with the SDK's own retries and timeouts; this module only turns
SDK failures into :class:`LLMError` and parses JSON out of model text.
"""

from __future__ import annotations

import contextvars
import json
import re
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar, runtime_checkable

import pydantic

from codeask.settings import safe_url  # re-exported: the adapters import it from here

__all__ = [
    "LLM",
    "LLMError",
    "LLMCancelled",
    "CancelToken",
    "cancel_scope",
    "closing_on_cancel",
    "extract_json_object",
    "schema_name",
    "safe_url",
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


class LLMCancelled(LLMError):
    """The call was cancelled through its :class:`CancelToken` (the stream was closed)."""


class CancelToken:
    """Cancellation of the LLM calls made inside a :func:`cancel_scope`, from any thread.

    :meth:`cancel` closes every open streamed response of the scope at once: its socket is shut
    down (so the reading thread wakes now, not at the next token) and the HTTP response closed, so
    the server sees the connection closed. A call not yet started raises :class:`LLMCancelled`.
    A non-streamed call still waiting for its reply ends when the reply (or its timeout) comes.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._closers: dict[int, Callable[[], None]] = {}
        self._next = 0

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._event.is_set()

    def cancel(self) -> None:
        """Cancel: close the open streams (each closer once; errors ignored)."""
        with self._lock:
            self._event.set()
            closers, self._closers = list(self._closers.values()), {}
        for close in closers:
            try:
                close()
            except Exception:  # already closed, or the transport is gone
                pass

    def on_cancel(self, close: Callable[[], None]) -> Callable[[], None]:
        """Run ``close`` on :meth:`cancel` (at once when already cancelled); returns the undo."""
        with self._lock:
            if not self._event.is_set():
                key = self._next
                self._next += 1
                self._closers[key] = close
                return lambda: self._closers.pop(key, None)
        close()
        return lambda: None


_scope: contextvars.ContextVar[CancelToken | None] = contextvars.ContextVar("codeask_llm_cancel", default=None)


@contextmanager
def cancel_scope(token: CancelToken | None):
    """Make ``token`` cancel the LLM calls made in this context (this thread, or this task)."""
    reset = _scope.set(token)
    try:
        yield token
    finally:
        _scope.reset(reset)


def _shut(response: Any) -> None:
    """Wake a thread reading ``response`` (an ``httpx.Response``) and close it: shut the socket
    down (httpcore's ``network_stream`` extension, HTTP/1.1) and close the response."""
    stream = (getattr(response, "extensions", None) or {}).get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    response.close()


@contextmanager
def closing_on_cancel(response: Any, error: Callable[[str], LLMError]):
    """Within the current :func:`cancel_scope`, close ``response`` (an ``httpx.Response`` being
    streamed) when the scope is cancelled; an error raised after that becomes :class:`LLMCancelled`.
    ``error(detail)`` builds the adapter's error (its message names provider and model)."""
    token = _scope.get()
    if token is None:
        yield
        return
    undo = token.on_cancel(lambda: _shut(response))
    try:
        yield
    except LLMCancelled:
        raise
    except Exception as exc:
        if token.cancelled:
            raise _cancelled(error) from exc
        raise
    finally:
        undo()


def raise_if_cancelled(error: Callable[[str], LLMError]) -> None:
    """:class:`LLMCancelled` when the current :func:`cancel_scope` is cancelled (before a call)."""
    token = _scope.get()
    if token is not None and token.cancelled:
        raise _cancelled(error)


def _cancelled(error: Callable[[str], LLMError]) -> LLMCancelled:
    base = error("cancelled")
    return LLMCancelled(
        base.message, provider=base.provider, model=base.model, base_url=base.base_url, status=None
    )


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

    def stream(
        self, prompt: str, *, system: str | None = None, max_tokens: int | None = None
    ) -> Iterator[str]:
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


class BaseLLM:
    """Shared state and error formatting for the adapters."""

    provider: str = "llm"

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
    ) -> None:
        """Store the shared settings: ``timeout`` seconds per request, ``max_retries`` (the SDK's own
        retries with backoff), ``max_tokens`` per answer, ``temperature`` (``None``: not sent).

        Raises:
            LLMError: neither a key nor a base URL (a local server needs no key).
        """
        self.model = model
        self.base_url = base_url
        self._api_key = api_key
        if not api_key and not base_url:
            raise self._error(f"no API key (set {self.key_hint} or llm.api_key)")
        self.timeout = timeout
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

    def _error(self, detail: str, status: int | None = None) -> LLMError:
        where = f" at {safe_url(self.base_url)}" if self.base_url else ""
        head = f"{self.provider} model {self.model!r}{where}: "
        message = redact(one_line(head + detail), self._api_key)
        return LLMError(
            message,
            provider=self.provider,
            model=self.model,
            base_url=safe_url(self.base_url),
            status=status,
        )

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
                    f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
                    for err in exc.errors()[:5]
                )
            else:
                problems = str(exc)
            shown = raw if raw is not None else (data if isinstance(data, str) else json.dumps(data))
            raise self._error(
                f"reply does not match {schema.__name__}: {problems} (reply: {one_line(shown, 200)})"
            ) from exc


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
