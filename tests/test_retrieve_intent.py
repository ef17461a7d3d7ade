"""Issue 29: a question that speaks of a test or of the examples gets them ranked as code.

Tests and examples rank at :data:`~codeask.query.steps.priors.DOWNWEIGHT_FACTOR` (half) of their
fused score, unless the question asks for that kind (:func:`codeask.query.intent.question_intent`).
Repository-QA how-questions name the test they ask about in the singular ("the test function that
checks ...", "the ``TestLease`` class", ``test_renewal``) and commit messages the examples they
changed ("building the examples"); only "the tests" and "test files" lifted tests before, so the
test such a question is about ranked below every source file that matched at all. Real parts: the
engine indexing a temp workspace into LanceDB (the ``isolated_env`` cache), keyword-only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codeask.workspace import Workspace

WORDS = "lease renewal after expiry and heartbeat"


def workspace(root: Path) -> Path:
    """``src/ledger.py`` names two of :data:`WORDS`; ``tests/test_ledger.py`` and
    ``examples/renew.py`` name all of them."""
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "examples").mkdir()
    (root / "src" / "ledger.py").write_text(
        "def renew(record):\n    # the lease of a record\n    record.lease += 1\n    return record\n", encoding="utf-8"
    )
    (root / "tests" / "test_ledger.py").write_text(
        "def test_renew(ledger):\n    # lease renewal after expiry: the heartbeat renews the lease\n"
        "    assert ledger.renew(lease_after_expiry(heartbeat=True)).lease == 2\n",
        encoding="utf-8",
    )
    (root / "examples" / "renew.py").write_text(
        "# lease renewal after expiry: a heartbeat loop renews the lease\n"
        "for tick in heartbeat():\n    ledger.renew(lease_after_expiry(tick))\n",
        encoding="utf-8",
    )
    return root


def ranked(ws: Workspace, question: str) -> list[str]:
    return [s.path for s in ws.ask(question, no_llm=True, max_files=3).sources]


@pytest.mark.parametrize(
    ("question", "first"),
    [
        (f"What does the test function that checks {WORDS} assert?", "tests/test_ledger.py"),
        (f"How does TestLedger check {WORDS}?", "tests/test_ledger.py"),
        (f"Which case of test_renew covers {WORDS}?", "tests/test_ledger.py"),
        (f"Show {WORDS} in the examples", "examples/renew.py"),
    ],
)
def test_a_question_about_a_test_or_the_examples_ranks_them_as_code(tmp_path: Path, question: str, first: str) -> None:
    ws = Workspace([workspace(tmp_path / "ws")])
    ws.index(embed=False)
    assert ranked(ws, question)[0] == first


def test_a_question_that_does_not_speak_of_them_ranks_the_source_first(tmp_path: Path) -> None:
    ws = Workspace([workspace(tmp_path / "ws")])
    ws.index(embed=False)
    paths = ranked(ws, f"How is {WORDS} handled, for example when a record lapses?")
    assert paths[0] == "src/ledger.py"  # tests and examples still rank at half: "for example" asks for none
    assert set(paths) == {"src/ledger.py", "tests/test_ledger.py", "examples/renew.py"}
