"""Settings precedence: defaults < .codeask.toml < environment < editor < flags."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeask.settings import SettingsError, load_settings


def test_defaults_are_documented_values(tmp_path):
    s = load_settings(tmp_path, env={})
    assert s.retrieval.top_k == 20
    assert s.retrieval.max_files == 8
    assert s.embedding.model == "all-MiniLM-L6-v2"
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
    (tmp_path / ".codeask.toml").write_text("[retrieval\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=r"\.codeask\.toml"):  # unreadable TOML: nothing to keep
        load_settings(tmp_path, env={})
    # A trusted layer's bad value is an error naming the key.
    with pytest.raises(SettingsError, match=r"retrieval\.top_k"):
        load_settings(tmp_path / "none", env={}, flags={"retrieval.top_k": 0})
    config = tmp_path / "user.toml"
    config.write_text("[retrieval]\nmax_files = -5\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=r"retrieval\.max_files"):
        load_settings(None, env={}, user_config=config)


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("[retrieval]\ntop_k = 0", "retrieval.top_k"),
        ("[retrieval]\ntop_k = 'many'", "retrieval.top_k"),
        ("[retrieval]\nexpand_files = -1", "retrieval.expand_files"),
        ("[retrieval]\nno_such = 1", "retrieval.no_such"),
        ("[index]\nmax_file_bytes = -5", "index.max_file_bytes"),
        ("[llm]\nmax_tokens = 0", "llm.max_tokens"),
        ("[embedding]\nindex_nice = 20", "embedding.index_nice"),
        ("[llm]\nnum_subquestions = 11", "llm.num_subquestions"),
        ("retrieval = 3", "retrieval"),
    ],
)
def test_a_bad_workspace_value_is_dropped_with_one_warning(tmp_path, line, key):
    """The workspace file is untrusted: a value the model rejects is ignored (the trusted value
    stays), with one warning naming the key, and the other values of the file still apply."""
    (tmp_path / ".codeask.toml").write_text(f"{line}\n[hover]\nllm = true\n", encoding="utf-8")
    s = load_settings(tmp_path, env={}, flags={"retrieval.max_files": 5})
    [warning] = s.warnings
    assert f"`{key}" in warning and ".codeask.toml" in warning
    assert s.retrieval.top_k == 20 and s.retrieval.expand_files == 10 and s.retrieval.max_files == 5
    assert s.hover.llm is True


def test_a_bad_workspace_editor_value_is_dropped_with_one_warning(tmp_path):
    s = load_settings(tmp_path, env={}, workspace_editor={"retrieval": {"maxFiles": 0, "topK": 7}})
    [warning] = s.warnings
    assert "workspace settings" in warning and "`retrieval.max_files = 0`" in warning
    assert (s.retrieval.top_k, s.retrieval.max_files) == (7, 8)


def _numeric_fields():
    from pydantic import BaseModel

    from codeask.settings import Settings

    for section, info in Settings.model_fields.items():
        model = info.annotation
        if isinstance(model, type) and issubclass(model, BaseModel):
            for key, field in model.model_fields.items():
                if field.annotation in (int, float, int | None, float | None):
                    yield f"{section}.{key}", field


@pytest.mark.parametrize(("key", "field"), list(_numeric_fields()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_numeric_setting_has_a_lower_bound(tmp_path, key, field):
    bounds = [m for m in field.metadata if hasattr(m, "ge") or hasattr(m, "gt")]
    assert bounds, f"{key} accepts any number"
    with pytest.raises(SettingsError, match=key.replace(".", r"\.")):
        load_settings(tmp_path, env={}, flags={key: -1})


@pytest.mark.parametrize(("key", "field"), list(_numeric_fields()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_numeric_setting_has_an_upper_bound_a_repository_cannot_pass(tmp_path, key, field):
    """A repository's ``.codeask.toml`` setting a number out of all proportion (a batch that needs
    hundreds of GB, thousands of LLM calls per question) is ignored with one warning."""
    bounds = [m for m in field.metadata if hasattr(m, "le") or hasattr(m, "lt")]
    assert bounds, f"{key} accepts any large number"
    section, name = key.split(".")
    (tmp_path / ".codeask.toml").write_text(f"[{section}]\n{name} = 1e15\n", encoding="utf-8")
    s = load_settings(tmp_path, env={})
    [warning] = s.warnings
    assert f"`{key}" in warning, warning
    assert getattr(getattr(s, section), name) == field.default


# --- trust per layer -------------------------------------------------------------------------

HOSTILE_FILE = """
[llm]
provider = "openai"
base_url = "http://attacker.invalid/v1"
api_key = "from-repo"
model = "repo-model"
max_tokens = 300

[embedding]
model_path = "/etc"

[index]
cache_dir = "/tmp/elsewhere"
secret_patterns = ["*.mine"]
exclude = ["vendor/"]

[rerank]
model = "../../../outside"

[pipeline]
response_transformers = ["evil"]

[retrieval]
top_k = 7
"""


def test_workspace_file_cannot_set_trusted_only_keys(tmp_path, user_config):
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".codeask.toml").write_text(HOSTILE_FILE, encoding="utf-8")
    env = {"OPENAI_API_KEY": "user-key", "OPENAI_BASE_URL": "http://user.invalid/v1", "CODEASK_CACHE_DIR": "/c"}
    s = load_settings(root, env=env)
    resolved = s.resolved_llm()
    assert (resolved.provider, resolved.api_key, resolved.base_url) == ("openai", "user-key", "http://user.invalid/v1")
    assert resolved.model == "repo-model" and s.llm.max_tokens == 300  # tuning is allowed
    assert s.retrieval.top_k == 7
    assert s.embedding.model_path is None and s.rerank.model is None and s.index.cache_dir == "/c"
    assert s.pipeline.response_transformers == []
    ignored = ["llm.provider", "llm.base_url", "llm.api_key", "embedding.model_path", "index.cache_dir", "rerank.model", "pipeline"]
    for key in ignored:
        [line] = [w for w in s.warnings if f"`{key}`" in w]
        assert str(root / ".codeask.toml") in line and str(user_config) in line
    assert len(s.warnings) == len(ignored)
    # each warning names the environment variables that set the key (from the table env_layer reads)
    named = {"llm.provider": ["$CODEASK_LLM"], "llm.base_url": ["$OPENAI_BASE_URL", "$ANTHROPIC_BASE_URL"],
             "llm.api_key": ["$OPENAI_API_KEY", "$ANTHROPIC_API_KEY"], "index.cache_dir": ["$CODEASK_CACHE_DIR"]}
    for key, variables in named.items():
        [line] = [w for w in s.warnings if f"`{key}`" in w]
        assert all(v in line for v in variables), line
    # patterns are only added: the defaults stay
    assert ".env" in s.index.secret_patterns and "*.mine" in s.index.secret_patterns
    assert "node_modules/" in s.index.exclude and "vendor/" in s.index.exclude


def test_trusted_layers_set_endpoints(tmp_path, user_config):
    user_config.write_text('[llm]\nprovider = "openai"\nbase_url = "http://mine/v1"\n[index]\nexclude = ["a/"]\n')
    (tmp_path / ".codeask.toml").write_text('[index]\nexclude = ["b/"]\n', encoding="utf-8")
    s = load_settings(tmp_path, env={})
    assert s.resolved_llm().base_url == "http://mine/v1" and not s.warnings
    assert s.index.exclude == ["a/", "b/"]  # the workspace adds to the user's list
    s = load_settings(tmp_path, env={}, editor={"llm": {"baseUrl": "http://editor/v1"}}, flags={"llm.provider": "none"})
    assert s.llm.base_url == "http://editor/v1" and s.resolved_llm() is None


def test_workspace_editor_settings_are_untrusted(tmp_path):
    s = load_settings(
        tmp_path,
        env={"OPENAI_API_KEY": "k"},
        editor={"retrieval": {"topK": 3}},
        workspace_editor={"llm": {"baseUrl": "http://attacker/v1"}, "retrieval": {"maxFiles": 2}, "index": {"secretPatterns": ["x"]}},
    )
    assert s.resolved_llm().base_url is None and s.retrieval.top_k == 3 and s.retrieval.max_files == 2
    assert ".env" in s.index.secret_patterns and s.index.secret_patterns[-1] == "x"
    [line] = s.warnings
    assert line.startswith("workspace settings: ignored `llm.base_url`")


def test_trusted_only_set_is_declared_on_the_fields():
    from codeask.settings import TRUSTED_ONLY

    for key in ("llm.base_url", "llm.api_key", "llm.provider", "index.cache_dir", "embedding.model_path", "rerank.model", "pipeline"):
        assert key in TRUSTED_ONLY
    assert "retrieval.top_k" not in TRUSTED_ONLY and "templates" not in TRUSTED_ONLY


def test_the_real_user_config_is_never_read_in_tests(user_config):
    from codeask.settings import user_config_path

    assert user_config_path() == user_config


@pytest.mark.parametrize("rel", ["../outside.j2", "/etc/passwd", "sub/../../outside.j2", "link/outside.j2", "file-link.j2"])
def test_at_path_templates_stay_inside_the_root(tmp_path, rel):
    root = tmp_path / "repo"
    root.mkdir()
    outside = tmp_path / "out"
    outside.mkdir()
    (outside / "outside.j2").write_text("OUTSIDE {{ question }}")
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / "file-link.j2").symlink_to(outside / "outside.j2")
    (root / ".codeask.toml").write_text(f'[templates]\nanswer = "@{rel}"\n')
    s = load_settings(root, env={})
    with pytest.raises(SettingsError, match=r"templates\.answer"):
        s.template_source("answer")


def test_at_path_template_inside_the_root_is_read(tmp_path):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts/a.j2").write_text("A {{ question }}")
    (tmp_path / ".codeask.toml").write_text('[templates]\nanswer = "@prompts/a.j2"\n')
    assert load_settings(tmp_path, env={}).template_source("answer") == "A {{ question }}"


def test_docker_config_secret_pattern_matches_at_any_depth(tmp_path):
    from codeask.index.walk import is_secret

    s = load_settings(tmp_path, env={})
    assert is_secret(".docker/config.json", s.index)
    assert is_secret("deploy/ci/.docker/config.json", s.index)
    assert not is_secret("docker/config.json", s.index)


def test_untrusted_copy_of_a_trusted_value_is_not_warned(tmp_path):
    same = {"llm": {"provider": "openai", "baseUrl": "http://mine/v1"}}
    s = load_settings(tmp_path, env={}, editor=same, workspace_editor=same)
    assert s.llm.base_url == "http://mine/v1" and s.warnings == []


def test_an_empty_environment_never_reaches_the_real_user_cache(sample_workspace):
    from codeask.index.folders import cache_root
    from codeask.settings import load_settings as load

    real = Path.home() / ".cache"
    where = cache_root(load(sample_workspace, env={}))
    assert real not in where.parents and os.environ["XDG_CACHE_HOME"] in str(where)


# --- counts given per call: one check for the CLI, the API and the editor ----------------------

COUNTS_OK = [("5", 5), (" 12 ", 12), (3, 3)]
COUNTS_BAD = ["0", "-3", "+5", "1_000", "2.0", "abc", "", 0, -1, 2.0, True, None]


@pytest.mark.parametrize(("value", "expected"), COUNTS_OK)
def test_positive_int_accepts_digits_and_ints(value, expected):
    from codeask.console import positive_int
    from codeask.counts import as_positive_int

    assert as_positive_int("top_k", value) == expected
    if isinstance(value, str):
        assert positive_int(value) == expected


@pytest.mark.parametrize("value", COUNTS_BAD, ids=repr)
def test_positive_int_refuses_the_same_values_everywhere(tmp_path, value):
    import argparse

    from codeask.console import positive_int
    from codeask.counts import as_positive_int
    from codeask.workspace import Workspace

    with pytest.raises(ValueError, match=r"^top_k: (not an integer \(digits only\)|must be at least 1): "):
        as_positive_int("top_k", value)
    if isinstance(value, str):
        with pytest.raises(argparse.ArgumentTypeError, match=r"^(not an integer \(digits only\)|must be at least 1): "):
            positive_int(value)
    if value is not None:
        (tmp_path / "root").mkdir()
        ws = Workspace([tmp_path / "root"], env={"CODEASK_CACHE_DIR": str(tmp_path / "cache")})
        with pytest.raises(ValueError, match=r"^top_k: "):
            ws.ask("where is the config read", top_k=value, no_llm=True)


def test_cli_count_flag_refuses_a_sign_with_a_usage_error(tmp_path, capsys):
    from codeask.cli import main

    with pytest.raises(SystemExit) as info:
        main(["ask", str(tmp_path), "where", "--top-k", "+5"])
    assert info.value.code == 2
    assert "argument --top-k: not an integer (digits only): '+5'" in capsys.readouterr().err


# --- a bad environment value: one warning naming the variable, the other layers apply ----------


def test_a_bad_environment_value_is_ignored_with_one_warning_naming_it(tmp_path):
    (tmp_path / ".codeask.toml").write_text("[retrieval]\ntop_k = 7\n", encoding="utf-8")
    user = tmp_path / "user.toml"
    user.write_text("[llm]\ntimeout = 30\nmax_tokens = 500\n", encoding="utf-8")
    env = {"CODEASK_LLM_TIMEOUT": "abc", "CODEASK_LLM_MAX_TOKENS": "-4", "CODEASK_LLM_CONTEXT_TOKENS": "2048"}
    s = load_settings(tmp_path, env=env, user_config=user)
    assert (s.llm.timeout, s.llm.max_tokens, s.llm.context_tokens, s.retrieval.top_k) == (30.0, 500, 2048, 7)
    assert len(s.warnings) == 2, s.warnings
    tokens, timeout = sorted(s.warnings)
    assert timeout.startswith("environment: ignored $CODEASK_LLM_TIMEOUT='abc' (llm.timeout: ")
    assert tokens.startswith("environment: ignored $CODEASK_LLM_MAX_TOKENS='-4' (llm.max_tokens: ")


def test_a_bad_trusted_value_blames_only_the_layer_that_set_it(tmp_path):
    (tmp_path / ".codeask.toml").write_text("[retrieval]\nmax_files = 4\n", encoding="utf-8")
    user = tmp_path / "user.toml"
    user.write_text("[retrieval]\ntop_k = -5\n", encoding="utf-8")
    with pytest.raises(SettingsError) as info:
        load_settings(tmp_path, env={"CODEASK_MODEL": "m"}, user_config=user, flags={"retrieval.max_files": 3})
    assert str(info.value).startswith(f"invalid settings: {user}: retrieval.top_k: ")
    assert ".codeask.toml" not in str(info.value) and "environment" not in str(info.value)


def test_the_cli_warns_once_about_a_bad_environment_value_and_runs(sample_workspace, isolated_env, tmp_path):
    import json

    from tests.test_cli import codeask

    (sample_workspace / ".codeask.toml").write_text("[retrieval]\ntop_k = 7\n", encoding="utf-8")
    config = Path(os.environ["CODEASK_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    user = '[llm]\nprovider = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "from-user"\n'
    (config / "codeask.toml").write_text(user, encoding="utf-8")
    env = {"CODEASK_LLM_TIMEOUT": "abc", "CODEASK_LLM": "gpt"}
    proc = codeask("status", str(sample_workspace), "--json", env=env)
    assert json.loads(proc.stdout)["llm"] == "openai:from-user at http://127.0.0.1:9/v1"  # the user's layer applies
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert sorted(lines) == [
        "codeask: warning: environment: ignored $CODEASK_LLM='gpt' (llm.provider: Input should be 'auto', "
        "'openai', 'anthropic' or 'none')",
        "codeask: warning: environment: ignored $CODEASK_LLM_TIMEOUT='abc' (llm.timeout: Input should be a valid "
        "number, unable to parse string as a number)",
    ], proc.stderr
