"""A Go repository with a large ``vendor/`` folder: fully searchable (own code with vectors) in the
time its own code alone takes (issue 29).

Usage::

    python bench/vendor.py PATH            # a Go module with a vendor/ folder
    python bench/vendor.py PATH --embed-seconds 300   # also time embedding the vendored code, capped

Three cold indexes, each in a fresh temp ``CODEASK_CACHE_DIR``, one after the other:

* ``own``: a copy of PATH without ``vendor/``: seconds to keyword-searchable and to ready;
* ``with_vendor``: PATH as it is, default settings (vendored code keyword-only): the same, plus
  chunks per kind, vectors stored, and whether a vendored symbol is found by keyword search;
* ``embed_third_party`` (with ``--embed-seconds``): PATH with ``codeask.index.kinds.EMBED_THIRD_PARTY = True``,
  phase 2 stopped after that many seconds: its chunks/s and the estimated seconds to ready.

The goal: ``with_vendor.seconds_to_ready`` close to ``own.seconds_to_ready`` (the ratio is printed).
Prints a table with the load average and writes ``bench/results/vendor-<name>.json``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import write_result


def cold_index(root: Path, third_party: bool = False, embed_seconds: float | None = None) -> dict:
    """Index ``root`` cold in a fresh cache folder, embedding vendored and generated code when
    ``third_party`` (:data:`codeask.index.kinds.EMBED_THIRD_PARTY`); ``{seconds_to_searchable,
    seconds_to_ready, files, chunks, vectors, vectors_pending, kinds, vendored_hit}``."""
    from codeask.index import kinds
    from codeask.workspace import Workspace

    kinds.EMBED_THIRD_PARTY = third_party
    with tempfile.TemporaryDirectory(prefix="codeask-vendor-bench-") as cache:
        os.environ["CODEASK_CACHE_DIR"] = cache
        ws = Workspace([root], background_indexing=False)
        started = time.monotonic()
        stop_at = None if embed_seconds is None else started + embed_seconds
        keyword = ws.index(embed=False)
        searchable = time.monotonic() - started
        stats = ws.index(should_stop=(lambda: time.monotonic() > stop_at) if stop_at else None)
        ready = time.monotonic() - started
        store = next(iter(ws.indexes.values())).store
        kinds: Counter[str] = Counter()
        for _path, kind in _kinds(store):
            kinds[kind] += 1
        answer = ws.ask("NewDecoder yaml decoder", no_llm=True, max_files=10)
        return {
            "seconds_to_searchable": round(searchable, 2),
            "seconds_to_ready": round(ready, 2),
            "files": keyword.files_changed,
            "chunks": stats.chunks_total,
            "vectors": store.count_vectors(),
            "vectors_pending": stats.vectors_pending,
            "chunks_by_kind": dict(kinds),
            "vendored_hit": any(s.kind == "vendored" for s in answer.sources),
        }


def _kinds(store) -> list[tuple[str, str]]:
    import lancedb

    tbl = lancedb.connect(str(store.index_dir / "lance")).open_table("chunks").to_arrow()
    return list(zip(tbl["path"].to_pylist(), tbl["kind"].to_pylist()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path, help="a Go module with a vendor/ folder")
    parser.add_argument("--embed-seconds", type=float, help="also embed the vendored code, for at most this long")
    args = parser.parse_args()
    root = args.path.resolve()
    if not (root / "vendor").is_dir():
        print(f"{root} has no vendor/ folder", file=sys.stderr)
        return 2
    result: dict = {"path": root.name, "load_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="codeask-own-") as tmp:
        own = Path(tmp) / root.name
        shutil.copytree(root, own, ignore=lambda d, names: ["vendor"] if Path(d) == root else [])
        result["own"] = cold_index(own)
    result["with_vendor"] = cold_index(root)
    if args.embed_seconds:
        run = cold_index(root, True, args.embed_seconds)
        done = run["vectors"]
        rate = done / max(run["seconds_to_ready"] - run["seconds_to_searchable"], 1e-9)
        run["estimated_seconds_to_ready"] = (
            round(run["seconds_to_searchable"] + run["chunks"] / rate, 1) if rate else None
        )
        result["embed_third_party"] = run
    result["ready_ratio"] = round(result["with_vendor"]["seconds_to_ready"] / result["own"]["seconds_to_ready"], 2)
    result["load_after"] = os.getloadavg()
    out = write_result(f"vendor-{root.name}", result)
    print(f"load average before {result['load_before']}, after {result['load_after']}")
    for name in ("own", "with_vendor", "embed_third_party"):
        if name in result:
            r = result[name]
            print(
                f"{name:18} chunks {r['chunks']:6}  vectors {r['vectors']:6}  searchable {r['seconds_to_searchable']:7.1f} s"
                f"  ready {r['seconds_to_ready']:7.1f} s  {r.get('estimated_seconds_to_ready', '')}"
            )
    print(f"with vendor / own, seconds to ready: {result['ready_ratio']}  ({out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
