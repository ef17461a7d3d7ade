"""OpenAI chat completions, and every OpenAI-compatible server (Ollama, vLLM, LM Studio, proxies)
through ``base_url``. Uses the official sync ``openai`` client with its own retries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pydantic

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

__all__ = ["OpenAILLM", "DEFAULT_OPENAI_BASE_URL", "NO_KEY_PLACEHOLDER"]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
#: Sent as the key to local servers that need none (the SDK refuses an empty key).
NO_KEY_PLACEHOLDER = "codeask-no-key"


def strict_json_schema(schema: type[pydantic.BaseModel]) -> dict[str, Any]:
    """The model's JSON schema in the form OpenAI strict mode accepts (every object closed,
    every property required)."""
    try:
        from openai.lib._pydantic import to_strict_json_schema

        return to_strict_json_schema(schema)
    except Exception:  # pragma: no cover - private helper moved; do it ourselves
        return _close_objects(schema.model_json_schema())


def _close_objects(node: Any) -> Any:
    if isinstance(node, dict):
        node = {k: _close_objects(v) for k, v in node.items()}
        if node.get("type") == "object" and "properties" in node:
            node["additionalProperties"] = False
            node["required"] = list(node["properties"])
        return node
    if isinstance(node, list):
        return [_close_objects(v) for v in node]
    return node


class OpenAILLM(BaseLLM):
    """An :class:`~codeask.llm.LLM` over ``/chat/completions``."""

    provider = "openai"
    key_hint = "OPENAI_API_KEY"

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
        # Parameters some models/servers refuse; learnt from 400 replies and then left out.
        self._token_param = "max_tokens"
        self._send_response_format = True
        self.client = openai.OpenAI(
            api_key=api_key or NO_KEY_PLACEHOLDER,
            base_url=base_url or DEFAULT_OPENAI_BASE_URL,
            timeout=timeout,
            max_retries=max_retries,
        )

    # --- public API ---------------------------------------------------------------------------

    def complete(self, prompt: str, *, system: str | None = None, max_tokens: int | None = None) -> str:
        """The first choice's text (``""`` when it has none); ``max_tokens`` defaults to the adapter's.

        Raises:
            LLMError: the request failed, the reply has no choices, or the model refused.
        """
        response = self._create(_messages(prompt, system), max_tokens)
        if not response.choices:
            raise self._error("reply has no choices")
        message = response.choices[0].message
        if getattr(message, "refusal", None):
            raise self._error(f"refused: {message.refusal}")
        return message.content or ""

    def stream(
        self, prompt: str, *, system: str | None = None, max_tokens: int | None = None
    ) -> Iterator[str]:
        """The answer as text deltas of the streamed chunks, in order.

        Raises:
            LLMError: the request or the stream failed (SDK or transport error).
        """
        stream = self._create(_messages(prompt, system), max_tokens, stream=True)
        try:
            with stream, closing_on_cancel(stream.response, self._error):
                for chunk in stream:
                    for choice in chunk.choices or ():
                        text = getattr(choice.delta, "content", None) if choice.delta else None
                        if text:
                            yield text
        except LLMError:
            raise
        except Exception as exc:  # SDK errors, and transport errors mid-stream
            raise self._convert(exc) from exc

    def structured(
        self, prompt: str, schema: type[M], *, system: str | None = None
    ) -> M:
        """An instance of ``schema``: asked with a strict ``json_schema`` response format, or, once a server
        rejects that (remembered per adapter), with the JSON schema in the system prompt.

        Raises:
            LLMError: the request failed, no choices, a refusal, an empty reply, or a reply that does not
                validate against ``schema``.
        """
        name = schema_name(schema)
        messages = _messages(prompt, system)
        response = None
        if self._send_response_format:
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": strict_json_schema(schema), "strict": True},
            }
            try:
                response = self._create(messages, None, response_format=response_format, convert=False)
            except openai.BadRequestError as exc:
                if not _mentions(exc, "response_format", "json_schema"):
                    raise self._convert(exc) from exc
                self._send_response_format = False  # an older server: ask in words instead
            except openai.OpenAIError as exc:
                raise self._convert(exc) from exc
        if response is None:
            instruction = (
                "Reply with only one JSON object, no prose, matching this JSON schema:\n"
                + json.dumps(schema.model_json_schema())
            )
            system_text = f"{system}\n\n{instruction}" if system else instruction
            response = self._create(_messages(prompt, system_text), None)
        if not response.choices:
            raise self._error("reply has no choices")
        message = response.choices[0].message
        if getattr(message, "refusal", None):
            raise self._error(f"refused: {message.refusal}")
        content = message.content or ""
        if not content.strip():
            raise self._error(f"empty reply where a {schema.__name__} JSON object was expected")
        return self._validate(schema, content, raw=content)

    # --- internals ----------------------------------------------------------------------------

    def _create(
        self,
        messages: list[dict[str, str]],
        max_tokens: int | None,
        *,
        stream: bool = False,
        convert: bool = True,
        **extra: Any,
    ) -> Any:
        """``chat.completions.create``; drops/renames parameters the model refuses (``max_tokens``
        vs ``max_completion_tokens``, a non-default ``temperature``) and retries once each."""
        raise_if_cancelled(self._error)
        for _ in range(3):
            kwargs: dict[str, Any] = dict(extra)
            kwargs[self._token_param] = max_tokens or self.max_tokens
            if self._send_temperature:
                kwargs["temperature"] = self.temperature
            try:
                return self.client.chat.completions.create(
                    model=self.model, messages=messages, stream=stream, **kwargs
                )
            except openai.BadRequestError as exc:
                if self._token_param == "max_tokens" and _mentions(exc, "max_completion_tokens"):
                    self._token_param = "max_completion_tokens"
                    continue
                if self._send_temperature and _mentions(exc, "temperature") and _param_is(exc, "temperature"):
                    self._send_temperature = False
                    continue
                if not convert:
                    raise
                raise self._convert(exc) from exc
            except openai.OpenAIError as exc:
                if not convert:
                    raise
                raise self._convert(exc) from exc
        raise self._error("the server refused every parameter combination")  # pragma: no cover

    def _convert(self, exc: BaseException) -> LLMError:
        if isinstance(exc, LLMError):
            return exc
        if isinstance(exc, openai.APITimeoutError):
            return self._error(
                f"timed out after {self.timeout:g}s ({self.max_retries} retries)"
            )
        if isinstance(exc, openai.APIConnectionError):
            cause = cause_chain(exc)
            detail = f"cannot connect ({cause})" if cause else "cannot connect"
            return self._error(f"{detail} after {self.max_retries} retries")
        if isinstance(exc, openai.APIStatusError):
            return self._error(
                status_detail(exc.status_code, _provider_message(exc.body), exc.message), exc.status_code
            )
        if isinstance(exc, openai.APIError):
            return self._error(getattr(exc, "message", None) or str(exc))
        return self._error(f"{type(exc).__name__}: {exc}")


def _messages(prompt: str, system: str | None) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": prompt})
    return messages


def _provider_message(body: object) -> str | None:
    """``error.message`` from an OpenAI-shaped body (the SDK already unwraps ``error``),
    or Ollama/vLLM variants (``{"error": "..."}``, ``{"detail": ...}``, ``{"message": ...}``)."""
    if isinstance(body, str):
        return body.strip() or None
    if isinstance(body, dict):
        for key in ("message", "error", "detail"):
            value = body.get(key)
            if isinstance(value, str) and value.strip():
                return value
            if isinstance(value, dict):
                found = _provider_message(value)
                if found:
                    return found
            if isinstance(value, list) and value:
                return json.dumps(value)[:300]
    return None


def _mentions(exc: openai.APIStatusError, *words: str) -> bool:
    text = f"{exc.message} {_provider_message(exc.body) or ''} {getattr(exc, 'param', '') or ''}"
    return any(word in text for word in words)


def _param_is(exc: openai.APIStatusError, name: str) -> bool:
    param = getattr(exc, "param", None)
    if param:
        return param == name
    text = (_provider_message(exc.body) or exc.message).lower()
    return "unsupported" in text or "not support" in text
