"""Issue 29: a graph neighbour of the best files competes for their places by its evidence.

A file the question needs ranked just past ``--max-files``: its words match the question less than
other files', but the best file calls the function it defines. The ``neighbours`` step
(:mod:`codeask.query.steps.neighbours`) fuses the graph neighbours of the first files as one more
ranking, so that file enters the files kept, saying why (``via``), while a file no edge reaches
keeps its place. Real parts: the engine indexing a temp workspace into LanceDB (the
``isolated_env`` cache) with its symbol graph, keyword-only, asked through the real pipeline.
"""

from __future__ import annotations

from pathlib import Path

from codeask.workspace import Workspace

QUESTION = "how does lease renewal work"


def workspace(root: Path) -> Path:
    """``src/lease.py`` renews through ``window_for`` of ``src/window.py`` (one question word);
    ``src/note_*.py`` repeat the question's words and link to nothing."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "lease.py").write_text(
        "from window import window_for\n\n\ndef lease_renewal(lease):\n"
        "    # lease renewal: extend the lease by its window\n    return lease.extend(window_for(lease))\n",
        encoding="utf-8",
    )
    (root / "src" / "window.py").write_text(
        "def window_for(record):\n    # how long a lease may run\n    return record.period * 2\n", encoding="utf-8"
    )
    for i in range(6):
        (root / "src" / f"note_{i}.py").write_text(
            f"def note_{i}(text):\n    # lease renewal notes, part {i}: renewal of a lease\n    return text\n",
            encoding="utf-8",
        )
    return root


def test_the_best_files_callee_enters_the_files_kept_and_says_why(tmp_path: Path) -> None:
    ws = Workspace([workspace(tmp_path / "ws")])
    ws.index(embed=False)
    answer = ws.ask(QUESTION, no_llm=True, max_files=5)
    paths = [s.path for s in answer.sources]
    assert paths[0] == "src/lease.py"
    assert "src/window.py" in paths  # ranked after the six notes by its words, in by the edge
    window = next(s for s in answer.sources if s.path == "src/window.py")
    assert window.via.startswith("calls window_for from src/lease.py")


def test_without_an_edge_the_retrieval_order_stands(tmp_path: Path) -> None:
    root = workspace(tmp_path / "ws")
    (root / "src" / "lease.py").write_text(
        "def lease_renewal(lease):\n    # lease renewal: extend the lease by its window\n    return lease.extend(2)\n",
        encoding="utf-8",
    )
    ws = Workspace([root])
    ws.index(embed=False)
    paths = [s.path for s in ws.ask(QUESTION, no_llm=True, max_files=5).sources]
    assert paths[0] == "src/lease.py"
    assert "src/window.py" not in paths
    assert all(p.startswith("src/note_") for p in paths[1:])
