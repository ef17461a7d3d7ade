"""The one service under the front doors (:mod:`codeask.service`): typed requests checked once, one
readiness through a real background index, explain's refusals, ordered stop."""

from __future__ import annotations

import time

import pytest

from codeask.service import (
    AskRequest,
    ExplainRequest,
    NotExplainable,
    QuestionError,
    Service,
)


def test_requests_are_checked_once_when_made(sample_workspace):
    service = Service([sample_workspace], background_indexing=False)
    limit = service.settings.retrieval.max_question_chars
    request = service.ask_request("  where is the coupon applied?  ", top_k="5", max_files=3, path_glob=" src/** ")
    assert (request.question, request.top_k, request.max_files, request.path_glob) == (
        "where is the coupon applied?",
        5,
        3,
        "src/**",
    )
    assert request.max_question_chars == limit
    with pytest.raises(QuestionError, match="empty"):
        service.ask_request("   ")
    with pytest.raises(QuestionError, match=f"limit is {limit:,}"):
        AskRequest("x" * (limit + 1), limit)
    for bad in ({"top_k": 0}, {"max_files": "+5"}, {"top_k": True}):
        with pytest.raises(ValueError, match=r"top_k|max_files"):
            service.ask_request("coupon", **bad)
    with pytest.raises(ValueError, match="path_glob"):
        service.ask_request("coupon", path_glob="src/[z-a].py")
    with pytest.raises(ValueError, match="absolute"):
        ExplainRequest("src/shop/cart.py", 1, 2)
    with pytest.raises(ValueError, match="before start_line"):
        ExplainRequest(str(sample_workspace / "src/shop/cart.py"), 5, 2)


def test_readiness_through_a_background_index_and_an_ordered_stop(sample_workspace):
    service = Service([sample_workspace])
    before = service.status()
    assert before.state == "not-indexed" and before.counts["files"] == 0 and not before.indexing
    assert before.to_json()["state"] == "not-indexed" and "roots" in before.to_json()
    service.start_indexing(watch=True)
    assert service.wait_searchable(timeout=120)
    deadline = time.monotonic() + 120
    while service.status().state != "ready" and time.monotonic() < deadline:
        time.sleep(0.1)
    status = service.status()
    assert status.state == "ready" and status.counts["files"] > 0 and status.counts["vectors_pending"] == 0, status
    answer = service.ask(service.ask_request("shipping cost for express delivery", no_llm=True))
    assert answer.sources and answer.to_json()["index"]["state"] == "ready"
    assert service.search("apply_discount").sources[0].path.endswith(".py")
    assert service.stop(10.0)
    assert service.status().activity == "stopped"


def test_explain_refusals_come_from_the_service(sample_workspace):
    service = Service([sample_workspace], background_indexing=False)
    (sample_workspace / ".env").write_text("API_KEY=abc123\n", encoding="utf-8")
    secret = ExplainRequest(str(sample_workspace / ".env"), 1, 1)
    with pytest.raises(NotExplainable, match="secret"):
        service.check_explain(secret)
    cart = sample_workspace / "src" / "shop" / "cart.py"
    text = cart.read_text(encoding="utf-8") + "\n\n\n"
    blank = ExplainRequest(str(cart), len(text.splitlines()) - 1, len(text.splitlines()), text=text)
    with pytest.raises(NotExplainable, match="nothing to explain") as refused:
        service.check_explain(blank)
    assert refused.value.reason == "blank"
    service.index()
    explained = service.explain(ExplainRequest(str(cart), 1, 3, no_llm=True))
    assert explained.selection is not None and explained.selection.start_line == 1 and explained.llm is None
    hover = service.explain(ExplainRequest(str(cart), 2, 2, word="apply_discount", brief=True, no_llm=True))
    assert hover.selection is not None and hover.selection.symbol.endswith("apply_discount"), hover.selection


def test_one_status_answers_the_cli_and_the_watch_socket(sample_workspace, capsys):
    import json

    from codeask.cli import main
    from codeask.resident import AskServer

    service = Service([sample_workspace], background_indexing=False)
    service.index(embed=False)  # keyword phase only: vectors wait
    reply = AskServer(service).answer({"kind": "status"})
    assert reply["ok"] and reply["status"] == service.status().to_json()
    assert reply["status"]["state"] == "keyword-only" and reply["status"]["vectors_pending"] > 0
    assert main(["status", str(sample_workspace), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["state"] == "keyword-only" and printed["files"] == reply["status"]["files"]
