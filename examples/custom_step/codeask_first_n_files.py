"""An example codeask response transformer, installed as the ``codeask.steps`` entry point
``first_n_files``.

It keeps the first (best) chunk of each file, in retrieval order, for at most ``n`` files, like the
seed's ``OnePerFile``. It only changes the documents, so it records its event with
``query.reordered`` (``current`` stays, and the answer still renders each document).
"""

from __future__ import annotations

__all__ = ["FirstNFiles"]


class FirstNFiles:
    """Response transformer: the first chunk per file for at most ``n`` files.

    codeask calls the class with the ``[pipeline.options.first_n_files]`` table as keyword
    arguments (``n = 3``); it could also ask for ``llm``, ``templates``, ``settings`` or
    ``workspace`` by naming them as parameters.
    """

    name = "first_n_files"

    def __init__(self, n: int = 3):
        if int(n) < 1:
            raise ValueError("first_n_files: n must be at least 1")
        self.n = int(n)

    def __call__(self, query):
        seen = set()
        kept = []
        for document in query.documents:
            if document.path in seen:
                continue
            seen.add(document.path)
            kept.append(document)
            if len(kept) >= self.n:
                break
        query.reordered(self.name, kept, n=self.n)
        return query
