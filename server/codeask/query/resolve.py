"""How sure a reference is of its definition: receivers, qualifiers and the symbols chunks define.

The index stores each chunk's names unresolved (:mod:`codeask.index.chunking.graph`); the graph
(:mod:`codeask.query.graph`) resolves a reference to ``send`` against every chunk defining ``send``
and asks here how sure each such link is, from how the reference spells it (:func:`how_sure`), and
which definition inside a chunk it is (:func:`defined_symbol`, :func:`using_symbol`: a chunk packs
several definitions; its stored symbol names the first).

The rules of :func:`sureness`: :data:`SURE` through the definition's class or its file's module (a
top-level one also through its folder's package, or bare); :data:`TYPED` through a variable
declared or constructed with the definition's class (``s = Session()``, ``with Session() as s``,
``s: Session``), or of no known type where the class is named other than as another variable's
type, a value's member (Go's ``hr.Handler(..)``) or another package's type (``http.Handler``
names no project ``Handler``); the import-alias guess ``0.5`` for a top-level one reached through a
plain lowercase word (not an attribute: ``os.environ.get``) that is no local variable and that
the file imports from the project (``json.dumps``, ``mock.patch`` are no alias, nor any link: the
file imports ``json`` and ``mock`` from elsewhere; not in Go or
Rust, where a qualifier is a package or module), or through a Rust path from this crate
(``crate::``, ``super::``); else :data:`NAME_ONLY`. ``0.0`` when those lines never use ``name``
as code (a word in a comment or a string), or only through a variable holding a builtin literal
(``kwargs = {..}; kwargs.update(..)``: :meth:`~codeask.query.uses.Uses.builtin`), or only through another Go package or Rust module
(``http.Handler`` is not the project's ``Handler``), through a package or module path to a method
(``walk::scan`` is not ``WorkerState::scan``), through a Rust path naming another type
(``Vec::new()`` is no ``WorkerState::new``), from C to a C++ file's method, or a value of another package's type (``next
http.Handler``, ``pool sync.Pool``: the chain ends), or by a bare name to a method in a language
without an implicit ``this`` (:data:`RECEIVED`), through ``self`` to a top-level definition (a
bare use of a name the chunk binds, a pytest fixture's parameter ``httpbin``, is
:data:`NAME_ONLY`), or in Go or Rust through a value (a local, a field: chi's ``c.chain``) to a
top-level function. Go reaches another package's (folder's) name only through its qualifier (a
bare ``Handler`` or struct key ``Handler:`` in ``middleware/`` is no use of ``_examples/``' type),
and the root package, whose folder has no name, through the name its import binds
(``chi.RouteContext`` after ``import "github.com/go-chi/chi/v5"``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

from codeask.index.chunking.symbols import Definition, definitions
from codeask.lines import split_lines
from codeask.query.fragments import STATEMENTS, class_body, code_text
from codeask.query.imported import Imports, from_elsewhere, from_project, go_packages, import_groups
from codeask.query.uses import Use, Uses, uses_in

if TYPE_CHECKING:
    from codeask.index.store import Hit

__all__ = [
    "SURE",
    "TYPED",
    "NAME_ONLY",
    "SELF",
    "RECEIVED",
    "NONE",
    "how_sure",
    "sureness",
    "definitions_of",
    "TYPE_HEAD",
    "in_functions",
    "free_symbol",
    "scoped",
    "defined_symbol",
    "using_symbol",
    "class_named",
]

#: How sure an edge is (:func:`how_sure`): the reference names the target's class or module (or is
#: a bare call of a function), a variable in a chunk that names the class, or only the name.
SURE, TYPED, NAME_ONLY = 1.0, 0.7, 0.3
#: Sureness of a "reference" that is no use of the name as code (a word in a comment or a string).
NONE = 0.0
#: Qualifier of a free function reached through a qualifier that is not its module (an import alias).
_ALIAS = 0.5
SELF = frozenset({"self", "this", "cls", "super", "Self"})
#: File extensions of C++ sources and headers (a C chunk reaches none of their methods).
_CPP = frozenset({"cc", "cpp", "cxx", "c++", "hpp", "hh", "hxx"})
#: Languages where a method is only reached through a receiver (``self.f()``, ``mx.f()``), never by
#: its bare name (Java's and C++'s implicit ``this`` do).
RECEIVED = frozenset({"python", "go", "rust", "javascript", "typescript", "tsx"})
#: How a definition's first line ends when the definition goes on after it (``{``, ``(``, ``:``, ``=>``).
_OPENS = ("{", "(", "[", ",", ":", "=", ">", "\\")


def _module_names(path: str) -> set[str]:
    """Names a file's module goes by: its stem and its folder's name (Go's package, a Python package)."""
    parts = path.split("/")
    return {parts[-1].split(".", 1)[0], *(parts[-2:-1])}


def how_sure(name: str, content: str, symbol: str, path: str, language: str) -> float:
    """How sure it is that ``content`` (another file's chunk, in ``language``) refers to the
    definition of ``name`` whose qualified symbol is ``symbol`` (``Session.send``; ``send`` at top
    level) in ``path``: :func:`sureness` over the whole chunk."""
    return sureness(uses_in(content, language), name, symbol, path, language, imports=import_groups(content, language))


def _named(found: Uses, owner: str, lines: tuple[int, int], modules: set[str], language: str) -> bool:
    """Whether the class ``owner`` is named on ``lines`` of the chunk ``found`` was read from, other than where it
    is declared, as another name's member or as another package's (a value of that class may be in reach)."""
    return any(
        not u.declares and not _member(u, found) and not _foreign(u, modules, found, language)
        for u in found.of(owner, *lines)
    )


def sureness(
    found: Uses,
    name: str,
    symbol: str,
    path: str,
    language: str,
    lines: tuple[int, int] = (1, 1 << 30),
    imports: Imports = (),
    at: str = "",
) -> float:
    """How sure the uses of ``name`` on ``lines`` (1-based, inclusive, of the chunk ``found`` was read from:
    :func:`~codeask.query.uses.uses_in`) mean the definition ``symbol`` in ``path``, the best over those uses
    (the rules: the module docstring); ``imports``: the import statements of the chunk's file
    (:mod:`codeask.query.imported`); ``at``: the chunk's path (``""``: unknown; tells Go's packages apart)."""
    symbol = free_symbol(symbol, language)
    apart, rooted = _go_scope(language, at, path, imports)  # another Go package; the root one's names
    uses = _code_uses(found, name, lines, apart and "." not in symbol)
    owner = symbol.rsplit(".", 1)[0].rsplit(".", 1)[-1] if "." in symbol else ""
    if not uses or (language == "c" and owner and path.rsplit(".", 1)[-1] in _CPP):
        return NONE  # C calls no C++ method (hiredis' c->funcs->write is no Client::write)
    modules = _module_names(path)
    stem = path.rsplit("/", 1)[-1].split(".", 1)[0]
    named = _named(found, owner, lines, modules, language)
    go = language == "go"
    packaged = language in {"go", "rust"}  # a qualifier is a package or module, never an alias
    best = NONE
    for use in uses:
        r = use.receiver
        if r == "" and not owner and name in found.bound:
            best = max(best, NAME_ONLY)  # a parameter or local of that name (a pytest fixture): by name only
            continue
        module = use.plain and r in modules | rooted and r not in found.bound  # data := ..; data.Article: a local
        if module and owner and packaged:
            continue  # a Go package or Rust module path never reaches a method: walk::scan, chi.URLParam
        if (r == "" and not owner) or (r and r == owner) or (module and (not owner or (r == stem and not go))):
            return SURE
        if (r == "" and owner and language in RECEIVED) or (r in SELF and not owner and not use.own):
            continue  # a bare call is no method here (api.py's request(..)), self.f() no free function
        if packaged and not owner and r and not use.own and (not use.plain or r in found.bound):
            continue  # a Go or Rust function is reached bare or through a package, never a value's field
        foreign = packaged and use.plain and r[:1].islower() and r not in found.bound | {"crate", "super"}
        foreign |= language == "rust" and use.plain and r[:1].isupper() and r not in SELF  # Vec::new(): a type's
        typed = None if r in SELF or r in {"", "?"} or module else found.type_of(r, use.line)
        if (foreign and not module and not use.own) or _foreign(typed, modules, found, language):
            continue  # another package's name (Go's http.Handler, Rust's ignore::DirEntry), type or value
        if not packaged and use.plain and r[:1].islower() and r not in found.bound and from_elsewhere(r, imports, path):
            continue  # another package's module (mock.patch after from unittest import mock)
        if _outside_value(use, found, imports, path, packaged):
            continue  # a builtin attribute (self.__dict__.update), another package's module's value (os.environ.update)
        best = max(best, _ALIAS if use.own and not owner else NAME_ONLY)  # crate::, super::, self::
        if r in SELF or r in {"", "?"} or module:
            continue
        if typed is not None:
            best = max(best, TYPED if typed.name == owner else NAME_ONLY)
        elif named:
            best = max(best, TYPED)
        elif not owner and use.plain and r[:1].islower() and r not in found.bound and not packaged:
            best = max(best, _ALIAS if from_project(r, imports, path) else NAME_ONLY)  # a module's alias?
    return best


def _outside_value(use: Use, found: Uses, imports: Imports, path: str, packaged: bool) -> bool:
    """Whether ``use`` reaches its name through a value no project class holds: a dunder attribute
    (``self.__dict__.update``: a builtin ``dict``), or an attribute of another package's module
    (``os.environ.update`` after ``import os``: :func:`~codeask.query.imported.from_elsewhere`); not in Go
    or Rust (``packaged``), where a qualifier is a package the import rules read."""
    r, through = use.receiver, use.through
    dunder = len(r) > 4 and r.startswith("__") and r.endswith("__")
    module = bool(through) and through[:1].islower() and through not in found.bound | SELF
    return not packaged and (dunder or (module and from_elsewhere(through, imports, path)))


def free_symbol(symbol: str, language: str) -> str:
    """``symbol`` less the qualifiers that are no class: in Rust, a function in a module (``mod tests``'s
    ``tests.generate_str``, lowercase: a module) is a free function, called bare; a type's
    (``WorkerState.scan``, capitalised) stays a method."""
    parts = symbol.split(".")
    return parts[-1] if language == "rust" and len(parts) > 1 and parts[-2][:1].islower() else symbol


def _code_uses(found: Uses, name: str, lines: tuple[int, int], qualified: bool) -> list[Use]:
    """The uses of ``name`` on ``lines`` that may reach a project definition: none bare when
    ``qualified`` (Go reaches another package's name only through its qualifier: no ``Handler:`` key,
    no bare ``Handler``), none through a variable holding a builtin literal (``kwargs = {..};
    kwargs.update(..)`` calls a builtin's method: :meth:`~codeask.query.uses.Uses.builtin`)."""
    uses = [u for u in found.of(name, *lines) if not (qualified and u.receiver == "")]
    return [u for u in uses if u.receiver in SELF | {"", "?"} or not found.builtin(u.receiver, u.line)]


def _go_scope(language: str, at: str, path: str, imports: Imports) -> tuple[bool, frozenset[str]]:
    """Whether a Go chunk at ``at`` is in another package (folder) than ``path``, and the names its
    ``imports`` bind that reach ``path``'s package when that is the root one, whose folder has no
    name (``chi`` of ``github.com/go-chi/chi/v5``); ``(False, ∅)`` elsewhere."""
    apart = language == "go" and bool(at) and _folder(at) != _folder(path)
    return apart, go_packages(imports) if apart and not _folder(path) else frozenset()


def _folder(path: str) -> str:
    """The folder of ``path`` (``""`` at the root): a Go package."""
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _member(use: Use, found: Uses) -> bool:
    """Whether ``use`` reaches its name as a member of a value (a local, ``self``, a field of one, an
    expression: Go's ``hr.Handler(..)`` is a method call, no mention of the type ``Handler``), not
    through a package, module or path (``crate::handler::Handler``)."""
    values = found.bound | SELF
    return use.receiver != "" and (use.receiver in values | {"?"} or use.through in values)


def _foreign(typed: Use | None, modules: set[str], found: Uses, language: str) -> bool:
    """Whether ``typed`` (the use naming a variable's type, or a class) names another package's type: qualified
    by a lowercase word that is neither the definition's module nor a local name
    (``http.Handler``, ``ignore::DirEntry``, ``express.Handler``, ``java.util.Map``). Not in
    Python, where a module is often imported under another name."""
    if typed is None or language == "python" or not typed.plain or typed.own:
        return False
    q = typed.receiver
    return q[:1].islower() and q not in modules and q not in found.bound | SELF | {"crate", "super"}


@lru_cache(maxsize=1024)
def definitions_of(content: str, language: str) -> tuple[Definition, ...]:
    """:func:`~codeask.index.chunking.symbols.definitions` of a chunk's ``content``, remembered (the
    graph asks about the same chunks for every reference), the head of a definition the chunker split
    running to the chunk's end (:func:`_head`); a piece of a class body's methods
    (:func:`~codeask.query.fragments.class_body`: TypeScript's ``#fetch`` among its class's others); the
    lines of a comment the chunk starts inside are no code (:func:`~codeask.query.fragments.code_text`)."""
    text = code_text(content, language)
    found = class_body(content, language) or tuple(d for d in definitions(text, language) if d.name not in STATEMENTS)
    lines = text.split("\n")
    return tuple(_head(d, lines, found) for d in found)


#: A word of a definition's head, before its name, that makes it a type (its methods are callers of
#: their own; a use of it creates one or names the type: :func:`codeask.query.graph.edge_kind`).
TYPE_HEAD = re.compile(r"\b(?:class|interface|struct|enum|trait|impl|record|object|union|namespace|module|type)\b")


def in_functions(content: str, inners: list[Definition | None]) -> list[Definition | None]:
    """``inners`` (definitions of ``content``, a chunk, holding a use; ``None``: code outside them) less each one
    inside another of them that is a function, not a type: ky's closure ``createInstance.ky`` (line 12)
    inside ``createInstance`` (10-32), which uses the name on its own lines too, is one caller, the
    function around it; a method inside its class stays a caller of its own. A type is told by its head,
    the lines up to its name (:data:`TYPE_HEAD`: ``class``, ``struct``, ``impl``, ...)."""
    lines = split_lines(content)

    def function(d: Definition) -> bool:
        head = [*lines[d.start_line - 1 : d.name_line - 1], lines[d.name_line - 1].split(d.name, 1)[0]]
        return not TYPE_HEAD.search(" ".join(head))

    outer = [d for d in inners if d is not None and d.name_line <= len(lines) and function(d)]
    size = lambda d: d.end_line - d.start_line  # noqa: E731
    return [
        i
        for i in inners
        if i is None
        or not any(o.contains(i.start_line) and o.contains(i.end_line) and size(o) > size(i) for o in outer)
    ]


def _head(d: Definition, lines: list[str], found: tuple[Definition, ...]) -> Definition:
    """``d`` run to the chunk's end (``lines``) when it is the head of a definition the chunker split:
    it parses as one line ending open (``{``, ``(``, ``:``, ``=>``, ...: the body is cut off), no
    definition of ``found`` starting after it (Go's ``func bigMux() Router {`` holds the chunk's
    closures); a whole one-line definition (``type methodTyp uint``) stays one line."""
    head = lines[d.start_line - 1].rstrip() if d.start_line <= len(lines) else ""
    if d.end_line != d.start_line or any(o.start_line > d.end_line for o in found) or not head.endswith(_OPENS):
        return d
    return replace(d, end_line=len(lines))


def scoped(hit: Hit, inner: Definition) -> str:
    """``inner``'s symbol qualified by the chunk's scope: the chunk's symbol less its last part when
    the chunk's first definition is that part (``Session.send`` holding ``def send``, a packed chunk
    labelled by its first function), else the chunk's symbol (a class chunk's methods)."""
    defs = definitions_of(hit.content, hit.language)
    head = hit.symbol.rsplit(".", 1)
    first = defs[0].symbol.split(".", 1)[0] if defs else ""
    scope = (head[0] if len(head) == 2 else "") if first == head[-1] else hit.symbol
    return qualified(scope, inner.symbol)


def defined_symbol(hit: Hit, name: str) -> str:
    """The qualified symbol of ``hit``'s definition of ``name`` (``CaseInsensitiveDict.copy``), or the
    chunk's symbol when no definition in it is named so."""
    inner = next((d for d in definitions_of(hit.content, hit.language) if d.name == name), None)
    return hit.symbol if inner is None else scoped(hit, inner)


def using_symbol(hit: Hit, name: str) -> str:
    """The qualified symbol of the innermost definition of ``hit`` holding its first use of
    ``name`` as code (:func:`~codeask.query.uses.uses_in`), or the chunk's symbol."""
    uses = uses_in(hit.content, hit.language).of(name)
    use = uses[0].line if uses else 0
    inner = None
    for d in definitions_of(hit.content, hit.language):
        if d.contains(use):
            inner = d
    return hit.symbol if inner is None else scoped(hit, inner)


def qualified(scope: str, symbol: str) -> str:
    """``symbol`` (qualified within a chunk) qualified by the chunk's ``scope``, their overlap once:
    ``(A.f, f.g)`` -> ``A.f.g``, ``(A, f)`` -> ``A.f``, ``(A.f, f)`` -> ``A.f``."""
    outer, inner = scope.split(".") if scope else [], symbol.split(".")
    for k in range(min(len(outer), len(inner)), 0, -1):
        if outer[-k:] == inner[:k]:
            return ".".join(outer + inner[k:])
    return ".".join(outer + inner)


#: A class's name by the naming conventions of Python (PEP 8's CapWords) and Java (UpperCamelCase): a
#: capital, then a lowercase letter somewhere (``LIMIT`` is a constant). JavaScript's singletons and
#: namespaces are named so too (``const Api = new Client()``), so there a name says no class.
_CLASS_NAME = re.compile(r"_?[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*")
_CLASS_NAMED = frozenset({"python", "java"})


def class_named(use: Use, language: str) -> str:
    """The class ``use`` is reached through by its name, or ``""``: ``Base.__init__(self, ..)``,
    ``Util.check(..)``, ``Session().send``, a receiver named as a class is (Python, Java), not a
    field's (``self.Handler``). A class outside the project (``json``'s ``JSONDecodeError`` imported as
    ``CompatJSONDecodeError``) is kin of none of its classes, so no project method is called there."""
    named = language in _CLASS_NAMED and not use.through and _CLASS_NAME.fullmatch(use.receiver)
    return use.receiver if named else ""
