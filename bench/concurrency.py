"""Readers during indexing and maintenance: no failed read, no file ever seen without rows.

Usage::

    python bench/concurrency.py                          # sphinx==9.0.4, 500 edits
    python bench/concurrency.py --sdist requests==2.34.2 --edits 100
    python bench/concurrency.py PATH --edits 40          # any folder (copied first)

Three processes share one index folder (a temp ``CODEASK_CACHE_DIR``), on a copy of the tree:

* the **writer** runs a cold index (phase 1, then phase 2 unless ``--no-embed``), then ``--edits``
  single-file edits (a function appended to one file, then the file restored, alternately), each a
  live update, with compaction every ``--compact-every`` commits;
* a **codeask reader** (the store the CLI and the server use) runs keyword, vector and per-file
  reads continuously;
* a **direct reader** opens the index folder's LanceDB tables itself, as any tool may, and runs
  row counts, full-text searches, filters and vector searches.

A read that raises is a failed read. An *empty snapshot* is a per-file read returning no rows for a
file that had rows before (no file is ever deleted here, so every such file has rows before and
after). Prints progress, then as its last line a JSON object with at least ``reads``,
``failed_reads`` and ``empty_snapshots``; also writes ``bench/results/concurrency-<name>.json``.
Goal: 0 failed reads and 0 empty snapshots.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

_QUESTIONS = ["parse the configuration file", "render a template", "build the index", "http request"]


def _settings(root: Path, compact_every: int):
    from codeask.index import engine, store
    from codeask.settings import load_settings

    engine.COMPACT_EVERY = compact_every  # internals, module constants: set for this process only
    if os.environ.get("CODEASK_BENCH_KEEP_VERSIONS_MINUTES"):
        store.KEEP_VERSIONS_MINUTES = float(os.environ["CODEASK_BENCH_KEEP_VERSIONS_MINUTES"])
    return load_settings(root)


def writer(root: str, edits: int, embed: bool, compact_every: int, seed: int, queue) -> None:
    """Cold index, then ``edits`` single-file live updates; puts a result dict on ``queue``."""
    from codeask.index.engine import RootIndex

    root_p = Path(root)
    index = RootIndex(root_p, _settings(root_p, compact_every))
    started = time.monotonic()
    cold = index.sync(embed=embed)
    cold_seconds = time.monotonic() - started
    # Files with rows (an empty __init__.py restored after an edit rightly has none again).
    with_rows = {p for p, rec in index.manifest.all().items() if rec.chunks}
    files = sorted(p for p in with_rows if p.endswith(".py")) or sorted(with_rows)
    rng = random.Random(seed)
    originals: dict[str, bytes] = {}
    t_edits = time.monotonic()
    for n in range(edits):
        rel = rng.choice(files)
        path = root_p / rel
        if rel in originals:
            path.write_bytes(originals.pop(rel))
        else:
            originals[rel] = path.read_bytes()
            path.write_bytes(originals[rel] + f"\n\ndef concurrency_edit_{n}(value):\n    return value + {n}\n".encode())
        index.update_paths([path])
    for rel, data in originals.items():
        (root_p / rel).write_bytes(data)
    index.update_paths([root_p / rel for rel in originals])
    with index.writing():
        index.store.optimize()
    queue.put(
        {
            "role": "writer",
            "files": cold.files_changed,
            "chunks": index.store.count(),
            "cold_seconds": round(cold_seconds, 1),
            "edits": edits,
            "edit_seconds": round(time.monotonic() - t_edits, 1),
            "compactions": index.store.compactions,
        }
    )


class _Reads:
    """Counts reads, failures (with the first messages) and empty snapshots of one reader."""

    def __init__(self, role: str):
        self.role = role
        self.reads = 0
        self.failed = 0
        self.empty = 0
        self.errors: list[str] = []
        self.had_rows: set[str] = set()

    def run(self, fn, *args):
        self.reads += 1
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - every failure is what this benchmark counts
            self.failed += 1
            if len(self.errors) < 5:
                self.errors.append(f"{type(exc).__name__}: {str(exc)[:300]}")
            return None

    def file_rows(self, path: str, count: int | None) -> None:
        if count is None:
            return
        if count:
            self.had_rows.add(path)
        elif path in self.had_rows:
            self.empty += 1
            if len(self.errors) < 5:
                self.errors.append(f"empty snapshot of {path}")

    def result(self) -> dict:
        return {
            "role": self.role,
            "reads": self.reads,
            "failed_reads": self.failed,
            "empty_snapshots": self.empty,
            "errors": self.errors,
        }


def _wait_for_index(root: Path, stop) -> Path | None:
    from codeask.index.folders import index_dir_for

    index_dir = index_dir_for(root, _settings(root, 50))
    while not stop.is_set():
        if (index_dir / "lance" / "vectors.lance").exists():
            return index_dir
        time.sleep(0.05)
    return None


def codeask_reader(root: str, stop, queue) -> None:
    """Keyword, vector and per-file reads through codeask's store until ``stop`` is set."""
    from codeask.index.embed import load_embedder
    from codeask.index.engine import RootIndex

    root_p = Path(root)
    reads = _Reads("codeask_reader")
    settings = _settings(root_p, 50)
    vectors = load_embedder(settings.embedding).embed(_QUESTIONS)
    if _wait_for_index(root_p, stop) is not None:
        index = RootIndex(root_p, settings)
        store = index.store
        rng = random.Random(1)
        n = 0
        while not stop.is_set():
            n += 1
            reads.run(store.keyword_search, rng.choice(["config", "template", "index", "request", "parse"]), 20)
            reads.run(store.vector_search, vectors[n % len(vectors)], 20)
            paths = list(index.manifest.all())
            if paths:
                path = rng.choice(paths)
                rows = reads.run(store.rows_for_path, path)
                reads.file_rows(path, None if rows is None else len(rows))
            reads.run(store.count_pending)
            time.sleep(0.01)
        index.close()
    queue.put(reads.result())


def direct_reader(root: str, stop, queue) -> None:
    """Reads through LanceDB's own API on the index folder until ``stop`` is set."""
    from datetime import timedelta

    import lancedb
    import numpy as np

    root_p = Path(root)
    reads = _Reads("direct_reader")
    index_dir = _wait_for_index(root_p, stop)
    if index_dir is not None:
        db = lancedb.connect(str(index_dir / "lance"), read_consistency_interval=timedelta(0))
        chunks = db.open_table("chunks")
        vectors = db.open_table("vectors")
        rng = np.random.default_rng(2)
        known: list[str] = []
        while not stop.is_set():
            reads.run(chunks.count_rows)
            hits = reads.run(lambda: chunks.search("config", query_type="fts", fts_columns="text").limit(10).to_list())
            if hits:
                known.extend(h["path"] for h in hits if h["path"] not in known)
            if known:
                path = known[int(rng.integers(len(known)))]
                count = reads.run(chunks.count_rows, f"path = '{path}'")
                reads.file_rows(path, count)
            if reads.run(vectors.count_rows):
                query = rng.standard_normal(vectors.schema.field("vector").type.list_size).astype(np.float32)
                reads.run(lambda: vectors.search(query).distance_type("cosine").limit(10).to_list())
            time.sleep(0.01)
    queue.put(reads.result())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, help="folder to copy and index instead of --sdist")
    parser.add_argument("--sdist", default="sphinx==9.0.4", help="a PyPI pin to fetch (default sphinx==9.0.4)")
    parser.add_argument("--edits", type=int, default=500, help="single-file edits after the cold index (default 500)")
    parser.add_argument("--no-embed", action="store_true", help="cold index without phase 2 (edits still embed)")
    parser.add_argument("--compact-every", type=int, default=10, help="commits between compactions (default 10)")
    parser.add_argument(
        "--keep-versions-minutes", type=float,
        help="override index.keep_versions_minutes (0 shows what readers hit without retention)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-write", action="store_true", help="do not write bench/results/*.json")
    args = parser.parse_args()
    if args.edits < 0 or args.compact_every < 1:
        parser.error("--edits must be >= 0 and --compact-every >= 1")
    if args.path is not None:
        if not args.path.is_dir():
            parser.error(f"not a folder: {args.path}")
        source = args.path.resolve()
    else:
        from common import fetch_sdist

        source = fetch_sdist(args.sdist)
    work = Path(tempfile.mkdtemp(prefix="codeask-concurrency-"))
    try:
        root = work / source.name
        shutil.copytree(source, root, symlinks=True)
        os.environ["CODEASK_CACHE_DIR"] = str(work / "cache")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        if args.keep_versions_minutes is not None:
            os.environ["CODEASK_BENCH_KEEP_VERSIONS_MINUTES"] = str(args.keep_versions_minutes)
        ctx = mp.get_context("spawn")
        queue = ctx.Queue()
        stop = ctx.Event()
        readers = [
            ctx.Process(target=codeask_reader, args=(str(root), stop, queue)),
            ctx.Process(target=direct_reader, args=(str(root), stop, queue)),
        ]
        for proc in readers:
            proc.start()
        started = time.monotonic()
        write = ctx.Process(target=writer, args=(str(root), args.edits, not args.no_embed, args.compact_every, args.seed, queue))
        write.start()
        results = []
        write.join()
        stop.set()
        for proc in readers:
            proc.join(timeout=120)
        while len(results) < 3:
            try:
                results.append(queue.get(timeout=10))
            except Exception:  # noqa: BLE001 - queue.Empty: a process died without a result
                break
        by_role = {r["role"]: r for r in results}
        reader_results = [by_role.get(r, {}) for r in ("codeask_reader", "direct_reader")]
        summary = {
            "source": source.name,
            "seconds": round(time.monotonic() - started, 1),
            "writer": by_role.get("writer", {"error": f"writer exit code {write.exitcode}"}),
            "readers": reader_results,
            "reads": sum(r.get("reads", 0) for r in reader_results),
            "failed_reads": sum(r.get("failed_reads", 0) for r in reader_results),
            "empty_snapshots": sum(r.get("empty_snapshots", 0) for r in reader_results),
            "complete": write.exitcode == 0 and all(r for r in reader_results),
        }
        for r in reader_results:
            print(f"{r.get('role')}: {r.get('reads')} reads, {r.get('failed_reads')} failed, "
                  f"{r.get('empty_snapshots')} empty snapshots {r.get('errors') or ''}", flush=True)
        if not args.no_write:
            from common import write_result

            print(f"written to {write_result(f'concurrency-{source.name}', summary)}", flush=True)
        print(json.dumps(summary), flush=True)
        return 0 if summary["complete"] else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
