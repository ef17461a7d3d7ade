"""Every built-in prompt, rendered with a fixed question and fixed documents, equals its checked-in
snapshot (``tests/snapshots/prompts/*.txt``), so a template or prompt-builder change is a reviewed diff.

Prompts are built by the steps that send them (``SimpleAnswer.prompt``, ``Summary.prompt``,
``ExplainAnswer.prompt``) where a step has a prompt method; ``subquestions`` and ``rerank`` are
rendered with the arguments their steps pass. After an intended change, regenerate with
``CODEASK_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_prompt_snapshots.py`` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeask.query.answer import SimpleAnswer
from codeask.query.explain import Span
from codeask.query.options import ExplainSelection, RetrievalOptions
from codeask.query.pipeline import Document, Query
from codeask.query.steps.explain_answer import ExplainAnswer
from codeask.query.steps.summary import Summary
from codeask.query.templates import Templates, render_documents
from codeask.settings import load_settings

SNAPSHOTS = Path(__file__).parent / "snapshots" / "prompts"
QUESTION = "How is the shipping cost computed for express orders?"
ROOT = "/work/shop"

DOCUMENTS = [
    Document(
        path="src/shop/shipping.py",
        root=ROOT,
        start_line=10,
        end_line=16,
        symbol="shipping_cost",
        language="python",
        content=(
            "def shipping_cost(order, express=False):\n"
            '    """Cost of shipping ``order``, in cents."""\n'
            "    base = 500 if order.weight_kg < 2 else 900\n"
            "    if express:\n"
            "        base *= 2\n"
            "    return base\n"
        ),
        score=0.031,
        id="a" * 32,
    ),
    Document(
        path="src/shop/orders.py",
        root=ROOT,
        start_line=1,
        end_line=4,
        symbol="Order",
        language="python",
        content="@dataclass\nclass Order:\n    weight_kg: float\n    express: bool = False\n",
        score=0.016,
        id="b" * 32,
    ),
]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    settings = load_settings(None, env={}, user_config=tmp_path_factory.mktemp("config") / "none.toml")
    return settings, Templates(settings)


def _query() -> Query:
    query = Query(QUESTION)
    query.retrieved("retrieve", DOCUMENTS)
    return query


def _explain_query() -> tuple[Query, Document]:
    doc = DOCUMENTS[0]
    span = Span(
        path=doc.path,
        root=ROOT,
        abs_path=f"{ROOT}/{doc.path}",
        start_line=doc.start_line,
        end_line=doc.end_line,
        text=doc.content,
        symbol=doc.symbol,
        language=doc.language,
        definition=True,
    )
    query = Query(f"explain {span.label}", options=RetrievalOptions(selection=ExplainSelection(span)))
    query.retrieved("related", DOCUMENTS[1:])
    return query, doc


def _prompts(settings, templates) -> dict[str, str]:
    query = _query()
    explain_query, selection = _explain_query()
    explain = ExplainAnswer(None, templates, settings, brief=False)  # type: ignore[arg-type]
    brief = ExplainAnswer(None, templates, settings, brief=True)  # type: ignore[arg-type]
    return {
        "system": templates.system,
        "subquestions": templates.render("subquestions", question=QUESTION, num_questions=3),
        "answer": SimpleAnswer(None, templates, settings).prompt(query, list(DOCUMENTS)),  # type: ignore[arg-type]
        "document": render_documents(templates, list(DOCUMENTS)),
        "rerank": templates.render("rerank", content=DOCUMENTS[0].content, metadata=DOCUMENTS[0].metadata),
        "summary": Summary(None, templates, settings).prompt(query, list(DOCUMENTS)),  # type: ignore[arg-type]
        "explain": explain.prompt(explain_query, selection, list(DOCUMENTS[1:])),
        "explain_brief": brief.prompt(explain_query, selection, list(DOCUMENTS[1:])),
    }


NAMES = ["system", "subquestions", "answer", "document", "rerank", "summary", "explain", "explain_brief"]


@pytest.mark.parametrize("name", NAMES)
def test_prompt_matches_its_snapshot(setup, name):
    settings, templates = setup
    rendered = _prompts(settings, templates)[name]
    snapshot = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("CODEASK_UPDATE_SNAPSHOTS"):
        snapshot.parent.mkdir(parents=True, exist_ok=True)
        snapshot.write_text(rendered, encoding="utf-8")
    assert snapshot.is_file(), f"no snapshot {snapshot}: run with CODEASK_UPDATE_SNAPSHOTS=1 and review it"
    assert rendered == snapshot.read_text(encoding="utf-8")


def test_every_built_in_template_has_a_snapshot():
    from importlib import resources

    built_in = {p.name.removesuffix(".j2") for p in resources.files("codeask.templates").iterdir() if p.name.endswith(".j2")}
    assert built_in <= set(NAMES), built_in - set(NAMES)


def test_snapshots_see_the_inputs(setup):
    """The prompts hold the question and the documents' text and locations (the snapshots are of real prompts)."""
    prompts = _prompts(*setup)
    for name in ("answer", "summary"):
        assert QUESTION in prompts[name] and "base *= 2" in prompts[name] and "src/shop/orders.py" in prompts[name]
    assert "shipping_cost" in prompts["explain"] and "class Order" in prompts["explain"]
    assert prompts["explain"] != prompts["explain_brief"]
