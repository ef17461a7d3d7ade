"""Which overload of a method a call reaches, told by its number of arguments.

Java and C++ define one method name several times in a class, each with its own parameters
(javapoet's four ``CodeWriter.emit``); each overload is a definition of its own, and a call is a
caller of the overloads whose parameters take as many arguments as it passes (a trailing varargs
parameter takes any number from one less). Read from the syntax tree of the definition and of the
calling definition's text; languages without overloads are not asked.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from codeask.index.chunking.code import iter_named, parser_for
from codeask.lines import split_lines
from codeask.query.fragments import CLASS_HEAD
from codeask.query.uses import Uses, uses_in

__all__ = ["OVERLOADING", "Arity", "parameters", "argument_counts", "fits"]

#: Languages whose classes define one method name several times, told apart by their parameters.
OVERLOADING = frozenset({"java", "cpp"})
#: Parameter nodes that take any number of arguments (Java's ``Object... args``, C++'s ``...``).
_VARIADIC = frozenset({"spread_parameter", "variadic_parameter", "variadic_parameter_declaration"})
#: Call nodes and the field naming what they call (Java's ``new CodeWriter(out)`` calls a constructor).
_CALLED = {"method_invocation": "name", "call_expression": "function", "object_creation_expression": "type"}
#: Receiver nodes that are one word (``w`` of ``w.emit(..)``, ``this``), read as a :func:`_calls` receiver.
_WORDS = frozenset({"identifier", "this", "super", "field_identifier"})

#: How many arguments a definition takes: ``(parameters, whether the last is variadic)``.
Arity = tuple[int, bool]


def _tree(content: str, language: str) -> Any | None:
    parser = parser_for(language)
    return parser.parse("\n".join(split_lines(content)).encode("utf-8", "surrogatepass")) if parser else None


@lru_cache(maxsize=1024)
def parameters(content: str, language: str, name: str) -> Arity | None:
    """The :data:`Arity` of the first definition of ``name`` in ``content`` (a definition's text; a Java
    one read inside a stand-in class, where a constructor parses as one), or ``None`` when no parameter
    list of it parses."""
    tree = _tree(CLASS_HEAD + content + "\n}" if language == "java" else content, language)
    for node in iter_named(tree.root_node) if tree is not None else ():
        declared = node.child_by_field_name("parameters")
        named = node.child_by_field_name("name") or node.child_by_field_name("declarator")
        said = (named.text or b"").decode("utf-8", "replace").rsplit("::", 1)[-1] if named is not None else ""
        if declared is not None and said == name:  # emit, W::emit
            kinds = [c.type for c in declared.named_children if "comment" not in c.type]
            return len(kinds), bool(kinds) and kinds[-1] in _VARIADIC
    return None


@lru_cache(maxsize=2048)
def argument_counts(content: str, language: str, name: str, owner: str = "") -> frozenset[int]:
    """How many arguments each call of ``name`` in ``content`` passes (``emit(s)``, ``this.emit(s, 1)``,
    ``w.emit(..)``, Java's ``new CodeWriter(out)``): one count per distinct call shape. With ``owner``
    (the class of the definition asked about), a call through a value of another known class
    (:func:`_receiver_type`: ``annotationSpec.emit(this, inline)`` with ``AnnotationSpec annotationSpec``)
    is no call of it and left out, unless every call is one (the value may be of a subclass)."""
    calls = _calls(content, language, name)
    found = uses_in(content, language) if owner else None
    kept = [n for n, receiver, line in calls if found is None or _receiver_type(found, receiver, line) in ("", owner)]
    return frozenset(kept or (n for n, _, _ in calls))


def _calls(content: str, language: str, name: str) -> list[tuple[int, str, int]]:
    """``(arguments, receiver, 1-based line)`` of each call of ``name`` in ``content``: the receiver is
    the word the call is made through (``w`` of ``w.emit(..)``, ``this``), ``""`` for a bare call, ``"?"``
    for another expression (``w.indent().emit(..)``)."""
    tree = _tree(content, language)
    out = []
    for node in iter_named(tree.root_node) if tree is not None else ():
        callee = node.child_by_field_name(_CALLED[node.type]) if node.type in _CALLED else None
        held = node.child_by_field_name("object") or (callee.child_by_field_name("argument") if callee else None)
        while callee is not None and callee.named_child_count:  # a.b.emit, A::emit: its last part
            callee = callee.child_by_field_name("name") or callee.child_by_field_name("field") or None
        arguments = node.child_by_field_name("arguments")
        if callee is not None and arguments is not None and (callee.text or b"").decode("utf-8", "replace") == name:
            receiver = "" if held is None else (held.text or b"").decode() if held.type in _WORDS else "?"
            count = sum("comment" not in c.type for c in arguments.named_children)
            out.append((count, receiver, node.start_point[0] + 1))
    return out


def _receiver_type(found: Uses, receiver: str, line: int) -> str:
    """The class a call's ``receiver`` (:func:`_calls`) is known to hold at ``line``: a typed variable's
    type, a capitalised word itself (``TypeName.emit``); ``""`` when unknown (bare, ``this``, ``?``)."""
    if receiver in {"", "?", "this", "super"}:
        return ""
    typed = found.type_of(receiver, line)
    return typed.name if typed is not None else (receiver if receiver[:1].isupper() else "")


def fits(arity: Arity | None, counts: frozenset[int]) -> bool:
    """Whether a definition taking ``arity`` may be called with one of ``counts`` arguments; ``True``
    when either is unknown (a method reference ``this::emit`` passes none it shows)."""
    if arity is None or not counts:
        return True
    n, variadic = arity
    return any(c == n or (variadic and c >= n - 1) for c in counts)
