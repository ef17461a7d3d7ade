"""Custom pipeline steps from ``codeask.steps`` entry points, registered without installing:
a temporary ``*.dist-info`` folder on ``sys.path`` is discovered by importlib.metadata."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from codeask.query.custom import available_steps, load_step
from codeask.query.pipeline import Query
from codeask.settings import SettingsError

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "custom_step"

PLUGIN = '''
from codeask.query.pipeline import Query

RECORDED = []


class Shout:
    """Query transformer: adds an upper-cased search text."""

    name = "shout"

    def __call__(self, query):
        query.search_texts = [*query.search_texts, query.original.upper()]
        query.transformed_query(self.name, query.current, added=1)
        return query


def make_answer(prefix="ANSWER", settings=None, llm=None):
    class Answer:
        name = "answer"

        def __call__(self, query):
            paths = ", ".join(d.path for d in query.documents)
            query.answered(self.name, f"{prefix}: {paths}", llm=llm is not None, has_settings=settings is not None)
            return query

    return Answer()


def record(stage, query):
    RECORDED.append((stage, query.original, len(query.documents)))
'''


def register(tmp_path: Path, monkeypatch, entries: dict[str, str], dist: str = "codeask_test_plugin") -> None:
    site = tmp_path / "site"
    info = site / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = "\n".join(f"{name} = {value}" for name, value in entries.items())
    (info / "entry_points.txt").write_text(f"[codeask.steps]\n{lines}\n")
    monkeypatch.syspath_prepend(str(site))


@pytest.fixture
def example_installed(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    register(tmp_path, monkeypatch, {"first_n_files": "codeask_first_n_files:FirstNFiles"}, "codeask_first_n_files")


def test_builtin_steps_are_available():
    steps = available_steps()
    assert {"one_per_file", "rerank", "summary"} <= set(steps)
    assert load_step("one_per_file", options={"max_files": 2}).max_files == 2


def test_example_package_first_n_files(sample_workspace, example_installed, user_config):
    from codeask.workspace import Workspace

    assert "first_n_files" in available_steps()
    user_config.write_text(
        '[pipeline]\nresponse_transformers = ["first_n_files"]\n\n[pipeline.options.first_n_files]\nn = 2\n'
    )
    ws = Workspace([sample_workspace])
    ws.index(embed=False)
    pipeline = ws.build_pipeline(llm=None)
    assert [s.name for s in pipeline.response_transformers] == ["first_n_files"]
    q = pipeline.run(Query("cart total coupon discount shipping cost"))
    assert [e.step for e in q.history] == ["parse_question", "embed", "retrieve", "first_n_files", "answer"]
    assert len(q.documents) == 2 and len({d.path for d in q.documents}) == 2
    assert q.history[3].data == {"n": 2}
    answer = ws.ask("cart total coupon discount shipping cost", no_llm=True)
    assert len(answer.sources) == 2


def test_query_transformer_answer_and_evaluator_by_name(sample_workspace, tmp_path, monkeypatch, user_config):
    from codeask.workspace import Workspace

    mod = tmp_path / "mods"
    mod.mkdir()
    (mod / "codeask_test_plugin_mod.py").write_text(textwrap.dedent(PLUGIN))
    monkeypatch.syspath_prepend(str(mod))
    register(
        tmp_path,
        monkeypatch,
        {
            "shout": "codeask_test_plugin_mod:Shout",
            "prefixed_answer": "codeask_test_plugin_mod:make_answer",
            "record": "codeask_test_plugin_mod:record",
        },
    )
    user_config.write_text(
        '[pipeline]\nquery_transformers = ["shout"]\nanswer = "prefixed_answer"\nevaluators = ["record"]\n'
        '[pipeline.options.prefixed_answer]\nprefix = "FOUND"\n'
    )
    ws = Workspace([sample_workspace])
    ws.index(embed=False)
    answer = ws.ask("shipping cost", no_llm=True)
    assert answer.answer.startswith("FOUND: src/shop/shipping.py")
    import codeask_test_plugin_mod as plugin

    assert [r[0] for r in plugin.RECORDED] == ["retrieved", "answered"]
    # explain runs through the same Pipeline: the evaluators see it too
    from codeask.query.explain import explain, make_span

    explain(ws, make_span(ws, str(sample_workspace / "src/shop/cart.py"), 16, 19), no_llm=True)
    assert [r[0] for r in plugin.RECORDED[2:]] == ["retrieved", "answered"]
    assert plugin.RECORDED[2][1] == "explain src/shop/cart.py:16-19" and plugin.RECORDED[2][2] > 0
    q = ws.build_pipeline(llm=None).run(Query("shipping cost"))
    assert q.search_texts == ["shipping cost", "SHIPPING COST"]
    assert [e.step for e in q.history][:3] == ["shout", "parse_question", "embed"]
    assert q.history[-1].data == {"llm": False, "has_settings": True}


def test_unknown_step_lists_available_names(sample_workspace, capsys, user_config):
    from codeask.cli import main

    with pytest.raises(SettingsError) as info:
        load_step("nope", kind="response transformer")
    assert "nope" in str(info.value) and "one_per_file" in str(info.value) and "rerank" in str(info.value)
    user_config.write_text('[pipeline]\nresponse_transformers = ["first_per_fil"]\n')
    assert main(["ask", str(sample_workspace), "shipping", "--no-llm", "--no-update"]) == 1
    err = capsys.readouterr().err
    assert "first_per_fil" in err and "one_per_file" in err


def test_bad_options_are_a_settings_error(example_installed):
    with pytest.raises(SettingsError, match="first_n_files"):
        load_step("first_n_files", options={"m": 1})
