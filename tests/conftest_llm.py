"""Pytest fixtures for the fake LLM server; use with ``pytest_plugins = ["tests.conftest_llm"]``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fake_llm import FakeLLMServer

__all__ = ["fake_llm", "llm_env", "FakeLLMServer"]


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    """A fresh :class:`~tests.fake_llm.FakeLLMServer` for one test, closed afterwards.

    Point the settings at it with ``llm.base_url = fake_llm.openai_base_url`` (provider
    ``openai``) or ``fake_llm.anthropic_base_url`` (provider ``anthropic``).
    """
    server = FakeLLMServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def llm_env(monkeypatch, fake_llm) -> FakeLLMServer:
    """The fake server as the OpenAI endpoint of the environment (``OPENAI_BASE_URL``/``_API_KEY``)."""
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    return fake_llm
