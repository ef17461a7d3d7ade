"""A synthetic 1,000,000-chunk monorepo: build time, disk, RSS, query latency, ANN recall, update, restart.

Usage::

    python bench/scale.py                          # 1,000,000 chunks from copies of sphinx==9.0.4
    python bench/scale.py --chunks 100000 --keep DIR
    python bench/scale.py --chunks 100000 --keep DIR --reuse   # measure again, no rebuild

How the monorepo is made (minutes, not hours, on a 2-core machine):

* the base sdist is indexed for real (walk, tree-sitter chunks, rows) into a scratch index, and
  ``--real-vectors`` of its chunk texts are embedded by the real model;
* copy ``k`` of the base tree is written to ``m<k>/...`` with ``  # m<k>`` appended to the first line
  of every chunk (line numbers unchanged, so the base chunking holds and every chunk text, hence
  every vector key, is distinct); its rows are derived from the base rows with the store's own
  :func:`~codeask.index.rows.chunk_rows` logic and bulk-added, its files recorded in the manifest;
* each chunk's vector is a real vector of the sample (base chunk ``i`` -> sample ``i mod n``) plus
  Gaussian noise (``--noise`` per dimension), re-normalized: no model time, realistic neighbourhoods;
* then the indexes are built as the engine builds them (full-text, B-trees, IVF-SQ above
  ``index.ann_min_rows``) and the tables compacted.

Measured in fresh processes on the built index: RSS with the index open after the queries (the
server's state), keyword / dense / hybrid (``ask`` without an LLM, query embedding included) p50 and
p95 (and the ask's CPU time, which a busy machine inflates less than wall time), ANN top-10 recall
against exact search, a 1-file update until keyword search finds the new function (rows committed,
plus one keyword query; and until its vectors are committed too; median of 3), and a restart with 0
changes (``Workspace.index()`` in a new process; its CPU time, imports included, beside the wall
time). The load average is recorded beside them (at the start and at the end).
Goals: ask p50 < 150 ms, update searchable < 1 s, restart < 10 s, RSS < 1.5 GB.
Prints a table and writes ``bench/results/scale-<chunks>.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import fetch_sdist, write_result  # noqa: E402

QUESTIONS = [
    "how is the configuration file loaded and validated",
    "where are html output files written",
    "how does autodoc import the documented module",
    "parse command line arguments for the build",
    "how are cross references resolved",
    "where is the search index generated",
    "how are translations and message catalogs loaded",
    "what happens when an extension is set up",
    "how are warnings emitted and turned into errors",
    "how does the latex builder escape special characters",
    "how are toctree entries collected",
    "where is the environment pickled between builds",
    "how are code blocks highlighted with pygments",
    "how does intersphinx fetch inventories",
    "how are domain objects registered",
    "read a file with the right encoding",
    "how are images copied to the output directory",
    "how is parallel reading of documents done",
    "where are event callbacks connected",
    "how is the doctree transformed after reading",
]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def build(base: Path, root: Path, chunks_wanted: int, real_vectors: int, noise: float, seed: int) -> dict:
    """Write the monorepo under ``root`` and its index (``CODEASK_CACHE_DIR``); returns timings."""
    import numpy as np
    import pyarrow as pa

    from codeask.index.engine import RootIndex
    from codeask.index.manifest import FileRecord
    from codeask.index.rows import embed_text, keyword_text, path_words, split_identifier
    from codeask.settings import load_settings

    t0 = time.monotonic()
    scratch = RootIndex(base, load_settings(base))
    scratch.sync(embed=False)
    base_rows = scratch.store.tables.chunks.search().limit(None).to_arrow().to_pylist()
    base_rows.sort(key=lambda r: (r["path"], r["start_line"]))
    records = scratch.manifest.all()
    t_base = time.monotonic() - t0
    print(f"base: {len(records)} files, {len(base_rows)} chunks indexed in {t_base:.1f} s", flush=True)

    rng = np.random.default_rng(seed)
    texts = sorted({embed_text(r["symbol"], r["content"]) for r in base_rows})
    sample = [texts[i] for i in rng.choice(len(texts), min(real_vectors, len(texts)), replace=False)]
    t1 = time.monotonic()
    real = scratch.embedder.embed(sample)
    t_embed = time.monotonic() - t1
    print(f"{len(sample)} real vectors embedded in {t_embed:.1f} s", flush=True)

    by_path: dict[str, list[dict]] = {}
    for row in base_rows:
        by_path.setdefault(row["path"], []).append(row)
    base_text = {p: (base / p).read_text("utf-8", "surrogateescape").split("\n") for p in by_path}
    kw = [keyword_text(r["content"]) for r in base_rows]
    symbol_words = [" ".join(split_identifier(r["symbol"].replace(".", "_"))) for r in base_rows]
    copies = -(-chunks_wanted // len(base_rows))

    index = RootIndex(root, load_settings(root))
    store = index.store
    t2 = time.monotonic()
    written = 0
    for k in range(copies):
        marker = f"  # m{k}"
        prefix = f"m{k}/"
        rows: list[dict] = []
        file_records: list[FileRecord] = []
        i = 0
        for path, prows in by_path.items():
            lines = list(base_text[path])
            for r in prows:
                lines[r["start_line"] - 1] += marker
            data = "\n".join(lines).encode("utf-8", "surrogateescape")
            target = root / prefix / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            st = target.stat()
            file_records.append(FileRecord(prefix + path, hashlib.sha256(data).hexdigest(), st.st_size, st.st_mtime_ns, len(prows)))
            for r in prows:
                first, sep, rest = r["content"].partition("\n")
                content = first + marker + sep + rest
                kfirst, ksep, krest = kw[i].partition("\n")
                new_path = prefix + path
                words = " ".join(w for w in (path_words(new_path), symbol_words[i]) if w)
                ehash = hashlib.sha256(embed_text(r["symbol"], content).encode("utf-8", "surrogatepass")).hexdigest()[:32]
                chash = hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
                rows.append(
                    {
                        "id": hashlib.sha256(f"{new_path}:{r['start_line']}:{r['end_line']}:{chash}".encode("utf-8", "surrogatepass")).hexdigest()[:32],
                        "path": new_path,
                        "language": r["language"],
                        "start_line": r["start_line"],
                        "end_line": r["end_line"],
                        "symbol": r["symbol"],
                        "content": content,
                        "embed_hash": ehash,
                        "text": f"{new_path} {words} {r['symbol']}\n{kfirst}{marker}{ksep}{krest}",
                    }
                )
                i += 1
        base_idx = np.arange(len(rows)) % len(real)
        vectors = real[base_idx] + noise * rng.standard_normal((len(rows), real.shape[1])).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        # Bulk load: the rows one sync of these files would commit, without re-chunking a million chunks.
        store.put_vectors(dict(zip((r["embed_hash"] for r in rows), vectors)))
        store.tables.chunks.add(pa.Table.from_pylist(rows, schema=store.tables.chunk_schema))
        index.manifest.record(file_records)
        written += len(rows)
        if k % 10 == 0 or k == copies - 1:
            print(f"copy {k + 1}/{copies}: {written} chunks, {time.monotonic() - t2:.0f} s", flush=True)
    t_rows = time.monotonic() - t2
    t3 = time.monotonic()
    store.ensure_indexes()
    t_indexes = time.monotonic() - t3
    print(f"indexes built in {t_indexes:.1f} s", flush=True)
    t4 = time.monotonic()
    store.optimize()
    t_optimize = time.monotonic() - t4
    print(f"compacted in {t_optimize:.1f} s", flush=True)
    scratch.close()
    index.close()
    return {
        "base_files": len(records),
        "base_chunks": len(base_rows),
        "copies": copies,
        "chunks": store.count(),
        "vectors": store.count_vectors(),
        "files": copies * len(by_path),
        "real_vectors": len(sample),
        "noise_per_dim": noise,
        "build_seconds": round(time.monotonic() - t0, 1),
        "build_seconds_rows_and_files": round(t_rows, 1),
        "build_seconds_indexes": round(t_indexes, 1),
        "build_seconds_compaction": round(t_optimize, 1),
        "build_seconds_real_vectors": round(t_embed, 1),
    }


_MEASURE = r"""
import json, os, resource, statistics, sys, time
from pathlib import Path
root = Path(sys.argv[1]); questions = json.loads(sys.argv[2]); exact_n = int(sys.argv[3])
from codeask.workspace import Workspace
ws = Workspace([root])
index = next(iter(ws.indexes.values())); store = index.store
embedder = ws.embedder()
for q in questions[:2]:
    ws.ask(q, no_llm=True)
kw, dense, hybrid, hybrid_cpu, recall = [], [], [], [], []
for q in questions:
    t = time.monotonic(); store.keyword_search(q, 100); kw.append(time.monotonic() - t)
    t = time.monotonic(); v = embedder.embed_query(q); store.vector_search(v, 100); dense.append(time.monotonic() - t)
    t, c = time.monotonic(), time.process_time()
    ws.ask(q, no_llm=True)
    hybrid.append(time.monotonic() - t); hybrid_cpu.append(time.process_time() - c)
rss = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS:")) / 1024
peak_queries = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before exact search
for q in questions[:exact_n]:
    v = embedder.embed_query(q)
    exact = set(store.nearest_hashes(v, 10, exact=True)); ann = set(store.nearest_hashes(v, 10))
    recall.append(len(exact & ann) / 10)
updates = []
target = sorted(p for p in index.manifest.all() if p.endswith(".py") and "/builders/" in p)[0]
path = root / target; original = path.read_bytes()
try:
    for n in range(3):
        name = f"scale_bench_marker_{n}_{time.time_ns()}"
        path.write_bytes(original + f"\n\ndef {name}(value):\n    return value * {n}\n".encode())
        t = time.monotonic()
        stats = ws.update_paths([path])
        total = time.monotonic() - t
        s = time.monotonic()
        hits = store.keyword_search(name, 1)
        # searchable = rows committed + one keyword query finding them; total = vectors committed too
        updates.append((stats.seconds_to_searchable + time.monotonic() - s, total))
        assert hits and hits[0].path == target, "the update is not searchable"
finally:
    path.write_bytes(original); ws.update_paths([path])
t = time.monotonic(); index.store.optimize(); compaction = time.monotonic() - t
print(json.dumps({"kw": kw, "dense": dense, "hybrid": hybrid, "hybrid_cpu": hybrid_cpu, "recall": recall, "rss_mb": rss,
                  "peak_rss_mb_queries": peak_queries,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "updates": updates, "compaction_after_update": compaction,
                  "stats": store.index_stats()}))
"""

_RESTART = r"""
import json, sys, time
t = time.monotonic()
from codeask.workspace import Workspace
stats = Workspace([sys.argv[1]]).index()
print(json.dumps({"seconds": time.monotonic() - t, "cpu_seconds": time.process_time(), "files_changed": stats.files_changed,
                  "files_removed": stats.files_removed, "chunks_embedded": stats.chunks_embedded,
                  "files_seen": stats.files_seen}))
"""


def _run(script: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"measurement failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdist", default="sphinx==9.0.4", help="base tree copied into the monorepo")
    parser.add_argument("--chunks", type=int, default=1_000_000, help="chunks in the monorepo (default 1,000,000)")
    parser.add_argument("--real-vectors", type=int, default=1500, help="chunk texts embedded by the model")
    parser.add_argument("--noise", type=float, default=0.01, help="Gaussian noise per dimension added to vectors")
    parser.add_argument("--exact-queries", type=int, default=20, help="questions for ANN recall vs exact")
    parser.add_argument("--keep", type=Path, help="build here and keep it (default: a temp dir, removed)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="with --keep: measure the index already built there (build numbers from the last result)",
    )
    parser.add_argument("--build-only", action="store_true", help="build (with --keep) and measure nothing")
    args = parser.parse_args()
    if args.chunks < 1 or args.real_vectors < 1:
        parser.error("--chunks and --real-vectors must be positive")
    if (args.reuse or args.build_only) and args.keep is None:
        parser.error("--reuse and --build-only need --keep DIR")
    base = fetch_sdist(args.sdist)
    work = args.keep or Path(tempfile.mkdtemp(prefix="codeask-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["CODEASK_CACHE_DIR"] = str(work / "cache")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    root = work / "monorepo"
    from codeask.index.folders import index_dir_for
    from codeask.settings import load_settings

    built = work / "build.json"
    try:
        if args.reuse and built.is_file() and (index_dir_for(root, load_settings(root)) / "manifest.sqlite").is_file():
            result = json.loads(built.read_text(encoding="utf-8"))
            result["build_reused"] = True
        else:
            result = build(base, root, args.chunks, args.real_vectors, args.noise, args.seed)
            built.write_text(json.dumps(result), encoding="utf-8")
        if args.build_only:
            print(json.dumps(result))
            return 0
        result["index_bytes"] = sum(
            f.stat().st_size for f in index_dir_for(root, load_settings(root)).rglob("*") if f.is_file()
        )
        load_start = os.getloadavg()[0]
        t = time.monotonic()
        restart = _run(_RESTART, str(root))
        restart_process = time.monotonic() - t
        m = _run(_MEASURE, str(root), json.dumps(QUESTIONS), str(args.exact_queries))
        result.update(
            {
                "keyword_p50_ms": round(1000 * statistics.median(m["kw"]), 1),
                "keyword_p95_ms": round(1000 * _pct(m["kw"], 95), 1),
                "dense_p50_ms": round(1000 * statistics.median(m["dense"]), 1),
                "dense_p95_ms": round(1000 * _pct(m["dense"], 95), 1),
                "ask_no_llm_p50_ms": round(1000 * statistics.median(m["hybrid"]), 1),
                "ask_no_llm_p95_ms": round(1000 * _pct(m["hybrid"], 95), 1),
                "ask_no_llm_cpu_p50_ms": round(1000 * statistics.median(m["hybrid_cpu"]), 1),
                "ann_top10_recall_vs_exact": round(statistics.mean(m["recall"]), 3),
                "rss_mb_index_open": round(m["rss_mb"], 1),
                "peak_rss_mb_open_and_queries": round(m["peak_rss_mb_queries"], 1),
                "peak_rss_mb_incl_exact_search_updates_compaction": round(m["peak_rss_mb"], 1),
                "update_searchable_seconds_median": round(statistics.median(u[0] for u in m["updates"]), 3),
                "update_searchable_seconds_max": round(max(u[0] for u in m["updates"]), 3),
                "update_with_vectors_seconds_median": round(statistics.median(u[1] for u in m["updates"]), 3),
                "compaction_after_update_seconds": round(m["compaction_after_update"], 1),
                "restart_seconds_index_call": round(restart["seconds"], 2),
                "restart_seconds_process": round(restart_process, 2),
                "restart_cpu_seconds_process": round(restart["cpu_seconds"], 2),
                "restart_files_changed": restart["files_changed"] + restart["files_removed"],
                "restart_files_seen": restart["files_seen"],
                "index_stats": m["stats"],
                "load_average_1min": os.getloadavg()[0],
                "load_average_1min_at_start": load_start,
                "goals": {"ask_no_llm_p50_ms": 150, "update_searchable_seconds": 1, "restart_seconds": 10, "rss_mb": 1536},
            }
        )
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    width = max(len(k) for k in result)
    for key, value in result.items():
        print(f"{key:{width}}  {value}")
    print(f"\nwritten to {write_result(f'scale-{args.chunks}', result)}")
    return 0


if __name__ == "__main__":
    from codeask.cli import limit_malloc_arenas

    limit_malloc_arenas()
    raise SystemExit(main())
