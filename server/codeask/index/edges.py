"""Reading the symbol graph of one index: who defines a name, who references it, what a chunk names.

The graph lives on the chunk rows (``defines`` and ``refs``, ``list<string>``, written in the same
commit as the rest of the row: :mod:`codeask.index.chunking.graph`), so a reader never sees a chunk
without its edges, a deleted file takes its edges with it, and a moved file's rows carry the same
names. Each lookup is one ``array_has_any`` filter answered by the column's LabelList index (rows
committed since the index was last updated are scanned, as for the full-text index).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from codeask.index.rows import GRAPH_COLUMNS, HIT_COLUMNS, TABLE, Hit, batches, sql_has_any, sql_in
from codeask.index.tables import Tables

__all__ = ["Linked", "definers", "referrers", "linked"]


@dataclass(frozen=True)
class Linked:
    """A chunk row with its graph names: the :class:`Hit` (score 0) and the names it defines and
    references, in order of first occurrence."""

    hit: Hit
    defines: tuple[str, ...]
    refs: tuple[str, ...]


def _linked(tables: Tables, where: str, limit: int | None) -> list[Linked]:
    rows = tables.rows(TABLE, where, [*HIT_COLUMNS, *GRAPH_COLUMNS], limit).to_pylist()
    out = [Linked(Hit.from_row(r, 0.0), tuple(r["defines"] or ()), tuple(r["refs"] or ())) for r in rows]
    out.sort(key=lambda x: (x.hit.path, x.hit.start_line))
    return out


def definers(tables: Tables, names: Sequence[str], limit: int = 200) -> list[Linked]:
    """Chunks defining any of ``names`` (unqualified: ``send``), at most ``limit``, by path and line."""
    return _linked(tables, sql_has_any("defines", sorted(set(names))), limit) if names else []


def referrers(tables: Tables, names: Sequence[str], limit: int = 200) -> list[Linked]:
    """Chunks referencing any of ``names`` (calls, instances, types, constants, imports), at most
    ``limit``, by path and line."""
    return _linked(tables, sql_has_any("refs", sorted(set(names))), limit) if names else []


def linked(tables: Tables, ids: Iterable[str]) -> dict[str, Linked]:
    """The chunks of ``ids`` with their graph names: ``{id: Linked}`` (keyed lookups on ``id``)."""
    found: dict[str, Linked] = {}
    for part in batches(sorted(set(ids))):
        for row in _linked(tables, sql_in("id", part), None):
            found[row.hit.id] = row
    return found
