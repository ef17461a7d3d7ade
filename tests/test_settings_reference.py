"""The settings reference is generated from the model; retired keys warn and are ignored, deprecated
ones warn and still work (issue 28: settings a user can read)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from codeask.settings import load_settings
from codeask.settings.defaults import DEFAULT_EXCLUDES, DEFAULT_SECRET_PATTERNS
from codeask.settings.reference import leaf_settings, main, render
from codeask.settings.retired import DEPRECATED, RETIRED

DOCS = Path(__file__).resolve().parent.parent / "docs" / "settings.md"


def test_the_committed_reference_is_the_generated_one():
    assert DOCS.read_text(encoding="utf-8") == render(), (
        "docs/settings.md is out of date: run python -m codeask.settings.reference docs/settings.md"
    )


def test_every_setting_is_documented_in_the_reference():
    text = render()
    for key, field, _ in leaf_settings():
        assert field.description, f"{key} has no docstring"
        assert f"### `{key}`" in text
    assert f"{len(list(leaf_settings()))} settings." in text


#: Issue 28: at most 40 settings a user can set, each documented in the generated reference.
MAX_SETTINGS = 40


def test_a_user_has_at_most_40_settings():
    keys = [key for key, _, _ in leaf_settings()]
    assert len(keys) == len(set(keys)) and 30 < len(keys) <= MAX_SETTINGS, keys


def test_check_reports_a_stale_file(tmp_path, capsys):
    path = tmp_path / "settings.md"
    assert main([str(path)]) == 0 and path.read_text(encoding="utf-8") == render()
    assert main([str(path), "--check"]) == 0
    path.write_text(render().replace("## `[llm]`", "## llm"), encoding="utf-8")
    assert main([str(path), "--check"]) == 1
    assert "out of date" in capsys.readouterr().err


@pytest.mark.parametrize("key", sorted(RETIRED))
def test_each_retired_key_names_a_constant_or_setting_that_exists(key):
    target = RETIRED[key].split(";")[0]
    leaves = {k for k, _, _ in leaf_settings()}
    if target.startswith("codeask."):
        module, _, name = target.rpartition(".")
        assert hasattr(importlib.import_module(module), name), RETIRED[key]
    else:
        assert target in leaves, RETIRED[key]
    assert key not in leaves


def test_a_retired_key_warns_once_and_loses_nothing_else(tmp_path):
    (tmp_path / ".codeask.toml").write_text("[index]\ncompact_every = 3\n[retrieval]\ntop_k = 7\n", encoding="utf-8")
    user = tmp_path / "user.toml"
    user.write_text("[embedding]\nbatch_size = 8\nindex_nice = 2\n", encoding="utf-8")
    s = load_settings(tmp_path, env={}, user_config=user, flags={"hover.delay_ms": 10, "retrieval.max_files": 4})
    assert (s.retrieval.top_k, s.embedding.index_nice, s.retrieval.max_files) == (7, 2, 4)
    assert len(s.warnings) == 3
    for source, key in ((".codeask.toml", "index.compact_every"), ("user.toml", "embedding.batch_size"),
                        ("command line", "hover.delay_ms")):
        [line] = [w for w in s.warnings if f"`{key}`" in w]
        assert source in line and "no longer a setting" in line and RETIRED[key] in line


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_deprecated_key_still_works_with_one_warning(tmp_path, provider):
    user = tmp_path / "user.toml"
    user.write_text(
        f'[llm]\nprovider = "{provider}"\n{provider}_api_key = "k1"\n{provider}_base_url = "http://here/v1"\n',
        encoding="utf-8",
    )
    s = load_settings(None, env={}, user_config=user)
    resolved = s.resolved_llm()
    assert (resolved.provider, resolved.api_key, resolved.base_url) == (provider, "k1", "http://here/v1")
    assert sorted(s.warnings) == sorted(
        f"{user}: `llm.{provider}_{what}` is deprecated (it still works): use {DEPRECATED[f'llm.{provider}_{what}']}"
        for what in ("api_key", "base_url")
    )


def test_a_deprecated_extra_list_still_adds_to_its_list_with_one_warning(tmp_path):
    """``index.extra_exclude`` / ``extra_secret_patterns`` still add to the list below them (the
    defaults, or the user's own list), each with one warning, in a trusted or a workspace layer."""
    user = tmp_path / "user.toml"
    user.write_text('[index]\nextra_exclude = ["mine/"]\nextra_secret_patterns = ["*.mine"]\n', encoding="utf-8")
    (tmp_path / ".codeask.toml").write_text('[index]\nextra_exclude = ["theirs/"]\n', encoding="utf-8")
    s = load_settings(tmp_path, env={}, user_config=user)
    assert s.index.exclude == [*DEFAULT_EXCLUDES, "mine/", "theirs/"]
    assert s.index.secret_patterns == [*DEFAULT_SECRET_PATTERNS, "*.mine"]
    assert sorted(s.warnings) == sorted(
        f"{source}: `{key}` is deprecated (it still works): use {DEPRECATED[key]}"
        for source, key in (
            (str(user), "index.extra_exclude"),
            (str(user), "index.extra_secret_patterns"),
            (str(tmp_path / ".codeask.toml"), "index.extra_exclude"),
        )
    )


def test_the_one_way_wins_over_the_providers_variables(tmp_path):
    env = {"OPENAI_API_KEY": "from-env", "OPENAI_BASE_URL": "http://env/v1"}
    s = load_settings(None, env=env, flags={"llm.api_key": "from-flag", "llm.base_url": "http://flag/v1"})
    resolved = s.resolved_llm()
    assert (resolved.provider, resolved.api_key, resolved.base_url) == ("openai", "from-flag", "http://flag/v1")
    assert s.warnings == []  # the environment's provider variables are the one way there, not deprecated
    assert load_settings(None, env=env).resolved_llm().api_key == "from-env"


def test_a_workspace_cannot_set_a_providers_key(tmp_path):
    (tmp_path / ".codeask.toml").write_text('[llm]\nopenai_base_url = "http://evil/v1"\n', encoding="utf-8")
    s = load_settings(tmp_path, env={"OPENAI_API_KEY": "k"})
    assert s.resolved_llm().base_url is None
    [warning] = s.warnings
    assert "`llm.openai_base_url`" in warning and "trusted settings only" in warning and "$OPENAI_BASE_URL" in warning
