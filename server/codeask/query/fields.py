"""The declared types of the fields a chunk reaches a name through, read from their struct's own chunk.

``mx.pool.Put(..)`` in chi's ``Mux.ServeHTTP`` calls ``Put`` on the field ``pool`` of ``mx``'s type
``Mux``, declared ``pool *sync.Pool`` in the ``Mux`` struct, which the chunker stored as another
chunk: the caller's chunk alone does not say that the chain ends in another package
(:func:`codeask.query.resolve.sureness`). :func:`field_types` reads those declarations from the
index, so the resolver sees them as it sees a field declared in the caller's own chunk. A Python
class's attributes are typed where a method sets them (``self.adapter = HTTPAdapter()`` in
``__init__``, often a chunk of its own): ``self.adapter.send()`` in another method's chunk is a
call of ``HTTPAdapter.send``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from codeask.query.resolve import RECEIVED, SELF, definitions_of
from codeask.query.sites import declaration, enclosing_class
from codeask.query.uses import Use, Uses, uses_in

if TYPE_CHECKING:
    from codeask.index.rows import Hit
    from codeask.index.store import Store

__all__ = ["field_types"]

#: Most struct chunks read for one caller chunk (a name defined more often is no one struct).
_MAX_STRUCTS = 8


def _owner(hit: Hit, found: Uses, use: Use) -> str:
    """The type name of ``use``'s ``through`` word: the declared type of a typed variable (Go's
    method receiver ``mx *Mux``), or for ``self`` (or no ``through`` word: Java's implicit ``this``) the
    class or impl of the definition around it."""
    if use.through in SELF or not use.through:  # self.x.f(), or Java's x.f() on a field x of this
        return enclosing_class(hit, use.line)
    typed = found.type_of(use.through, use.line)
    return typed.name if typed is not None and typed.receiver in {"", "crate", "super"} else ""


def _attributes(store: Store, hit: Hit, owner: str) -> tuple[tuple[str, Use], ...]:
    """The attributes Python class ``owner`` (defined in chunk ``hit``) sets on ``self`` with a
    known type in its methods' chunks of the same file (symbols ``owner.method``), in order
    (:attr:`~codeask.query.uses.Uses.attributes`); ``()`` in another language."""
    if hit.language != "python":
        return ()
    rows = [r for r in store.rows_for_path(hit.path) if owner in r["symbol"].split(".")[:-1]]
    return tuple(t for r in rows for t in uses_in(r["content"], r["language"]).attributes)


def field_types(store: Store, hit: Hit, name: str) -> tuple[tuple[str, Use], ...]:
    """``(field, the use naming its declared type)`` of each field that ``hit`` (a chunk) reaches
    ``name`` through and whose type its own lines do not declare, read from the project's struct
    or class defining that field (``("pool", Use("Pool", "sync", ...))`` for ``mx.pool.Put`` with
    ``Mux`` declaring ``pool *sync.Pool``; in Java or C++, also a bare receiver that is no local:
    ``className.emitAnnotations`` on the enclosing class's field ``ClassName className``), each use at line 0 (a local of the same name declared
    later in the chunk wins: :meth:`~codeask.query.uses.Uses.type_of`). ``()`` when none."""
    found = uses_in(hit.content, hit.language)
    wanted: dict[str, set[str]] = {}
    for use in found.of(name):
        implicit = hit.language not in RECEIVED and use.plain and use.receiver[:1].islower()
        implicit = implicit and use.receiver not in found.bound  # Java's className.f(): a field of this
        if (use.through or implicit) and use.receiver != "?" and found.type_of(use.receiver, use.line) is None:
            owner = _owner(hit, found, use)
            if owner:
                wanted.setdefault(owner, set()).add(use.receiver)
    if not wanted:
        return ()
    out: list[tuple[str, Use]] = []
    for row in store.definers(sorted(wanted), _MAX_STRUCTS * len(wanted)):
        for owner in wanted.keys() & set(row.defines):
            if any(d.name == owner for d in definitions_of(row.hit.content, row.hit.language)):
                struct = declaration(row.hit, owner)
                types = uses_in(struct.content, struct.language).types + _attributes(store, row.hit, owner)
                out += [(field, replace(use, line=0)) for field, use in types if field in wanted[owner]]
    return tuple(out)
