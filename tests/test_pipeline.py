"""The ask pipeline: fusion, one-per-file, templates, sources, and the LLM calls it makes."""

from __future__ import annotations

import pytest

from codeask.index.rows import Hit
from codeask.query.pipeline import Document, Query
from codeask.query.result import Answer
from codeask.query.steps import OnePerFile, parse_subquestions
from codeask.query.steps.fusion import fuse
from codeask.query.templates import TemplateError, Templates, render_documents
from codeask.settings import load_settings
from codeask.workspace import Workspace


def _hit(path, id_, line=1):
    return Hit(id_, path, "python", line, line + 9, "", f"content of {id_}", 1.0)


def _doc(path, start=1, end=10, score=1.0, root="/ws"):
    return Document(path, root, start, end, "", "python", f"body of {path}:{start}", score)


def test_fusion_scores_files_by_best_chunk_and_downweights():
    keyword = [_hit("tests/test_a.py", "t1"), _hit("a.py", "a1"), _hit("a.py", "a2", 20), _hit("b.py", "b1")]
    dense = [_hit("b.py", "b1"), _hit("a.py", "a2", 20), _hit("tests/test_a.py", "t1")]
    fused = fuse(
        [(1.0, "/ws", keyword), (1.0, "/ws", dense)],
        rrf_k=60,
        downweighted=lambda p: p.startswith("tests/"),
        factor=0.5,
    )
    # file ranks: keyword tests=1, a=2, b=3; dense b=1, a=2, tests=3
    a = 1 / 62 + 1 / 62
    b = 1 / 63 + 1 / 61
    t = (1 / 61 + 1 / 63) * 0.5
    scores = {}
    for _score, file_score, _, hit in fused:
        scores.setdefault(hit.path, file_score)
    assert scores["a.py"] == pytest.approx(a)
    assert scores["b.py"] == pytest.approx(b)
    assert scores["tests/test_a.py"] == pytest.approx(t)
    # first chunk of each file in fused order gives files in file-score order
    order = []
    for _, _, _, hit in fused:
        if hit.path not in order:
            order.append(hit.path)
    assert order == sorted(scores, key=lambda p: -scores[p])
    # a2 is a's best chunk (keyword 3 + dense 2 beats a1's keyword 2 alone)
    first_a = next(h for _, _, _, h in fused if h.path == "a.py")
    assert first_a.id == "a2"


def test_one_per_file_keeps_first_chunk_in_rank_order_and_caps():
    docs = [_doc("a.py", 1), _doc("b.py", 1), _doc("a.py", 20), _doc("c.py"), _doc("d.py")]
    q = Query("q")
    q.retrieved("retrieve", docs)
    q = OnePerFile(max_files=3)(q)
    assert [(d.path, d.start_line) for d in q.documents] == [("a.py", 1), ("b.py", 1), ("c.py", 1)]
    assert q.retrieved_documents == docs  # the retrieval event keeps the documents as retrieved


def test_templates_join_with_rule_lines_and_fail_on_missing_keys(tmp_path):
    settings = load_settings(tmp_path, env={})
    templates = Templates(settings)
    rendered = render_documents(templates, [_doc("a.py"), _doc("b.py", 5, 7)])
    parts = rendered.split("\n---\n")
    assert len(parts) == 2
    # each document is fenced as untrusted data, outside the (overridable) document template
    assert parts[0].startswith('<untrusted-data id="') and parts[0].endswith('">')
    assert parts[0].splitlines()[1] == "[1] a.py:1-10" and "body of a.py:1" in parts[0]
    assert parts[1].splitlines()[1] == "[2] b.py:5-7"

    settings = load_settings(tmp_path, env={}, editor={"templates": {"document": "{{ metadata.no_such_key }}"}})
    with pytest.raises(TemplateError, match="no_such_key"):
        render_documents(Templates(settings), [_doc("a.py")])

    settings = load_settings(
        tmp_path, env={}, editor={"templates": {"document": "{{ metadata.title | default('untitled') }}: {{ content }}"}}
    )
    assert render_documents(Templates(settings), [_doc("a.py")]).splitlines()[1:-1] == ["untitled: body of a.py:1"]


def test_sources_are_distinct_files_from_documents_in_order():
    q = Query("q")
    q.retrieved("retrieve", [_doc("b.py", 3, 4, 0.9), _doc("a.py", 1, 2, 0.8), _doc("b.py", 30, 40, 0.7)])
    q.answered("answer", "The model says see `zzz.py`.")
    ans = Answer.from_query(q)
    assert [s.path for s in ans.sources] == ["b.py", "a.py"]
    assert "zzz.py" not in [s.path for s in ans.sources]
    assert ans.sources[0].uri == "file:///ws/b.py#L3-L4"
    # a file's further documents are listed (and linked) under it, each with its own lines
    assert ans.markdown.endswith(
        "Sources:\n1. [b.py:3-4](file:///ws/b.py#L3-L4 \"codeask:{}\"), [30-40](file:///ws/b.py#L30-L40 \"codeask:{}\")\n"
        "2. [a.py:1-2](file:///ws/a.py#L1-L2 \"codeask:{}\")\n".format(
            *(span["anchor"]["hash"] for s in ans.sources for span in s.spans)
        )
    )
    assert [(x["start_line"], x["end_line"]) for x in ans.sources[0].spans] == [(3, 4), (30, 40)]


def test_parse_subquestions_keeps_bullets_only():
    text = "Here you go:\n- How does X work?\n* Where is Y set?\n1. What calls Z?\n- How does X work?\nnoise"
    assert parse_subquestions(text, "orig", 5) == ["How does X work?", "Where is Y set?", "What calls Z?"]
    assert parse_subquestions("- orig\n- other", "orig", 5) == ["other"]


def test_parse_subquestions_unwraps_what_small_models_add():
    """Qwen2.5-Coder-1.5B answered ``- - "Session management"``: nested markers, quotes, backticks and
    trailing commas are not part of a query; a bare JSON list of strings is read as the list."""
    text = '- - "Session management",\n* `extract_cookies_to_jar`\n1. - \'merge_cookies\';\nprose line'
    assert parse_subquestions(text, "orig", 5) == ["Session management", "extract_cookies_to_jar", "merge_cookies"]
    assert parse_subquestions('["Session.send", "cookiejar", "orig"]', "orig", 5) == ["Session.send", "cookiejar"]
    assert parse_subquestions('{"queries": ["x"]}', "orig", 5) == []


def _llm_workspace(root, fake_llm, provider):
    base = fake_llm.openai_base_url if provider == "openai" else fake_llm.anthropic_base_url
    return Workspace([root], editor={"llm": {"provider": provider, "baseUrl": base, "apiKey": "test-key"}})


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_ask_makes_subquestion_and_answer_calls_with_every_source_in_the_prompt(
    sample_workspace, fake_llm, provider
):
    ws = _llm_workspace(sample_workspace, fake_llm, provider)
    ws.index(embed=False)
    answer = ws.ask("How is the coupon discount applied to the cart total?")
    assert len(fake_llm.requests) == 2
    sub_prompt, answer_prompt = fake_llm.prompts()
    assert "search queries" in sub_prompt
    assert answer.subquestions == ["What calls it?", "Where is it configured?"]
    assert answer.answer == "FAKE ANSWER"
    assert answer.sources, "the sample workspace has matching code"
    for n, source in enumerate(answer.sources, 1):
        assert f"[{n}] {source.path}:" in answer_prompt
    # indexed without vectors: the markdown says so between the answer and the sources
    assert answer.index == {"state": "keyword-only", "files_indexed": 4, "vectors_pending": answer.index["vectors_pending"]}
    assert answer.markdown.startswith("FAKE ANSWER\n\n> **Index:** keyword search only")
    assert "\n\nSources:\n1. [" in answer.markdown
    assert answer.citations == 0.0 and answer.finish_reason == "stop" and not answer.truncated
    assert answer.llm.startswith(provider)


def test_empty_workspace_makes_no_answer_call(tmp_path, fake_llm):
    empty = tmp_path / "empty"
    empty.mkdir()
    ws = _llm_workspace(empty, fake_llm, "openai")
    ws.index()
    answer = ws.ask("Where is the main loop?")
    assert answer.sources == []
    assert answer.answer.startswith("Nothing in this workspace could be indexed: no files were found")
    assert not any("Snippets" in p for p in fake_llm.prompts())


def test_no_llm_answer_lists_ranked_sources_with_snippets(sample_workspace):
    ws = Workspace([sample_workspace], env={})
    ws.index(embed=False)
    answer = ws.ask("shipping cost for express delivery", no_llm=True)
    assert answer.llm is None
    assert answer.sources[0].path == "src/shop/shipping.py"
    assert "1. [src/shop/shipping.py:" in answer.answer and "express" in answer.answer


def test_failed_answer_call_still_returns_sources(sample_workspace, fake_llm):
    ws = _llm_workspace(sample_workspace, fake_llm, "openai")
    ws.index(embed=False)
    fake_llm.fail_next(401, "invalid api key", times=5)
    answer = ws.ask("coupon discount")
    assert answer.error and "401" in answer.error and "openai" in answer.error
    assert "test-key" not in answer.error
    assert answer.sources


@pytest.mark.parametrize(("option", "value"), [("top_k", "abc"), ("top_k", 0), ("max_files", -3), ("max_files", 2.5)])
def test_bad_top_k_or_max_files_is_an_error_naming_the_option(sample_workspace, option, value):
    ws = Workspace([sample_workspace], env={})
    ws.index(embed=False)
    with pytest.raises(ValueError, match=option):
        ws.ask("coupon", no_llm=True, **{option: value})
    assert ws.ask("coupon", no_llm=True, **{option: "3"}).sources  # digits as text are fine (LSP JSON)
