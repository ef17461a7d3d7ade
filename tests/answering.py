"""The answer step on the project's fake LLM server (:mod:`tests.fake_llm`), as the answer tests build it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codeask.llm import LLM, Speed, make_llm
from codeask.query.answer import SimpleAnswer
from codeask.query.templates import Templates
from codeask.settings import LLMSettings, ResolvedLLM, load_settings
from tests.fake_llm import FakeLLMServer

__all__ = ["fake_model", "answer_step"]


def fake_model(server: FakeLLMServer, provider: str = "openai", **settings: Any) -> LLM:
    """The real ``provider`` client (``openai`` or ``anthropic``) on ``server``'s endpoint, a local address,
    with ``LLMSettings(**settings)``."""
    base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    return make_llm(ResolvedLLM(provider=provider, model="m", api_key="k", base_url=base), LLMSettings(**settings))


def answer_step(
    server: FakeLLMServer,
    config: Path,
    *,
    env: dict[str, str] | None = None,
    speed: Speed | None = None,
    **settings: Any,
) -> SimpleAnswer:
    """:class:`SimpleAnswer` on ``server``'s OpenAI endpoint (:func:`fake_model` with ``settings``), with the
    default settings and ``env`` (no user config: ``config/none.toml`` does not exist). A local model: once
    ``speed`` is recorded as the endpoint's measured speed, it answers under a time budget."""
    loaded = load_settings(None, env=env or {}, user_config=config / "none.toml")
    step = SimpleAnswer(fake_model(server, **settings), Templates(loaded), loaded)
    if speed is not None:
        step.speeds.record(step.llm, speed)
    return step
