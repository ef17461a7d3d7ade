"""A symbol asked for by the name a file imports it under (``RequestsSSLError`` for requests'
``from .exceptions import SSLError as RequestsSSLError``): the import that binds it, read from the
files using that name, so :func:`codeask.query.related_code.related` answers for the definition it
names rather than "no definition"."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeask.query.graph import LOOKUP_LIMIT
from codeask.query.imported import imported_as
from codeask.uris import file_uri

if TYPE_CHECKING:
    from codeask.index.store import Store

__all__ = ["Alias", "alias_imports"]


@dataclass(frozen=True)
class Alias:
    """The name ``name`` a symbol was asked by, bound by the import at 1-based ``line`` of ``path``
    (POSIX, relative to ``root``, an absolute folder)."""

    name: str
    root: str
    path: str
    line: int

    def to_json(self) -> dict[str, Any]:
        """``{"name", "path", "line", "uri"}`` (``uri``: ``file:///abs/path#Lline-Lline``)."""
        uri = file_uri(str(Path(self.root) / self.path), self.line, self.line)
        return {"name": self.name, "path": self.path, "line": self.line, "uri": uri}


def alias_imports(store: Store, alias: str) -> list[tuple[str, str, str, int]]:
    """``(name, module, path, line)`` of each import binding ``name`` as ``alias`` in a file of
    ``store`` that uses ``alias`` (its import is rarely in the chunk using it): ``module`` as written
    there, ``line`` 1-based in the file ``path``; at most :data:`~codeask.query.graph.LOOKUP_LIMIT` files read."""
    out = []
    for path in dict.fromkeys(row.hit.path for row in store.referrers([alias], LOOKUP_LIMIT)):
        for row in store.rows_for_path(path):
            found = imported_as(row["content"], row["language"], alias)
            out += [(name, module, path, row["start_line"] + line - 1) for name, module, line in found]
    return list(dict.fromkeys(out))
