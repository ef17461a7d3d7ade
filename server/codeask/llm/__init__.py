"""The LLM layer: one small interface over OpenAI(-compatible) and Anthropic chat models.

    from codeask.llm import make_llm
    llm = make_llm(settings.resolved_llm(), settings.llm)
    llm.complete("Explain foo()", system="You answer questions about code.")
    for delta in llm.stream("..."): ...
    llm.structured("...", MyPydanticModel)

Every failure is an :class:`LLMError` with one line naming provider, model and base URL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeask.llm.base import LLM, CancelToken, LLMCancelled, LLMError, cancel_scope

if TYPE_CHECKING:
    from codeask.settings import LLMSettings, ResolvedLLM

__all__ = ["LLM", "LLMError", "LLMCancelled", "CancelToken", "cancel_scope", "make_llm"]


def make_llm(resolved: ResolvedLLM, settings: LLMSettings) -> LLM:
    """The adapter for ``resolved.provider`` (``openai`` or ``anthropic``), configured with the
    SDK's own retries (``settings.max_retries``), per-request ``settings.timeout`` seconds,
    ``settings.max_tokens`` and ``settings.temperature``.

    Raises:
        LLMError: no LLM configured, an unknown provider, or no key and no base URL.
    """
    if resolved is None:
        raise LLMError("no LLM configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY, or llm.base_url")
    common = dict(
        api_key=resolved.api_key or None,
        base_url=resolved.base_url or None,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
    )
    if resolved.provider == "openai":
        from codeask.llm.openai_llm import OpenAILLM

        return OpenAILLM(resolved.model, **common)
    if resolved.provider == "anthropic":
        from codeask.llm.anthropic_llm import AnthropicLLM

        return AnthropicLLM(resolved.model, **common)
    raise LLMError(
        f"unknown LLM provider {resolved.provider!r} for model {resolved.model!r}; "
        "expected 'openai' or 'anthropic'",
        provider=resolved.provider,
        model=resolved.model,
    )
