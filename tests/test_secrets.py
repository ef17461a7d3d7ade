"""Secret and ignored files never reach an LLM, even when an index still holds them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from codeask.query.explain import NotExplainable, explain, make_span
from codeask.settings.defaults import DEFAULT_SECRET_PATTERNS
from codeask.workspace import Workspace

SECRET_VALUE = "s3cr3t-vault-value-7f1c"


def _llm(fake_llm) -> dict:
    return {"llm": {"provider": "openai", "baseUrl": fake_llm.openai_base_url, "apiKey": "test-key"}}


def _workspace_with_a_file_that_became_secret(root: Path, fake_llm, **flags) -> Workspace:
    """Index ``deploy/prod.vault`` while it is ordinary text, then declare ``*.vault`` secret
    without re-indexing: the rows are still there, as after a settings change before a sync."""
    (root / "deploy").mkdir()
    (root / "deploy/prod.vault").write_text(
        f"deployment vault settings for the cart service\ntoken = {SECRET_VALUE}\n", encoding="utf-8"
    )
    Workspace([root]).index(embed=False)
    return Workspace([root], editor=_llm(fake_llm), flags={"index.secret_patterns": [*DEFAULT_SECRET_PATTERNS, "*.vault"], **flags})


def test_answer_and_summary_prompts_drop_secret_documents(sample_workspace, fake_llm):
    ws = _workspace_with_a_file_that_became_secret(sample_workspace, fake_llm, **{"summary.enabled": True})
    answer = ws.ask("deployment vault settings for the cart service", top_k=50, max_files=50)
    assert "deploy/prod.vault" in [s.path for s in answer.sources]  # retrieved from the stale rows...
    prompts = fake_llm.prompts()
    assert any("snippets of their codebase" in p for p in prompts) and len(prompts) == 3  # subquestions, summary, answer
    assert all(SECRET_VALUE not in p for p in prompts)  # ...but never sent
    assert any("src/shop/cart.py" in p for p in prompts)


def test_eval_export_drops_secret_contexts(sample_workspace, fake_llm, tmp_path):
    from codeask.cli import main

    ws = _workspace_with_a_file_that_became_secret(sample_workspace, fake_llm)
    del ws
    (sample_workspace / ".codeask.toml").write_text('[index]\nsecret_patterns = ["*.vault"]\n', encoding="utf-8")
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": "deployment vault settings token"}) + "\n", encoding="utf-8")
    out = tmp_path / "ragas.json"
    code = main(["eval", str(sample_workspace), "--questions", str(questions), "--no-llm", "--out", str(out), "--json"])
    assert code == 0
    rows = json.loads(out.read_text(encoding="utf-8"))
    assert rows[0]["contexts"], "other files still give contexts"
    assert all(SECRET_VALUE not in c for c in rows[0]["contexts"])


def test_explain_withholds_ignored_files_and_refuses_secret_files(sample_workspace, fake_llm, tmp_path):
    (sample_workspace / ".gitignore").write_text("generated/\n", encoding="utf-8")
    (sample_workspace / "generated").mkdir()
    ignored = sample_workspace / "generated/build_info.py"
    ignored.write_text("BUILD_KEY = 'ignored-build-key'\n", encoding="utf-8")
    env_file = sample_workspace / ".env"
    env_file.write_text("API_TOKEN=env-token-value\n", encoding="utf-8")
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    creds = home / ".aws/credentials"
    creds.write_text("[default]\naws_secret_access_key = aws-secret-value\n", encoding="utf-8")
    ws = Workspace([sample_workspace], editor=_llm(fake_llm))
    ws.index(embed=False)
    result = explain(ws, make_span(ws, str(ignored), 1, 1))  # read here, never sent
    assert "Not sent to the LLM: an ignored file" in result.markdown
    for path in (env_file, creds):  # a secret file, in the workspace or outside it, is not even read
        with pytest.raises(NotExplainable, match="is a secret file"):
            make_span(ws, str(path), 1, 1)
    assert fake_llm.requests == []
    # An ordinary file is explained with the LLM, and its selection is in the prompt.
    result = explain(ws, make_span(ws, str(sample_workspace / "src/shop/pricing.py"), 6, 9))
    assert result.llm and len(fake_llm.requests) == 1
    assert "rate = COUPONS.get(coupon, 0.0)" in fake_llm.prompts()[0]


def test_new_secret_pattern_from_the_editor_rebuilds_the_rules(sample_workspace):
    (sample_workspace / "deploy").mkdir()
    (sample_workspace / "deploy/prod.vault").write_text(f"token = {SECRET_VALUE}\n", encoding="utf-8")
    ws = Workspace([sample_workspace])
    ws.index(embed=False)
    assert ws.reconfigure({"index": {"extraSecretPatterns": ["*.vault"]}}) is True
    index = ws.indexes[str(sample_workspace.resolve())]
    assert index.ignorer.reason("deploy/prod.vault") == "secret"
    stats = ws.index(embed=False)
    assert stats.paths_removed == ["deploy/prod.vault"]
    assert ws.reconfigure({"index": {"extraSecretPatterns": ["*.vault"]}}) is False  # nothing new


def test_live_update_does_not_follow_a_link_out_of_the_root(sample_workspace, tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text("def leaked_outside_function():\n    pass\n", encoding="utf-8")
    link = sample_workspace / "src/shop/link.py"
    os.symlink(outside, link)
    ws = Workspace([sample_workspace])
    ws.index(embed=False)
    stats = ws.update_paths([link])
    assert stats.files_changed == 0 and stats.files_skipped == {"outside_root": 1}
    assert all(s.path != "src/shop/link.py" for s in ws.ask("leaked_outside_function", no_llm=True).sources)


def test_content_scan_leaves_no_scratch_files(tmp_path, monkeypatch):
    """Each scan writes its text to a scratch file for detect-secrets and removes it (and its folder)
    before returning, so a process killed between scans leaves nothing in the temp folder."""
    import tempfile

    from codeask.query import secrets

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    found = secrets.scan('aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"\n', "settings.py")
    assert found.findings, "the scan must have run on the scratch file"
    assert list(scratch.iterdir()) == []
