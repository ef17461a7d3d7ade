"""The LLM layer: one small interface over OpenAI(-compatible) and Anthropic chat models.

    from codeask.llm import make_llm
    llm = make_llm(settings.resolved_llm(), settings.llm)
    llm.complete("Explain foo()", system="You answer questions about code.")
    done = llm.generate("...", on_delta=print, cancel=token)   # a Completion
    done.finish_reason, done.truncated, done.cut_reason()
    llm.structured("...", MyPydanticModel)

Every call is streamed, with a connect timeout, a time to first token and an idle gap between
tokens (:mod:`codeask.llm.base`). Every failure is an :class:`LLMError` with one line naming
provider, model and base URL. Cancellation: pass ``cancel=`` a :class:`CancelToken` (the LSP's
``$/cancelRequest`` calls ``token.cancel()``), a ``threading.Event`` or a ``() -> bool``; the
request is aborted, its connection closed, and the call raises :class:`Cancelled`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeask.llm.cancel import Cancelled, CancelToken, cancel_scope
from codeask.llm.protocol import LLM, Completion, ContextLengthError, LLMError, Speed, TextStream, estimate_tokens

if TYPE_CHECKING:
    from codeask.settings import LLMSettings, ResolvedLLM

__all__ = [
    "LLM",
    "LLMError",
    "Cancelled",
    "CancelToken",
    "cancel_scope",
    "Completion",
    "Speed",
    "ContextLengthError",
    "TextStream",
    "estimate_tokens",
    "make_llm",
    "CONNECT_TIMEOUT",
    "MAX_RETRIES",
    "TEMPERATURE",
]

#: Seconds to open a connection to the LLM endpoint: twice the OpenAI SDK's own connect timeout
#: (``openai._constants.DEFAULT_TIMEOUT``, 5 s), the value ``llm.connect_timeout`` had before it
#: stopped being a setting; a refused or unreachable endpoint is retried (:data:`MAX_RETRIES`).
CONNECT_TIMEOUT = 10.0

#: Retries of a call, with backoff, only before the first byte of a reply (a refused connection, a
#: connect timeout, HTTP 408/409/429/5xx; never once a prompt was accepted, so a retry costs no
#: tokens): one more than the providers' SDKs' own default (``openai._constants.DEFAULT_MAX_RETRIES``
#: and anthropic's, 2), the value ``llm.max_retries`` had before it stopped being a setting. Calls that
#: must fail fast (hover, ``codeask doctor``) pass ``max_retries=0`` to :func:`make_llm`.
MAX_RETRIES = 3

#: Sampling temperature of every call: 0, the model's most likely tokens, so the same question over
#: the same code gets the same answer (what ``codeask eval`` and the benchmarks compare); an endpoint
#: that refuses a temperature gets none (the adapters retry without it). Was ``llm.temperature``.
TEMPERATURE = 0.0


def make_llm(resolved: ResolvedLLM, settings: LLMSettings, *, max_retries: int = MAX_RETRIES) -> LLM:
    """The adapter for ``resolved.provider`` (``openai`` or ``anthropic``), configured with
    ``max_retries`` (before the first byte only), ``settings.timeout`` (idle gap, seconds),
    :data:`CONNECT_TIMEOUT`, ``settings.first_token_timeout``, ``settings.max_tokens`` and
    :data:`TEMPERATURE`.

    Raises:
        LLMError: no LLM configured, an unknown provider, or no key and no base URL.
    """
    if resolved is None:
        raise LLMError("no LLM configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY, or llm.base_url")
    common = dict(
        api_key=resolved.api_key or None,
        base_url=resolved.base_url or None,
        timeout=settings.timeout,
        connect_timeout=CONNECT_TIMEOUT,
        first_token_timeout=settings.first_token_timeout,
        context_tokens=settings.context_tokens,
        max_retries=max_retries,
        max_tokens=settings.max_tokens,
        temperature=TEMPERATURE,
    )
    from codeask.imports import load  # first imports of the SDKs under the one import lock

    if resolved.provider == "openai":
        return load("codeask.llm.openai_llm").OpenAILLM(resolved.model, **common)
    if resolved.provider == "anthropic":
        return load("codeask.llm.anthropic_llm").AnthropicLLM(resolved.model, **common)
    raise LLMError(
        f"unknown LLM provider {resolved.provider!r} for model {resolved.model!r}; expected 'openai' or 'anthropic'",
        provider=resolved.provider,
        model=resolved.model,
    )
