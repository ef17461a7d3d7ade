"""The machine's vector store (codeask.index.machine): a clone or a worktree embeds only new texts,
answers as the original does, and the store survives kill -9, concurrent writers and its size limit."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from codeask.clean import list_vector_stores
from codeask.index.machine import MachineVectors, store_dir
from codeask.index.vectors import fill_vectors
from tests.test_cli import codeask

DIM = 8

FILES = {
    "billing/invoice.py": '''
        """Invoices: totals, taxes and rounding."""


        def invoice_total(lines, tax_rate):
            """Sum the line amounts and add the tax, rounded to cents."""
            subtotal = sum(line.amount for line in lines)
            return round(subtotal * (1 + tax_rate), 2)


        def overdue_invoices(invoices, today):
            """Invoices whose due date is before today and that are not paid."""
            return [i for i in invoices if i.due < today and not i.paid]
        ''',
    "billing/mail.py": '''
        """Reminder e-mails for unpaid invoices."""


        def reminder_subject(invoice):
            return f"Reminder: invoice {invoice.number} is overdue"


        def send_reminders(invoices, smtp):
            """Send one reminder per overdue invoice through ``smtp``."""
            for invoice in invoices:
                smtp.send(invoice.customer.email, reminder_subject(invoice))
        ''',
    "auth/tokens.py": '''
        """Session tokens: issuing and checking expiry."""
        import secrets


        def issue_token(user, ttl_seconds=3600):
            """A random token for ``user`` valid for ``ttl_seconds``."""
            return {"user": user.id, "token": secrets.token_hex(16), "ttl": ttl_seconds}


        def token_expired(token, now):
            return now > token["issued"] + token["ttl"]
        ''',
}
QUESTIONS = ["How is the invoice total with tax computed?", "When does a session token expire?"]


def write_tree(root: Path) -> None:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def index_json(root: Path) -> dict:
    return json.loads(codeask("index", str(root), "--json").stdout)


def ranked(root: Path, question: str) -> list[tuple]:
    out = json.loads(codeask("ask", str(root), question, "--no-llm", "--json").stdout)
    return [(s["path"], s["start_line"], s["end_line"], round(s["score"], 9)) for s in out["sources"]]


def test_a_copy_embeds_nothing_and_ranks_as_the_original(tmp_path):
    first, copy = tmp_path / "first", tmp_path / "copy"
    write_tree(first)
    write_tree(copy)
    cold = index_json(first)
    assert cold["chunks_embedded"] > 0 and cold["chunks_reused"] == 0 and cold["vectors_pending"] == 0
    again = index_json(copy)
    assert again["chunks_embedded"] == 0 and again["vectors_pending"] == 0
    assert again["chunks_reused"] == cold["chunks_embedded"]
    for question in QUESTIONS:
        assert ranked(copy, question) == ranked(first, question)
    stores = list_vector_stores(Path(os.environ["CODEASK_CACHE_DIR"]))
    assert [s.vectors for s in stores] == [cold["chunks_embedded"]]
    listed = json.loads(codeask("clean", "--json").stdout)
    assert listed["vector_stores"][0]["vectors"] == cold["chunks_embedded"]
    removed = json.loads(codeask("clean", "--all", "--json").stdout)
    assert removed["vector_stores"][0]["removed"] and list_vector_stores(Path(os.environ["CODEASK_CACHE_DIR"])) == []


def stored_hashes(root: Path) -> dict[str, set[str]]:
    """``{path: embed hashes}`` of ``root``'s index, read from its LanceDB table."""
    import lancedb

    from codeask.index.folders import index_dir_for
    from codeask.settings import load_settings

    table = lancedb.connect(str(index_dir_for(root, load_settings(root)) / "lance")).open_table("chunks")
    rows = table.search().select(["path", "embed_hash"]).limit(None).to_list()
    out: dict[str, set[str]] = {}
    for row in rows:
        out.setdefault(row["path"], set()).add(row["embed_hash"])
    return out


def git(cwd: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def test_a_worktree_with_three_changed_files_embeds_only_their_new_chunks(tmp_path):
    repo, tree = tmp_path / "repo", tmp_path / "review"
    write_tree(repo)
    (repo / "billing/refunds.py").write_text("def refund(invoice):\n    return -invoice.total\n", encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "start")
    index_json(repo)
    git(repo, "worktree", "add", "-q", str(tree))
    changed = ["billing/invoice.py", "billing/mail.py", "auth/tokens.py"]
    for rel in changed:
        with open(tree / rel, "a", encoding="utf-8") as f:
            f.write(f"\n\ndef added_in_{Path(rel).stem}(value):\n    return value * 2 + {len(rel)}\n")
    stats = index_json(tree)
    before, after = stored_hashes(repo), stored_hashes(tree)
    known = set().union(*before.values())
    new = {h for hashes in after.values() for h in hashes if h not in known}
    assert new and stats["chunks_embedded"] == len(new) and stats["vectors_pending"] == 0
    assert {p for p, hashes in after.items() if hashes - known} <= set(changed)
    assert stats["chunks_reused"] == len(set().union(*after.values()) - new)


def vector_for(key: str) -> np.ndarray:
    """The test's stand-in embedding: a unit vector drawn from ``key``'s hash (what the text decides)."""
    rng = np.random.default_rng(int(hashlib.sha256(key.encode()).hexdigest()[:8], 16))
    v = rng.standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    sys.path.insert(0, {repo!r})
    from codeask.index.machine import MachineVectors
    from tests.test_machine_vectors import vector_for
    store = MachineVectors(Path({folder!r}), {dim}, limit_bytes=1 << 30)
    for batch in range({batches}):
        store.put_vectors({{f"{prefix}-{{batch}}-{{i}}": vector_for(f"{prefix}-{{batch}}-{{i}}") for i in range(50)}})
        store.flush()
        print(batch, flush=True)
    """
)


def writer(folder: Path, prefix: str, batches: int) -> subprocess.Popen:
    repo = str(Path(__file__).resolve().parents[1])
    code = WRITER.format(repo=repo, folder=str(folder), dim=DIM, batches=batches, prefix=prefix)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=repo)


def assert_every_vector_is_its_texts(folder: Path) -> int:
    import lancedb

    rows = lancedb.connect(str(folder / "lance")).open_table("vectors").to_arrow().to_pylist()
    for row in rows:
        assert np.allclose(np.asarray(row["vector"], dtype=np.float32), vector_for(row["embed_hash"])), row[
            "embed_hash"
        ]
    assert len({r["embed_hash"] for r in rows}) == len(rows)
    return len(rows)


@pytest.mark.parametrize("after_batches", [1, 4, 9])
def test_kill_9_while_writing_loses_nothing_committed_and_serves_no_wrong_vector(tmp_path, after_batches):
    folder = tmp_path / "store"
    proc = writer(folder, "k", 40)
    assert proc.stdout is not None
    for _ in range(after_batches):
        assert proc.stdout.readline(), "the writer ended early"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    count = assert_every_vector_is_its_texts(folder)
    assert count >= after_batches * 50  # every flush that printed was committed
    store = MachineVectors(folder, DIM, limit_bytes=1 << 30)
    keys = [f"k-0-{i}" for i in range(50)]
    assert all(np.allclose(v, vector_for(k)) for k, v in store.get_vectors(keys).items())
    store.put_vectors({"after": vector_for("after")})
    store.flush()
    assert assert_every_vector_is_its_texts(folder) == count + 1


def test_two_writers_at_once_keep_every_vector_once(tmp_path):
    folder = tmp_path / "store"
    MachineVectors(folder, DIM, limit_bytes=1 << 30)
    procs = [writer(folder, "same", 6), writer(folder, "same", 6), writer(folder, "other", 6)]
    for proc in procs:
        assert proc.wait(timeout=600) == 0
    assert assert_every_vector_is_its_texts(folder) == 2 * 6 * 50


def test_past_the_limit_the_least_recently_used_go_first(tmp_path, monkeypatch):
    import codeask.index.machine as machine

    folder = tmp_path / "store"
    per_vector = 4 * DIM + machine.BYTES_PER_VECTOR_OVERHEAD
    store = MachineVectors(folder, DIM, limit_bytes=per_vector * 100)
    old = {f"old-{i}": vector_for(f"old-{i}") for i in range(60)}
    store.put_vectors(old)
    store.flush()
    time.sleep(0.01)
    monkeypatch.setattr(machine, "TOUCH_SECONDS", 0.0)
    assert len(store.get_vectors([f"old-{i}" for i in range(10)])) == 10  # used again: newest now
    store.flush()
    time.sleep(0.01)
    store.put_vectors({f"new-{i}": vector_for(f"new-{i}") for i in range(50)})
    store.flush()
    kept = set(store.get_vectors([*old, *(f"new-{i}" for i in range(50))]))
    assert len(kept) <= 90
    assert {f"new-{i}" for i in range(50)} <= kept and {f"old-{i}" for i in range(10)} <= kept
    assert not kept & {f"old-{i}" for i in range(10, 60)}


def test_the_store_is_keyed_by_model_dimension_and_text_layout(tmp_path):
    a = store_dir(tmp_path, "all-MiniLM-L6-v2@256", 384)
    assert a.parent == tmp_path / "_vectors"
    assert len({a, store_dir(tmp_path, "all-MiniLM-L6-v2@128", 384), store_dir(tmp_path, "other/model@256", 384)}) == 3
    assert "/" not in store_dir(tmp_path, "../../etc@1", 8).name


def test_fill_vectors_asks_the_index_store_once_for_a_whole_round(tmp_path):
    """The index's store is asked once per call, not once per text: phase 2's reuse round of 1,024
    texts once made 1,024 lookups of all 1,024 (a second copy of flask spent 11 s there)."""
    calls: list[int] = []

    class CountingStore(MachineVectors):
        def get_vectors(self, embed_hashes):
            wanted = list(embed_hashes)
            calls.append(len(wanted))
            return super().get_vectors(wanted)

    rng = np.random.default_rng(7)
    texts = {hashlib.sha256(str(i).encode()).hexdigest()[:32]: f"text {i}" for i in range(60)}
    keys = list(texts)
    vectors = {h: v / np.linalg.norm(v) for h, v in zip(keys, rng.normal(size=(60, DIM)).astype(np.float32))}
    store = CountingStore(tmp_path / "index", DIM, limit_bytes=1 << 20)
    store.put_vectors({h: vectors[h] for h in keys[:20]})
    store.flush()
    machine = MachineVectors(tmp_path / "machine", DIM, limit_bytes=1 << 20)
    machine.put_vectors({h: vectors[h] for h in keys[20:45]})
    machine.flush()
    asked: list[str] = []

    def embed(batch: list[str]) -> np.ndarray:
        asked.extend(batch)
        return np.stack([vectors[keys[int(t.split()[1])]] for t in batch])

    filled = fill_vectors(texts, store, [machine], embed)
    assert calls == [60]
    assert filled.from_caches == (25,) and filled.embedded == 15
    assert asked == [texts[h] for h in keys[45:]]
    assert set(filled.vectors) == set(keys[20:])
    assert all(np.allclose(filled.vectors[h], vectors[h]) for h in keys[20:])


def test_a_keeper_is_not_asked_again_and_keeps_what_the_others_give(tmp_path):
    """Phase 2 asks the machine's store for a whole round first; the groups it then embeds pass it as
    a keeper (``fill_vectors(keepers=...)``): not asked a second time for texts it lacks, yet given
    every vector the team's cache or the model supplies."""
    asked: list[str] = []

    class CountingMachine(MachineVectors):
        def get_vectors(self, embed_hashes):
            wanted = list(embed_hashes)
            asked.extend(wanted)
            return super().get_vectors(wanted)

    rng = np.random.default_rng(11)
    texts = {hashlib.sha256(str(i).encode()).hexdigest()[:32]: f"text {i}" for i in range(30)}
    keys = list(texts)
    vectors = {h: v / np.linalg.norm(v) for h, v in zip(keys, rng.normal(size=(30, DIM)).astype(np.float32))}
    index_store = MachineVectors(tmp_path / "index", DIM, limit_bytes=1 << 20)
    team = MachineVectors(tmp_path / "team", DIM, limit_bytes=1 << 20)  # stands for the shared cache
    team.put_vectors({h: vectors[h] for h in keys[:10]})
    team.flush()
    machine = CountingMachine(tmp_path / "machine", DIM, limit_bytes=1 << 20)

    def embed(batch: list[str]) -> np.ndarray:
        return np.stack([vectors[keys[int(t.split()[1])]] for t in batch])

    filled = fill_vectors(texts, index_store, [team], embed, keepers=[machine])
    assert filled.from_caches == (10,) and filled.embedded == 20 and set(filled.vectors) == set(keys)
    assert asked == []  # the keeper was not asked
    machine.flush()
    again = machine.get_vectors(keys)  # ...but it keeps both the team's and the model's vectors
    assert set(again) == set(keys) and all(np.allclose(again[h], vectors[h]) for h in keys)


def test_phase_2_asks_the_machine_store_once_for_each_text(sample_workspace, monkeypatch):
    """A cold index asks the machine's store for each pending text once (the round's lookup), not
    again in the group that embeds it."""
    from collections import Counter

    from codeask.index.engine import RootIndex
    from codeask.settings import load_settings

    asked: Counter[str] = Counter()
    lookup = MachineVectors.get_vectors

    def counting(self, embed_hashes):
        wanted = list(embed_hashes)
        asked.update(wanted)
        return lookup(self, wanted)

    monkeypatch.setattr(MachineVectors, "get_vectors", counting)
    index = RootIndex(sample_workspace, load_settings(sample_workspace), background_indexing=False)
    stats = index.sync()
    assert stats.chunks_embedded > 0 and stats.vectors_pending == 0
    assert len(asked) == stats.chunks_embedded and set(asked.values()) == {1}


def test_a_copy_reads_no_chunk_text_in_phase_2(sample_workspace, tmp_path, monkeypatch):
    """Phase 2 looks a round up in the machine's store by hash alone and reads from the chunk rows
    only the texts it lacks: a copy, whose every vector is there, reads none."""
    import shutil

    from codeask.index.engine import RootIndex
    from codeask.index.store import Store
    from codeask.settings import load_settings

    first = RootIndex(sample_workspace, load_settings(sample_workspace), background_indexing=False).sync()
    assert first.chunks_embedded > 0
    copy = tmp_path / "copy"
    shutil.copytree(sample_workspace, copy)
    read: list[str] = []
    texts = Store.texts

    def counting(self, hashes):
        wanted = list(hashes)
        read.extend(wanted)
        return texts(self, wanted)

    monkeypatch.setattr(Store, "texts", counting)
    stats = RootIndex(copy, load_settings(copy), background_indexing=False).sync()
    assert stats.chunks_embedded == 0 and stats.chunks_reused == first.chunks_embedded
    assert stats.vectors_pending == 0 and read == []
