"""A team's shared vector cache: a LanceDB table on S3-compatible object storage.

Vectors are keyed by ``(model, embed_hash)``: ``model`` names the embedding model and its
truncation (:func:`model_id`), ``embed_hash`` is the same content hash the local index keys its
vectors by (``sha256(symbol + "\\n" + content)[:32]``, see :func:`codeask.index.rows.embed_text`).
A CI job publishes (``codeask publish PATH --to s3://bucket/prefix``); developers read it while
indexing: before a batch of chunks is embedded, its hashes are looked up in one query per batch and
only the misses are embedded locally. Queries never touch the network: the shared table only fills
the local index's vectors.

What is stored: ``model``, ``embed_hash``, ``vector`` (``dim`` float32), ``published`` (seconds
since the epoch of the last publish that used the key) and ``text`` (the embedded text, only when
the publisher asks for it with ``--with-text``; empty otherwise). No path, no file name.

Where the connection comes from (never from a workspace file; ``shared.url`` is a trusted-only
setting): the URL from ``CODEASK_SHARED_CACHE`` or ``shared.url``; credentials, region and endpoint
from the standard AWS variables (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_REGION``/``AWS_DEFAULT_REGION``, ``AWS_ENDPOINT_URL_S3``/
``AWS_ENDPOINT_URL``), which :func:`storage_options` maps to LanceDB's ``storage_options``.

Concurrency: publishers insert with ``merge_insert`` on the key (insert-if-absent), and retry a
commit that conflicts with another publisher's; ``--shard I/N`` splits the keys by hash so a CI
matrix never races on the same key. :meth:`SharedVectorCache.compact` removes any duplicate key a
race still left, drops keys no publish used within the retention window, and compacts files.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from codeask.index.object_store import is_conflict, sql_literal, storage_options, timedelta, vector_schema
from codeask.index.store_errors import store_error_cause

__all__ = [
    "SharedCacheError",
    "SharedVectorCache",
    "Shard",
    "model_id",
    "LOOKUP_BATCH",
]

log = logging.getLogger(__name__)

TABLE = "vectors"
#: Keys per lookup query (an ``IN`` list; one query per embedding batch of at most this size).
LOOKUP_BATCH = 512
#: Days a key stays without a publish using it before ``codeask publish --compact`` drops it: a month
#: keeps the vectors of every branch a team touched in a release cycle (LanceDB keeps no usage stats
#: to measure by; a dropped key costs one re-embed). Was ``shared.retention_days``.
RETENTION_DAYS = 30.0
#: How often a conflicting commit is retried before the publish fails.
_COMMIT_RETRIES = 8


class SharedCacheError(RuntimeError):
    """The shared cache cannot be reached or used; the message names the URL and the cause."""


def model_id(model: str, max_tokens: int) -> str:
    """The key part that makes vectors comparable: model name and token cap, e.g. ``all-MiniLM-L6-v2@256``."""
    return f"{model}@{max_tokens}"


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (0-based): the keys whose hash modulo ``count`` is ``index``."""

    index: int = 0
    count: int = 1

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"I/N"`` with 0 <= I < N -> :class:`Shard`.

        Raises:
            ValueError: not of that form.
        """
        try:
            left, right = text.split("/")
            shard = cls(int(left), int(right))
        except ValueError:
            raise ValueError(f"--shard takes I/N with 0 <= I < N, got {text!r}") from None
        if shard.count < 1 or not 0 <= shard.index < shard.count:
            raise ValueError(f"--shard takes I/N with 0 <= I < N, got {text!r}")
        return shard

    def owns(self, embed_hash: str) -> bool:
        """Whether this shard publishes ``embed_hash`` (a hex string)."""
        return self.count == 1 or int(embed_hash[:15], 16) % self.count == self.index


class SharedVectorCache:
    """The shared vector table at ``url`` (``s3://bucket/prefix`` or a local folder, for tests).

    Args:
        url: where the LanceDB database lives.
        model: :func:`model_id` of the embedding model; lookups and publishes use only its keys.
        dim: vector dimension (384 for the built-in model).
        options: LanceDB ``storage_options``; :func:`storage_options` when ``None``.

    Opening is lazy: nothing touches the network until the first lookup or publish.
    """

    def __init__(self, url: str, model: str, dim: int, options: Mapping[str, str] | None = None):
        self.url = url
        self.model = model
        self.dim = dim
        self.options = dict(storage_options() if options is None else options)
        self._db: Any = None
        self._table: Any = None

    # ----------------------------------------------------------- connection
    def _connect(self) -> Any:
        if self._db is None:
            import lancedb

            opts = self.options if self.url.startswith(("s3://", "s3a://", "gs://", "az://")) else None
            try:
                # Strong consistency: every read sees other publishers' latest commit.
                self._db = lancedb.connect(
                    self.url, storage_options=opts, read_consistency_interval=timedelta(seconds=0)
                )
            except Exception as exc:
                raise SharedCacheError(f"cannot open the shared cache {self.url}: {store_error_cause(exc)}") from exc
        return self._db

    def _open(self, *, create: bool) -> Any:
        """The table, or ``None`` when it does not exist yet and ``create`` is false."""
        if self._table is not None:
            return self._table
        db = self._connect()
        try:
            self._table = db.open_table(TABLE)
        except (FileNotFoundError, ValueError) as exc:
            if "not found" not in str(exc).lower() and "does not exist" not in str(exc).lower():
                raise SharedCacheError(f"cannot open the shared cache {self.url}: {store_error_cause(exc)}") from exc
            if not create:
                return None
            self._table = self._create(db)
        except Exception as exc:
            raise SharedCacheError(f"cannot open the shared cache {self.url}: {store_error_cause(exc)}") from exc
        return self._table

    def _create(self, db: Any) -> Any:
        try:
            table = db.create_table(TABLE, schema=vector_schema(self.dim), exist_ok=True)
        except Exception as exc:
            raise SharedCacheError(f"cannot create the shared cache {self.url}: {store_error_cause(exc)}") from exc
        return table

    def _ensure_key_index(self, table: Any) -> None:
        """A BTree scalar index on ``embed_hash`` (built once the table has rows)."""
        try:
            names = {i.name for i in table.list_indices()}
            if not any("embed_hash" in n for n in names) and table.count_rows() > 0:
                import warnings

                with warnings.catch_warnings():  # deprecated alias, still the documented scalar path in 0.40
                    warnings.simplefilter("ignore")
                    table.create_scalar_index("embed_hash", replace=True)
            else:
                table.optimize()  # folds new rows into the existing indices
        except Exception as exc:  # an index is a speed-up, never a reason to fail a publish
            log.warning("shared cache %s: scalar index not updated: %s", self.url, store_error_cause(exc))

    # --------------------------------------------------------------- reads
    def _query(self, embed_hashes: Iterable[str], columns: list[str]) -> Any:
        """Rows of this model for ``embed_hashes`` (one query per :data:`LOOKUP_BATCH` keys), as
        one Arrow table of ``columns``, or ``None`` when the table does not exist yet."""
        import pyarrow as pa

        wanted = sorted(set(embed_hashes))
        table = self._open(create=False) if wanted else None
        if table is None:
            return None
        parts = []
        for start in range(0, len(wanted), LOOKUP_BATCH):
            part = wanted[start : start + LOOKUP_BATCH]
            where = f"model = {sql_literal(self.model)} AND embed_hash IN ({', '.join(sql_literal(h) for h in part)})"
            try:
                parts.append(table.search().where(where).select(columns).limit(None).to_arrow())
            except Exception as exc:
                raise SharedCacheError(f"cannot read the shared cache {self.url}: {store_error_cause(exc)}") from exc
        return pa.concat_tables(parts)

    def lookup(self, embed_hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """Vectors the cache holds for ``embed_hashes``: ``{embed_hash: (dim,) float32}``.

        One query per :data:`LOOKUP_BATCH` keys. A table that does not exist yet holds nothing.

        Raises:
            SharedCacheError: the store cannot be reached or read.
        """
        got = self._query(embed_hashes, ["embed_hash", "vector"])
        found: dict[str, np.ndarray] = {}
        if got is None or got.num_rows == 0:
            return found
        vectors = got["vector"].combine_chunks().flatten().to_numpy().reshape(-1, self.dim)
        for h, v in zip(got["embed_hash"].to_pylist(), vectors):
            found.setdefault(h, v.astype(np.float32, copy=True))
        return found

    def touch(self, embed_hashes: Sequence[str], *, now: float | None = None) -> set[str]:
        """Which of ``embed_hashes`` the cache holds; marks those last published over a day ago
        as used now (so :meth:`compact` keeps them). Returns the held keys.

        Raises:
            SharedCacheError: the store cannot be reached, read or written.
        """
        got = self._query(embed_hashes, ["embed_hash", "published"])
        if got is None:
            return set()
        stamp = time.time() if now is None else now
        held = got["embed_hash"].to_pylist()
        stale = sorted({h for h, p in zip(held, got["published"].to_pylist()) if p < stamp - 86400.0})
        table = self._open(create=False)
        for start in range(0, len(stale), LOOKUP_BATCH):
            part = stale[start : start + LOOKUP_BATCH]
            where = f"model = {sql_literal(self.model)} AND embed_hash IN ({', '.join(sql_literal(h) for h in part)})"
            try:
                table.update(where=where, values={"published": stamp})
            except Exception as exc:
                raise SharedCacheError(f"cannot write the shared cache {self.url}: {store_error_cause(exc)}") from exc
        return set(held)

    def stored_dim(self) -> int | None:
        """The vector dimension of the existing table, or ``None`` when there is none."""
        table = self._open(create=False)
        if table is None:
            return None
        return int(table.schema.field("vector").type.list_size)

    def count(self) -> int:
        """Rows stored for this model (0 when the table does not exist)."""
        table = self._open(create=False)
        if table is None:
            return 0
        return int(table.count_rows(f"model = {sql_literal(self.model)}"))

    # -------------------------------------------------------------- writes
    def publish(
        self,
        embed_hashes: Sequence[str],
        vectors: np.ndarray,
        texts: Sequence[str] | None = None,
        *,
        now: float | None = None,
    ) -> int:
        """Insert the keys the table lacks; refresh ``published`` of keys older than a day.

        Args:
            embed_hashes: ``n`` keys.
            vectors: ``(n, dim)`` float32, row ``i`` for ``embed_hashes[i]``.
            texts: the embedded texts to store beside them (``--with-text``), or ``None``.
            now: the publish time in seconds since the epoch (default: now).

        Returns:
            The number of keys offered (inserted or refreshed).

        Raises:
            SharedCacheError: the write failed after retries.
        """
        import pyarrow as pa

        n = len(embed_hashes)
        if n == 0:
            return 0
        stamp = time.time() if now is None else now
        data = pa.table(
            {
                "model": pa.array([self.model] * n, pa.string()),
                "embed_hash": pa.array(list(embed_hashes), pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(np.asarray(vectors, dtype=np.float32).reshape(-1), pa.float32()), self.dim
                ),
                "published": pa.array([stamp] * n, pa.float64()),
                "text": pa.array(list(texts) if texts is not None else [""] * n, pa.string()),
            },
            schema=vector_schema(self.dim),
        )
        table = self._open(create=True)
        stale = stamp - 86400.0
        for attempt in range(_COMMIT_RETRIES):
            try:
                (
                    table.merge_insert(["model", "embed_hash"])
                    .when_matched_update_all(where=f"target.published < {stale}")
                    .when_not_matched_insert_all()
                    .execute(data)
                )
                return n
            except Exception as exc:
                if attempt == _COMMIT_RETRIES - 1 or not is_conflict(exc):
                    raise SharedCacheError(
                        f"cannot write the shared cache {self.url}: {store_error_cause(exc)}"
                    ) from exc
                time.sleep(0.2 * (attempt + 1))
                table.checkout_latest()
        return n

    def compact(self, *, retention_days: float = RETENTION_DAYS, now: float | None = None) -> dict[str, int]:
        """Drop duplicate keys and keys no publish used within ``retention_days``; compact files.

        Returns:
            ``{"rows", "duplicates_removed", "expired_removed"}`` for this model.

        Raises:
            SharedCacheError: the table cannot be read or rewritten.
        """
        table = self._open(create=False)
        if table is None:
            return {"rows": 0, "duplicates_removed": 0, "expired_removed": 0}
        stamp = time.time() if now is None else now
        cutoff = stamp - retention_days * 86400.0
        try:
            model = f"model = {sql_literal(self.model)}"
            expired = table.count_rows(f"{model} AND published < {cutoff}")
            if expired:
                table.delete(f"{model} AND published < {cutoff}")
            keys = table.search().where(model).select(["embed_hash", "published"]).limit(None).to_arrow()
            hashes = keys["embed_hash"].to_pylist()
            duplicates = len(hashes) - len(set(hashes))
            if duplicates:
                self._dedupe(table, model)
            table.optimize(cleanup_older_than=timedelta(hours=1))
            self._ensure_key_index(table)
            rows = int(table.count_rows(model))
        except SharedCacheError:
            raise
        except Exception as exc:
            raise SharedCacheError(f"cannot compact the shared cache {self.url}: {store_error_cause(exc)}") from exc
        return {"rows": rows, "duplicates_removed": duplicates, "expired_removed": int(expired)}

    def _dedupe(self, table: Any, model: str) -> None:
        """Keep one row per key (the most recently published) for this model's rows."""
        import pyarrow as pa
        import pyarrow.compute as pc

        rows = table.search().where(model).limit(None).to_arrow()
        order = pc.sort_indices(rows, sort_keys=[("embed_hash", "ascending"), ("published", "descending")])
        rows = rows.take(order)
        hashes = rows["embed_hash"].to_pylist()
        keep = [i for i, h in enumerate(hashes) if i == 0 or hashes[i - 1] != h]
        unique = rows.take(pa.array(keep))
        dupes = sorted({h for i, h in enumerate(hashes) if i and hashes[i - 1] == h})
        for start in range(0, len(dupes), LOOKUP_BATCH):
            part = dupes[start : start + LOOKUP_BATCH]
            where = f"{model} AND embed_hash IN ({', '.join(sql_literal(h) for h in part)})"
            table.delete(where)
            mask = pc.is_in(unique["embed_hash"], value_set=pa.array(part))
            table.add(unique.filter(mask))

    def finish(self) -> None:
        """Fold new rows into the key index (a publisher calls this once at the end)."""
        table = self._open(create=False)
        if table is not None:
            self._ensure_key_index(table)


class SharedReader:
    """The read side used while indexing: lookups that never fail the index.

    The first error (store unreachable, bad credentials, a broken table) logs one warning naming
    the URL and turns the reader off for the rest of the process's life of this object; indexing
    then embeds everything locally.

    Args:
        cache: the :class:`SharedVectorCache` to read.
    """

    def __init__(self, cache: SharedVectorCache):
        self.cache = cache
        self.failed: str | None = None

    def fetch(self, embed_hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """``{embed_hash: (dim,) float32}`` for the keys the cache holds; ``{}`` once it failed."""
        if self.failed is not None:
            return {}
        try:
            return self.cache.lookup(embed_hashes)
        except SharedCacheError as exc:
            self.failed = str(exc)
            log.warning("%s; embedding locally instead", exc)
            return {}
