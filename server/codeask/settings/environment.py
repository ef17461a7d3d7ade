"""The environment's settings layer: which variable sets which key (:data:`ENV_VARS`), read into a
layer (:func:`env_layer`) and checked (:func:`environment_layer`).

Each value is checked alone: one the model rejects (``CODEASK_LLM_TIMEOUT=abc``, ``CODEASK_LLM=gpt``)
is ignored with one warning naming the variable and its value, and the other layers' value applies.
A typo in a shell profile then neither stops every command nor is reported against another layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from codeask.settings.model import rejection
from codeask.settings.retired import PROVIDER_KEYS, drop_retired

__all__ = ["ENV_VARS", "env_layer", "environment_layer", "SOURCE"]

#: The layer's name in warnings and errors.
SOURCE = "environment"

#: ``llm.<name>`` settings the environment sets as ``CODEASK_LLM_<NAME>`` (``connect_timeout`` and
#: ``max_retries`` are retired: their variables are still read, so that setting one gets the retired
#: key's one warning).
_LLM_ENV_LIMITS = (
    "timeout",
    "connect_timeout",
    "first_token_timeout",
    "first_token_seconds",
    "answer_seconds",
    "max_retries",
    "max_tokens",
    "context_tokens",
)

#: Environment variable -> the setting it sets (one table: the environment layer reads it, the
#: settings reference lists it, and the warning for a trusted-only key a workspace tried to set names
#: the variable from it).
ENV_VARS: dict[str, str] = {
    "CODEASK_LLM": "llm.provider",
    "CODEASK_MODEL": "llm.model",
    "CODEASK_CACHE_DIR": "index.cache_dir",
    "CODEASK_SHARED_CACHE": "shared.url",
    "OPENAI_API_KEY": "llm.openai_api_key",
    "OPENAI_BASE_URL": "llm.openai_base_url",
    "ANTHROPIC_API_KEY": "llm.anthropic_api_key",
    "ANTHROPIC_BASE_URL": "llm.anthropic_base_url",
    **{f"CODEASK_LLM_{name.upper()}": f"llm.{name}" for name in _LLM_ENV_LIMITS},
}

#: Longest value a warning quotes, characters.
_QUOTE_CHARS = 60


def env_layer(env: Mapping[str, str]) -> dict[str, Any]:
    """The settings ``env`` sets (:data:`ENV_VARS`), as a nested layer, unchecked: ``{"llm":
    {"timeout": "abc"}}``; empty variables are unset."""
    layer: dict[str, Any] = {}
    for variable, key in ENV_VARS.items():
        if env.get(variable):
            section, _, leaf = key.partition(".")
            layer.setdefault(section, {})[leaf] = env[variable]
    return layer


def environment_layer(env: Mapping[str, str], warnings: list[str]) -> dict[str, Any]:
    """:func:`env_layer` without its retired keys (:func:`~codeask.settings.retired.drop_retired`)
    and without the values the settings model rejects, one warning each appended to ``warnings``,
    e.g. ``environment: ignored $CODEASK_LLM_TIMEOUT='abc' (llm.timeout: Input should be a valid
    number, unable to parse string as a number)``. The providers' own variables are read as they
    are (:class:`~codeask.settings.provider.ProviderEnv`)."""
    spelled = {key: f"${variable}" for variable, key in ENV_VARS.items()}
    layer = drop_retired(env_layer(env), SOURCE, warnings, spelled)
    for variable, key in ENV_VARS.items():
        section, _, leaf = key.partition(".")
        values = layer.get(section, {})
        if leaf not in values or leaf in PROVIDER_KEYS:
            continue
        problem = rejection({section: {leaf: values[leaf]}})
        if problem is not None:
            value = values.pop(leaf)
            shown = value if len(value) <= _QUOTE_CHARS else value[:_QUOTE_CHARS] + "..."
            warnings.append(f"{SOURCE}: ignored ${variable}={shown!r} ({key}: {problem})")
    return {section: values for section, values in layer.items() if values}
