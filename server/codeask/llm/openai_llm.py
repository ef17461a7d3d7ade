"""OpenAI chat completions, and every OpenAI-compatible server (llama.cpp, Ollama, vLLM, LM Studio,
proxies) through ``base_url``. Uses the official sync ``openai`` client; every call is streamed and
retried by :class:`~codeask.llm.base.BaseLLM` (only before the first byte)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import openai
import pydantic
from openai.types.chat import ChatCompletionMessageParam

from codeask.llm.base import BaseLLM
from codeask.llm.cancel import CancelLike
from codeask.llm.protocol import ContextLengthError, Event, LLMError, M, PassThrough, estimate_tokens, is_local_url
from codeask.llm.shared import before_connect, cause_chain, mentions_context_overflow, schema_name, status_detail
from codeask.llm.watchdog import http_client, httpx_module

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
    """An :class:`~codeask.llm.LLM` over ``/chat/completions``, always streamed (see :mod:`codeask.llm.base`)."""

    provider = "openai"
    key_hint = "OPENAI_API_KEY"

    def _connect(self) -> None:
        """Build the SDK client (called by :class:`~codeask.llm.base.BaseLLM` once the settings are stored)."""
        self._tokenize_url: str | None = None  # llama.cpp's /tokenize, once /props answered
        # Parameters some models/servers refuse; learnt from 400 replies and then left out.
        self._token_param = "max_tokens"
        self._send_response_format = True
        self._send_stream_options = True
        self._httpx = httpx_module(openai.DefaultHttpxClient)
        self.client = openai.OpenAI(
            api_key=self._api_key or NO_KEY_PLACEHOLDER,
            base_url=self.base_url or DEFAULT_OPENAI_BASE_URL,
            max_retries=0,  # codeask retries itself, and only before the first byte
            http_client=http_client(openai.DefaultHttpxClient),
        )

    # --- public API ---------------------------------------------------------------------------

    def structured(self, prompt: str, schema: type[M], *, system: str | None = None, cancel: CancelLike = None) -> M:
        """An instance of ``schema``: asked with a strict ``json_schema`` response format, or, once a server
        rejects that (remembered per adapter), with the JSON schema in the system prompt.

        Raises:
            LLMError: the request failed, the reply was cut off (``max_tokens``) or empty, or it does not
                validate against ``schema``.
            Cancelled: ``cancel`` said so.
        """
        name = schema_name(schema)
        if self._send_response_format:
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": strict_json_schema(schema), "strict": True},
            }
            try:
                text = self._structured_text(prompt, schema, system, cancel, {"response_format": response_format})
                return self._validate(schema, text, raw=text)
            except _RefusedParameter:
                self._send_response_format = False  # an older server: ask in words instead
        instruction = "Reply with only one JSON object, no prose, matching this JSON schema:\n" + json.dumps(
            schema.model_json_schema()
        )
        system_text = f"{system}\n\n{instruction}" if system else instruction
        text = self._structured_text(prompt, schema, system_text, cancel, {})
        return self._validate(schema, text, raw=text)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` by llama.cpp's ``/tokenize`` (when the endpoint is llama.cpp), else
        :func:`~codeask.llm.base.estimate_tokens`."""
        self.context_tokens()  # discovery finds out whether /tokenize exists
        if self._tokenize_url:
            try:
                with self._httpx.Client(timeout=self.connect_timeout + 20) as http:
                    reply = http.post(self._tokenize_url, json={"content": text})
                if reply.status_code == 200:
                    return len(reply.json().get("tokens") or [])
            except Exception:
                pass
        return estimate_tokens(text)

    def _discover_context(self) -> int | None:
        """The context of a local OpenAI-compatible server: llama.cpp ``GET /props``
        (``default_generation_settings.n_ctx``), vLLM ``GET /v1/models`` (``max_model_len``), Ollama
        ``POST /api/show`` (``num_ctx`` in ``parameters``). Hosted endpoints are not asked."""
        if not self.base_url or not is_local_url(self.base_url):
            return None
        root = self.base_url.rstrip("/")
        root = root[: -len("/v1")] if root.endswith("/v1") else root
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        with self._httpx.Client(timeout=self.connect_timeout, headers=headers) as http:
            try:
                reply = http.get(root + "/props")
                if reply.status_code == 200:
                    props = reply.json()
                    n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx") or props.get("n_ctx")
                    if n_ctx:
                        self._tokenize_url = root + "/tokenize"
                        return int(n_ctx)
            except Exception:
                pass
            try:
                reply = http.get(self.base_url.rstrip("/") + "/models")
                if reply.status_code == 200:
                    for model in reply.json().get("data") or []:
                        if model.get("max_model_len"):
                            return int(model["max_model_len"])
            except Exception:
                pass
            try:
                reply = http.post(root + "/api/show", json={"model": self.model})
                if reply.status_code == 200:
                    match = re.search(r"num_ctx\s+(\d+)", reply.json().get("parameters") or "")
                    return int(match.group(1)) if match else 2048  # Ollama's default num_ctx
            except Exception:
                pass
        return None

    # --- adapter hooks ------------------------------------------------------------------------

    def _open(self, prompt: str, system: str | None, max_tokens: int | None, timeout: Any, **extra: Any) -> Any:
        """``chat.completions.create(stream=True)``; drops/renames parameters the model refuses
        (``max_tokens`` vs ``max_completion_tokens``, a non-default ``temperature``,
        ``stream_options``) and tries again at once."""
        messages = _messages(prompt, system)
        for _ in range(4):
            kwargs: dict[str, Any] = dict(extra)
            kwargs[self._token_param] = max_tokens or self.max_tokens
            if self._send_temperature:
                kwargs["temperature"] = self.temperature
            if self._send_stream_options:
                kwargs["stream_options"] = {"include_usage": True}
            try:
                return self.client.chat.completions.create(
                    model=self.model, messages=messages, stream=True, timeout=timeout, **kwargs
                )
            except openai.BadRequestError as exc:
                if self._token_param == "max_tokens" and _mentions(exc, "max_completion_tokens"):
                    self._token_param = "max_completion_tokens"
                    continue
                if self._send_temperature and _mentions(exc, "temperature") and _param_is(exc, "temperature"):
                    self._send_temperature = False
                    continue
                if self._send_stream_options and _mentions(exc, "stream_options"):
                    self._send_stream_options = False
                    continue
                if "response_format" in extra and _mentions(exc, "response_format", "json_schema"):
                    raise _RefusedParameter(str(exc)) from exc
                raise
        raise self._error("the server refused every parameter combination")  # pragma: no cover

    def _events(self, stream: Any) -> Iterator[Event]:
        """One :class:`~codeask.llm.base.Event` per choice of each chunk; llama.cpp's ``timings``
        (an extra field of its last chunk) go with it."""
        for chunk in stream:
            usage = getattr(chunk, "usage", None)
            prompt_tokens = getattr(usage, "prompt_tokens", None) if usage else None
            timings = getattr(chunk, "timings", None)
            timings = timings if isinstance(timings, dict) else None
            if not chunk.choices:
                yield Event(None, None, prompt_tokens, timings)
                continue
            for choice in chunk.choices:
                delta = choice.delta
                if delta is not None and getattr(delta, "refusal", None):
                    raise self._error(f"refused: {delta.refusal}")
                text = getattr(delta, "content", None) if delta is not None else None
                yield Event(text or None, choice.finish_reason, prompt_tokens, timings)

    def _retryable(self, exc: BaseException) -> bool:
        if isinstance(exc, openai.APIStatusError):
            return exc.status_code in (408, 409, 429) or exc.status_code >= 500
        if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError)):
            return before_connect(exc)
        return False

    def _convert(self, exc: BaseException) -> LLMError:
        if isinstance(exc, LLMError):
            return exc
        if isinstance(exc, openai.APITimeoutError):
            if before_connect(exc):
                return self._error(f"cannot connect: timed out after {self.connect_timeout:g}s")
            return self._error(f"timed out reading the reply (llm.timeout {self.timeout:g}s)")
        if isinstance(exc, openai.APIConnectionError):
            cause = cause_chain(exc)
            if before_connect(exc):
                return self._error(f"cannot connect ({cause})" if cause else "cannot connect")
            return self._error(f"the connection broke ({cause})" if cause else "the connection broke")
        if isinstance(exc, openai.APIStatusError):
            message = _provider_message(exc.body)
            detail = status_detail(exc.status_code, message, exc.message)
            cls = (
                ContextLengthError if exc.status_code in (400, 413) and mentions_context_overflow(detail) else LLMError
            )
            return self._error(detail, exc.status_code, cls)
        if isinstance(exc, openai.APIError):
            return self._error(getattr(exc, "message", None) or str(exc))
        return self._error(f"{type(exc).__name__}: {exc}")


class _RefusedParameter(PassThrough):
    """The server refused ``response_format``."""


def _messages(prompt: str, system: str | None) -> list[ChatCompletionMessageParam]:
    messages: list[ChatCompletionMessageParam] = [{"role": "system", "content": system}] if system else []
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
