"""The streamed call every adapter shares (:class:`BaseLLM`); the interface is in :mod:`codeask.llm.protocol`.

Every call is streamed (:meth:`BaseLLM.generate`), whatever the caller wants: the whole text, the
deltas as they come, or a structured object. That is what makes timeouts mean something with a
slow local model: instead of one read timeout covering prompt evaluation plus the whole answer,
a call has

* an optional deadline for the whole call (``deadline=``: the answer's ``llm.answer_seconds``);
* a connect timeout (:data:`codeask.llm.CONNECT_TIMEOUT`);
* a time to first token (``llm.first_token_timeout``, by default scaled to the prompt's size and
  more generous for a local endpoint, see :func:`first_token_seconds`);
* an idle gap between two stream events (``llm.timeout``).

Retries (:data:`codeask.llm.MAX_RETRIES`) happen only before the first byte of a reply: a refused
connection, a connect timeout, HTTP 408/409/429/5xx. A request that timed out waiting for its
first token is not sent again (the server is still working on it); it is aborted, which closes
its connection so the server stops computing it.

Cancellation: pass ``cancel=`` a :class:`CancelToken` (or a ``threading.Event``, or a callable
returning ``True`` once cancelled) to :meth:`BaseLLM.generate`, ``complete``, ``stream`` or
``structured``. A watchdog thread checks it (every 50 ms, or at once for a :class:`CancelToken`),
shuts the request's socket down, and the call raises :class:`Cancelled`.

How a call ended is recorded on the :class:`Completion` (``finish_reason``, ``error``, ``speed``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pydantic

from codeask.llm.cancel import Cancelled, CancelLike, is_cancelled, scoped_token
from codeask.llm.protocol import (
    Completion,
    Event,
    LLMError,
    M,
    PassThrough,
    Speed,
    TextStream,
    estimate_tokens,
    first_token_seconds,
    is_local_url,
)
from codeask.llm.repetition import RepetitionWatch
from codeask.llm.shared import guard_tokens, one_line, redact, retry_delay, validate_reply
from codeask.llm.speed import measure
from codeask.llm.watchdog import Aborted, Guard, current_call
from codeask.settings import safe_url

__all__ = ["BaseLLM"]


class BaseLLM:
    """Shared state, the streamed call (:meth:`generate`) and error formatting for the adapters.

    An adapter implements ``_connect()`` (build its SDK client from the stored settings; the
    constructor's signature is this class's), ``_open(messages, system, max_tokens, timeout, **extra)`` (start one
    streamed request with the SDK, raising the SDK's own exceptions), ``_events(stream)``
    (yield an :class:`~codeask.llm.protocol.Event` per stream event),
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
        self._speed: Speed | None = None
        self._connect()

    def _connect(self) -> None:
        """Build the provider's SDK client from the stored settings (each adapter: its own)."""

    def speed(self) -> Speed | None:
        """The endpoint's speed measured on this adapter's calls so far (the latest, each rate from
        the last call that could tell it), or ``None`` before any."""
        return self._speed

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
        deadline: float | None = None,
    ) -> Completion:
        """One streamed call: every text delta goes to ``on_delta`` as it arrives; returns the
        :class:`Completion` (text, finish reason, token count, the endpoint's measured speed).

        A stream that breaks after some text does not raise: the completion has ``finish_reason
        "error"`` and ``error`` says what happened ("connected, then the stream broke after N tokens").
        A reply that repeats itself (:mod:`codeask.llm.repetition`) is stopped (``repetition``); one
        still running after ``deadline`` seconds is stopped too (``deadline``, with ``error`` saying so).

        Raises:
            LLMError: the call failed before any text (``ContextLengthError`` for a prompt over the
                model's context; no first token within ``deadline`` seconds).
            Cancelled: ``cancel`` said so; the request was aborted and its connection closed.
        """
        return _drain(self._run(prompt, system, max_tokens, cancel, {}, deadline), on_delta)

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
        deadline: float | None = None,
    ) -> Generator[str, None, Completion]:
        prompt_tokens = estimate_tokens((system or "") + prompt)
        first_token = self.first_token_deadline(prompt_tokens)
        if deadline is not None:
            first_token = min(first_token, deadline)
        completion = Completion("", prompt_tokens=prompt_tokens)
        scoped = scoped_token()
        if scoped is not None and scoped is not cancel:
            outer = cancel
            cancel = scoped if outer is None else (lambda: scoped.cancelled or is_cancelled(outer))
        if is_cancelled(cancel) or (scoped is not None and scoped.cancelled):
            raise Cancelled("cancelled before the LLM call")
        with Guard(cancel, first_token, self.timeout, scoped, deadline=deadline) as guard:
            stream = self._open_with_retries(guard, prompt, system, max_tokens, first_token, extra)
            try:
                timings = yield from self._read(stream, guard, completion, watch=not extra)
            except Exception as exc:
                if guard.reason == "cancelled":
                    raise Cancelled("cancelled while the LLM was answering") from exc
                detail = guard.detail(prompt_tokens) or self._convert(exc).message.split(": ", 1)[-1]
                if not completion.tokens:
                    raise self._error(detail) from exc
                completion.finish_reason = "deadline" if guard.reason == "deadline" else "error"
                completion.error = (
                    detail
                    if guard.reason == "deadline"
                    else (f"connected, then the stream broke after {completion.tokens} tokens: {detail}")
                )
                timings = None
            finally:
                try:
                    stream.close()
                except Exception:
                    pass
        if guard.reason == "cancelled":
            raise Cancelled("cancelled while the LLM was answering")
        if completion.finish_reason is None:
            completion.finish_reason = "incomplete"
        completion.seconds = time.monotonic() - guard.start
        completion.speed = measure(completion, timings)
        if completion.speed is not None:
            self._speed = completion.speed.merged(self._speed)
        return completion

    def _read(
        self, stream: Any, guard: Guard, completion: Completion, *, watch: bool
    ) -> Generator[str, None, dict[str, Any] | None]:
        """Read the stream's events into ``completion`` (text, token count, finish reason), yielding
        each delta; stops early on a reply that repeats itself (when ``watch``). Returns llama.cpp's
        ``timings`` when the server sent them.

        Raises:
            Aborted: the watchdog shut the stream (see ``guard.reason``); the SDK's errors as they come.
        """
        repetition = RepetitionWatch() if watch else None
        timings = None
        parts: list[str] = []
        try:
            for event in self._events(stream):
                guard.tick()
                completion.prompt_tokens = event.prompt_tokens or completion.prompt_tokens
                completion.finish_reason = event.finish or completion.finish_reason
                timings = event.timings or timings
                if not event.text:
                    continue
                if not completion.tokens:
                    completion.first_token_seconds = time.monotonic() - guard.start
                completion.tokens += 1
                parts.append(event.text)
                yield event.text
                if repetition is not None and repetition.feed(event.text):
                    completion.finish_reason = "repetition"
                    return None
        finally:
            completion.text = "".join(parts)
        if guard.reason is not None:  # the watchdog shut the socket: the SDK saw a clean end
            raise Aborted(guard.reason)
        return timings

    def _open_with_retries(
        self,
        guard: Guard,
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
            current_call.guard = guard
            try:
                stream = self._open(prompt, system, max_tokens, timeout, **extra)
                guard.add_stream(stream)
                return stream
            except Exception as exc:
                if guard.reason == "cancelled":
                    raise Cancelled("cancelled before the LLM answered") from exc
                detail = guard.detail(guard_tokens(prompt, system))
                if detail:
                    raise self._error(detail) from exc
                if isinstance(exc, (LLMError, PassThrough)):
                    raise
                if attempt >= self.max_retries or not self._retryable(exc):
                    error = self._convert(exc)
                    if attempt and error.status is None:
                        error = self._error(f"{error.message.split(': ', 1)[-1]} (after {attempt} retries)")
                    raise error from exc
                guard.wait(retry_delay(exc, attempt))
                attempt += 1
            finally:
                current_call.guard = None

    # --- adapter hooks ------------------------------------------------------------------------

    def _open(self, prompt: str, system: str | None, max_tokens: int | None, timeout: Any, **extra: Any) -> Any:
        raise NotImplementedError

    def _events(self, stream: Any) -> Iterator[Event]:
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
        completion = _drain(self._run(prompt, system, None, cancel, extra), None)
        if completion.truncated:
            raise self._error(
                f"reply for {schema.__name__} was cut off ({completion.cut_reason()}; max_tokens={self.max_tokens})"
            )
        if not completion.text.strip():
            raise self._error(f"empty reply where a {schema.__name__} JSON object was expected")
        return completion.text

    def _validate(self, schema: type[M], data: Any, raw: str | None = None) -> M:
        """``data`` (JSON text or an object) as an instance of ``schema``.

        Raises:
            LLMError: it does not validate (the message names the fields and shows the reply).
        """
        return validate_reply(schema, data, raw, self._error)


def _drain(run: Generator[str, None, Completion], on_delta: Callable[[str], None] | None) -> Completion:
    """Run ``run`` to its end, each delta to ``on_delta``; its :class:`Completion`."""
    while True:
        try:
            delta = next(run)
        except StopIteration as stop:
            return stop.value
        if on_delta is not None:
            on_delta(delta)
