"""Where a chunk uses a name, one definition at a time: the caller a graph edge cites, the callees a
definition has.

A chunk packs several small definitions (or a class with its methods); its stored names are the
whole chunk's. A caller is the innermost definition holding a use (``test_should_strip_auth_port``,
not the ``TestRequests`` chunk around it, and never the import block that only names it), each as
sure as its own uses are (:func:`codeask.query.resolve.sureness` on its lines); a definition's
callees are the names used on its own lines (``should_strip_auth`` does not call what its
chunk-mate ``get_redirect_target`` calls).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from codeask.index.chunking.symbols import Definition
from codeask.lines import split_lines
from codeask.query.imported import Imports, import_groups
from codeask.query.resolve import (
    NONE,
    RECEIVED,
    SELF,
    SURE,
    TYPED,
    class_named,
    definitions_of,
    free_symbol,
    in_functions,
    scoped,
    sureness,
)
from codeask.query.uses import Use, Uses, uses_in

if TYPE_CHECKING:
    from codeask.index.rows import Hit

__all__ = [
    "Site",
    "narrowed",
    "declaration",
    "inner_definition",
    "enclosing_class",
    "use_sites",
    "code_lines",
    "first_use_line",
    "unshadowed",
    "own_names",
]


@dataclass(frozen=True)
class Site:
    """A use site: ``hit`` narrowed to the definition holding the uses (its lines, content and
    qualified symbol; the whole chunk for uses outside every definition) and how ``sure`` they are
    of the definition asked about."""

    hit: Hit
    sure: float


def narrowed(hit: Hit, inner: Definition | None) -> Hit:
    """``hit`` cut to ``inner`` (a definition of its content): lines, content and qualified symbol
    (:func:`~codeask.query.resolve.scoped`); ``hit`` itself for ``None`` (the head of a definition the
    chunker split runs to the chunk's end: :func:`~codeask.query.resolve.definitions_of`)."""
    if inner is None:
        return hit
    lines = split_lines(hit.content)
    end = inner.end_line
    return replace(
        hit,
        start_line=hit.start_line + inner.start_line - 1,
        end_line=hit.start_line + end - 1,
        content="\n".join(lines[inner.start_line - 1 : end]),
        symbol=scoped(hit, inner),
    )


def declaration(hit: Hit, name: str) -> Hit:
    """``hit`` (a chunk defining ``name``) cut to that definition: its tree-sitter definition
    (:func:`narrowed`), else from the first line naming it to the chunk's end when the chunk is
    named so (the head of a definition the chunker split, which parses as none), else that line
    (a C macro or prototype, a constant), else the whole chunk."""
    inner = next((d for d in definitions_of(hit.content, hit.language) if d.name == name), None)
    if inner is not None:
        return narrowed(hit, inner)
    word = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
    lines = split_lines(hit.content)
    at = next((i for i, line in enumerate(lines) if word.search(line)), None)
    if at is None:
        return hit
    scope = hit.symbol.split(".")
    if name in scope:  # the head of a definition the chunker split (a class's, under its first method: ky's Ky)
        symbol = ".".join(scope[: len(scope) - scope[::-1].index(name)])
        return replace(hit, start_line=hit.start_line + at, content="\n".join(lines[at:]), symbol=symbol)
    return replace(hit, start_line=hit.start_line + at, end_line=hit.start_line + at, content=lines[at], symbol=name)


def inner_definition(hit: Hit, line: int) -> Definition | None:
    """The innermost definition of ``hit`` holding 1-based chunk ``line``, or ``None``."""
    return next((d for d in reversed(definitions_of(hit.content, hit.language)) if d.contains(line)), None)


@dataclass(frozen=True)
class _Chunk:
    """What :func:`use_sites` knows of the chunk ``hit`` whatever the target (its arguments of the same
    names): the uses ``found`` in it, its file's ``imports``, and the ``shadowed``, ``claimed``, ``kin``,
    ``mixins``, ``statics`` and ``ancestors`` each use is read against."""

    hit: Hit
    found: Uses
    imports: Imports
    shadowed: bool = False
    claimed: frozenset[str] = frozenset()
    kin: Callable[[str], frozenset[str]] | None = None
    mixins: frozenset[str] = frozenset()
    statics: frozenset[str] = frozenset()
    ancestors: Callable[[str], frozenset[str]] | None = None


def _target_sure(chunk: _Chunk, name: str, target: tuple[str, str], span: tuple[int, int]) -> float:
    """How sure the uses of ``name`` in ``span`` of the chunk are of ``target``: the uses a definition in
    scope, a class's own method or an unrelated class's value does not take, linked (:func:`_link`)."""
    hit = chunk.hit
    kept = _unclaimed(unshadowed(chunk.found, name, target, hit, chunk.shadowed), name, target, chunk.claimed, hit)
    kept, above = _supers(chunk, kept, name, target, span)
    return SURE if above else _link(chunk, _unrelated(kept, target, hit, chunk.kin), name, target, span)


def _supers(chunk: _Chunk, found: Uses, name: str, target: tuple[str, str], span: tuple[int, int]) -> tuple[Uses, bool]:
    """``found`` less its uses of ``name`` through ``super`` (``super().__init__(..)``, Java's and
    JavaScript's ``super.emit(..)``), and whether one on ``span`` reaches ``target``: a method of a class
    among the ``ancestors`` of the class making the call, that class left out (``super`` never reaches
    its own class, nor an unrelated class's ``__init__``), with no class defining ``name`` between them
    (``claimed``: ``Grand(Child)``'s ``super().__init__()`` is ``Child.__init__``, no ``Base.__init__``).
    ``(found, False)`` where the ancestors are not known (no ``ancestors``, or a language whose class
    headers do not name their bases: :data:`INHERITING`)."""
    hit = chunk.hit
    supers = [u for u in found.of(name) if u.receiver == "super"]
    if chunk.ancestors is None or not supers or hit.language not in INHERITING:
        return found, False
    owner = target[0].rsplit(".", 2)[-2] if "." in target[0] else ""
    for use in (u for u in supers if span[0] <= u.line <= span[1]):
        up = chunk.ancestors(enclosing_class(hit, use.line)) - {enclosing_class(hit, use.line)}
        between = {c for c in up & chunk.claimed if c != owner and owner in chunk.ancestors(c)}
        if owner in up and not between:
            return found, True
    return replace(found, uses=tuple(u for u in found.uses if u.name != name or u.receiver != "super")), False


def use_sites(
    hit: Hit,
    name: str,
    targets: list[tuple[str, str]],
    shadowed: bool = False,
    fields: tuple[tuple[str, Use], ...] = (),
    claimed: frozenset[str] = frozenset(),
    imports: Imports = (),
    mixins: frozenset[str] = frozenset(),
    kin: Callable[[str], frozenset[str]] | None = None,
    statics: frozenset[str] = frozenset(),
    ancestors: Callable[[str], frozenset[str]] | None = None,
) -> list[Site]:
    """Where ``hit`` uses ``name`` as code (imports left out), one :class:`Site` per innermost
    definition holding a use, in order, each as sure as its surest link to one of ``targets``
    (``(qualified symbol, path)`` of the definitions of ``name``; a bare or ``self`` use in a
    target's own file is sure). ``[]`` when the chunk only imports ``name`` or only mentions it in
    comments or strings. A method (a target's symbol is ``Class.name``) is never used by a bare name
    that is not called: ``request = Request(...); send(request.prepare())`` is a local variable, not a
    use of ``Session.request``, nor, when the chunk binds ``name`` as a local, of a function. ``shadowed``: ``hit``'s file defines ``name`` at top level, so its
    bare uses mean that definition (a bare call is resolved in scope first), no target elsewhere.
    ``fields``: the declared types of fields the chunk reaches ``name`` through, from their struct's
    chunk (:func:`codeask.query.fields.field_types`). ``claimed``: the classes defining a method
    ``name`` themselves; a use through a value of one of them (``self.adapter = HTTPAdapter()``)
    means that class's method, no target of another class. ``imports``: the import statements of
    ``hit``'s file (:func:`~codeask.query.imported.file_imports`; its own are read too), the
    evidence of an import alias. ``mixins``: the bases of the targets' classes, whose ``self`` may be
    a subclass defining its own (:func:`_link`). ``kin``: a class's ancestors and descendants in the
    project, itself included (:meth:`~codeask.query.links.Links.kin`); a use through ``self`` or a value
    of a known class reaches only their methods (:func:`_unrelated`). ``statics``: ``Class.name`` of each
    Java ``import static`` of ``hit``'s file (``Util.checkNotNull``, ``Util.*``), whose bare use is sure.
    ``ancestors``: a class with its ancestors in the project (:meth:`~codeask.query.links.Links.ancestors`):
    a use through ``super`` reaches only their methods (:func:`_supers`)."""
    found = uses_in(hit.content, hit.language)
    found = replace(found, types=fields + found.types) if fields else found
    targets = [(free_symbol(symbol, hit.language), path) for symbol, path in targets]  # Rust's mod tests
    methods = bool(targets) and all("." in symbol for symbol, _ in targets)
    imports = import_groups(hit.content, hit.language) + imports
    local = name in found.bound and not _top_binding(hit, found, name, targets)  # request = Request(..): a local
    lines = code_lines(found, name, values=not (methods or local), fields=methods and hit.language == "java")
    inners = in_functions(hit.content, list(dict.fromkeys(inner_definition(hit, line) for line in lines)))
    chunk = _Chunk(hit, found, imports, shadowed, claimed, kin, mixins, statics, ancestors)
    out = []
    for inner in inners:
        span = (inner.start_line, inner.end_line) if inner else (1, 1 << 30)
        sure = max((_target_sure(chunk, name, t, span) for t in targets), default=NONE)
        if sure > NONE:
            out.append(Site(narrowed(hit, inner) if inner else _outside(hit, lines), sure))
    return out


def _top_binding(hit: Hit, found: Uses, name: str, targets: list[tuple[str, str]]) -> bool:
    """Whether ``hit`` binds ``name`` outside its definitions in the file of a top-level target: the binding
    is that target (``LIMIT_MS = 500``), its bare reads in the file's functions uses of it, not a local's."""
    here = any(path == hit.path and "." not in symbol for symbol, path in targets)
    return here and any(inner_definition(hit, u.line) is None for u in found.of(name))


def code_lines(found: Uses, name: str, values: bool = True, fields: bool = False) -> list[int]:
    """The 1-based chunk lines where ``found`` uses ``name`` as code, in order: imports left out, a
    bare value (neither called nor reached through a receiver) too unless ``values``, and with
    ``fields`` any use not called (Java has no bound methods: ``this.importedTypes = ..`` writes a
    field, no use of the method ``importedTypes()``)."""
    kept = (u for u in found.of(name) if u.kind != "import" and (values or not _bare_value(u)))
    return sorted({u.line for u in kept if not (fields and u.kind == "use")})


def first_use_line(hit: Hit, name: str, start: int | None = None) -> int:
    """The file line a ``via`` cites for ``hit``'s use of ``name``: the first line of the innermost
    definition holding its first use as code (``rewind_body``, not the chunk's first definition
    ``urldefragauth`` a packed chunk starts with), else ``start`` (the first line of the definition
    ``hit`` is a later part of, :func:`codeask.query.split.split_start`), else the use's own line,
    else the chunk's start."""
    lines = code_lines(uses_in(hit.content, hit.language), name)
    if not lines:
        return hit.start_line
    inner = inner_definition(hit, lines[0])
    if inner is None and start is not None:
        return start
    return hit.start_line + (inner.start_line if inner else lines[0]) - 1


def _bare_value(use: Use) -> bool:
    """Whether ``use`` names a value by itself, neither called nor reached through a receiver."""
    return use.kind == "use" and use.receiver == ""


def _outside(hit: Hit, lines: list[int]) -> Hit:
    """``hit`` cut to the lines (1-based, of the chunk) of its uses outside every definition, with no
    symbol (module-level code: ``ky = createInstance()``); the whole chunk when it holds no
    definition at all (a part of a definition the chunker split)."""
    if not definitions_of(hit.content, hit.language):
        return hit
    loose = [n for n in lines if inner_definition(hit, n) is None]
    first, last = min(loose), max(loose)
    text = "\n".join(split_lines(hit.content)[first - 1 : last])
    return replace(
        hit, start_line=hit.start_line + first - 1, end_line=hit.start_line + last - 1, content=text, symbol=""
    )


def unshadowed(found: Uses, name: str, target: tuple[str, str], hit: Hit, shadowed: bool) -> Uses:
    """``found`` less the bare uses of ``name`` when ``hit``'s file has its own top-level ``name``
    (``shadowed``) and ``target`` is in another file."""
    if not shadowed or target[1] == hit.path:
        return found
    return replace(found, uses=tuple(u for u in found.uses if u.name != name or u.receiver != ""))


def enclosing_class(hit: Hit, line: int) -> str:
    """The class (or Rust impl) of the definition of ``hit`` holding 1-based chunk ``line``: the part
    before the last of its qualified symbol (``Session`` of ``Session.get``), ``""`` at top level."""
    inner = inner_definition(hit, line)
    parts = (scoped(hit, inner) if inner is not None else hit.symbol).split(".")
    return parts[-2] if len(parts) > 1 else ""


def _receiver_class(found: Uses, use: Use, hit: Hit) -> str:
    """The class ``use`` is reached through when the chunk says: the enclosing class for ``self``
    (``this``, ``cls``, ``Self``; not ``super``) or, where a bare name may be a method (Java, C++),
    a bare use; a typed variable's class; a capitalised receiver itself (``Session`` of
    ``Session().send`` or ``Session.send``); else ``""``."""
    r = use.receiver
    if (r in SELF and r != "super") or (r == "" and hit.language not in RECEIVED):
        return enclosing_class(hit, use.line)
    if r in {"", "?", "super"}:
        return ""
    typed = found.type_of(r, use.line)
    return typed.name if typed is not None else (r if r[:1].isupper() else "")


def _unclaimed(found: Uses, name: str, target: tuple[str, str], claimed: frozenset[str], hit: Hit) -> Uses:
    """``found`` less the uses of ``name`` through a class in ``claimed`` (one defining ``name``
    itself) other than ``target``'s class (:func:`_receiver_class`): ``self.adapter.send()`` with
    ``self.adapter = HTTPAdapter()`` is no call of ``Mailer.send``, nor ``self.send()`` inside a
    ``Session`` defining ``send``, ``Session().send()``, or Java's bare ``emit()`` inside ``CodeWriter``."""
    if not claimed:
        return found
    owner = target[0].rsplit(".", 2)[-2] if "." in target[0] else ""

    def other(use: Use) -> bool:
        known = _receiver_class(found, use, hit) if use.name == name else ""
        return known in claimed and known != owner

    if not any(other(u) for u in found.uses if u.name == name):
        return found  # most calls drop nothing: a large class's 800 uses are not copied per name and target
    return replace(found, uses=tuple(u for u in found.uses if u.name != name or not other(u)))


#: Languages whose class headers name their bases (``class A(B)``, ``extends``): a class's kin is known.
INHERITING = frozenset({"python", "java", "javascript", "typescript", "tsx"})


def _unrelated(found: Uses, target: tuple[str, str], hit: Hit, kin: Callable[[str], frozenset[str]] | None) -> Uses:
    """``found`` less the uses of a method ``target`` through ``self`` in a class, or through a value of
    a known class (a typed variable or field), whose ``kin`` (ancestors and descendants in the project)
    leaves out the target's class: ``self.update(..)`` in ``CaseInsensitiveDict(MutableMapping)``, or
    ``d = OrderedDict(); d.items()``, calls a method of a class outside the project, no
    ``RequestsCookieJar.update``. Only where class headers name their bases (:data:`INHERITING`)."""
    owner = target[0].rsplit(".", 2)[-2] if "." in target[0] else ""
    if kin is None or not owner or hit.language not in INHERITING:
        return found
    classes = _receiver_classes(hit, found.types)
    foreign = {known for known in set(classes.values()) if known and owner not in kin(known)}
    if not foreign:
        return found
    return replace(found, uses=tuple(u for u in found.uses if classes[u.receiver, u.line] not in foreign))


@lru_cache(maxsize=256)
def _receiver_classes(hit: Hit, types: tuple[tuple[str, Use], ...]) -> dict[tuple[str, int], str]:
    """``{(receiver, 1-based line): class}`` of each use in ``hit`` with the declared ``types``
    (:attr:`~codeask.query.uses.Uses.types`, a struct's fields among them): the enclosing class for
    ``self`` (not ``super``), a typed variable's class, a receiver named as a class (:func:`class_named`),
    else ``""``. Read once per chunk and types:
    :func:`_unrelated` asks it per name and target of a large class's callees (javapoet's
    ``MethodSpec``: some 800 uses, asked about a thousand times)."""
    typed = Uses((), frozenset(), types)
    out = {}
    for use in uses_in(hit.content, hit.language).uses:
        if use.receiver in SELF - {"super"}:
            out[use.receiver, use.line] = enclosing_class(hit, use.line)
        else:
            found = typed.type_of(use.receiver, use.line) if use.receiver not in SELF | {"", "?"} else None
            out[use.receiver, use.line] = found.name if found is not None else class_named(use, hit.language)
    return out


def _link(chunk: _Chunk, found: Uses, name: str, target: tuple[str, str], span: tuple[int, int]) -> float:
    """How sure the uses ``found`` of ``name`` on ``span`` of the chunk are of ``target`` (symbol, path):
    sure for a ``self`` use in the target's own file or class (:func:`_inside`; a Go method's receiver is
    its ``self``: :func:`_go_receiver`), or a bare one unless the target is a method
    reached only through a receiver (:data:`~codeask.query.resolve.RECEIVED`); typed when every
    such use is a ``self`` use in one of ``mixins``, the target class's bases (a mixin's
    ``self.send()``: ``self`` is a subclass, which may define its own; a subclass calling its base's
    method stays sure); a bare use of a name the file imports statically (``statics``) is sure; else
    :func:`~codeask.query.resolve.sureness` with the file's ``imports`` (``mixins``, ``statics``,
    ``imports``: the chunk's, :class:`_Chunk`)."""
    symbol, path = target
    owner = symbol.rsplit(".", 2)[-2] if "." in symbol else ""
    if owner == name:  # a constructor (CodeWriter.CodeWriter) is reached as its class is: new CodeWriter(out)
        return _link(chunk, found, name, (symbol.rsplit(".", 1)[0], path), span)
    hit, mixins = chunk.hit, chunk.mixins
    its = _go_receiver(hit, span, owner, path)  # mx of func (mx *Mux): Go's self
    own = (SELF | its if "." in symbol and hit.language in RECEIVED else {"", *SELF}) - {"super"}  # :func:`_supers`
    mine = [
        u for u in found.of(name, *span) if u.receiver in own and (u.receiver in its or _inside(hit, u, path, owner))
    ]
    statics = {f"{owner}.{name}", f"{owner}.*"} & chunk.statics
    mine += [u for u in found.of(name, *span) if u.receiver == "" and statics]
    if mine and owner and all(u.receiver in SELF and enclosing_class(hit, u.line) in mixins for u in mine):
        return TYPED  # a mixin's self.send(): a subclass (Session, a test's RedirectSession) defines the one called
    if mine:
        return SURE
    return sureness(found, name, symbol, path, hit.language, span, chunk.imports, hit.path)


#: A Go method's head: ``func (mx *Mux) Get(``, its receiver's name and type.
_GO_METHOD = re.compile(r"\s*func\s*\(\s*(\w+)\s+\*?\s*(\w+)")


def _go_receiver(hit: Hit, span: tuple[int, int], owner: str, path: str) -> frozenset[str]:
    """The receiver's name of the Go method on ``span`` (1-based lines of ``hit``) when its type is
    ``owner`` in ``path``'s package (folder): chi's ``mx`` in ``func (mx *Mux) Get(..)``, through which
    ``mx.handle(..)`` is ``Mux.handle`` as surely as Python's ``self.handle(..)``; else empty."""
    if hit.language != "go" or not owner or hit.path.rpartition("/")[0] != path.rpartition("/")[0]:
        return frozenset()
    lines = split_lines(hit.content)
    found = _GO_METHOD.match(lines[span[0] - 1]) if 0 < span[0] <= len(lines) else None
    return frozenset({found.group(1)}) if found and found.group(2) == owner else frozenset()


def _inside(hit: Hit, use: Use, path: str, owner: str) -> bool:
    """Whether ``use`` (a bare or ``self`` use in ``hit``) is made inside the target's own code: in its
    file (``path``), or in a method of the class ``owner`` the target is reached as (a subclass
    inheriting it: javapoet's bare ``emitAnnotations(out)`` in ``ArrayTypeName extends TypeName``)."""
    return path == hit.path or (bool(owner) and enclosing_class(hit, use.line) == owner)


def own_names(hit: Hit, inner: Definition | None) -> set[str]:
    """The names ``inner`` (a definition of ``hit``; ``None``: the whole chunk) uses as code on its
    own lines, imports left out."""
    found = uses_in(hit.content, hit.language)
    return found.names(inner.start_line, inner.end_line) if inner else found.names()
