"""Issue 29: the files ``expand`` adds take the places of retrieved files the graph does not reach.

``expand`` (:mod:`codeask.query.steps.expand`) adds files one graph hop from the first five; at
``--max-files`` they take the places of the weakest retrieved files. It dropped the weakest by rank
alone, so a retrieved file that the best file calls (words *and* a link) went before a file that
only matched a word more; now retrieved files no edge from a seed reaches go first. Real parts: the
engine indexing a temp workspace into LanceDB (the ``isolated_env`` cache) with its symbol graph,
keyword-only, asked through the real pipeline with ``one_per_file`` and ``expand`` only (the
``neighbours`` step, which moves the best files' neighbours up before, is left out so the
places ``expand`` chooses are seen alone).
"""

from __future__ import annotations

from pathlib import Path

from codeask.workspace import Workspace

QUESTION = "how does lease renewal work"


def workspace(root: Path) -> Path:
    """``src/lease.py`` calls ``window_for`` (``src/window.py``: one question word) and ``tick``
    (``src/clock.py``: none); ``src/weak.py`` (two question words) and four notes link to nothing."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "lease.py").write_text(
        "from clock import tick\nfrom window import window_for\n\n\ndef lease_renewal(lease):\n"
        "    # lease renewal: how the renewal of a lease works, lease renewal\n"
        "    tick()\n    return lease.extend(window_for(lease))\n",
        encoding="utf-8",
    )
    (root / "src" / "window.py").write_text(
        "def window_for(record):\n    # how long a lease may run\n    return record.period * 2\n", encoding="utf-8"
    )
    (root / "src" / "clock.py").write_text("def tick():\n    return 1\n", encoding="utf-8")
    (root / "src" / "weak.py").write_text(
        "def weak(text):\n    # a lease and its renewal\n    return text\n", encoding="utf-8"
    )
    for i in range(4):
        (root / "src" / f"note_{i}.py").write_text(
            f"def note_{i}(text):\n    # lease renewal notes {i}: lease renewal, the renewal of a lease\n"
            "    return text\n",
            encoding="utf-8",
        )
    return root


def test_the_added_file_takes_the_place_of_a_file_no_edge_reaches(tmp_path: Path) -> None:
    ws = Workspace(
        [workspace(tmp_path / "ws")],
        flags={"retrieval.expand_files": 1, "pipeline.response_transformers": ["one_per_file", "expand"]},
    )
    ws.index(embed=False)
    paths = [s.path for s in ws.ask(QUESTION, no_llm=True, max_files=7).sources]
    assert paths[0] == "src/lease.py"
    assert paths[-1] == "src/clock.py"  # added along the call to tick
    assert "src/window.py" in paths  # called by the best file: kept
    assert "src/weak.py" not in paths  # matched more words, but nothing links it: its place went
