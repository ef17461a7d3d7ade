"""The team's shared vector cache on a real S3-compatible server (SeaweedFS from PyPI)."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from codeask.index.engine import RootIndex
from codeask.index.object_store import storage_options
from codeask.index.shared import Shard, SharedCacheError, SharedVectorCache, model_id
from codeask.settings import load_settings
from tests.s3_server import S3Server, free_port
from tests.test_cli import REDIRECT_Q, codeask

MODEL = model_id("all-MiniLM-L6-v2", 256)


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    server = S3Server(tmp_path_factory.mktemp("s3")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_env(s3, monkeypatch) -> S3Server:
    for key, value in s3.env().items():
        monkeypatch.setenv(key, value)
    return s3


def _cache(server: S3Server, prefix: str, dim: int = 384) -> SharedVectorCache:
    return SharedVectorCache(server.url(prefix), MODEL, dim, storage_options(server.env()))


def _rows(server: S3Server, prefix: str):
    import lancedb

    db = lancedb.connect(server.url(prefix), storage_options=storage_options(server.env()))
    return db.open_table("vectors").to_arrow()


def _sources(out: str) -> list[tuple]:
    return [(s["path"], s["start_line"], s["end_line"]) for s in json.loads(out)["sources"]]


def test_a_workspace_cannot_choose_the_shared_cache(tmp_path, user_config):
    (tmp_path / ".codeask.toml").write_text(
        '[shared]\nurl = "s3://attacker/x"\n[embedding]\nproviders = ["CUDAExecutionProvider"]\n', encoding="utf-8"
    )
    s = load_settings(tmp_path, env={})
    assert s.shared.url is None and s.embedding.providers is None
    assert sum("`shared.url`" in w for w in s.warnings) == 1
    assert sum("`embedding.providers`" in w for w in s.warnings) == 1
    s = load_settings(tmp_path, env={"CODEASK_SHARED_CACHE": "s3://team/cache"})
    assert s.shared.url == "s3://team/cache"


def test_shard_parse_and_ownership_split_the_keys():
    keys = [f"{i:032x}" for i in range(0, 10_000, 7)]
    shards = [Shard.parse(f"{i}/3") for i in range(3)]
    owners = [sum(s.owns(k) for s in shards) for k in keys]
    assert owners == [1] * len(keys)
    for bad in ("3/3", "-1/2", "1", "a/b", "0/0"):
        with pytest.raises(ValueError, match="I/N"):
            Shard.parse(bad)


def test_lookup_publish_touch_and_compact(s3):
    cache = _cache(s3, "unit", dim=4)
    assert cache.lookup(["0" * 32]) == {}  # no table yet: nothing, no error
    keys = [f"{i:032x}" for i in range(700)]
    vectors = np.random.default_rng(0).random((700, 4), dtype=np.float32)
    assert cache.publish(keys[:400], vectors[:400], now=1_000.0) == 400
    cache.publish(keys[300:], vectors[300:], now=1_000.0)  # overlaps 100 keys: inserted once
    got = cache.lookup(keys)
    assert len(got) == 700 and np.array_equal(got[keys[5]], vectors[5])
    assert cache.count() == 700

    # A duplicate key left by a race is removed at compaction; keys unused for long expire.
    import lancedb

    table = lancedb.connect(s3.url("unit"), storage_options=storage_options(s3.env())).open_table("vectors")
    table.add(table.search().where(f"embed_hash = '{keys[0]}'").limit(None).to_arrow())
    assert cache.count() == 701
    held = cache.touch(keys[:350], now=1_000.0 + 40 * 86400.0)
    assert held == set(keys[:350])
    report = cache.compact(retention_days=30, now=1_000.0 + 45 * 86400.0)
    # keys[0] is held twice and both copies were used: 351 rows stay, 350 expire, one duplicate goes.
    assert report == {"rows": 350, "duplicates_removed": 1, "expired_removed": 350}
    assert sorted(cache.lookup(keys)) == keys[:350]


@pytest.mark.slow
def test_publish_then_a_fresh_clone_embeds_nothing_and_answers_the_same(
    s3_env, requests_sdist, tmp_path, monkeypatch
):
    url = s3_env.url("requests")
    ci = tmp_path / "ci" / "requests"
    shutil.copytree(requests_sdist, ci)
    pub = json.loads(codeask("publish", str(ci), "--to", url, "--json").stdout)
    assert pub["keys_embedded"] == pub["keys_in_shard"] == pub["keys"] > 300
    again = json.loads(codeask("publish", str(ci), "--to", url, "--json").stdout)
    assert again["keys_embedded"] == 0 and again["keys_present"] == pub["keys"]
    assert set(_rows(s3_env, "requests")["text"].to_pylist()) == {""}  # no code text without --with-text

    # A developer's fresh clone with the cache configured: every vector comes from the cache.
    dev = tmp_path / "dev" / "requests"
    shutil.copytree(requests_sdist, dev)
    monkeypatch.setenv("CODEASK_CACHE_DIR", str(tmp_path / "dev-cache"))
    cold = json.loads(codeask("index", str(dev), "--json", env={"CODEASK_SHARED_CACHE": url}).stdout)
    assert cold["chunks_embedded"] == 0 and cold["vectors_pending"] == 0
    assert cold["chunks_shared"] == pub["keys"]
    shared_answer = codeask("ask", str(dev), REDIRECT_Q, "--no-llm", "--json", "--no-update").stdout

    # The same folder embedded locally, without the cache, answers identically.
    monkeypatch.setenv("CODEASK_CACHE_DIR", str(tmp_path / "local-cache"))
    local = json.loads(codeask("index", str(dev), "--json").stdout)
    assert local["chunks_embedded"] == pub["keys"] and local["chunks_shared"] == 0
    local_answer = codeask("ask", str(dev), REDIRECT_Q, "--no-llm", "--json", "--no-update").stdout
    assert _sources(shared_answer) == _sources(local_answer)
    assert _sources(shared_answer)[0][0] == "src/requests/sessions.py"

    # An edit embeds exactly its changed chunk locally.
    monkeypatch.setenv("CODEASK_CACHE_DIR", str(tmp_path / "dev-cache"))
    status = dev / "src/requests/status_codes.py"
    status.write_text(status.read_text() + "\n\ndef teapot_marker():\n    return 418\n", encoding="utf-8")
    edit = json.loads(codeask("index", str(dev), "--json", env={"CODEASK_SHARED_CACHE": url}).stdout)
    assert edit["files_changed"] == 1
    assert edit["chunks_embedded"] + edit["chunks_shared"] >= 1 and edit["chunks_embedded"] >= 1
    assert edit["chunks_embedded"] == len(
        {r for r in _changed_hashes(dev, "src/requests/status_codes.py")} - set(_rows(s3_env, "requests")["embed_hash"].to_pylist())
    )


def _changed_hashes(root: Path, rel: str) -> set[str]:
    """The embed hashes of the chunks of ``root/rel`` as indexing computes them."""
    from codeask.index.chunking import chunk_text
    from codeask.index.rows import embed_hash, embed_text

    chunks = chunk_text(rel, (root / rel).read_text(encoding="utf-8"))
    return {embed_hash(embed_text(c.symbol, c.content)) for c in chunks}


def test_two_shard_publishers_at_once_leave_one_row_per_key(s3_env, sample_workspace):
    url = s3_env.url("shards")
    cmd = [sys.executable, "-m", "codeask", "publish", str(sample_workspace), "--to", url, "--json"]
    procs = [subprocess.Popen([*cmd, "--shard", f"{i}/2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    stats = [json.loads(o[0]) for o in outs]
    assert stats[0]["keys"] == stats[1]["keys"]
    assert stats[0]["keys_in_shard"] + stats[1]["keys_in_shard"] == stats[0]["keys"]
    hashes = _rows(s3_env, "shards")["embed_hash"].to_pylist()
    assert len(hashes) == len(set(hashes)) == stats[0]["keys"]


def test_stopping_the_store_mid_index_leaves_a_correct_local_index(tmp_path, requests_sdist, caplog, monkeypatch):
    server = S3Server(tmp_path / "s3").start()
    try:
        env = server.env()
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        root = tmp_path / "requests"
        shutil.copytree(requests_sdist, root)
        url = server.url("partial")
        settings = load_settings(root, flags={"shared.url": url})
        from codeask.publish import publish

        publish(root, url, settings, shard=Shard(0, 2))  # half the keys are shared

        index = RootIndex(root, settings)
        stopped = []

        def progress(p):
            if p.phase == "embed" and p.done and not stopped:
                server.stop()
                stopped.append(p.done)

        with caplog.at_level(logging.WARNING, logger="codeask.index.shared"):
            stats = index.sync(progress=progress)
        assert stopped, "the store was stopped during phase 2"
        assert stats.vectors_pending == 0 and stats.chunks_shared > 0 and stats.chunks_embedded > 0
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1 and url in warnings[0].getMessage()

        # Same rows and vectors as an index built without the cache.
        clean = RootIndex(root, load_settings(root, flags={"index.cache_dir": str(tmp_path / "clean")}))
        clean.sync()
        assert index.store.count() == clean.store.count()
        mine = index.store.get_vectors(_all_hashes(index))
        theirs = clean.store.get_vectors(_all_hashes(clean))
        assert mine.keys() == theirs.keys()
        assert max(float(np.abs(mine[h] - theirs[h]).max()) for h in mine) < 1e-5
    finally:
        server.stop()


def _all_hashes(index: RootIndex) -> set[str]:
    return {h for path in index.store.paths() for h in _changed_hashes(index.root, path)}


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("closed port", "connection refused by http://127.0.0.1:"),
        ("missing bucket", "no such bucket (NoSuchBucket"),
        ("wrong secret", "access denied (SignatureDoesNotMatch"),
        ("unknown key", "access denied (InvalidAccessKeyId"),
    ],
)
def test_an_unusable_shared_cache_is_one_short_line_naming_the_cause(s3, case, says):
    """LanceDB's error is a 600-900 character dump of its Rust error chain: the user gets the URL
    and the cause the store answered (or the connection failure) in one line."""
    env, url = s3.env(), s3.url("unusable")
    if case == "closed port":
        env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{free_port()}"
    elif case == "missing bucket":
        url = "s3://no-such-bucket/vectors"
    elif case == "wrong secret":
        env["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
    else:
        env["AWS_ACCESS_KEY_ID"] = "nobody"
    with pytest.raises(SharedCacheError) as err:
        SharedVectorCache(url, MODEL, 384, storage_options(env)).lookup(["0" * 32])
    message = str(err.value)
    assert message.startswith(f"cannot open the shared cache {url}: ") and says in message, message
    assert len(message) < 220 and "\n" not in message and "RetryError" not in message, message


def test_publish_to_a_missing_bucket_is_one_line(s3_env, sample_workspace):
    proc = codeask("publish", str(sample_workspace), "--to", "s3://no-such-bucket/vectors", check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and len(lines[0]) < 220, proc.stderr
    assert "s3://no-such-bucket/vectors" in lines[0] and "no such bucket" in lines[0]


def test_embedding_providers_setting_reaches_onnx_runtime():
    from codeask.index.embed import Embedder
    from codeask.settings import EmbeddingSettings

    wanted = ["AzureExecutionProvider", "CPUExecutionProvider"]
    assert Embedder(EmbeddingSettings(providers=wanted)).providers == wanted
    assert Embedder(EmbeddingSettings()).providers == ["CPUExecutionProvider"]
