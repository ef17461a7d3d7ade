"""Issue 29: a file no search found enters the kept files through the whole of the best file's links.

On the multi-file development set, most needed files missing from the top 10 were never among the
files retrieved (r31's report: 64 of 109 on the how-questions), and the graph was followed only from
each best file's best chunk. The ``neighbours`` step (:mod:`codeask.query.steps.neighbours`) now
also links the whole of the first files (:func:`codeask.query.graph.file_links`): a module that uses
a definition the best chunk does not hold is a candidate, ranked with the retrieved files by one
score, and says why it came (``via``). Real parts: the engine indexing a temp workspace into
LanceDB (the ``isolated_env`` cache) with its symbol graph, keyword-only, asked through the real
pipeline.
"""

from __future__ import annotations

from pathlib import Path

from codeask.workspace import Workspace

QUESTION = "how does lease renewal work"


def _function(name: str, comment: str, lines: int = 36) -> str:
    """A Python function ``name`` of about ``lines`` lines (two of them fill a 60-line chunk)."""
    body = "".join(f"    total = total + {i}\n" for i in range(lines))
    return f"def {name}(record):\n    # {comment}\n    total = record.start\n{body}    return total\n\n\n"


def workspace(root: Path) -> Path:
    """``src/lease.py``: ``lease_renewal`` (the question's words) and ``settle_ledger`` (none), each
    its own chunk; ``src/billing.py`` calls ``settle_ledger`` and shares no word with the question;
    ``src/other.py`` links to nothing; two notes repeat the question's words."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "lease.py").write_text(
        _function("lease_renewal", "lease renewal: how a lease renewal works, extend the lease")
        + _function("settle_ledger", "close the books"),
        encoding="utf-8",
    )
    (root / "src" / "billing.py").write_text(
        "def invoice(account):\n    return settle_ledger(account)\n",
        encoding="utf-8",
    )
    (root / "src" / "other.py").write_text("def unrelated(account):\n    return account.id\n", encoding="utf-8")
    for i in range(2):
        (root / "src" / f"note_{i}.py").write_text(
            f"def note_{i}(text):\n    # lease renewal notes, part {i}: renewal of a lease\n    return text\n",
            encoding="utf-8",
        )
    return root


def test_a_module_using_the_best_files_other_definition_enters_and_says_why(tmp_path: Path) -> None:
    ws = Workspace([workspace(tmp_path / "ws")])
    ws.index(embed=False)
    answer = ws.ask(QUESTION, no_llm=True, max_files=5)
    paths = [s.path for s in answer.sources]
    assert paths[0] == "src/lease.py"
    assert "src/billing.py" in paths  # no word of the question: linked by settle_ledger, not its best chunk's
    assert "src/other.py" not in paths  # no word, no link
    billing = next(s for s in answer.sources if s.path == "src/billing.py")
    assert billing.via.startswith("caller of settle_ledger in src/lease.py:")
    assert billing.symbol == "invoice"


def test_a_linked_file_outside_the_path_glob_stays_out(tmp_path: Path) -> None:
    ws = Workspace([workspace(tmp_path / "ws")])
    ws.index(embed=False)
    answer = ws.ask(QUESTION, no_llm=True, max_files=5, path_glob="src/[ln]*.py")
    assert answer.sources[0].path == "src/lease.py"
    assert {s.path for s in answer.sources} == {"src/lease.py", "src/note_0.py", "src/note_1.py"}
