"""Issue 29: the graph ranking ranks a test as code when the question asks about one.

The ``neighbours`` step brings in files one graph hop from the best ones
(:mod:`codeask.query.steps.neighbours`), a test's graph gain at
:data:`~codeask.query.steps.priors.DOWNWEIGHT_FACTOR` (half) unless the question speaks of a test
("which test checks ..."), the rule retrieval reads
(:meth:`~codeask.query.steps.retrieve.HybridRetrieve.downweighted_for`): a question about a test
ranks the test that calls the best file before the source caller, another question the source
caller first. Real parts: the engine indexing a temp workspace into LanceDB (the
``isolated_env`` cache) with its symbol graph, keyword-only, asked through the real pipeline.
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


def linked_order(question: str, root: Path) -> list[str]:
    """The best file's two callers in the order ``question``'s sources rank them (every file kept)."""
    ws = Workspace([root])
    ws.index(embed=False)
    answer = ws.ask(question, no_llm=True, max_files=NOTES + 3)
    assert answer.sources[0].path == "src/lease.py"
    return [s.path for s in answer.sources if s.path in {"tests/test_prolong.py", "src/scheduler.py"}]


def test_a_question_about_a_test_ranks_the_test_that_calls_the_best_file_first(tmp_path: Path) -> None:
    order = linked_order(f"Which test checks how {WORDS}?", workspace(tmp_path / "ws"))
    assert order == ["tests/test_prolong.py", "src/scheduler.py"]


def test_a_question_that_does_not_speak_of_tests_ranks_the_source_caller_first(tmp_path: Path) -> None:
    order = linked_order(f"How does {WORDS}?", workspace(tmp_path / "ws"))
    assert order == ["src/scheduler.py", "tests/test_prolong.py"]  # the test, as sure a caller, gains half
