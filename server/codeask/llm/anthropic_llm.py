"""Anthropic's messages API through the official sync ``anthropic`` client; every call is streamed and
retried by :class:`~codeask.llm.base.BaseLLM` (only before the first byte)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic

from codeask.llm.base import BaseLLM
from codeask.llm.cancel import CancelLike
from codeask.llm.protocol import ContextLengthError, Event, LLMError, M
from codeask.llm.shared import before_connect, cause_chain, mentions_context_overflow, schema_name, status_detail
from codeask.llm.watchdog import http_client, httpx_module

__all__ = ["AnthropicLLM", "DEFAULT_ANTHROPIC_BASE_URL"]

DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
_NO_KEY_PLACEHOLDER = "codeask-no-key"


class AnthropicLLM(BaseLLM):
    """An :class:`~codeask.llm.LLM` over ``/v1/messages``, always streamed (see :mod:`codeask.llm.base`)."""

    provider = "anthropic"
    key_hint = "ANTHROPIC_API_KEY"
    DEFAULT_HOSTED_CONTEXT = 200000  # every current Claude model

    def _connect(self) -> None:
        """Build the SDK client (called by :class:`~codeask.llm.base.BaseLLM` once the settings are stored)."""
        # An explicit key and base URL: the SDK then reads no environment variable or profile.
        self._httpx = httpx_module(anthropic.DefaultHttpxClient)
        self.client = anthropic.Anthropic(
            api_key=self._api_key or _NO_KEY_PLACEHOLDER,
            base_url=self.base_url or DEFAULT_ANTHROPIC_BASE_URL,
            max_retries=0,  # codeask retries itself, and only before the first byte
            http_client=http_client(anthropic.DefaultHttpxClient),
        )

    # --- public API ---------------------------------------------------------------------------

    def structured(self, prompt: str, schema: type[M], *, system: str | None = None, cancel: CancelLike = None) -> M:
        """An instance of ``schema`` from one forced tool call (tool named by :func:`schema_name`,
        described by the schema's docstring, input schema from pydantic), streamed; a text-only reply
        is parsed as JSON.

        Raises:
            LLMError: the request failed, the reply was cut off at ``max_tokens``, is empty, or does not
                validate against ``schema``.
            Cancelled: ``cancel`` said so.
        """
        name = schema_name(schema)
        tool = {
            "name": name,
            "description": (schema.__doc__ or f"Record the {schema.__name__}.").strip()[:1000],
            "input_schema": schema.model_json_schema(),
        }
        extra = {"tools": [tool], "tool_choice": {"type": "tool", "name": name}}
        text = self._structured_text(prompt, schema, system, cancel, extra)
        return self._validate(schema, text, raw=text)

    # --- adapter hooks ------------------------------------------------------------------------

    def _open(self, prompt: str, system: str | None, max_tokens: int | None, timeout: Any, **extra: Any) -> Any:
        for _ in range(2):
            kwargs: dict[str, Any] = dict(extra)
            if system:
                kwargs["system"] = system
            if self._send_temperature:
                # anthropic 2.x dropped sampling parameters from its signature; the API may still
                # take them (older models, proxies). A 400 naming it switches it off for good.
                kwargs["extra_body"] = {"temperature": self.temperature}
            try:
                return self.client.messages.create(
                    model=self.model,
                    max_tokens=max_tokens or self.max_tokens,
                    messages=[{"role": "user", "content": prompt}],
                    stream=True,
                    timeout=timeout,
                    **kwargs,
                )
            except anthropic.BadRequestError as exc:
                text = f"{exc.message} {getattr(exc, 'api_message', '') or ''}"
                if self._send_temperature and "temperature" in text:
                    self._send_temperature = False  # models that only take the default
                    continue
                raise
        raise self._error("the server refused every parameter combination")  # pragma: no cover

    def _events(self, stream: Any) -> Iterator[Event]:
        """Text deltas and tool-input JSON deltas as text; ``message_delta``'s stop reason mapped to
        OpenAI's words (``end_turn``/``stop_sequence`` -> ``stop``, ``max_tokens`` -> ``length``,
        ``tool_use`` -> ``tool_calls``, ``refusal`` -> ``content_filter``)."""
        for event in stream:
            kind = getattr(event, "type", None)
            if kind == "message_start":
                usage = getattr(getattr(event, "message", None), "usage", None)
                yield Event(None, None, getattr(usage, "input_tokens", None))
            elif kind == "content_block_delta":
                delta = event.delta
                dtype = getattr(delta, "type", None)
                if dtype == "text_delta":
                    yield Event(delta.text or None)
                elif dtype == "input_json_delta":
                    yield Event(delta.partial_json or None)
                else:
                    yield Event(None)
            elif kind == "message_delta":
                reason = getattr(event.delta, "stop_reason", None)
                yield Event(None, _STOP_REASONS.get(reason, reason) if reason else None)
            else:
                yield Event(None)

    def _retryable(self, exc: BaseException) -> bool:
        if isinstance(exc, anthropic.APIStatusError):
            return exc.status_code in (408, 409, 429) or exc.status_code >= 500
        if isinstance(exc, (anthropic.APITimeoutError, anthropic.APIConnectionError)):
            return before_connect(exc)
        return False

    def _convert(self, exc: BaseException) -> LLMError:
        if isinstance(exc, LLMError):
            return exc
        if isinstance(exc, anthropic.APITimeoutError):
            if before_connect(exc):
                return self._error(f"cannot connect: timed out after {self.connect_timeout:g}s")
            return self._error(f"timed out reading the reply (llm.timeout {self.timeout:g}s)")
        if isinstance(exc, anthropic.APIConnectionError):
            cause = cause_chain(exc)
            if before_connect(exc):
                return self._error(f"cannot connect ({cause})" if cause else "cannot connect")
            return self._error(f"the connection broke ({cause})" if cause else "the connection broke")
        if isinstance(exc, anthropic.APIStatusError):
            message = getattr(exc, "api_message", None) or _body_message(exc.body)
            detail = status_detail(exc.status_code, message, exc.message)
            cls = (
                ContextLengthError if exc.status_code in (400, 413) and mentions_context_overflow(detail) else LLMError
            )
            return self._error(detail, exc.status_code, cls)
        if isinstance(exc, anthropic.APIError):
            return self._error(getattr(exc, "message", None) or str(exc))
        return self._error(f"{type(exc).__name__}: {exc}")


_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def _body_message(body: object) -> str | None:
    if isinstance(body, str):
        return body.strip() or None
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(error, str):
            return error
    return None
