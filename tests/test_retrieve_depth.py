"""Issue 29: first-stage retrieval finds the files a whole-file keyword search finds.

A chunk ranking scores a file by its best chunk; a file whose matches are spread over many chunks
(each chunk naming one of the question's words) lost to files with one better chunk each, although
whole-file BM25 ranks it first. Each keyword search now also gives a per-file ranking, files ordered
by the sum of their chunks' scores (:func:`codeask.query.steps.fusion.file_ranking`), fused with the
others; each dense search gives one the same way (the sum of each file's best chunks' cosine
similarities). Real parts: LanceDB in a temp dir (the ``isolated_env`` cache) and the real embedding model.
"""

from __future__ import annotations

from pathlib import Path

from codeask.query.options import RetrievalOptions
from codeask.query.pipeline import Query
from codeask.query.report import parse_question
from codeask.query.steps.depth import POOL
from codeask.query.steps.fusion import DENSE_BEST, file_ranking
from codeask.query.steps.identifiers import code_identifiers, identifier_ranking
from codeask.workspace import Workspace

#: The question's words; the spread file has one function per word, each of its own chunk.
WORDS = ["lease", "renewal", "expiry", "revocation", "heartbeat", "holder"]
QUESTION = "how does " + " ".join(WORDS) + " work"


def function(name: str, comment: str, lines: int) -> str:
    """A Python function ``name`` of ``lines`` neutral statements under a ``comment`` line."""
    body = "".join(f"    value_{i} = compute_{name}_{i}(value_{max(i - 1, 0)})\n" for i in range(lines))
    return f"def {name}(value_0):\n    # {comment}\n{body}    return value_0\n\n\n"


def spread_workspace(root: Path, notes: int) -> Path:
    """``src/ledger.py``: six 40-line functions, each naming one of :data:`WORDS` (six chunks);
    ``notes`` short files each naming two of them (one chunk that outscores any of ledger's); eight
    files naming none."""
    (root / "src").mkdir(parents=True)
    ledger = "".join(function(f"step_{k}", f"the {word} of a record", 40) for k, word in enumerate(WORDS))
    (root / "src" / "ledger.py").write_text(ledger, encoding="utf-8")
    for i in range(notes):
        pair = f"{WORDS[i % 6]} and {WORDS[(i + 1) % 6]} notes"
        (root / "src" / f"note_{i}.py").write_text(function(f"note_{i}", pair, 4), encoding="utf-8")
    for i in range(8):
        (root / "src" / f"other_{i}.py").write_text(function(f"other_{i}", "unrelated arithmetic", 4), encoding="utf-8")
    return root


def test_file_ranking_puts_the_file_with_most_matching_chunks_first(tmp_path: Path) -> None:
    ws = Workspace([spread_workspace(tmp_path / "ws", notes=9)])
    ws.index(embed=False)
    hits = next(iter(ws.indexes.values())).store.keyword_search(QUESTION, 100)
    ledger = [h for h in hits if h.path == "src/ledger.py"]
    notes = [h for h in hits if h.path.startswith("src/note_")]
    assert len(ledger) == 6 and len(notes) == 9  # one chunk per function; files naming no word do not match
    assert min(h.score for h in notes) > max(h.score for h in ledger)  # every note's chunk beats each of ledger's
    assert [h.path for h in hits].index("src/ledger.py") == 9  # so the chunk ranking puts ledger after them all
    ranked = file_ranking(hits)
    assert ranked[0].path == "src/ledger.py"
    assert sorted(h.path for h in ranked) == sorted({h.path for h in hits})  # one hit per file
    assert ranked[0] is ledger[0]  # a file is represented by its best chunk
    assert [h.path for h in ranked[1:]] == [h.path for h in notes]  # the others keep their order
    by_best = file_ranking(hits, best=1)  # a file's first chunk only: the chunk ranking's file order
    assert [h.path for h in by_best] == list(dict.fromkeys(h.path for h in hits))
    assert by_best[-1].path == "src/ledger.py"


def test_a_file_whose_matches_spread_over_many_chunks_is_among_max_files(tmp_path: Path) -> None:
    ws = Workspace([spread_workspace(tmp_path / "ws", notes=9)])
    stats = ws.index()
    assert stats.vectors_pending == 0  # dense search takes part, with the real model
    answer = ws.ask(QUESTION, no_llm=True, max_files=8)
    paths = [s.path for s in answer.sources]
    assert len(paths) == 8
    assert "src/ledger.py" in paths  # last of ten matching files by its best chunk, in by its six
    assert not any(p.startswith("src/other_") for p in paths)


#: A question none of the files spells a word of: only the dense search ranks.
PARAPHRASED = "how are stale login tokens removed?"
#: ``src/vault.py``'s functions: each about the question (forgetting old credentials), none as near as a note.
VAULT = [
    ("evict_outdated_sessions", "forget sessions nobody used for a month"),
    ("sweep_auth_cache", "sweep the authentication cache of old entries"),
    ("revoke_old_access_keys", "revoke access keys older than the limit"),
    ("clear_timed_out_auth", "clear authentication that timed out"),
    ("expire_passwords", "expire passwords nobody changed"),
    ("drop_old_cookies", "drop cookies past their age"),
]


def test_a_file_near_the_question_all_along_is_among_max_files(tmp_path: Path) -> None:
    """The dense search's per-file ranking: nine one-chunk notes each nearer the question than any of
    ``vault.py``'s six chunks fill a chunk ranking's first nine places; summed, vault's best three
    (:data:`~codeask.query.steps.fusion.DENSE_BEST`) come first."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "vault.py").write_text("".join(function(n, c, 40) for n, c in VAULT), encoding="utf-8")
    for i in range(9):
        note = function(f"delete_outdated_logon_credentials_{i}", "delete outdated logon credentials", 3)
        (root / "src" / f"note_{i}.py").write_text(note, encoding="utf-8")
    for i in range(8):
        (root / "src" / f"other_{i}.py").write_text(function(f"other_{i}", "unrelated arithmetic", 3), encoding="utf-8")
    ws = Workspace([root])
    ws.index()
    store = next(iter(ws.indexes.values())).store
    assert store.keyword_search(PARAPHRASED, 100) == []  # no file spells a word of the question
    dense = store.vector_search(ws.embedder().embed_query(PARAPHRASED), 100)
    assert [h.path for h in dense].index("src/vault.py") == 9  # every note's chunk is nearer than vault's best
    # three chunks near the question outweigh one nearer
    assert file_ranking(dense, DENSE_BEST)[0].path == "src/vault.py"
    paths = [s.path for s in ws.ask(PARAPHRASED, no_llm=True, max_files=8).sources]
    assert len(paths) == 8 and "src/vault.py" in paths
    assert not any(p.startswith("src/other_") for p in paths)


def test_retrieval_keeps_three_candidate_files_per_file_the_answer_keeps(tmp_path: Path) -> None:
    """The ``neighbours`` step ranks what retrieval keeps: ``POOL * max_files`` files where as many
    match (the needed files of bench/multifile's questions sat past the first 20 of 30)."""
    ws = Workspace([spread_workspace(tmp_path / "ws", notes=20)])
    ws.index(embed=False)
    query = Query(QUESTION, options=RetrievalOptions(top_k=4, max_files=4), parts=parse_question(QUESTION))
    pipeline = ws.build_pipeline(llm=None)
    for step in pipeline.query_transformers:
        query = step(query)
    retrieved = pipeline.retriever(query).history[-1]
    assert retrieved.step == "retrieve" and retrieved.documents is not None
    assert len({d.path for d in retrieved.documents}) == POOL * 4 == 12  # 21 files match; 8 before (2 per file)


def test_a_name_the_question_spells_ranks_its_definition_before_its_uses(tmp_path: Path) -> None:
    """The identifier ranking (a question spelling ``LedgerReporter``) lists the chunk that defines
    the name before the chunks that only use it, however many uses name it and the question's other
    words: a developer naming a class wants the class (pytest's ``TerminalReporter`` was 11th, after
    the plugins and tests that take it from a fixture)."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "reporter.py").write_text(
        "class LedgerReporter:\n    def __init__(self, out):\n        self.out = out\n\n"
        "    def line(self, text):\n        self.out.write(text)\n",
        encoding="utf-8",
    )
    for i in range(12):
        uses = "".join(
            f"    reporter_{k} = request.getfixturevalue('LedgerReporter')  # a LedgerReporter plugin\n"
            for k in range(6)
        )
        text = f"from reporter import LedgerReporter\n\n\ndef plugin_{i}(request):\n    # the plugin takes the LedgerReporter from a fixture\n{uses}    return LedgerReporter\n"
        (root / "src" / f"plugin_{i}.py").write_text(text, encoding="utf-8")
    ws = Workspace([root])
    ws.index(embed=False)
    question = "Why do plugins take the LedgerReporter from a fixture request?"
    pool = next(iter(ws.indexes.values())).store.keyword_search(question, 100)
    assert [h.path for h in pool].index("src/reporter.py") > 0  # the uses outrank it by keyword
    ranked = identifier_ranking(pool, code_identifiers(question))
    assert ranked[0].path == "src/reporter.py"
    assert {h.path for h in ranked} == {h.path for h in pool}  # every chunk spelling the name is still listed


def backends_workspace(root: Path) -> Path:
    """``src/common.py``'s ``BackendEntrypoint`` and five backends overriding its ``open_dataset``;
    ``tests/test_plugins.py`` opens with two small dummy backends packed into one chunk (stored
    under no symbol), one of them ``DummyBackendEntrypointKwargs``, as xarray's test module does."""
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "common.py").write_text(
        "class BackendEntrypoint:\n    def open_dataset(self, filename, **kwargs):\n        raise NotImplementedError\n",
        encoding="utf-8",
    )
    for name in ("netcdf", "zarr", "scipy", "pydap", "store"):
        body = "".join(f"        step_{i} = read_{i}(filename)\n" for i in range(6))
        (root / "src" / f"{name}.py").write_text(
            f"from common import BackendEntrypoint\n\n\nclass {name.title()}Backend(BackendEntrypoint):\n"
            f"    def open_dataset(self, filename, **kwargs):\n        # open a dataset with {name}\n{body}"
            "        return step_0\n",
            encoding="utf-8",
        )
    (root / "tests" / "test_plugins.py").write_text(
        "from common import BackendEntrypoint\n\n\nclass DummyBackendEntrypointArgs(BackendEntrypoint):\n"
        "    def open_dataset(self, filename, *args):\n        return filename\n\n\n"
        "class DummyBackendEntrypointKwargs(BackendEntrypoint):\n"
        "    def open_dataset(self, filename, **kwargs):\n        return kwargs\n",
        encoding="utf-8",
    )
    return root


def test_a_test_class_the_question_names_in_full_is_found_as_a_named_file(tmp_path: Path) -> None:
    """A question naming ``DummyBackendEntrypointKwargs.open_dataset`` finds the test module that
    alone defines it, though it is a test (downweighted) and its chunk packs two classes under no
    symbol: the identifier ranking reads the chunk's definitions and puts the whole name's definition
    before the five backends defining only ``open_dataset``, and the file counts as named, as by its
    file name (xarray's ``tests/test_plugins.py`` was past the 40th chunk for this question)."""
    ws = Workspace([backends_workspace(tmp_path / "ws")])
    ws.index(embed=False)
    question = "How does DummyBackendEntrypointKwargs.open_dataset override the BackendEntrypoint interface?"
    pool = next(iter(ws.indexes.values())).store.keyword_search(question, 100)
    (packed,) = [h for h in pool if h.path == "tests/test_plugins.py"]
    assert packed.symbol == ""  # two classes in one chunk
    ranked = [h.path for h in identifier_ranking(pool, code_identifiers(question))]
    assert sorted(ranked[:2]) == ["src/common.py", "tests/test_plugins.py"]  # each defines a name in full
    paths = [s.path for s in ws.ask(question, max_files=4, no_llm=True).sources]
    assert sorted(paths[:2]) == ["src/common.py", "tests/test_plugins.py"]
