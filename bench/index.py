"""Indexing speed, memory and disk on a real tree.

Usage::

    python bench/index.py PATH                 # any folder
    python bench/index.py --sdist sphinx==9.0.4 # a pinned PyPI sdist, fetched once
    python bench/index.py --sdist sphinx==9.0.4 --phase2-seconds 150   # busy machine: phase 2 capped

Measured in one run, on a fresh index folder (a temp ``CODEASK_CACHE_DIR``):

* cold index: seconds to keyword-searchable (phase 1), seconds to all vectors (phase 2), files/s,
  chunks/s of the whole pipeline;
* the raw model's chunks/s on a sample of the same chunks (same batching), and the ratio
  pipeline/raw (how much the indexer adds on top of the model);
* restart on the unchanged tree: seconds, chunks embedded (must be 0), seconds per 1,000 files;
* save -> searchable: append a function to a ~300-line file, then time until keyword search
  returns its chunk with the chunk's vector stored (median of 5);
* keyword queries (symbol names of the tree) run continuously in a thread during phase 2, then as
  many after it: p50/p95 of each and the ratio of the p95s (phase 2 never rewrites chunk rows and
  embeds at lower CPU priority, ``embedding.index_nice``, so they should match), and
  LanceDB's index statistics after phase 2 (``fts_unindexed_rows_after_phase2`` must be 0 without
  a final rewrite);
* peak RSS (MiB) and index size on disk (bytes).

Prints a table and writes ``bench/results/index-<name>.json``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import fetch_sdist, peak_rss_mb, write_result  # noqa: E402


def _pct(values: list[float], q: float) -> float:
    """The ``q``-th percentile of ``values`` (nearest rank); NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, help="folder to index")
    parser.add_argument("--sdist", help="a PyPI pin to fetch and index instead, e.g. sphinx==9.0.4")
    parser.add_argument("--raw-sample", type=int, default=400, help="chunks embedded by the raw model")
    parser.add_argument(
        "--phase2-seconds",
        type=float,
        help="stop phase 2 after this many seconds and report only phase 1, the embedding rate and the "
        "keyword latencies during/after phase 2 (for a busy machine; the index is left incomplete)",
    )
    parser.add_argument(
        "--cache-dir", type=Path, help="keep the index here (must not hold one for PATH yet); default: a temp dir"
    )
    args = parser.parse_args()
    if not args.path and not args.sdist:
        parser.error("give PATH or --sdist")
    root = (fetch_sdist(args.sdist) if args.sdist else args.path).resolve()

    cache = str(args.cache_dir) if args.cache_dir else tempfile.mkdtemp(prefix="codeask-bench-")
    os.environ["CODEASK_CACHE_DIR"] = cache
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from codeask.index.embed import BATCH_SIZE, MAX_TOKENS, load_embedder
    from codeask.index.embed_process import IDLE_SUPPORTED
    from codeask.index.rows import embed_text
    from codeask.workspace import Workspace

    ws = Workspace([root])
    index = next(iter(ws.indexes.values()))
    if index.manifest.count():
        parser.error(f"{index.index_dir} already holds an index: a cold run needs a fresh --cache-dir")
    embedder = load_embedder(ws.settings.embedding, background=True)  # the instance phase 2 uses

    t0 = time.monotonic()
    phase1 = index.sync(embed=False)
    t_keyword = time.monotonic() - t0
    stats_after_phase1 = index.store.index_stats()
    names = sorted({r["symbol"].rsplit(".", 1)[-1] for r in index.store.tables.chunks.search().select(["symbol"]).limit(None).to_list() if r["symbol"]})
    random.Random(1).shuffle(names)
    during: list[float] = []
    phase2_done = threading.Event()

    def keyword_queries(out: list[float], stop: threading.Event | None, count: int | None) -> None:
        """Keyword queries 50 ms apart, during phase 2 and after it alike (a back-to-back loop keeps
        caches and cores hot and measured ~30% lower p95 than the same queries paced)."""
        n = 0
        while (stop is None or not stop.is_set()) and (count is None or n < count):
            t = time.monotonic()
            index.store.keyword_search(names[n % len(names)], 20)
            out.append(time.monotonic() - t)
            n += 1
            time.sleep(0.05)

    reader = threading.Thread(target=keyword_queries, args=(during, phase2_done, None), daemon=True)
    reader.start()
    t1 = time.monotonic()
    cap = args.phase2_seconds
    embedded = index.embed_pending(should_stop=(lambda: time.monotonic() - t1 > cap) if cap else None)
    t_embed = time.monotonic() - t1
    phase2_done.set()
    reader.join()
    t_vectors = time.monotonic() - t0
    stats_after_phase2 = index.store.index_stats()
    after: list[float] = []
    keyword_queries(after, None, max(50, len(during)))
    chunks = index.store.count()
    print(f"phase 1 {t_keyword:.1f} s, all vectors {t_vectors:.1f} s, {embedded} chunks embedded", flush=True)
    latency = {
        "keyword_queries_during_phase2": len(during),
        "keyword_p50_ms_during_phase2": round(1000 * _pct(during, 50), 1),
        "keyword_p95_ms_during_phase2": round(1000 * _pct(during, 95), 1),
        "keyword_p50_ms_after_phase2": round(1000 * _pct(after, 50), 1),
        "keyword_p95_ms_after_phase2": round(1000 * _pct(after, 95), 1),
        "keyword_p95_during_over_after_phase2": round(_pct(during, 95) / _pct(after, 95), 2),
        "index_nice": ws.settings.embedding.index_nice,
        "index_idle": IDLE_SUPPORTED,
    }
    if cap:
        result = {
            "root": str(root),
            "chunks": chunks,
            "seconds_to_keyword_searchable": round(t_keyword, 2),
            "phase2_stopped_after_seconds": round(t_embed, 1),
            "chunks_embedded": embedded,
            "pipeline_chunks_per_second": round(embedded / t_embed, 2) if t_embed > 0 else None,
            **latency,
            "fts_unindexed_rows_after_phase1": stats_after_phase1.get("chunks.text", {}).get("unindexed_rows"),
            "peak_rss_mb": round(peak_rss_mb(), 1),
        }
        for key, value in result.items():
            print(f"{key:{max(len(k) for k in result)}}  {value}")
        print(f"\nwritten to {write_result(f'index-{root.name}-phase2-capped', result)}")
        return 0

    # The raw model on a sample of the same chunks, same batch size, same length sorting.
    rows = index.store.tables.chunks.search().select(["symbol", "content"]).limit(None).to_list()
    random.Random(0).shuffle(rows)
    sample = [embed_text(r["symbol"], r["content"]) for r in rows[: args.raw_sample]]
    t2 = time.monotonic()
    embedder.embed(sample)
    raw_rate = len(sample) / (time.monotonic() - t2)
    pipeline_rate = embedded / t_embed if t_embed > 0 else float("nan")

    # Restart: a new workspace object on the unchanged tree.
    t3 = time.monotonic()
    restart = Workspace([root]).index()
    t_restart = time.monotonic() - t3

    # Save -> searchable on a ~300-line file.
    target = max(
        (root / p for p in index.manifest.all() if p.endswith(".py")),
        key=lambda p: -abs(len(p.read_text("utf-8", "replace").splitlines()) - 300),
    )
    original = target.read_bytes()
    latencies = []
    try:
        for n in range(5):
            name = f"codeask_bench_marker_{n}_{random.Random(n).randint(0, 10**9)}"
            target.write_bytes(original + f"\n\ndef {name}(value):\n    return value * {n}\n".encode())
            t4 = time.monotonic()
            ws.update_paths([target])
            kw = index.store.keyword_search(name, 1)
            latencies.append(time.monotonic() - t4)
            assert kw and kw[0].path == target.relative_to(root).as_posix(), "keyword search missed the saved file"
            assert name in kw[0].content, "the keyword hit is not the new chunk"
            assert index.store.count_pending() == 0, "the new chunk has no vector yet"
    finally:
        target.write_bytes(original)
        ws.update_paths([target])

    files = phase1.files_seen
    result = {
        "root": str(root),
        "files": files,
        "files_indexed": phase1.files_changed,
        "files_skipped": phase1.files_skipped,
        "chunks": chunks,
        "seconds_to_keyword_searchable": round(t_keyword, 2),
        "seconds_to_all_vectors": round(t_vectors, 2),
        "files_per_second_phase1": round(files / t_keyword, 1),
        "chunks_per_second_phase1": round(chunks / t_keyword, 1),
        "chunks_embedded": embedded,
        "pipeline_chunks_per_second": round(pipeline_rate, 1),
        "raw_model_chunks_per_second": round(raw_rate, 1),
        "pipeline_over_raw": round(pipeline_rate / raw_rate, 3),
        "restart_seconds": round(t_restart, 2),
        "restart_chunks_embedded": restart.chunks_embedded,
        "restart_seconds_per_1000_files": round(t_restart / max(1, files) * 1000, 2),
        "save_to_searchable_seconds_median": round(statistics.median(latencies), 3),
        "save_to_searchable_seconds_max": round(max(latencies), 3),
        "save_target": target.relative_to(root).as_posix(),
        **latency,
        "fts_unindexed_rows_after_phase1": stats_after_phase1.get("chunks.text", {}).get("unindexed_rows"),
        "fts_unindexed_rows_after_phase2": stats_after_phase2.get("chunks.text", {}).get("unindexed_rows"),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "index_bytes": index.store.disk_bytes(),
        "batch_size": BATCH_SIZE,
        "max_tokens": MAX_TOKENS,
    }
    width = max(len(k) for k in result)
    for key, value in result.items():
        print(f"{key:{width}}  {value}")
    out = write_result(f"index-{root.name}", result)
    print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    from codeask.cli import limit_malloc_arenas

    limit_malloc_arenas()  # as the CLI and the server do
    raise SystemExit(main())
