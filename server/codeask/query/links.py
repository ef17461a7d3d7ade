"""One resolver of a symbol-graph link, asked from either end: who uses a definition (its callers) and
which definitions a use means (a definition's callees) read the same rules, so a caller of ``B`` is
listed among its caller's callees as sure as it is listed as ``B``'s caller.

The rules (:func:`~codeask.query.sites.use_sites`): a use resolves against the definitions of its name,
reached through a subclass of their class too when the subclass does not define the name itself
(``Session().should_strip_auth()`` reaches ``SessionRedirectMixin.should_strip_auth`` through ``Session``);
a use through a value of another class defining the name itself (``claimed``) means that class's; a bare
use in a file with its own top-level definition of the name means that one (``shadowing``); a field's
declared type (:func:`~codeask.query.fields.field_types`) and the file's imports
(:func:`~codeask.query.imported.file_imports`) are read where the use needs them. Before this module,
``codeask related``'s callers and callees each had their own subset of these rules (a caller at 0.7 was a
callee at 0.3, or none).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from codeask.index.rows import batches
from codeask.query.fields import field_types
from codeask.query.graph import LOOKUP_LIMIT
from codeask.query.imported import Imports, aliases, file_imports, imports_module
from codeask.query.resolve import class_named, defined_symbol, definitions_of, scoped
from codeask.query.sites import INHERITING, Site, enclosing_class, use_sites
from codeask.query.uses import uses_in

if TYPE_CHECKING:
    from codeask.index.edges import Linked
    from codeask.index.records import StoredRow
    from codeask.index.rows import Hit
    from codeask.index.store import Store
    from codeask.query.uses import Use

__all__ = ["Links", "subclasses", "bases"]


class Links:
    """The links of names' uses to their definitions in one index (``store``), for one question: the
    definers of each name, the classes' subclasses and bases and the files' imports are read once
    and kept for the next use asked about."""

    def __init__(self, store: Store):
        self.store = store
        self._definers: dict[str, tuple[Linked, ...]] = {}
        self._referrers: dict[str, tuple[Linked, ...]] = {}
        self._family: dict[tuple[str, bool], frozenset[str]] = {}
        self._imports: dict[str, Imports] = {}
        self._kin: dict[str, frozenset[str]] = {}
        self._up: dict[str, frozenset[str]] = {}
        self._statics: dict[str, frozenset[str]] = {}
        self._files: dict[str, list[StoredRow]] = {}
        self._chunks: dict[str, Linked | None] = {}
        self._warm: set[str] = set()

    def definers(self, name: str) -> tuple[Linked, ...]:
        """The chunks defining ``name`` (at most :data:`LOOKUP_LIMIT`), by path and line."""
        if name not in self._definers:
            self._definers[name] = tuple(self.store.definers([name], LOOKUP_LIMIT))
        return self._definers[name]

    def referrers(self, name: str) -> tuple[Linked, ...]:
        """The chunks referencing ``name`` (at most :data:`LOOKUP_LIMIT`), by path and line."""
        if name not in self._referrers:
            self._referrers[name] = tuple(self.store.referrers([name], LOOKUP_LIMIT))
        return self._referrers[name]

    def prefetch(self, names: Iterable[str], referrers: bool = False, owners: bool = False) -> None:
        """Read the definers of ``names`` not read yet (their referrers too with ``referrers``) in one
        lookup per :data:`~codeask.index.rows.IN_BATCH` of them (a large class's callees: some 150
        names, each a lookup before), kept as :meth:`definers` (:meth:`referrers`) answers each: all of
        a name's chunks, by path and line. A name found in :data:`LOOKUP_LIMIT` chunks or more is left
        to its own lookup (which keeps the limit's), as is every name of a lookup that reached its own
        limit (some chunks may be missing). With ``owners``, the :meth:`family` of the classes whose
        methods define them too (:meth:`sites` of a method reads its class's subclasses and bases)."""
        names = set(names)
        _batched(names, self._definers, self.store.definers, lambda row: row.defines)
        if referrers:
            _batched(names, self._referrers, self.store.referrers, lambda row: row.refs)
        if owners:
            kept = (row.hit for n in names for row in self._definers.get(n, ()))
            symbols = (scoped(h, d) for h in kept for d in definitions_of(h.content, h.language) if d.name in names)
            self.family({s.rsplit(".", 2)[-2] for s in symbols if "." in s})

    def family(self, owners: Iterable[str], referrers: bool = True) -> None:
        """Read what :meth:`subclasses` (``referrers``) and :meth:`bases` of ``owners`` need (their
        definers, and referrers) in batched lookups (:meth:`prefetch`), a name left to its own lookup
        read now: a class hierarchy walked one class at a time was a lookup or two per class
        (javapoet's ``MethodSpec``: some 160 of its 290 lookups)."""
        todo = [o for o in owners if (o, referrers) not in self._family]
        self.prefetch(todo, referrers)
        for owner in todo:
            self.definers(owner)
            if referrers:
                self.referrers(owner)

    def subclasses(self, owner: str) -> frozenset[str]:
        """:func:`subclasses` of ``owner``, read once."""
        if (owner, True) not in self._family:
            self._family[owner, True] = frozenset(subclasses(owner, [*self.referrers(owner), *self.definers(owner)]))
        return self._family[owner, True]

    def bases(self, owner: str) -> frozenset[str]:
        """:func:`bases` of ``owner``, read once."""
        if (owner, False) not in self._family:
            self._family[owner, False] = frozenset(bases(owner, self.definers(owner)))
        return self._family[owner, False]

    def rows_for_path(self, path: str) -> list[StoredRow]:
        """The stored rows of file ``path``, by start line (:meth:`Store.rows_for_path`), read once: a
        class's callees are whole definitions (:func:`~codeask.query.split.whole`) of a few files."""
        if path not in self._files:
            self._files[path] = self.store.rows_for_path(path)
        return self._files[path]

    def linked(self, ids: Iterable[str]) -> dict[str, Linked]:
        """The chunks of ``ids`` with their graph names, by id (:meth:`Store.linked`), each read once."""
        ids = list(ids)
        todo = [i for i in ids if i not in self._chunks]
        if todo:
            found = self.store.linked(todo)
            self._chunks |= {i: found.get(i) for i in todo}
        return {i: chunk for i in ids if (chunk := self._chunks[i]) is not None}

    def statics(self, hit: Hit) -> frozenset[str]:
        """``Class.name`` (or ``Class.*``) of each Java ``import static`` of ``hit``'s file
        (``import static com.squareup.javapoet.Util.checkNotNull;``), its chunks read once."""
        if hit.path not in self._statics:
            rows = self.rows_for_path(hit.path)
            found = (m for row in rows for m in _STATIC.finditer(row["content"]) if "static" in row["content"])
            self._statics[hit.path] = frozenset(f"{m.group(1)}.{m.group(2)}" for m in found)
        return self._statics[hit.path]

    def kin(self, cls: str) -> frozenset[str]:
        """``cls`` with its ancestors and descendants in the project (:func:`bases`, :func:`subclasses`,
        followed to at most :data:`_KIN` classes), read once: the classes whose methods a ``self`` in
        ``cls``, or a value of it, may reach."""
        if cls not in self._kin:
            self._kin[cls] = self.ancestors(cls) | _closure(cls, self.subclasses, self.family)
        return self._kin[cls]

    def ancestors(self, cls: str) -> frozenset[str]:
        """``cls`` with its ancestors in the project (:func:`bases`, followed to at most :data:`_KIN`
        classes), read once: the classes whose methods a ``super`` in ``cls`` may reach (itself left
        out by :func:`~codeask.query.sites.use_sites`)."""
        if cls not in self._up:
            self._up[cls] = _closure(cls, self.bases, lambda todo: self.family(todo, referrers=False))
        return self._up[cls]

    def prefetch_kin(self, classes: Iterable[str]) -> None:
        """Read what :meth:`kin` of ``classes`` needs in batched lookups, one step up (definers) and
        down (definers and referrers) for all of them at once, for at most :data:`_KIN` classes each
        way: a chunk's values of a dozen classes were a dozen walks of a lookup or two per step."""
        up = down = {c for c in classes if c not in self._kin}
        seen_up, seen_down = set(up), set(down)
        while (up or down) and len(seen_up) + len(seen_down) < 2 * _KIN:
            self.family(up | down, referrers=False)
            self.family(down)
            up = {b for c in up for b in self.bases(c)} - seen_up
            down = {s for c in down for s in self.subclasses(c)} - seen_down
            seen_up |= up
            seen_down |= down

    def _warm_kin(self, hit: Hit, fields: Iterable[tuple[str, Use]]) -> None:
        """:meth:`prefetch_kin` of the classes ``hit``'s uses may go through (the types of its values
        used as receivers, ``fields`` among them, the receivers named as classes, and its definitions' own), once per chunk; only where
        :meth:`kin` is read."""
        if hit.id in self._warm or hit.language not in INHERITING:
            return
        self._warm.add(hit.id)
        found = uses_in(hit.content, hit.language)
        receivers = {u.receiver for u in found.uses}
        typed = {t.name for v, t in (*fields, *found.types) if v in receivers}
        named = {class_named(u, hit.language) for u in found.uses}
        own = {enclosing_class(hit, d.start_line) for d in definitions_of(hit.content, hit.language)}
        self.prefetch_kin((typed | named | own) - {""})

    def sites(self, hit: Hit, name: str, defs: Sequence[Hit]) -> list[Site]:
        """Where ``hit`` (a chunk, or one definition cut from it) uses ``name`` as code, one
        :class:`~codeask.query.sites.Site` per innermost definition holding a use, each as sure as its
        surest link to one of ``defs`` (definitions of ``name``, narrowed to their own lines), or
        through a subclass of their class that does not override ``name`` (the module docstring's rules)."""
        rows = self.definers(name)
        shadowing = {r.hit.path for r in rows if "." not in defined_symbol(r.hit, name)}
        packed = ((r.hit, d) for r in rows for d in definitions_of(r.hit.content, r.hit.language))
        methods = (scoped(h, d) for h, d in packed if d.name == name)  # every class of a packed chunk
        claimed = frozenset(m.rsplit(".", 2)[-2] for m in methods if "." in m)
        targets = [(d.symbol, d.path) for d in defs]
        owners = {d.symbol.rsplit(".", 2)[-2]: d.path for d in defs if "." in d.symbol}
        subs = ((sub, path) for owner, path in owners.items() for sub in self.subclasses(owner))
        targets += [(f"{sub}.{name}", path) for sub, path in subs if sub not in claimed]  # an override is its own
        mixins = frozenset(b for owner in owners for b in self.bases(owner))
        fields = field_types(self.store, hit, name)
        if owners:
            self._warm_kin(hit, fields)
        return use_sites(
            hit,
            name,
            targets,
            hit.path in shadowing,
            fields,
            claimed - mixins,  # a mixin's self.send() may reach Session.send (typed: use_sites)
            file_imports(self.store, hit, name, self._imports),
            mixins,
            self.kin,
            self.statics(hit) if hit.language == "java" else frozenset(),
            self.ancestors,
        )

    def aliased(self, name: str, defs: Sequence[Hit]) -> dict[str, tuple[Hit, str]]:
        """The chunks using ``name`` under the name their file imports it as from the file of one of
        ``defs`` (``from .exceptions import HTTPError as _HTTPError``: :func:`~codeask.query.imported.aliases`,
        :func:`~codeask.query.imported.imports_module`), by id, each with that name: the import is
        rarely in the chunk using it. ``urllib3``'s ``HTTPError as _HTTPError`` is no use of the project's."""
        out: dict[str, tuple[Hit, str]] = {}
        for row in self.referrers(name):
            for alias, module in aliases(row.hit.content, row.hit.language, name):
                if alias != name and any(imports_module(module, row.hit.path, d.path) for d in defs):
                    out |= {r.hit.id: (r.hit, alias) for r in self.referrers(alias) if r.hit.path == row.hit.path}
        return out

    def sure(self, users: Sequence[Hit], name: str, target: Hit) -> float:
        """How sure the surest use of ``name`` by ``users`` (definitions, narrowed) is of ``target`` (a
        definition of ``name``, narrowed): :meth:`sites` read from the other end; ``0.0`` for none."""
        return max((s.sure for u in users for s in self.sites(u, name, [target])), default=0.0)


#: A Java static import: ``import static a.b.Util.checkNotNull;`` (class ``Util``, member ``checkNotNull`` or ``*``).
_STATIC = re.compile(r"^\s*import\s+static\s+(?:[\w$]+\.)*([\w$]+)\.([\w$]+|\*)\s*;", re.MULTILINE)
#: Most classes followed up or down a class's hierarchy (:meth:`Links.kin`): a bound on the lookups, far
#: above the depth of real hierarchies (requests' deepest is 3, javapoet's 2).
_KIN = 64


def _batched(
    names: Iterable[str],
    kept: dict[str, tuple[Linked, ...]],
    lookup: Callable[[list[str], int], list[Linked]],
    named: Callable[[Linked], tuple[str, ...]],
) -> None:
    """Read the chunks of ``names`` not in ``kept`` through ``lookup`` (``Store.definers`` or
    ``Store.referrers``: one call per :data:`~codeask.index.rows.IN_BATCH` names) into ``kept``, each
    name's the rows whose ``named`` (their defines or refs) hold it; :meth:`Links.prefetch`'s limits."""
    todo = sorted({n for n in names if n not in kept})
    for part in batches(todo):
        limit = LOOKUP_LIMIT * len(part)
        rows = lookup(list(part), limit)
        if len(rows) >= limit:
            continue
        found: dict[str, list[Linked]] = {n: [] for n in part}
        for row in rows:
            for n in set(named(row)) & found.keys():
                found[n].append(row)
        kept |= {n: tuple(chunks) for n, chunks in found.items() if len(chunks) < LOOKUP_LIMIT}


def _closure(cls: str, step: Callable[[str], frozenset[str]], read: Callable[[list[str]], None]) -> frozenset[str]:
    """``cls`` and the classes ``step`` reaches from it, again and again (at most :data:`_KIN`); the
    rows ``step`` needs read by ``read`` for all classes waiting at once (:meth:`Links.family`)."""
    seen, todo = {cls}, [cls]
    while todo and len(seen) < _KIN:
        read(todo)
        for found in step(todo.pop()) - seen:
            seen.add(found)
            todo.append(found)
    return frozenset(seen)


def subclasses(owner: str, rows: Iterable[Linked]) -> set[str]:
    """The classes among ``rows`` (the chunks referencing or defining ``owner``) that name ``owner`` on
    their header line (``class Session(Base):``, ``class A extends Base``, ``implements``): its direct
    subclasses, by name."""
    out = set()
    # by id, once: a chunk's references leave out the names it defines (a subclass beside its base)
    unique = {r.hit.id: r for r in rows}
    for row in unique.values():
        lines = row.hit.content.split("\n")
        for d in definitions_of(row.hit.content, row.hit.language):
            header = lines[d.name_line - 1] if d.name_line <= len(lines) else ""
            is_class = header.lstrip().startswith(("class ", "export class ", "abstract class ", "public class "))
            names = re.search(rf"(?<![\w$]){re.escape(owner)}(?![\w$])", header.split(d.name, 1)[-1])
            if d.name != owner and (is_class or " extends " in header or " implements " in header) and names:
                out.add(d.name)
    return out


def bases(owner: str, rows: Iterable[Linked]) -> set[str]:
    """The words on class ``owner``'s header line after its name (``class Session(SessionRedirectMixin):``,
    ``class A extends B implements C``) in ``rows`` (the chunks defining ``owner``): its direct bases,
    by name (a keyword among them is harmless)."""
    out = set()
    for row in rows:
        lines = row.hit.content.split("\n")
        for d in definitions_of(row.hit.content, row.hit.language):
            if d.name == owner and d.name_line <= len(lines):
                out |= set(re.findall(r"[A-Za-z_$][\w$]*", lines[d.name_line - 1].split(owner, 1)[-1]))
    return out - {owner}
