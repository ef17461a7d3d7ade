"""Which LLM the settings resolve to: :class:`ResolvedLLM` from ``llm.*`` and the providers' own
environment variables (:class:`ProviderEnv`), and :func:`safe_url`, the one URL scrubber."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codeask.settings.model import LLMSettings

__all__ = ["DEFAULT_OPENAI_MODEL", "DEFAULT_ANTHROPIC_MODEL", "ProviderEnv", "ResolvedLLM", "resolve_llm", "safe_url"]

#: The model an OpenAI-compatible endpoint is asked for when ``llm.model`` is unset: OpenAI's small
#: general model (a local server such as llama.cpp answers with whatever model it serves).
DEFAULT_OPENAI_MODEL = "gpt-5.4-mini"
#: The model Anthropic is asked for when ``llm.model`` is unset: Anthropic's mid-size general model.
DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-5-5"


@dataclass(frozen=True)
class ProviderEnv:
    """The providers' own variables (``$OPENAI_API_KEY``, ``$OPENAI_BASE_URL``, ``$ANTHROPIC_API_KEY``,
    ``$ANTHROPIC_BASE_URL``, or the deprecated ``llm.openai_api_key``-style keys of a trusted file):
    used when ``llm.api_key`` / ``llm.base_url`` are unset, and by ``llm.provider = "auto"``."""

    openai_api_key: str | None = None
    openai_base_url: str | None = None
    anthropic_api_key: str | None = None
    anthropic_base_url: str | None = None


def resolve_llm(llm: LLMSettings, env: ProviderEnv) -> ResolvedLLM | None:
    """The provider, model, key and base URL to use, or ``None`` when no LLM is configured.

    ``auto``: openai when ``llm.api_key`` is set without a provider variable or when an OpenAI key
    is; else anthropic when an Anthropic key is; else ``None``. ``llm.api_key`` / ``llm.base_url``
    win over the chosen provider's variables; a provider with neither key nor base URL is ``None``."""
    provider = llm.provider
    if provider == "auto":
        if (llm.api_key and not (env.openai_api_key or env.anthropic_api_key)) or env.openai_api_key:
            provider = "openai"
        elif env.anthropic_api_key:
            provider = "anthropic"
        else:
            return None
    if provider == "none":
        return None
    if provider == "openai":
        key, base_url, model = env.openai_api_key, env.openai_base_url, DEFAULT_OPENAI_MODEL
    else:
        key, base_url, model = env.anthropic_api_key, env.anthropic_base_url, DEFAULT_ANTHROPIC_MODEL
    key, base_url = llm.api_key or key, llm.base_url or base_url
    if not key and not base_url:
        return None
    return ResolvedLLM(provider=provider, model=llm.model or model, api_key=key, base_url=base_url)


@dataclass(frozen=True)
class ResolvedLLM:
    """A concrete LLM choice: provider ``openai`` or ``anthropic``, model name, key, base URL."""

    provider: str
    model: str
    api_key: str | None
    base_url: str | None

    def describe(self) -> str:
        """``provider:model``, then ``at <base_url>`` when a base URL is set (never the key, nor a
        ``user:password@`` in the URL)."""
        where = f" at {safe_url(self.base_url)}" if self.base_url else ""
        return f"{self.provider}:{self.model}{where}"


def safe_url(url: str | None) -> str | None:
    """``url`` without any ``user:password@`` part, for messages and logs (the one URL scrubber:
    :mod:`codeask.llm` uses it too). Host and port stay as written (``[::1]:8080`` included); a URL
    that does not parse is returned as is; ``None`` and ``""`` are returned unchanged."""
    from urllib.parse import urlsplit, urlunsplit

    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
