"""Settings precedence: defaults < .codeask.toml < environment < editor < flags."""

from __future__ import annotations

import pytest

from codeask.settings import SettingsError, load_settings


def test_defaults_are_documented_values(tmp_path):
    s = load_settings(tmp_path, env={})
    assert s.retrieval.top_k == 20
    assert s.retrieval.max_files == 8
    assert s.embedding.model == "all-MiniLM-L6-v2"
    assert s.embedding.max_tokens == 256
    assert 4 <= s.embedding.batch_size <= 8
    assert s.index.max_file_bytes == 1024 * 1024
    assert ".env" in s.index.secret_patterns
    assert s.resolved_llm() is None


def test_each_layer_overrides_the_one_below(tmp_path):
    (tmp_path / ".codeask.toml").write_text(
        '[retrieval]\ntop_k = 30\nmax_files = 4\n[llm]\nprovider = "anthropic"\nmodel = "from-file"\n',
        encoding="utf-8",
    )
    env = {"CODEASK_MODEL": "from-env", "ANTHROPIC_API_KEY": "k", "CODEASK_CACHE_DIR": "/c"}
    s = load_settings(tmp_path, env=env, editor={"retrieval": {"maxFiles": 6}}, flags={"retrieval.max_files": 9})
    assert s.retrieval.top_k == 30  # file
    assert s.llm.model == "from-env"  # env beats file
    assert s.retrieval.max_files == 9  # flag beats editor beats file
    assert s.index.cache_dir == "/c"
    resolved = s.resolved_llm()
    assert (resolved.provider, resolved.model, resolved.api_key) == ("anthropic", "from-env", "k")


def test_editor_camel_case_and_dotted_keys(tmp_path):
    s = load_settings(tmp_path, env={}, editor={"llm.baseUrl": "http://x/v1", "llm": {"provider": "openai"}})
    assert s.llm.base_url == "http://x/v1"
    assert s.resolved_llm().provider == "openai"


@pytest.mark.parametrize(
    ("env", "provider"),
    [
        ({"OPENAI_API_KEY": "a", "ANTHROPIC_API_KEY": "b"}, "openai"),
        ({"ANTHROPIC_API_KEY": "b"}, "anthropic"),
        ({}, None),
        ({"OPENAI_API_KEY": "a", "CODEASK_LLM": "none"}, None),
    ],
)
def test_auto_provider(tmp_path, env, provider):
    resolved = load_settings(tmp_path, env=env).resolved_llm()
    assert (resolved.provider if resolved else None) == provider


def test_invalid_values_name_the_key(tmp_path):
    (tmp_path / ".codeask.toml").write_text("[retrieval]\ntop_k = 'many'\n", encoding="utf-8")
    with pytest.raises(SettingsError, match="retrieval.top_k"):
        load_settings(tmp_path, env={})
    (tmp_path / ".codeask.toml").write_text("[retrieval\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=".codeask.toml"):
        load_settings(tmp_path, env={})
    (tmp_path / ".codeask.toml").write_text("[retrieval]\nno_such = 1\n", encoding="utf-8")
    with pytest.raises(SettingsError, match="no_such"):
        load_settings(tmp_path, env={})
