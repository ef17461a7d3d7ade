"""The one URL credential scrubber (``codeask.settings.safe_url``), as messages and ``describe()`` use it."""

from __future__ import annotations

import pytest

from codeask.llm import make_llm
from codeask.settings import LLMSettings, ResolvedLLM, safe_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:s3cret@api.example.com/v1", "https://api.example.com/v1"),
        ("http://token@[::1]:8080/v1?x=1", "http://[::1]:8080/v1?x=1"),
        ("http://me:p%40ss@Local.Host:11434", "http://Local.Host:11434"),
        ("http://localhost:8080/v1", "http://localhost:8080/v1"),
        ("http://[::1", "http://[::1"),  # does not parse: returned as written
        ("", ""),
        (None, None),
    ],
)
def test_safe_url_drops_only_the_userinfo(url, shown):
    assert safe_url(url) == shown


def test_llm_layer_and_settings_share_it():
    resolved = ResolvedLLM(provider="openai", model="m", api_key="k", base_url="http://u:pw@[::1]:8080/v1")
    assert resolved.describe() == "openai:m at http://[::1]:8080/v1"
    assert repr(make_llm(resolved, LLMSettings())) == "<OpenAILLM openai:m at http://[::1]:8080/v1>"
