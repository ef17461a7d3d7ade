"""Query transformer: embed every search text with the model that embedded the chunks."""

from __future__ import annotations

from collections.abc import Callable

from codeask.index.embed import Embedder
from codeask.query.pipeline import Query

__all__ = ["EmbedQuery"]


class EmbedQuery:
    """Sets ``query.embeddings``: one ``(dim,)`` float32 vector per search text.

    Skipped (no embeddings, keyword-only retrieval) while no chunk has a vector yet, so a fresh
    index answers from the full-text index without waiting for the model.

    Args:
        embedder: returns the shared :class:`Embedder` (called lazily).
        has_vectors: whether any searched index holds vectors.
    """

    name = "embed"

    def __init__(self, embedder: Callable[[], Embedder], has_vectors: Callable[[], bool]):
        self.embedder = embedder
        self.has_vectors = has_vectors

    def __call__(self, query: Query) -> Query:
        if not self.has_vectors():
            query.embeddings = []
            query.transformed_query(self.name, query.current, skipped="no vectors yet")
            return query
        model = self.embedder()
        query.embeddings = [model.embed_query(t) for t in query.search_texts]
        query.transformed_query(self.name, query.current, vectors=len(query.embeddings))
        return query
