"""Issue 29: ``expand`` ranks a test as code when the question asks about one.

``expand`` adds files one graph hop from the best ones (:mod:`codeask.query.steps.expand`), tests
at :data:`~codeask.query.steps.priors.DOWNWEIGHT_FACTOR` (half) of their graph score. It halved them
by path alone, so a question that speaks of a test ("which test checks ...") still got the best
file's other caller before the test that calls it; retrieval had already stopped halving tests for such
a question (:func:`codeask.query.intent.question_intent`), and now ``expand`` reads the same rule
(:meth:`~codeask.query.steps.retrieve.HybridRetrieve.downweighted_for`). Real parts: the engine
indexing a temp workspace into LanceDB (the ``isolated_env`` cache) with its symbol graph,
keyword-only, asked through the real pipeline.
"""

from __future__ import annotations

from pathlib import Path

from codeask.workspace import Workspace

WORDS = "a lease renewal works"
NOTES = 24


def workspace(root: Path) -> Path:
    """``src/lease.py`` (the question's words) defines ``prolong``, which ``src/scheduler.py`` and
    ``tests/test_prolong.py`` call; neither names the question's
    words, and :data:`NOTES` notes that name them all, and "test" (linked to nothing), fill retrieval's places."""
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "lease.py").write_text(
        "def prolong(lease):\n"
        "    # which test checks how a lease renewal works: a lease renewal extends the lease renewal term\n"
        "    return lease.period * 2\n",
        encoding="utf-8",
    )
    (root / "src" / "scheduler.py").write_text(
        "from lease import prolong\n\n\ndef tick(record):\n    return prolong(record)\n", encoding="utf-8"
    )
    (root / "tests" / "test_prolong.py").write_text(
        "from lease import prolong\n\n\ndef test_prolong(record):\n    assert prolong(record) == 4\n",
        encoding="utf-8",
    )
    for i in range(NOTES):
        (root / "src" / f"note_{i}.py").write_text(
            f"def note_{i}(text):\n    # lease renewal notes {i}: how a renewal of a lease works, which test checks it\n"
            "    return text\n",
            encoding="utf-8",
        )
    return root


def added(question: str, root: Path) -> dict[str, str]:
    """``{path: via}`` of the files ``expand`` added (one at most) for ``question``, six files kept."""
    ws = Workspace([root], flags={"retrieval.expand_files": 1})
    ws.index(embed=False)
    answer = ws.ask(question, no_llm=True, max_files=6)
    assert answer.sources[0].path == "src/lease.py"
    return {s.path: s.via for s in answer.sources if s.via}


def test_a_question_about_a_test_gets_the_test_that_calls_the_best_file(tmp_path: Path) -> None:
    found = added(f"Which test checks how {WORDS}?", workspace(tmp_path / "ws"))
    assert list(found) == ["tests/test_prolong.py"]
    assert "prolong" in found["tests/test_prolong.py"]


def test_a_question_that_does_not_speak_of_tests_gets_the_source_caller_first(tmp_path: Path) -> None:
    found = added(f"How does {WORDS}?", workspace(tmp_path / "ws"))
    assert list(found) == ["src/scheduler.py"]  # the test, as sure a caller, ranks at half
    assert "prolong" in found["src/scheduler.py"]
