"""``codeask publish``: embed what a team's shared vector cache lacks and append it (for CI).

The job reads the workspace exactly as indexing does (same walk, ignore and secret rules, same
chunker, same embed text and hash), keeps the keys of its shard (``--shard I/N``), asks the cache
which of them it holds (one query per :data:`~codeask.index.shared.LOOKUP_BATCH` keys), embeds the
rest locally in batches of :data:`PUBLISH_BATCH` texts and appends each batch as it is done, so an
interrupted publish keeps what it finished. No local index is written. ``--compact`` (with or
without a folder) removes duplicate keys, drops keys no publish used within ``RETENTION_DAYS`` (:mod:`codeask.index.shared`)
and compacts the table.

The URL comes from ``--to``, ``CODEASK_SHARED_CACHE`` or the trusted setting ``shared.url``;
credentials from the standard AWS environment variables (see :mod:`codeask.index.shared`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from codeask.console import folder_arg
from codeask.index.shared import Shard, SharedVectorCache, model_id
from codeask.settings import Settings, load_settings

__all__ = ["PublishStats", "publish", "add_publish_parser", "PUBLISH_BATCH"]

#: Texts embedded and appended per batch (each batch is one commit to the shared table).
PUBLISH_BATCH = 256


@dataclass
class PublishStats:
    """What one publish did; printed by ``codeask publish --json``.

    ``keys`` distinct embed hashes of the folder, ``keys_in_shard`` those this shard owns,
    ``keys_present`` already in the cache, ``keys_embedded`` embedded and appended by this run,
    ``seconds`` wall time. ``compacted`` holds :meth:`SharedVectorCache.compact`'s counts when
    ``--compact`` was given.
    """

    url: str = ""
    model: str = ""
    shard: str = "0/1"
    files: int = 0
    chunks: int = 0
    keys: int = 0
    keys_in_shard: int = 0
    keys_present: int = 0
    keys_embedded: int = 0
    seconds: float = 0.0
    compacted: dict[str, int] | None = None


def _texts_by_hash(root: Path, settings: Settings) -> tuple[dict[str, str], int, int]:
    """``({embed_hash: embed text}, files read, chunks)`` for every indexable file under ``root``
    whose kind is embedded (:func:`~codeask.index.kinds.keyword_only_kinds`)."""
    from codeask.index.chunk import chunk_file
    from codeask.index.filetext import read_text
    from codeask.index.kinds import classify, keyword_only_kinds
    from codeask.index.rows import embed_hash, embed_text
    from codeask.index.walk import Ignorer, walk

    result = walk(root, settings.index, Ignorer(root, settings.index))
    texts: dict[str, str] = {}
    files = chunks = 0
    keyword_only = keyword_only_kinds()
    for entry in result.files:
        got = read_text(entry.abs_path, settings.index)
        if isinstance(got, str):
            continue
        files += 1
        file_chunks = chunk_file(entry.path, got.text)
        if file_chunks and classify(entry.path, got.text, file_chunks[0].language) in keyword_only:
            continue  # indexed keyword-only: no vector to publish
        for c in file_chunks:
            chunks += 1
            text = embed_text(c.symbol, c.content)
            texts.setdefault(embed_hash(text), text)
    return texts, files, chunks


def publish(
    root: Path | None,
    url: str,
    settings: Settings,
    *,
    shard: Shard | None = None,
    with_text: bool = False,
    compact: bool = False,
    progress=None,
) -> PublishStats:
    """Publish the vectors of ``root`` (if given) to the shared cache at ``url``; optionally compact.

    Args:
        root: the workspace folder, or ``None`` for ``--compact`` alone.
        url: ``s3://bucket/prefix`` (or a local folder).
        settings: trusted settings (embedding model, index rules).
        shard: the part of the key space this publisher embeds (``None``: all of it).
        with_text: store the embedded text beside each vector (off by default: no code leaves).
        compact: dedupe, expire and compact the table after publishing.
        progress: ``progress(done, total)`` after each appended batch, or ``None``.

    Raises:
        SharedCacheError: the cache cannot be reached or written.
        EmbeddingError: the embedding model cannot be loaded.
    """
    from codeask.index.embed import MAX_TOKENS, load_embedder

    started = time.monotonic()
    shard = shard or Shard()
    emb = settings.embedding
    mid = model_id(emb.model, MAX_TOKENS)
    stats = PublishStats(url=url, model=mid, shard=f"{shard.index}/{shard.count}")
    embedder = None
    dim = 384
    if root is not None:
        embedder = load_embedder(emb, bulk=True)  # the user (or CI job) waits for it: normal priority
        dim = embedder.dim
    cache = SharedVectorCache(url, mid, dim)
    if root is not None and embedder is not None:
        texts, stats.files, stats.chunks = _texts_by_hash(root, settings)
        stats.keys = len(texts)
        mine = sorted(h for h in texts if shard.owns(h))
        stats.keys_in_shard = len(mine)
        present = cache.touch(mine)
        stats.keys_present = len(present)
        missing = [h for h in mine if h not in present]
        for start in range(0, len(missing), PUBLISH_BATCH):
            part = missing[start : start + PUBLISH_BATCH]
            vectors = embedder.embed([texts[h] for h in part])
            cache.publish(part, vectors, [texts[h] for h in part] if with_text else None)
            stats.keys_embedded += len(part)
            if progress is not None:
                progress(stats.keys_embedded, len(missing))
        cache.finish()
    if compact:
        if dim == 384 and embedder is None:
            cache.dim = cache.stored_dim() or dim
        stats.compacted = cache.compact()
    stats.seconds = round(time.monotonic() - started, 3)
    return stats


def add_publish_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``codeask publish [PATH] [--to URL] [--shard I/N] [--with-text] [--compact] [--json]``."""
    p = subparsers.add_parser(
        "publish",
        help="embed what the team's shared vector cache lacks and append it (for CI)",
        description=(
            "Embed the chunks of PATH that the shared vector cache lacks and append their vectors. "
            "Credentials and endpoint come from the standard AWS environment variables."
        ),
    )
    p.add_argument("path", nargs="?", type=folder_arg, help="workspace folder (optional with --compact)")
    p.add_argument(
        "--to", metavar="URL", help="the cache, e.g. s3://bucket/prefix (default: CODEASK_SHARED_CACHE / shared.url)"
    )
    p.add_argument("--shard", default="0/1", metavar="I/N", help="publish only keys whose hash modulo N is I (0-based)")
    p.add_argument(
        "--with-text", action="store_true", help="also store the embedded text (off by default: only vectors leave)"
    )
    p.add_argument("--compact", action="store_true", help="remove duplicate and expired keys, compact the table")
    p.add_argument("--json", action="store_true", help="print the stats as one JSON object")
    p.set_defaults(handler=_handler)
    return p


def _handler(args) -> int:
    from codeask.console import CLIError

    try:
        shard = Shard.parse(args.shard)
    except ValueError as exc:
        print(f"codeask publish: {exc}", file=sys.stderr)
        return 2
    if args.path is None and not args.compact:
        print("codeask publish: give a folder to publish, or --compact", file=sys.stderr)
        return 2
    root = None
    if args.path is not None:
        root = args.path.expanduser().resolve()
        if not root.is_dir():
            raise CLIError(f"workspace folder not found: {args.path}")
    settings = load_settings(root, flags={"shared.url": args.to})
    url = settings.shared.url
    if not url:
        raise CLIError("no shared cache given: pass --to s3://bucket/prefix or set CODEASK_SHARED_CACHE")

    def progress(done: int, total: int) -> None:
        print(f"codeask: published {done}/{total} vectors", file=sys.stderr, flush=True)

    stats = publish(
        root,
        url,
        settings,
        shard=shard,
        with_text=args.with_text,
        compact=args.compact,
        progress=None if args.json else progress,
    )
    if args.json:
        print(json.dumps(asdict(stats)))
    else:
        print(
            f"{stats.url} ({stats.model}, shard {stats.shard}): {stats.keys_in_shard} keys, "
            f"{stats.keys_present} already shared, {stats.keys_embedded} embedded and published "
            f"in {stats.seconds:.1f} s"
        )
        if stats.compacted is not None:
            c = stats.compacted
            print(
                f"compacted: {c['rows']} rows, {c['duplicates_removed']} duplicates and "
                f"{c['expired_removed']} expired keys removed"
            )
    return 0
