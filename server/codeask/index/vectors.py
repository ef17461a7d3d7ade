"""Where a chunk's vector comes from: the index's own ``vectors`` table, then shared caches, then the model.

Vectors are content-addressed: the key is ``embed_hash`` (``sha256(embed_text)[:32]``, see
:func:`codeask.index.rows.embed_text`), so a vector computed anywhere for the same text and the same
model is the same vector. :func:`fill_vectors` is the one place that decides where a missing vector
comes from; the machine's store (:mod:`codeask.index.machine`) and the team's shared cache on object
storage (:mod:`codeask.index.shared`) are :class:`VectorCache` s passed in ``caches``, asked in that
order before the model embeds a batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple, Protocol

import numpy as np

__all__ = ["VectorCache", "ReadOnlyCache", "Filled", "fill_vectors"]


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
) -> Filled:
    """The vectors ``store`` lacks for ``texts`` (``{embed_hash: embed_text}``).

    Looks in ``store`` first, then in each of ``caches`` in order, then (when ``embed`` is given)
    embeds what is still missing, each text once; ``embed(list of n texts)`` returns ``(n, dim)``
    float32. A vector is put into every cache before the one it came from (the model's into all of
    them), so the machine's store keeps what the team's cache gave; nothing is written to ``store``:
    the caller commits the result with ``store.put_vectors`` when it chooses (live updates before
    their chunk rows, phase 2 by time and rows).
    """
    missing = [h for h in texts if h not in store.get_vectors(texts)]
    found: dict[str, np.ndarray] = {}
    counts = []
    for i, cache in enumerate(caches):
        todo = [h for h in missing if h not in found]
        got = cache.get_vectors(todo) if todo else {}
        counts.append(len(got))
        if got:
            for earlier in caches[:i]:
                earlier.put_vectors(got)
            found.update(got)
    todo = [h for h in missing if h not in found]
    if not todo or embed is None:
        return Filled(found, 0, tuple(counts))
    embedded = dict(zip(todo, np.asarray(embed([texts[h] for h in todo]), dtype=np.float32)))
    for cache in caches:
        cache.put_vectors(embedded)
    found.update(embedded)
    return Filled(found, len(todo), tuple(counts))
