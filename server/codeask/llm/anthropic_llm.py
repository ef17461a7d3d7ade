"""Anthropic's messages API through the official sync ``anthropic`` client and its own retries."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic

from codeask.llm.base import (
    BaseLLM,
    LLMError,
    M,
    cause_chain,
    closing_on_cancel,
    raise_if_cancelled,
    schema_name,
    status_detail,
)

__all__ = ["AnthropicLLM", "DEFAULT_ANTHROPIC_BASE_URL"]

DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
_NO_KEY_PLACEHOLDER = "codeask-no-key"


class AnthropicLLM(BaseLLM):
    """An :class:`~codeask.llm.LLM` over ``/v1/messages``."""

    provider = "anthropic"
    key_hint = "ANTHROPIC_API_KEY"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        max_tokens: int = 1024,
        temperature: float | None = 0.0,
    ) -> None:
        super().__init__(
            model, api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries,
            max_tokens=max_tokens, temperature=temperature,
        )
        # An explicit key and base URL: the SDK then reads no environment variable or profile.
        self.client = anthropic.Anthropic(
            api_key=api_key or _NO_KEY_PLACEHOLDER,
            base_url=base_url or DEFAULT_ANTHROPIC_BASE_URL,
            timeout=timeout,
            max_retries=max_retries,
        )

    # --- public API ---------------------------------------------------------------------------

    def complete(self, prompt: str, *, system: str | None = None, max_tokens: int | None = None) -> str:
        """The whole answer text (the reply's text blocks joined); ``max_tokens`` defaults to the adapter's.

        Raises:
            LLMError: the request failed (SDK, HTTP or transport error).
        """
        message = self._create(prompt, system, max_tokens)
        return "".join(
            block.text for block in message.content if getattr(block, "type", None) == "text"
        )

    def stream(
        self, prompt: str, *, system: str | None = None, max_tokens: int | None = None
    ) -> Iterator[str]:
        """The answer as text deltas (``content_block_delta`` events), in order.

        Raises:
            LLMError: the request or the stream failed (SDK, SSE ``error`` event or transport error).
        """
        stream = self._create(prompt, system, max_tokens, stream=True)
        try:
            with stream, closing_on_cancel(stream.response, self._error):
                for event in stream:
                    if getattr(event, "type", None) != "content_block_delta":
                        continue
                    delta = event.delta
                    if getattr(delta, "type", None) == "text_delta" and delta.text:
                        yield delta.text
        except LLMError:
            raise
        except Exception as exc:  # SDK errors (incl. SSE "error" events), transport errors
            raise self._convert(exc) from exc

    def structured(self, prompt: str, schema: type[M], *, system: str | None = None) -> M:
        """An instance of ``schema`` from one forced tool call (tool named by :func:`schema_name`,
        described by the schema's docstring, input schema from pydantic); a text-only reply is parsed as JSON.

        Raises:
            LLMError: the request failed, the reply was cut off at ``max_tokens``, has neither a tool call
                nor text, or does not validate against ``schema``.
        """
        name = schema_name(schema)
        tool = {
            "name": name,
            "description": (schema.__doc__ or f"Record the {schema.__name__}.").strip()[:1000],
            "input_schema": schema.model_json_schema(),
        }
        message = self._create(
            prompt, system, None, tools=[tool], tool_choice={"type": "tool", "name": name}
        )
        for block in message.content:
            if getattr(block, "type", None) == "tool_use" and block.name == name:
                if message.stop_reason == "max_tokens":
                    raise self._error(
                        f"reply for {schema.__name__} was cut off at max_tokens={self.max_tokens}"
                    )
                return self._validate(schema, block.input)
        text = "".join(b.text for b in message.content if getattr(b, "type", None) == "text")
        if not text.strip():
            raise self._error(f"reply has no {name} tool call")
        return self._validate(schema, text, raw=text)

    # --- internals ----------------------------------------------------------------------------

    def _create(
        self,
        prompt: str,
        system: str | None,
        max_tokens: int | None,
        *,
        stream: bool = False,
        **extra: Any,
    ) -> Any:
        raise_if_cancelled(self._error)
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
                    stream=stream,
                    **kwargs,
                )
            except anthropic.BadRequestError as exc:
                text = f"{exc.message} {getattr(exc, 'api_message', '') or ''}"
                if self._send_temperature and "temperature" in text:
                    self._send_temperature = False  # models that only take the default
                    continue
                raise self._convert(exc) from exc
            except Exception as exc:
                raise self._convert(exc) from exc
        raise self._error("the server refused every parameter combination")  # pragma: no cover

    def _convert(self, exc: BaseException) -> LLMError:
        if isinstance(exc, LLMError):
            return exc
        if isinstance(exc, anthropic.APITimeoutError):
            return self._error(f"timed out after {self.timeout:g}s ({self.max_retries} retries)")
        if isinstance(exc, anthropic.APIConnectionError):
            cause = cause_chain(exc)
            detail = f"cannot connect ({cause})" if cause else "cannot connect"
            return self._error(f"{detail} after {self.max_retries} retries")
        if isinstance(exc, anthropic.APIStatusError):
            message = getattr(exc, "api_message", None) or _body_message(exc.body)
            return self._error(status_detail(exc.status_code, message, exc.message), exc.status_code)
        if isinstance(exc, anthropic.APIError):
            return self._error(getattr(exc, "message", None) or str(exc))
        return self._error(f"{type(exc).__name__}: {exc}")


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
