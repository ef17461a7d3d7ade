"""The summary response transformer and ``ask --summary``, through the fake LLM and the real client."""

from __future__ import annotations

import json

import pytest

from codeask.query.pipeline import Query
from codeask.query.templates import Templates
from tests.fake_llm import request_text

SUMMARY = "SUMMARY: shipping_cost lives in src/shop/shipping.py"


def responder(request):
    text = request_text(request)
    if "Write notes that another developer can answer that question" in text:
        return SUMMARY
    if "search queries" in text.lower():
        return "- What calls it?"
    return "FAKE ANSWER"


@pytest.fixture
def llm_env(monkeypatch, fake_llm):
    fake_llm.responder = responder
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    return fake_llm


def test_ask_summary_cli(sample_workspace, llm_env, capsys):
    from codeask.cli import main

    rc = main(["ask", str(sample_workspace), "How is shipping priced?", "--summary", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    prompts = llm_env.user_prompts()
    kinds = ["summary" if "Write notes that another developer" in p else
             "subquestions" if "search queries" in p.lower() else "answer" for p in prompts]
    assert kinds == ["subquestions", "summary", "answer"]
    summary_prompt, answer_prompt = prompts[1], prompts[2]
    assert "src/shop/shipping.py" in summary_prompt
    assert summary_prompt.startswith("A developer asked: How is shipping priced?")  # question-focused
    # the answer is written from the summary, not from the rendered documents
    assert SUMMARY in answer_prompt
    assert "```python" not in answer_prompt
    assert out["answer"] == "FAKE ANSWER"
    assert any(s["path"] == "src/shop/shipping.py" for s in out["sources"])


def test_summary_step_history(sample_workspace, fake_llm):
    from codeask.workspace import Workspace

    fake_llm.responder = responder
    ws = Workspace(
        [sample_workspace],
        flags={
            "llm.provider": "openai", "llm.base_url": fake_llm.openai_base_url, "llm.api_key": "k",
            "llm.num_subquestions": 0, "summary.enabled": True,
        },
    )
    ws.index(embed=False)
    pipeline = ws.build_pipeline(llm=ws.llm())
    names = ["neighbours", "one_per_file", "widen", "summary"]
    assert [s.name for s in pipeline.response_transformers] == names
    q = pipeline.run(Query("How is shipping priced?"))
    steps = [e.step for e in q.history]
    assert steps == ["parse_question", "embed", "retrieve", *names, "answer"]
    event = q.history[steps.index("summary")]
    assert event.after == SUMMARY and event.documents
    assert q.documents and q.retrieved_documents == q.history[2].documents
    # the summary is focused on the question
    assert "How is shipping priced?" in fake_llm.prompts()[0]


def test_summary_skipped_without_llm(sample_workspace):
    from codeask.workspace import Workspace

    ws = Workspace([sample_workspace], flags={"summary.enabled": True})
    pipeline = ws.build_pipeline(llm=None)
    assert [s.name for s in pipeline.response_transformers] == ["neighbours", "one_per_file", "widen"]


def test_summary_without_documents_makes_no_call(fake_llm):
    from codeask.llm import make_llm
    from codeask.query.steps.summary import Summary
    from codeask.settings import load_settings

    settings = load_settings(None, env={}, flags={"llm.provider": "openai", "llm.base_url": fake_llm.openai_base_url, "llm.api_key": "k"})
    llm = make_llm(settings.resolved_llm(), settings.llm)
    q = Query("anything")
    q.retrieved("retrieve", [])
    Summary(llm, Templates(settings), settings)(q)
    assert fake_llm.requests == [] and q.current == "anything"


def test_retrieve_event_keeps_documents_before_response_transformers(sample_workspace):
    from codeask.workspace import Workspace

    ws = Workspace([sample_workspace], flags={"retrieval.max_files": 1})
    ws.index(embed=False)
    q = ws.build_pipeline(llm=None).run(Query("coupon discount cart total shipping"))
    retrieve = next(e for e in q.history if e.step == "retrieve")
    assert len(retrieve.documents) > len(q.documents) == 1
    assert q.retrieved_documents is retrieve.documents
    assert all(e.seconds >= 0 for e in q.history)
