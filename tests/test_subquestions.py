"""Subquestions that add search terms: paraphrases of the question or of each other are dropped.

The model is the fake LLM server driven through the real ``openai`` client; similarities come from
the real built-in embedding model. The pairs below are also where ``SUBQUESTION_SIMILARITY``
comes from (see its docstring in codeask/query/steps/subquestions.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from codeask.query.pipeline import Query
from codeask.workspace import Workspace

QUESTION = "How are cookies persisted across requests in a Session?"
PARAPHRASES = [
    "How does a Session keep cookies between requests?",
    "How are cookies stored across requests in a session object?",
    "Where are session cookies saved between requests?",
]
ADDS_TERMS = [
    "merge_cookies RequestsCookieJar",
    "extract_cookies_to_jar response cookies",
    "Session.prepare_request merges session cookies",
]
# the model writes a paraphrase first, then a query, a paraphrase of the paraphrase, two more queries
REPLY = "\n".join(
    f"- {q}" for q in [PARAPHRASES[0], ADDS_TERMS[0], PARAPHRASES[1], ADDS_TERMS[1], PARAPHRASES[2], ADDS_TERMS[2]]
)


# another question's paraphrases and term-adding queries, for the threshold's calibration only
AUTH = "What happens to the Authorization header when a redirect goes to another host?"
AUTH_PARAPHRASES = [
    "What happens to the Authorization header on a redirect to a different host?",
    "Is the Authorization header removed when redirected to another domain?",
]
AUTH_ADDS_TERMS = ["rebuild_auth should_strip_auth", "resolve_redirects Location header", "SessionRedirectMixin"]


def test_the_default_threshold_separates_paraphrases_from_queries_that_add_terms():
    """Where ``SUBQUESTION_SIMILARITY`` comes from, checked against the built-in model."""
    from codeask.index.embed import load_embedder
    from codeask.query.steps.subquestions import SUBQUESTION_SIMILARITY
    from codeask.settings import load_settings

    embedder = load_embedder(load_settings(None, env={}).embedding)
    threshold = SUBQUESTION_SIMILARITY

    def cosine(a, b):
        u, v = embedder.embed([a, b])
        return float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)))

    for question, paraphrases, adds in ((QUESTION, PARAPHRASES, ADDS_TERMS), (AUTH, AUTH_PARAPHRASES, AUTH_ADDS_TERMS)):
        assert all(cosine(question, p) >= threshold for p in paraphrases)
        assert all(cosine(question, q) < threshold for q in adds)
        assert all(cosine(a, b) < threshold for a in adds for b in adds if a != b)
    assert cosine(PARAPHRASES[1], PARAPHRASES[2]) >= threshold  # paraphrases of each other


def _pipeline(root, fake_llm, **llm):
    fake_llm.responder = lambda request: REPLY if "search queries" in str(request.get("messages")) else "FAKE ANSWER"
    ws = Workspace(
        [root],
        editor={"llm": {"provider": "openai", "baseUrl": fake_llm.openai_base_url, "apiKey": "k", **llm}},
    )
    return ws, ws.build_pipeline(llm=ws.llm())


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "sessions.py").write_text("def merge_cookies(jar, cookies):\n    jar.update(cookies)\n", encoding="utf-8")
    return root


def test_paraphrases_of_the_question_or_each_other_are_dropped_and_the_best_distinct_kept(workspace, fake_llm):
    _, pipeline = _pipeline(workspace, fake_llm)
    step = pipeline.query_transformers[0]
    assert step.name == "subquestions"
    query = step(Query(QUESTION))
    assert query.subquestions == ADDS_TERMS  # three slots, all to queries that add terms, in the model's order
    assert query.search_texts == [QUESTION, *ADDS_TERMS]
    dropped = query.history[-1].data["dropped"]
    assert [d["query"] for d in dropped] == PARAPHRASES
    assert all(d["similarity"] >= step.max_similarity for d in dropped)
    assert all(d["like"] in (QUESTION, *PARAPHRASES) for d in dropped)
    assert "Write 6 search queries" in fake_llm.prompts()[0]  # twice the kept number is asked for


def test_the_similarity_threshold_is_the_steps_parameter(workspace, fake_llm):
    _, pipeline = _pipeline(workspace, fake_llm)
    step = pipeline.query_transformers[0]
    step.max_similarity = 1.0
    query = step(Query(QUESTION))
    assert query.subquestions == [PARAPHRASES[0], ADDS_TERMS[0], PARAPHRASES[1]]  # nothing counts as a paraphrase


def test_an_ask_searches_the_distinct_queries(workspace, fake_llm):
    ws, _ = _pipeline(workspace, fake_llm)
    ws.index()
    answer = ws.ask(QUESTION)
    assert answer.subquestions == ADDS_TERMS
    assert answer.answer == "FAKE ANSWER"
