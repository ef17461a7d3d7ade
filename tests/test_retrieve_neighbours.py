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

from codeask.query.options import RetrievalOptions
from codeask.query.pipeline import Query
from codeask.query.result import Answer, Source
from codeask.workspace import Workspace
from tests.workspaces import write_tree

QUESTION = "how does lease renewal work"


def _asked(root: Path, **options: str) -> Answer:
    """QUESTION asked of ``root`` indexed keyword-only, five files kept, no LLM."""
    ws = Workspace([root])
    ws.index(embed=False)
    return ws.ask(QUESTION, no_llm=True, max_files=5, **options)


def _entered(answer: Answer, path: str) -> Source:
    """The source of ``path`` among ``answer``'s, which the best file ``src/lease.py`` leads."""
    paths = [s.path for s in answer.sources]
    assert paths[0] == "src/lease.py"
    assert path in paths, paths
    return answer.sources[paths.index(path)]


def _notes(n: int) -> dict[str, str]:
    """``n`` files ``src/note_<i>.py`` that repeat the question's words and link to nothing."""
    return {
        f"src/note_{i}.py": f"def note_{i}(text):\n    # lease renewal notes, part {i}: renewal of a lease\n    return text\n"
        for i in range(n)
    }


def workspace(root: Path) -> Path:
    """``src/lease.py`` renews through ``window_for`` of ``src/window.py`` (one question word);
    ``src/note_*.py`` repeat the question's words and link to nothing."""
    files = {
        "src/lease.py": (
            "from window import window_for\n\n\ndef lease_renewal(lease):\n"
            "    # lease renewal: extend the lease by its window\n    return lease.extend(window_for(lease))\n"
        ),
        "src/window.py": "def window_for(record):\n    # how long a lease may run\n    return record.period * 2\n",
    }
    return write_tree(root, files | _notes(6))


def test_the_best_files_callee_enters_the_files_kept_and_says_why(tmp_path: Path) -> None:
    window = _entered(_asked(workspace(tmp_path / "ws")), "src/window.py")  # after the six notes by its words
    assert window.via.startswith("calls window_for from src/lease.py")


def test_without_an_edge_the_retrieval_order_stands(tmp_path: Path) -> None:
    root = workspace(tmp_path / "ws")
    (root / "src" / "lease.py").write_text(
        "def lease_renewal(lease):\n    # lease renewal: extend the lease by its window\n    return lease.extend(2)\n",
        encoding="utf-8",
    )
    paths = [s.path for s in _asked(root).sources]
    assert paths[0] == "src/lease.py"
    assert "src/window.py" not in paths
    assert all(p.startswith("src/note_") for p in paths[1:])


# Whole-file links: a module that uses a definition the best chunk does not hold enters too
# (:func:`codeask.query.graph.file_links`): most needed files missing from the top 10 were never retrieved.


def _function(name: str, comment: str, lines: int = 36) -> str:
    """A Python function ``name`` of about ``lines`` lines (two of them fill a 60-line chunk)."""
    body = "".join(f"    total = total + {i}\n" for i in range(lines))
    return f"def {name}(record):\n    # {comment}\n    total = record.start\n{body}    return total\n\n\n"


def whole_file_workspace(root: Path) -> Path:
    """``src/lease.py``: ``lease_renewal`` (the question's words) and ``settle_ledger`` (none), each
    its own chunk; ``src/billing.py`` calls ``settle_ledger`` and shares no word with the question;
    ``src/other.py`` links to nothing; two notes repeat the question's words."""
    files = {
        "src/lease.py": (
            _function("lease_renewal", "lease renewal: how a lease renewal works, extend the lease")
            + _function("settle_ledger", "close the books")
        ),
        "src/billing.py": "def invoice(account):\n    return settle_ledger(account)\n",
        "src/other.py": "def unrelated(account):\n    return account.id\n",
    }
    return write_tree(root, files | _notes(2))


def test_a_module_using_the_best_files_other_definition_enters_and_says_why(tmp_path: Path) -> None:
    answer = _asked(whole_file_workspace(tmp_path / "ws"))
    billing = _entered(answer, "src/billing.py")  # no word of the question: linked by settle_ledger
    assert "src/other.py" not in [s.path for s in answer.sources]  # no word, no link
    assert billing.via.startswith("caller of settle_ledger in src/lease.py:")
    assert billing.symbol == "invoice"


def test_a_linked_file_outside_the_path_glob_stays_out(tmp_path: Path) -> None:
    answer = _asked(whole_file_workspace(tmp_path / "ws"), path_glob="src/[ln]*.py")
    assert answer.sources[0].path == "src/lease.py"
    assert {s.path for s in answer.sources} == {"src/lease.py", "src/note_0.py", "src/note_1.py"}


def packed_workspace(root: Path) -> Path:
    """``src/lease.py``: ``lease_renewal`` (the question's words) fills a chunk; ``tiny`` and
    ``settle_ledger`` share the next one (``tiny`` first). ``src/billing.py`` calls ``settle_ledger``
    from ``invoice``, its second definition; ``tests/test_guess.py`` calls a ``settle_ledger`` of a
    fixture (by the name only); two notes repeat the
    question's words."""
    files = {
        "src/lease.py": (
            _function("lease_renewal", "lease renewal: how a lease renewal works, extend the lease", 56)
            + "def tiny(record):\n    return record\n\n\n"
            + _function("settle_ledger", "close the books", 8)
        ),
        "src/billing.py": (
            "def header(account):\n    return account.name\n\n\ndef invoice(account):\n    return settle_ledger(account)\n"
        ),
        "tests/test_guess.py": "def test_close(conn):\n    assert conn.settle_ledger() == 0\n",
    }
    return write_tree(root, files | _notes(2))


def test_a_whole_file_link_cites_the_using_definition_and_the_defined_line(tmp_path: Path) -> None:
    root = packed_workspace(tmp_path / "ws")
    defined = (
        root.joinpath("src", "lease.py").read_text(encoding="utf-8").splitlines().index("def settle_ledger(record):")
    )
    billing = _entered(_asked(root), "src/billing.py")
    assert (billing.symbol, billing.start_line, billing.end_line) == ("invoice", 5, 6)  # not the chunk from header
    assert billing.via == f"caller of settle_ledger in src/lease.py:{defined + 1}"  # not tiny's line, the chunk's start


def test_a_name_only_link_into_a_test_is_not_followed_a_sure_one_is(tmp_path: Path) -> None:
    root = packed_workspace(tmp_path / "ws")
    paths = [s.path for s in _asked(root).sources]
    assert "src/billing.py" in paths and "tests/test_guess.py" not in paths  # conn.settle_ledger(): the name only
    # a bare call of the project's only settle_ledger is a sure use
    (root / "tests" / "test_ledger.py").write_text(
        "def test_settle(record):\n    assert settle_ledger(record) == 0\n",
        encoding="utf-8",
    )
    assert _entered(_asked(root), "tests/test_ledger.py").via.startswith("caller of settle_ledger")


def test_the_files_past_the_first_three_score_no_higher_than_the_third(tmp_path: Path) -> None:
    root = packed_workspace(tmp_path / "ws")
    (root / "src" / "renewal.py").write_text(  # fewer of the question's words than the notes, linked by a sure call
        "def renew(record):\n    # renewal\n    return settle_ledger(record)\n", encoding="utf-8"
    )
    answer = _asked(root)
    files = list(dict.fromkeys(s.path for s in answer.sources))
    best = {path: max(s.score for s in answer.sources if s.path == path) for path in files}
    assert files.index("src/renewal.py") >= 3
    assert [best[p] for p in files] == sorted(best.values(), reverse=True), best


def test_a_retrieved_span_beside_the_linked_definition_does_not_say_it_is_the_link(tmp_path: Path) -> None:
    root = packed_workspace(tmp_path / "ws")
    billing = (
        _function("header", "lease renewal of a lease", 56)
        + "def invoice(account):\n    return settle_ledger(account)\n"
    )
    write_tree(root, {"src/billing.py": billing} | _notes(6))  # header: the question's words, its own chunk
    sources = [s for s in _asked(root).sources if s.path == "src/billing.py"]
    assert sources and all(s.via == "" for s in sources if s.symbol == "header")  # header calls no settle_ledger
    assert all(s.via.startswith("caller of settle_ledger") for s in sources if s.symbol == "invoice")


def utility_workspace(root: Path) -> Path:
    """``whole_file_workspace``, its ``src/lease.py`` also defining ``log_event`` and ``audit_entry``,
    which five modules ``src/mod_<i>.py`` call (no word of the question); ``src/billing.py`` alone calls
    ``settle_ledger``."""
    write_tree(
        root, {f"src/mod_{i}.py": f"def step_{i}(x):\n    log_event(x)\n    return audit_entry(x)\n" for i in range(5)}
    )
    lease = root / "src" / "lease.py"
    helpers = "def log_event(x):\n    return x\n\n\ndef audit_entry(x):\n    return x\n"
    lease.write_text(lease.read_text(encoding="utf-8") + helpers, encoding="utf-8")
    return root


def test_a_file_alone_using_a_best_files_name_outranks_the_many_users_of_its_utilities(tmp_path: Path) -> None:
    root = whole_file_workspace(tmp_path / "ws")
    answer = _asked(utility_workspace(root))  # five places: lease.py, two notes, two linked files
    paths = [s.path for s in answer.sources]
    # two names each, but each used by five files: they link each of them by a fifth
    assert paths.index("src/billing.py") == 3, paths


def two_callees_workspace(root: Path) -> Path:
    """``src/lease.py`` (the question's words) calls ``window_for`` and ``grace_for``, each defined
    alone in a file that shares no word with the question; one note repeats the question's words."""
    files = {
        "src/lease.py": (
            "def lease_renewal(lease):\n    # lease renewal: extend the lease by its window and grace\n"
            "    return lease.extend(window_for(lease) + grace_for(lease))\n"
        ),
        "src/window.py": "def window_for(record):\n    return record.period * 2\n",
        "src/grace.py": "def grace_for(record):\n    return record.period // 3\n",
    }
    return write_tree(root, files | _notes(1))


def test_expand_files_caps_the_files_a_link_brings_in(tmp_path: Path) -> None:
    root = two_callees_workspace(tmp_path / "ws")
    linked = {"src/window.py", "src/grace.py"}
    for cap, entering in ((2, 2), (1, 1), (0, 0)):
        ws = Workspace([root], flags={"retrieval.expand_files": cap})
        ws.index(embed=False)
        sources = ws.ask(QUESTION, no_llm=True, max_files=5).sources
        came = [s for s in sources if s.path in linked]
        assert len(came) == entering, (cap, [s.path for s in sources])
        assert all(s.via.startswith("calls ") for s in came)


def test_no_later_step_brings_a_file_in_over_the_files_the_one_score_ranks_first(tmp_path: Path) -> None:
    """``lease.audit_trail()`` is a use by the name only (the receiver's type is unknown): the weakest
    link. It ranks below the notes that hold the question's words, and stays out of six places;
    ``expand``, a second graph step after the cut, added it in the sixth file's place."""
    root = write_tree(
        tmp_path / "ws",
        {
            "src/lease.py": (
                "def lease_renewal(lease):\n    # lease renewal: extend the lease by its window\n"
                "    lease.audit_trail()\n    return lease.extend(2)\n"
            ),
            "src/audit.py": "class Ledger:\n    def audit_trail(self):\n        return self.rows\n",
        }
        | _notes(6),
    )
    ws = Workspace([root])
    ws.index(embed=False)
    answer = ws.ask(QUESTION, no_llm=True, max_files=6)
    paths = [s.path for s in answer.sources]
    assert paths[0] == "src/lease.py" and "src/audit.py" not in paths and len(paths) == 6, paths


def test_of_files_linked_alike_the_one_the_best_files_reach_most_enters(tmp_path: Path) -> None:
    """``src/lease.py`` calls four helpers, one file each; the three notes (the question's words)
    each call ``window_for``. Each of the five files is linked alike by the first files (a sure call,
    capped), but the walks from the best files reach ``src/window.py`` most (personalised PageRank:
    three notes lead only there, the best file's walk splits four ways): it takes the one free place."""
    helpers = {f"src/helper_{i}.py": f"def helper_{i}(record):\n    return record.period + {i}\n" for i in range(4)}
    notes = {
        f"src/note_{i}.py": (
            f"def note_{i}(text):\n    # lease renewal notes, part {i}: renewal of a lease\n    return window_for(text)\n"
        )
        for i in range(3)
    }
    calls = " + ".join(f"helper_{i}(lease)" for i in range(4))
    lease = f"def lease_renewal(lease):\n    # lease renewal: extend the lease\n    return lease.extend({calls})\n"
    window = "def window_for(record):\n    return record.period * 2\n"
    root = write_tree(tmp_path / "ws", {"src/lease.py": lease, "src/window.py": window} | helpers | notes)
    paths = [s.path for s in _asked(root).sources]
    assert paths[0] == "src/lease.py" and len(paths) == 5, paths
    assert paths[4] == "src/window.py", paths


def test_a_linked_file_holding_none_of_the_questions_words_takes_no_place(tmp_path: Path) -> None:
    """``src/lease.py`` calls three helpers of ``src/clock.py`` (no word of the question) and
    ``window_for`` of ``src/window.py`` ("how long a lease may run"); two notes hold the question's
    words. Counted in links alone the clock is the stronger neighbour and took the free place; a
    linked file's gain follows the share of the question's words it holds over the most any linked
    file holds (``OVERLAP_POWER``), so the window keeps its place and the clock takes none."""
    clock = "".join(f"def {name}(record):\n    return record.period + 1\n\n\n" for name in ("tick", "tock", "tack"))
    lease = (
        "from window import window_for\nfrom clock import tick, tock, tack\n\n\ndef lease_renewal(lease):\n"
        "    # lease renewal: extend the lease by its window\n"
        "    return lease.extend(window_for(lease) + tick(lease) + tock(lease) + tack(lease))\n"
    )
    window = "def window_for(record):\n    # how long a lease may run\n    return record.period * 2\n"
    files = {"src/lease.py": lease, "src/window.py": window, "src/clock.py": clock}
    paths = [s.path for s in _asked(write_tree(tmp_path / "ws", files | _notes(2))).sources]
    assert paths[0] == "src/lease.py" and "src/window.py" in paths, paths
    assert "src/clock.py" not in paths, paths


def test_a_generated_file_defining_a_name_the_question_spells_keeps_its_whole_graph_gain(tmp_path: Path) -> None:
    """The retriever counts ``src/ops.py``, a generated file alone defining ``LeaseWindow``, as named
    (its prior 1: :func:`~codeask.query.steps.identifiers.defining_paths`); the graph part the
    ``neighbours`` step gives it was still scaled by the generated kind's prior (xarray's
    ``_typed_ops.py`` for a question naming its ``DatasetOpsMixin``)."""
    files = {
        "src/lease.py": (
            "from ops import LeaseWindow\n\n\ndef lease_renewal(lease):\n"
            "    # lease renewal: extend the lease by its window\n    return lease.extend(LeaseWindow(lease).span())\n"
        ),
        "src/ops.py": (
            "# Code generated by gen_ops.py. DO NOT EDIT.\n\n\nclass LeaseWindow:\n    def __init__(self, record):\n"
            "        self.record = record\n\n    def span(self):\n        return self.record.period * 2\n"
        ),
    }
    notes = {  # the question's words and LeaseWindow: they keep src/ops.py past the first three files
        f"src/note_{i}.py": f"def note_{i}(text):\n    # lease renewal notes, part {i}: renewal of a lease by LeaseWindow\n"
        for i in range(6)
    }
    ws = Workspace([write_tree(tmp_path / "ws", files | notes)])
    ws.index(embed=False)
    asked = Query("how does lease renewal use LeaseWindow", options=RetrievalOptions(max_files=5))
    query = ws.build_pipeline(llm=None).run(asked)
    retrieval = query.retrieval_event()
    assert retrieval is not None and retrieval.data["defining"] == ["src/ops.py"]
    boosted = next(e for e in query.history if e.step == "neighbours").data["boosted"]
    assert [(b["path"], b["factor"]) for b in boosted] == [("src/ops.py", 1.0)]
