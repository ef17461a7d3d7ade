"""Where a chunk's vector comes from: the index's own ``vectors`` table, then shared caches, then the model.

Vectors are content-addressed: the key is ``embed_hash`` (``sha256(embed_text)[:32]``, see
:func:`codeask.index.rows.embed_text`), so a vector computed anywhere for the same text and the same
model is the same vector. :func:`fill_vectors` is the one place that decides where a missing vector
comes from; the machine's store (:mod:`codeask.index.machine`) and the team's shared cache on object
storage (:mod:`codeask.index.shared`) are :class:`VectorCache` s passed in ``caches``, asked in that
order before the model embeds a batch. :class:`VectorSupply` holds those sources for one index.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

import numpy as np

from codeask.index.embed import MAX_TOKENS, Embedder, load_embedder
from codeask.index.folders import cache_root
from codeask.settings import Settings

if TYPE_CHECKING:
    from codeask.index.machine import MachineVectors
    from codeask.index.shared import SharedReader
    from codeask.index.store import Store

__all__ = ["VectorCache", "ReadOnlyCache", "Filled", "fill_vectors", "VectorSupply"]

log = logging.getLogger(__name__)


class VectorCache(Protocol):
    """A keyed store of vectors for one embedding model (the index's :class:`~codeask.index.store.Store`
    is one). Vectors are ``(dim,)`` float32, L2-normalized."""

    def get_vectors(self, embed_hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """``{embed_hash: vector}`` for the hashes it has (others are left out, never an error)."""
        ...

    def put_vectors(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Keep ``{embed_hash: vector}``."""
        ...


class ReadOnlyCache:
    """A :class:`VectorCache` over a lookup function, for a cache filled elsewhere (the team's shared
    cache is published by ``codeask publish``, never by indexing).

    Args:
        lookup: ``lookup(embed_hashes) -> {embed_hash: (dim,) float32}`` for the hashes it has.
    """

    def __init__(self, lookup: Callable[[Iterable[str]], dict[str, np.ndarray]]):
        self._lookup = lookup

    def get_vectors(self, embed_hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """What ``lookup`` returns for ``embed_hashes``."""
        return self._lookup(embed_hashes)

    def put_vectors(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Nothing: this cache is read-only."""


class Filled(NamedTuple):
    """What :func:`fill_vectors` found: ``vectors`` (``{embed_hash: (dim,) float32}`` the store
    lacked), ``embedded`` (texts the model embedded) and ``from_caches`` (vectors each cache gave,
    in the order of ``caches``)."""

    vectors: dict[str, np.ndarray]
    embedded: int
    from_caches: tuple[int, ...]


def fill_vectors(
    texts: Mapping[str, str],
    store: VectorCache,
    caches: Sequence[VectorCache] = (),
    embed: Callable[[list[str]], np.ndarray] | None = None,
    *,
    keepers: Sequence[VectorCache] = (),
) -> Filled:
    """The vectors ``store`` lacks for ``texts`` (``{embed_hash: embed_text}``).

    Looks in ``store`` first, then in each of ``caches`` in order, then (when ``embed`` is given)
    embeds what is still missing, each text once; ``embed(list of n texts)`` returns ``(n, dim)``
    float32. A vector is put into every cache before the one it came from (the model's into all of
    them), so the machine's store keeps what the team's cache gave; nothing is written to ``store``:
    the caller commits the result with ``store.put_vectors`` when it chooses (live updates before
    their chunk rows, phase 2 by time and rows). ``keepers`` are caches the caller already asked
    for these texts: never asked again, given every vector found or embedded (they come first).
    """
    stored = store.get_vectors(texts)  # once: asked inside the filter it was one query per text
    missing = [h for h in texts if h not in stored]
    found: dict[str, np.ndarray] = {}
    counts = []
    for i, cache in enumerate(caches):
        todo = [h for h in missing if h not in found]
        got = cache.get_vectors(todo) if todo else {}
        counts.append(len(got))
        if got:
            for earlier in (*keepers, *caches[:i]):
                earlier.put_vectors(got)
            found.update(got)
    todo = [h for h in missing if h not in found]
    if not todo or embed is None:
        return Filled(found, 0, tuple(counts))
    embedded = dict(zip(todo, np.asarray(embed([texts[h] for h in todo]), dtype=np.float32)))
    for cache in (*keepers, *caches):
        cache.put_vectors(embedded)
    found.update(embedded)
    return Filled(found, len(todo), tuple(counts))


class VectorSupply:
    """The sources of one index's missing vectors: the machine's vector store, the team's shared
    cache, the model; and how many vectors each gave.

    Args:
        settings: ``embedding`` (model) and ``shared.url``.
        store: returns the index's store (opened on first use by its caller).
        embedder: returns the normal-priority model (loaded on first use by its caller).

    Attributes:
        chunks_shared: vectors taken from the team's shared cache so far.
        chunks_reused: vectors taken from the machine's vector store so far.
    """

    def __init__(self, settings: Settings, store: Callable[[], Store], embedder: Callable[[], Embedder]):
        self.settings = settings
        self._store = store
        self._embedder = embedder
        self._shared: SharedReader | None = None
        self._machine: MachineVectors | None = None
        self._machine_opened = False
        self.chunks_shared = 0
        self.chunks_reused = 0

    def fill(
        self,
        texts: dict[str, str],
        *,
        use_shared: bool = False,
        ask_machine: bool = True,
        background: bool = False,
        should_stop: Callable[[], bool] | None = None,
    ) -> tuple[dict[str, np.ndarray], int]:
        """Vectors the store lacks for ``{embed_hash: text}``: :func:`fill_vectors` with the machine's
        vector store (:attr:`machine`), then the team's shared cache (``shared.url``, one query per
        call) when ``use_shared`` (phase 2; live edits are embedded locally, without a network round
        trip), then the model: with ``background`` (phase 2 of an index with
        ``background_indexing``) its niced indexing instance (``embedding.index_nice``), else the
        normal-priority one. Without ``ask_machine`` the machine's store is not asked (phase 2 asked it
        for the whole round first) but still keeps what the others give. Returns
        ``({embed_hash: (dim,) float32}, texts embedded)``; counts vectors in :attr:`chunks_reused`
        and :attr:`chunks_shared`.

        Raises:
            InterruptedError: ``should_stop()`` became true between embedding batches.
        """
        machine = self.machine
        shared = self.shared if use_shared else None
        asked = machine is not None and ask_machine
        caches: list[VectorCache] = [machine] if asked and machine is not None else []
        keepers: list[VectorCache] = [machine] if not asked and machine is not None else []
        if shared is not None:
            caches.append(ReadOnlyCache(shared.fetch))
        embedder = load_embedder(self.settings.embedding, background=True) if background else self._embedder()

        def model(batch: list[str]) -> np.ndarray:
            return embedder.embed(batch, should_stop=should_stop)

        filled = fill_vectors(texts, self._store(), caches, model, keepers=keepers)
        from_machine = filled.from_caches[0] if asked else 0
        self.chunks_reused += from_machine
        self.chunks_shared += sum(filled.from_caches) - from_machine
        return filled.vectors, filled.embedded

    def reuse(self, embed_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The machine's vectors for ``embed_hashes``, texts the index lacks (phase 2's round, by hash
        alone: the texts are read only for the rest); counted in :attr:`chunks_reused`. ``{}``
        without a machine's store."""
        machine = self.machine
        found = machine.get_vectors(embed_hashes) if machine is not None and embed_hashes else {}
        self.chunks_reused += len(found)
        return found

    @property
    def machine(self) -> MachineVectors | None:
        """The machine's vector store for this index's model (:mod:`codeask.index.machine`), or ``None``
        when :data:`codeask.index.machine.MACHINE_CACHE_MB` is 0 or the store cannot be opened (logged once: indexing
        then embeds what it lacks, as before)."""
        if not self._machine_opened:
            self._machine_opened = True
            emb = self.settings.embedding
            from codeask.index import machine

            if machine.MACHINE_CACHE_MB:
                from codeask.index.machine import MachineVectors, store_dir
                from codeask.index.shared import model_id

                dim = self._store().dim
                folder = store_dir(cache_root(self.settings), model_id(emb.model, MAX_TOKENS), dim)
                try:
                    self._machine = MachineVectors(folder, dim, limit_bytes=machine.MACHINE_CACHE_MB << 20)
                except Exception as exc:
                    log.warning("the machine's vector store %s cannot be used (%s); embedding without it", folder, exc)
        return self._machine

    def flush_machine(self) -> None:
        """Write the vectors this index gave the machine's store (:meth:`MachineVectors.flush
        <codeask.index.machine.MachineVectors.flush>`); called when the index commits its own vectors."""
        if self._machine is not None:
            self._machine.flush()

    @property
    def shared(self) -> SharedReader | None:
        """The team's shared vector cache (``shared.url``), or ``None`` when none is configured."""
        url = self.settings.shared.url
        if not url:
            return None
        if self._shared is None:
            from codeask.index.shared import SharedReader, SharedVectorCache, model_id

            emb = self.settings.embedding
            self._shared = SharedReader(SharedVectorCache(url, model_id(emb.model, MAX_TOKENS), self._store().dim))
        return self._shared
