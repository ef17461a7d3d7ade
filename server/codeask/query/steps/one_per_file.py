"""Response transformer: keep the first (best) document of each file, for at most ``max_files`` files."""

from __future__ import annotations

from codeask.query.pipeline import Query

__all__ = ["OnePerFile"]


class OnePerFile:
    """Keeps the first document per ``(root, path)`` in rank order and caps the list at ``max_files``.

    Like the seed's ``OnePerFile``: documents keep their order, ``current`` is untouched, so the answer
    still renders each document. ``query.options["max_files"]`` overrides ``max_files``.
    """

    name = "one_per_file"

    def __init__(self, max_files: int = 8):
        self.max_files = max_files

    def __call__(self, query: Query) -> Query:
        limit = int(query.options.get("max_files") or self.max_files)
        seen: set[tuple[str, str]] = set()
        kept = []
        for d in query.documents:
            if d.key() in seen:
                continue
            seen.add(d.key())
            kept.append(d)
            if len(kept) >= limit:
                break
        query.reordered(self.name, kept, max_files=limit)
        return query
