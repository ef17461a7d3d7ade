"""User templates from .codeask.toml and editor settings, end to end through the fake LLM."""

from __future__ import annotations

import json

import pytest

from codeask.query.templates import Templates
from codeask.settings import SettingsError, load_settings


def write_config(root, text):
    (root / ".codeask.toml").write_text(text, encoding="utf-8")


def test_answer_template_is_exactly_the_prompt(sample_workspace, llm_env, capsys):
    from codeask.cli import main

    write_config(
        sample_workspace,
        '[llm]\nnum_subquestions = 0\n\n[templates]\nanswer = "Reply in one word. Q: {{ question }} ({{ original }})"\n',
    )
    assert main(["ask", str(sample_workspace), "How is shipping priced?", "--json"]) == 0
    assert llm_env.user_prompts() == ["Reply in one word. Q: How is shipping priced? (How is shipping priced?)"]
    assert "untrusted-data" in llm_env.system_prompts()[0]  # the instructions are the system message
    assert json.loads(capsys.readouterr().out)["answer"] == "FAKE ANSWER"


def test_document_template_from_file_and_default_filter(sample_workspace, llm_env):
    from codeask.cli import main

    (sample_workspace / "prompts").mkdir()
    (sample_workspace / "prompts" / "doc.j2").write_text(
        "FILE {{ metadata.path }} TITLE={{ metadata.title | default('untitled') }}"
    )
    write_config(
        sample_workspace,
        '[llm]\nnum_subquestions = 0\n\n[templates]\ndocument = "@prompts/doc.j2"\n'
        'answer = "{{ documents }}"\n',
    )
    assert main(["ask", str(sample_workspace), "shipping cost", "--json"]) == 0
    prompt = llm_env.prompts()[-1]
    assert "FILE src/shop/shipping.py TITLE=untitled" in prompt
    assert "\n---\n" in prompt or prompt.count("FILE ") == 1


def test_missing_key_fails_naming_it(sample_workspace, llm_env, capsys):
    from codeask.cli import main

    write_config(sample_workspace, '[llm]\nnum_subquestions = 0\n\n[templates]\ndocument = "{{ metadata.no_such_key }}"\n')
    assert main(["ask", str(sample_workspace), "shipping cost"]) == 1
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("codeask progress:")]
    assert len(err) == 1 and "no_such_key" in err[0]  # one error line (progress lines aside)
    assert llm_env.prompts() == []  # failed before the answer call


def test_unknown_template_name_is_an_error(sample_workspace, capsys):
    from codeask.cli import main

    write_config(sample_workspace, '[templates]\nanwser = "x"\n')
    assert main(["ask", str(sample_workspace), "shipping cost", "--no-llm"]) == 1
    err = capsys.readouterr().err
    assert "anwser" in err and "answer" in err
    with pytest.raises(SettingsError, match="anwser"):
        Templates(load_settings(sample_workspace, env={}))


def test_editor_settings_override_templates(sample_workspace, fake_llm):
    from codeask.workspace import Workspace

    ws = Workspace(
        [sample_workspace],
        editor={
            "llm": {"provider": "openai", "baseUrl": fake_llm.openai_base_url, "apiKey": "k", "numSubquestions": 1},
            "templates": {
                "subquestions": "SUBQ {{ question }} x{{ num_questions }}",
                "answer": "EDITOR {{ question }}",
            },
        },
    )
    ws.index(embed=False)
    answer = ws.ask("shipping cost")
    assert answer.answer == "FAKE ANSWER"
    # num_questions: how many queries the model is asked to write (twice those kept: paraphrases are dropped)
    assert fake_llm.user_prompts() == ["SUBQ shipping cost x2", "EDITOR shipping cost"]


def test_every_template_name_can_be_overridden(sample_workspace):
    names = ("subquestions", "answer", "document", "rerank", "summary", "explain")
    settings = load_settings(None, env={}, flags={f"templates.{n}": f"<{n}>" for n in names})
    t = Templates(settings)
    for n in names:
        assert t.render(n) == f"<{n}>"


ESCAPES = {
    "builtins": "{{ cycler.__init__.__globals__.os.system('touch MARKER') }}",
    "mro": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "mutate": "{% set items = [1] %}{{ items.append(2) }}{{ documents }}",
    "include": "{% include '../../etc/passwd' %}",
    "import": "{% import 'x.j2' as x %}{{ documents }}",
    "extends": "{% extends 'base.j2' %}",
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_unsafe_templates_are_refused_by_the_sandbox(sample_workspace, llm_env, capsys, monkeypatch, name):
    from codeask.cli import main

    monkeypatch.chdir(sample_workspace)
    write_config(sample_workspace, f'[llm]\nnum_subquestions = 0\n\n[templates]\nanswer = "{ESCAPES[name]}"\n')
    assert main(["ask", str(sample_workspace), "How is shipping priced?", "--json"]) == 0
    captured = capsys.readouterr()
    err = [line for line in captured.err.splitlines() if "templates.answer" in line]
    assert len(err) == 1 and "built-in template" in err[0]
    assert not (sample_workspace / "MARKER").exists()
    out = json.loads(captured.out)
    assert out["answer"] == "FAKE ANSWER" and out["warnings"] == [err[0].removeprefix("codeask: warning: ")]
    assert "## Snippets" in llm_env.user_prompts()[-1]  # the built-in answer template rendered instead


def test_unsafe_template_fails_when_not_an_override():
    from codeask.query.templates import UnsafeTemplateError, sandbox

    with pytest.raises(Exception) as info:
        sandbox().from_string("{{ x.__class__ }}").render(x="")
    assert "unsafe" in str(info.value)
    assert issubclass(UnsafeTemplateError, SettingsError)


def test_no_plain_jinja_environment_in_the_server():
    from pathlib import Path

    import codeask

    package = Path(codeask.__file__).parent
    offenders = [p for p in package.rglob("*.py") if "jinja2.Environment(" in p.read_text(encoding="utf-8")]
    assert offenders == []
