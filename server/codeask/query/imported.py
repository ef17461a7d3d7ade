"""What a file imports from the project: the evidence the import-alias guess needs.

``s.get(..)`` may call the project's ``api.get`` through an alias (``from requests import api as s``),
so the resolver guesses an alias (0.5, :func:`codeask.query.resolve.sureness`) for a plain word
reaching a top-level function. The guess is only as good as its evidence: ``mock.patch``,
``json.dumps`` and ``environ.get`` (``from os import environ``) name other packages' modules. A
word is an alias of the project's module when an import statement of its file binds it and names
that module's path (a folder or the file's stem: ``requests``, ``api``) or is relative
(``from . import api``, ``import * as api from './api'``). A file's import statements are
usually in a chunk of their own, so :func:`file_imports` reads the file's chunks from the index.

Go has no alias guess (a qualifier is always a package), but which package a qualifier names is
read from its import too: ``chi.RouteContext`` in chi's ``middleware/`` reaches the root package,
whose folder has no name, through ``import "github.com/go-chi/chi/v5"``, the module path its
``go.mod`` declares (:func:`go_packages`).
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from codeask.index.chunking.code import iter_named, parser_for
from codeask.lines import split_lines
from codeask.query.uses import uses_in

if TYPE_CHECKING:
    from codeask.index.rows import Hit
    from codeask.index.store import Store

__all__ = [
    "Imports",
    "import_groups",
    "file_imports",
    "from_project",
    "from_elsewhere",
    "go_packages",
    "aliases",
    "imported_as",
    "imports_module",
]

#: Each import statement's words (:func:`import_groups`).
Imports = tuple[frozenset[str], ...]
#: Import statements whose words :func:`import_groups` reads (Python's and JavaScript/TypeScript's;
#: a lowercase qualifier elsewhere is a package, a module or a value, never an alias).
_STATEMENTS = frozenset({"import_statement", "import_from_statement"})
#: Go's import of one package (``chi "github.com/go-chi/chi/v5"``): its group is the one name it binds.
_GO_SPEC = "import_spec"
#: A Go import path's major-version suffix (``/v5``), not the package's name.
_VERSION = re.compile(r"^v[0-9]+$")
#: Marks a group of Go's package names (:func:`go_packages`), never an identifier.
_GO = "go:"
#: Marks the group of the Go module path ``go.mod`` declares (``module github.com/go-chi/chi/v5``).
_GO_MOD = "go.mod:"
_MODULE_LINE = re.compile(r"^module\s+(\S+)", re.MULTILINE)
_WORD = re.compile(r"[A-Za-z_$][\w$]*")
_KEYWORDS = frozenset({"import", "from", "as", "type", "typeof"})
#: What marks a relative import: ``from .`` (Python), a quoted ``./`` or ``../`` (JavaScript).
_RELATIVE = re.compile(r"^from\s+\.|['\"]\.\.?/")
#: The word a relative import adds to its statement's words.
RELATIVE = "."
#: Marks a word of an import's module name (``/options``), which the statement does not bind.
MODULE = "/"


@lru_cache(maxsize=2048)
def import_groups(content: str, language: str) -> Imports:
    """The words of each import statement of ``content`` (a chunk in ``language``): those it binds
    and its module's (:func:`_group`), keywords left out, with :data:`RELATIVE` for a relative import;
    for Go, each import spec's package name (:func:`_go_name`) marked :data:`_GO`; ``()`` for a
    language without a grammar or without such statements."""
    parser = parser_for(language)
    if parser is None or "import" not in content:
        return ()
    tree = parser.parse("\n".join(split_lines(content)).encode("utf-8", "surrogatepass"))
    out = []
    for node in iter_named(tree.root_node):
        if node.type == _GO_SPEC and language == "go":
            path = node.child_by_field_name("path")
            said = (path.text or b"").decode("utf-8", "replace").strip('"`') if path is not None else ""
            out.append(frozenset({_GO, _go_name(node), MODULE + said}))
        elif node.type in _STATEMENTS and node.text:
            out.append(_group(node))
    return tuple(out)


def _group(statement: Any) -> frozenset[str]:
    """The words of one Python or JavaScript import ``statement``: the words it binds (every
    identifier outside its module's name) and its module's words marked :data:`MODULE` (``/types``,
    ``/options`` of ``from '../types/options.js'``; ``import a.b`` binds and names ``a`` and ``b``),
    with :data:`RELATIVE` for a relative import."""
    text = statement.text.decode("utf-8", "replace")
    module = statement.child_by_field_name("module_name") or statement.child_by_field_name("source")
    named = module.text.decode("utf-8", "replace") if module is not None and module.text else ""
    bound = set(_WORD.findall(text.replace(named, " ", 1) if named else text)) - _KEYWORDS
    modules = {MODULE + w for w in _WORD.findall(named or text)} - {MODULE + k for k in _KEYWORDS}
    return frozenset(bound | modules | ({RELATIVE} if _RELATIVE.search(text) else set()))


def _go_name(spec: Any) -> str:
    """The name a Go import spec binds: its alias, else its path's last element that is no major
    version (``chi`` of ``github.com/go-chi/chi/v5``)."""
    alias = spec.child_by_field_name("name")
    if alias is not None and alias.text:
        return str(alias.text.decode("utf-8", "replace"))
    path = spec.child_by_field_name("path")
    parts = (path.text or b"").decode("utf-8", "replace").strip('"`').split("/") if path is not None else [""]
    while len(parts) > 1 and _VERSION.match(parts[-1]):
        parts.pop()
    return parts[-1]


def go_packages(imports: Imports) -> frozenset[str]:
    """The names Go imports among ``imports`` bind to the project's root package: those importing
    the module path its ``go.mod`` declares (a group marked :data:`_GO_MOD`, :func:`file_imports`);
    none without it (``net/http`` or a third-party ``render`` never reach the project's root)."""
    roots = {w for group in imports if _GO_MOD in group for w in group if w != _GO_MOD}
    return frozenset(n for g in imports if _GO in g and g & roots for n in g if n != _GO and n[:1] != MODULE)


def file_imports(store: Store, hit: Hit, name: str, seen: dict[str, Imports] | None = None) -> Imports:
    """:func:`import_groups` of every stored chunk of ``hit``'s file (its imports are rarely in
    ``hit``), read only when ``hit`` reaches ``name`` through a plain lowercase word (a possible
    alias; else ``()``); ``seen`` keeps each file's for the next chunk of it."""
    words = (u.receiver for u in uses_in(hit.content, hit.language).of(name) if u.plain)
    if not any(w[:1].islower() for w in words):
        return ()
    seen = {} if seen is None else seen
    if hit.path not in seen:
        rows = store.rows_for_path(hit.path)
        seen[hit.path] = tuple(g for row in rows for g in import_groups(row["content"], row["language"]))
        if hit.language == "go":  # the module path, which tells the project's root package
            found = (_MODULE_LINE.search(row["content"]) for row in store.rows_for_path("go.mod"))
            seen[hit.path] += tuple(frozenset({_GO_MOD, MODULE + m.group(1)}) for m in found if m)
    return seen[hit.path]


def from_project(word: str, imports: Imports, path: str) -> bool:
    """Whether an import statement among ``imports`` binds ``word`` and names ``path`` (the module
    of the definition reached: one of its folders or its stem) or is relative. A word of the
    module's name is not bound: ``options`` of ``import {type Options} from '../types/options.js'``
    is a local (ky's ``options.retry``), no alias of that module."""
    parts = {MODULE + p for p in (*path.split("/")[:-1], path.rsplit("/", 1)[-1].split(".", 1)[0])}
    return any(word in group and (RELATIVE in group or bool(group & parts)) for group in imports)


def from_elsewhere(word: str, imports: Imports, path: str) -> bool:
    """Whether an import statement among ``imports`` binds ``word`` and none of them names ``path``'s
    module (:func:`from_project`): ``mock`` of ``from unittest import mock`` is another package's
    module, whose ``mock.patch`` is no project's ``patch``."""
    return any(word in group and _GO not in group for group in imports) and not from_project(word, imports, path)


#: Source extensions an import's module path leaves out (``from .exceptions``, ``from './options'``).
_MODULE_FILES = (".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts")


@lru_cache(maxsize=2048)
def aliases(content: str, language: str, name: str) -> tuple[tuple[str, str], ...]:
    """``(alias, module)`` of each import statement of ``content`` (a chunk in ``language``) that binds
    ``name`` under another name: Python's ``from .exceptions import HTTPError as _HTTPError``
    (``("_HTTPError", ".exceptions")``), JavaScript's ``import { a as b } from './x'`` (``("b", "./x")``);
    ``()`` without one. ``import a.b as c`` names a module, which :func:`from_project` reads."""
    spelled = re.compile(rf"(?<![\w$.]){re.escape(name)}\s+as\s+([A-Za-z_$][\w$]*)")
    return tuple((m.group(1), module) for m, module, _ in _as_clauses(content, language, name, spelled))


def imported_as(content: str, language: str, alias: str) -> tuple[tuple[str, str, int], ...]:
    """``(name, module, line)`` of each import statement of ``content`` (a chunk in ``language``) that
    binds ``name`` as ``alias`` (:func:`aliases` read from the other end: ``RequestsSSLError`` ->
    ``("SSLError", ".exceptions", 51)``), ``line`` 1-based in ``content``; ``()`` without one."""
    spelled = re.compile(rf"(?<![\w$.])([A-Za-z_$][\w$]*)\s+as\s+{re.escape(alias)}(?![\w$])")
    return tuple((m.group(1), module, line) for m, module, line in _as_clauses(content, language, alias, spelled))


def _as_clauses(content: str, language: str, word: str, spelled: re.Pattern) -> list[tuple[re.Match, str, int]]:
    """The matches of ``spelled`` (an ``X as Y`` clause naming ``word``) in the import statements of
    ``content``, each with the statement's module as written and the clause's 1-based line."""
    parser = parser_for(language)
    if parser is None or " as " not in content or word not in content:
        return []
    tree = parser.parse("\n".join(split_lines(content)).encode("utf-8", "surrogatepass"))
    out = []
    for node in iter_named(tree.root_node):
        module = node.child_by_field_name("module_name") or node.child_by_field_name("source")
        if node.type not in _STATEMENTS or module is None or not node.text or not module.text:
            continue
        said, text = module.text.decode("utf-8", "replace").strip("'\"`"), node.text.decode("utf-8", "replace")
        out += [(m, said, node.start_point.row + 1 + text.count("\n", 0, m.start())) for m in spelled.finditer(text)]
    return out


def imports_module(module: str, importer: str, path: str) -> bool:
    """Whether ``module`` (an import's module as written in the file ``importer``) is the file
    ``path``: Python's relative ``.exceptions`` / ``..util`` from ``importer``'s folder or an absolute
    ``requests.exceptions`` whose parts end ``path`` (``src/requests/exceptions.py``, or its folder's
    ``__init__.py``); JavaScript's ``./options`` or ``../core/Ky`` from ``importer``'s folder (or that
    folder's ``index``). Another package's module (``urllib3.exceptions``, ``'ky'``) is not."""
    if not path.endswith(_MODULE_FILES):
        return False
    stem = posixpath.splitext(path)[0]
    stem = stem.rsplit("/", 1)[0] if stem.endswith(("/__init__", "/index")) else stem
    folder = posixpath.dirname(importer)
    if module.startswith(("./", "../")):  # './errors.js' names errors.ts too (TypeScript's ESM spelling)
        joined = posixpath.normpath(posixpath.join(folder, module))
        return stem in {joined, posixpath.splitext(joined)[0] if joined.endswith(_MODULE_FILES) else joined}
    if module.startswith("."):
        dots = len(module) - len(module.lstrip("."))
        base = folder.split("/") if folder else []
        parts = base[: len(base) - dots + 1] + [p for p in module[dots:].split(".") if p]
        return "/".join(parts) == stem
    parts = module.split(".")
    return "/" not in module and stem.split("/")[-len(parts) :] == parts
