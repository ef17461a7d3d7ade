"""Where a chunk's code uses a name, read from its syntax tree: the receiver it is reached through,
the line, and whether it is a call, an import or another use.

Resolving the graph's unresolved names (:mod:`codeask.query.resolve`) needs how each use spells the name.
Read from the text, words in comments, docstrings and strings would count as bare calls (requests'
``DEFAULT_PORTS.get(...)`` resolved to every ``get`` of the project at sure 1.0 because a docstring says
"get"); the syntax tree has none, and says what an identifier's receiver is (``sock`` of ``self.sock.send``,
``Config`` of Rust's ``Config::load``, ``pkg`` of Go's ``pkg.Func``). Pure functions of ``(content,
language)``, remembered per chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from codeask.index.chunking.code import iter_named, parser_for
from codeask.query.fragments import CLASS_HEAD, class_body, code_text
from codeask.query.node_types import (
    BINDS,
    CALLS,
    CONSTRUCTS,
    CONTAINER_TYPES,
    DEFINES,
    FIELDS,
    IMPORTS,
    INFERRED,
    LITERALS,
    MEMBER,
    SELF_WORDS,
    TYPE_WRAPS,
    WRAPS,
)

__all__ = ["Use", "Uses", "uses_in"]


@dataclass(frozen=True, slots=True)
class Use:
    """One use of ``name`` in a chunk: ``receiver`` is ``""`` for a bare use, the word it is reached
    through (``sock`` of ``self.sock.send``; ``Session`` of ``Session().send``) or ``"?"`` for another
    expression; ``line`` is 1-based in the chunk; ``kind`` is ``call`` (called, instantiated,
    expanded), ``import`` or ``use`` (a type, a constant read, anything else)."""

    name: str
    receiver: str
    line: int
    kind: str
    plain: bool = False
    """Whether the receiver is a bare identifier that may name a module (``pkg`` of ``pkg.f``,
    ``module::f``; not ``self.pkg.f``, ``g().f``, nor a Rust or C value's field ``v.f``)."""
    declares: str = ""
    """The variable this use of a type name gives its type (``s`` of ``s = Session()``,
    ``next http.Handler``, ``with Session() as s``), ``""`` for none."""
    own: bool = False
    """Whether the receiver is reached through a path from this crate (Rust ``crate::``,
    ``super::``, ``self::``): a module of the project, not another crate."""
    through: str = ""
    """The word the receiver is itself reached through when it is a field (``mx`` of
    ``mx.pool.Put``, ``self`` of ``self.client.send``), ``""`` otherwise."""


@dataclass(frozen=True, slots=True)
class Uses:
    """A chunk's uses (in order), the local names it binds (parameters, assignment targets) and the
    type each typed one is declared or constructed with (:meth:`type_of`)."""

    uses: tuple[Use, ...]
    bound: frozenset[str]
    types: tuple[tuple[str, Use], ...] = ()
    """``(variable, the use of its type's name)`` in order: ``("s", Use("Session", "sessions", ...))``
    for ``with sessions.Session() as s``; the type's qualifier is that use's receiver."""
    attributes: tuple[tuple[str, Use], ...] = ()
    """The entries of :attr:`types` set on Python's ``self``: ``("adapter", Use("HTTPAdapter", ...))``
    for ``self.adapter = HTTPAdapter()`` or ``self.adapter: HTTPAdapter`` (read by other methods' chunks)."""

    literals: tuple[tuple[str, int], ...] = ()
    """``(variable, 1-based line)`` of each binding of a variable (or ``self`` attribute) to a builtin
    literal (``kwargs = {..}``, ``names = [..]``; :func:`_literal`), in order."""

    def builtin(self, variable: str, line: int = 1 << 30) -> bool:
        """Whether ``variable`` holds a builtin literal at 1-based ``line``: its last binding on or
        before that line is one (``jar = {}; jar = CookieJar()`` holds a ``CookieJar``)."""
        bound = max((at for v, at in self.literals if v == variable and at <= line), default=0)
        return bound > 0 and not any(v == variable and bound < t.line <= line for v, t in self.types)

    def type_of(self, variable: str, line: int = 1 << 30) -> Use | None:
        """The use naming ``variable``'s type at 1-based ``line``: its last typed binding on or before
        that line (two functions of a chunk may each have a parameter ``c``), or ``None``."""
        return next((t for v, t in reversed(self.types) if v == variable and t.line <= line), None)

    def of(self, name: str, first: int = 1, last: int = 1 << 30) -> list[Use]:
        """The uses of ``name`` on 1-based lines ``first..last``."""
        return [u for u in self.uses if u.name == name and first <= u.line <= last]

    def names(self, first: int = 1, last: int = 1 << 30) -> set[str]:
        """The names used on lines ``first..last``, imports left out."""
        return {u.name for u in self.uses if first <= u.line <= last and u.kind != "import"}


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node.text else ""


def _word(node: Any) -> str:
    """The word a receiver node stands for: an identifier's text, a member's last part, the
    callee's name of ``Session()`` when it is capitalised (a constructor), the type of a Rust
    associated function's call (``T`` of ``T::new(..)``), ``super`` of Python's ``super()`` (or
    ``super(Cls, self)``: the next class of the method resolution order), else ``"?"``."""
    if node.type in MEMBER and node.named_child_count:
        return _word(node.named_children[-1])
    if node.type in SELF_WORDS or node.type.endswith("identifier") or node.type in {"self", "this"}:
        return _text(node)
    if node.type in CALLS and node.named_child_count:
        first = node.named_children[0]
        callee = _word(first)
        if callee == "super":
            return callee
        path = first.child_by_field_name("path") if first.type == "scoped_identifier" else None
        if not callee[:1].isupper() and path is not None and _word(path)[:1].isupper():
            return _word(path)  # Rust: WorkerState::new(..).scan(..) is a WorkerState's scan
        return callee if callee[:1].isupper() else "?"
    return "?"


def _through(receiver: Any | None) -> str:
    """The word a member ``receiver`` node (``mx.pool``) is reached through (``mx``), ``""`` for
    another node."""
    if receiver is None or receiver.type not in MEMBER or receiver.named_child_count < 2:
        return ""
    first = receiver.named_children[0]
    return _text(first) if first.type in SELF_WORDS or first.type.endswith("identifier") else ""


def _classify(node: Any) -> tuple[str, str, bool, bool, str] | None:
    """``(receiver, kind, plain, own, through)`` of an identifier node (:class:`Use`), or ``None``
    when it names a definition, a keyword argument or a field being declared (no use)."""
    parent = node.parent
    if parent is None:
        return "", "use", False, False, ""
    if parent.type == "token_tree":
        return _macro_use(node)
    if parent.type == "literal_element" and _field_key(parent):
        return None  # Go's Server{Handler: h}: a struct's field, no use of a Handler
    outer, receiver, kind, plain, own, through = node, "", "use", False, False, ""
    if parent.type in MEMBER and parent.named_children[0] != node:
        before = node.prev_named_sibling
        receiver, outer, through = (_word(before) if before is not None else "?"), parent, _through(before)
        plain = before is not None and before.type.endswith("identifier") and parent.type != "field_expression"
        own = (
            before is not None
            and parent.type == "scoped_identifier"
            and _path_root(before) in {"crate", "super", "self"}
        )
    elif parent.type in DEFINES and parent.child_by_field_name(DEFINES[parent.type]) == node:
        return None
    if parent.type == "method_invocation" and parent.child_by_field_name("name") == node:
        kind = "call"
    if parent.type == "method_reference" and outer is parent:
        kind = "call"  # Java's xs.forEach(this::emit) hands the method on to be called: a call of it
    holder = outer.parent
    if holder is not None and holder.type in CALLS and holder.named_children[0] == outer:
        kind = "call"
    up = node.parent
    while up is not None:
        if up.type in IMPORTS:
            return receiver, "import", plain, own, through
        up = up.parent
    return receiver, kind, plain, own, through


def _field_key(element: Any) -> bool:
    """Whether Go's literal ``element`` is the key of a keyed element naming a struct's field: any
    composite literal's but a map's (``map[Kind]string{KIND_A: ..}`` keys by a value)."""
    keyed = element.parent
    if keyed is None or keyed.type != "keyed_element" or keyed.named_children[0] != element:
        return False
    literal = keyed.parent.parent if keyed.parent is not None else None
    typed = literal.child_by_field_name("type") if literal is not None and literal.type == "composite_literal" else None
    return typed is None or typed.type != "map_type"


def _macro_use(node: Any) -> tuple[str, str, bool, bool, str]:
    """``(receiver, kind, plain, own, through)`` of an identifier inside a Rust macro's token tree
    (``assert!(CommandSet::new(..))``), which parses as tokens, not expressions: a call when a
    parenthesised tree follows it, reached through the word before a ``::`` (a path: plain, own
    when it starts at ``crate``, ``super`` or ``self``) or ``.`` token (``self.run(..)``), ``"?"``
    after another token (``f(..).is_ok()``)."""
    after = node.next_sibling
    called = after is not None and after.type == "token_tree" and (after.text or b"")[:1] == b"("
    kind = "call" if called else "use"
    sep = node.prev_sibling
    word = sep.prev_sibling if sep is not None and sep.type in {"::", "."} else None
    if sep is None or word is None:
        return "", kind, False, False, ""
    if not (word.type.endswith("identifier") or word.type in {"self", "crate", "super"}):
        return "?", kind, False, False, ""
    root = word
    while (
        root.prev_sibling is not None and root.prev_sibling.type == "::" and root.prev_sibling.prev_sibling is not None
    ):
        root = root.prev_sibling.prev_sibling
    path = sep.type == "::"
    return _text(word), kind, path, path and root.type in {"crate", "super", "self"}, ""


def _path_root(node: Any) -> str:
    """The first segment's node type of a Rust path (``crate`` of ``crate::error``)."""
    while node.type == "scoped_identifier" and node.named_child_count:
        node = node.named_children[0]
    return str(node.type)


def _binds(node: Any) -> bool:
    """Whether identifier ``node`` binds a local name (a parameter, an assignment's target)."""
    parent = node.parent
    if parent is None or node.type != "identifier" or parent.child_by_field_name("type") == node:
        return False
    while parent.type in {"pointer_declarator", "reference_declarator"} and parent.parent is not None:
        node, parent = parent, parent.parent  # C: struct pool *p
    if parent.type == "declaration" and parent.child_by_field_name("type") != node:  # C: T t;
        return True
    if "parameter" in parent.type or parent.type.endswith("pattern"):  # (**kwargs, a, b = ...)
        # a default value (Python's and TypeScript's ``value``, JavaScript's ``right``) binds nothing: b = LIMIT
        return node not in (parent.child_by_field_name("value"), parent.child_by_field_name("right"))
    if parent.type == "enhanced_for_statement":  # Java: for (AnnotationSpec a : annotations)
        return parent.child_by_field_name("name") == node
    if parent.type == "expression_list" and parent.parent is not None:  # Go: a, err := f()
        parent, node = parent.parent, parent
    return parent.type in BINDS and parent.named_child_count > 0 and parent.named_children[0] == node


def _declared_type(node: Any) -> Any | None:
    """The identifier node naming the type of the variable (or struct field) ``node`` declares:
    its declaration's type (a parameter's, ``var x T``, ``let x: T``, ``T x``, a field's), else the
    type of the value it is bound to when that value is constructed (``x = T()``, ``with T() as x``,
    ``x := &pkg.T{}``, ``new T()``, ``T::new()``); ``None`` when neither says."""
    chain = _holders(node)
    for holder in chain:
        declared = holder.child_by_field_name("type")
        if declared is not None and _text(declared) not in INFERRED:
            return _type_name(declared)
    value = _bound_value(node, chain)
    return _type_name(_constructed(value)) if value is not None else None


def _holders(node: Any) -> list[Any]:
    """The nodes from ``node`` up to the declaration or assignment binding it (through :data:`WRAPS`)."""
    chain: list[Any] = []
    up = node.parent
    while up is not None and len(chain) < 4:
        chain.append(up)
        if up.type not in WRAPS:
            break
        up = up.parent
    return chain


def _bound_value(node: Any, chain: list[Any]) -> Any | None:
    """The value ``node`` is bound to (an assignment's right side, a declarator's value, ``with v as
    node``), read from its ``chain`` (:func:`_holders`), or ``None``."""
    for holder in chain:
        value = holder.child_by_field_name("value") or holder.child_by_field_name("right")
        if holder.type == "as_pattern" and holder.named_child_count:
            value = holder.named_children[0]
        if value is not None and not value.start_byte <= node.start_byte < value.end_byte:
            return value
    return None


def _literal(node: Any) -> bool:
    """Whether the variable (or ``self`` attribute) ``node`` is bound to a builtin literal
    (:data:`~codeask.query.node_types.LITERALS`: ``{..}``, ``[..]``, a string; Go's ``map[K]V{}``)."""
    value = _bound_value(node, _holders(node))
    while value is not None and value.type in {"expression_list", "parenthesized_expression"}:
        value = value.named_children[0] if value.named_child_count else None
    if value is None:
        return False
    typed = value.child_by_field_name("type") if value.type == "composite_literal" else None
    return value.type in LITERALS or (typed is not None and typed.type in CONTAINER_TYPES)


def _constructed(value: Any) -> Any | None:
    """The node naming the type ``value`` constructs (``T()``, ``pkg.T()``, ``T::new()``, ``new T``,
    ``&T{}``, ``T { .. }``), or ``None`` for another value (``f()``, a name)."""
    while value is not None and value.type in TYPE_WRAPS | {"expression_list"}:
        value = value.named_children[0] if value.named_child_count else None
    if value is None or value.type in CONSTRUCTS:
        return value
    if value.type in CALLS and value.named_child_count:
        callee = value.named_children[0]
        if _word(callee)[:1].isupper():  # Session(), sessions.Session()
            return callee
        path = callee.child_by_field_name("path") if callee.type == "scoped_identifier" else None
        if path is not None and _word(path)[:1].isupper():  # Rust: T::new()
            return path
    return None


def _type_name(node: Any | None) -> Any | None:
    """The identifier node of type ``node``'s name (its last part: ``Handler`` of ``http.Handler``),
    through pointers, references, annotations, generics and constructions; ``None`` for another
    shape (a string annotation, a subscript)."""
    for _ in range(8):
        if node is None or (node.type.endswith("identifier") and not node.named_child_count):
            return node
        if node.type in MEMBER:
            node = node.named_children[-1]
        elif node.type in CONSTRUCTS:
            node = next(
                (c for c in map(node.child_by_field_name, ("type", "name", "constructor")) if c is not None), None
            )
        elif node.type in TYPE_WRAPS:
            node = node.named_children[0] if node.named_child_count else None
        elif node.type.endswith("_specifier"):  # C: struct pool *p
            node = node.child_by_field_name("name")
        else:
            return None
    return None


def _typed_at(node: Any) -> Any | None:
    """The node whose declaration may say ``node``'s type: ``node`` itself for a bound local or a field (a
    struct's, TypeScript's ``private a = new A()``), the attribute ``self.x`` of Python's ``self.x = T()``."""
    parent = node.parent
    holder = parent.parent if parent is not None else None
    if parent is not None and parent.type == "attribute" and holder is not None and holder.type == "assignment":
        own = _text(parent.named_children[0]) in {"self", "cls"} and parent.named_children[-1] == node
        return parent if own and holder.child_by_field_name("left") == parent else None
    field = parent is not None and (node.type, parent.type) in FIELDS
    return node if field or _binds(node) else None


@lru_cache(maxsize=2048)
def uses_in(content: str, language: str) -> Uses:
    """The uses of names in ``content`` (a chunk in ``language``): every identifier outside
    comments and strings that is not a definition's name, each type name that declares a
    variable's or field's type marked so (:attr:`Use.declares`); no uses for a language without a
    grammar; a local's member (Go's ``hr.Handler(w)``, a method call) types no variable; a piece of a
    class body is read inside its class (:func:`~codeask.query.fragments.class_body`), a comment the
    chunk starts inside is none (:func:`~codeask.query.fragments.code_text`). Lines are
    :func:`codeask.lines.split_lines` lines, 1-based."""
    parser = parser_for(language)
    if parser is None or not content:
        return Uses((), frozenset())
    body = class_body(content, language) is not None  # parsed inside a class: its methods' names are none
    text = (CLASS_HEAD if body else "") + code_text(content, language) + ("\n}" if body else "")
    tree = parser.parse(text.encode("utf-8", "surrogatepass"))
    nodes = [
        n
        for n in iter_named(tree.root_node)
        if (n.type.endswith("identifier") or n.type == "constant") and not n.named_child_count
    ]
    bound = {_text(n) for n in nodes if _binds(n)}
    typed: list[tuple[str, int, bool]] = []  # (variable, the start byte of its type's name, on self)
    literals: list[tuple[str, int]] = []
    for node in nodes:
        holder = _typed_at(node)
        declared = _declared_type(holder) if holder is not None else None
        if declared is not None:
            typed.append((_text(node), declared.start_byte, holder is not node))
        elif holder is not None and _literal(holder):
            literals.append((_text(node), node.start_point.row + 1 - body))
    declares = {at: variable for variable, at, _ in reversed(typed)}
    out, at_byte = [], {}
    for node in nodes:
        found = _classify(node)
        if found is not None:
            receiver, kind, plain, own, through = found
            declared = declares.get(node.start_byte, "")
            line = node.start_point.row + 1 - body
            use = Use(_text(node), receiver, line, kind, plain, declared, own, through)
            out.append(use)
            at_byte[node.start_byte] = use
    kept = [(v, at_byte[at], on) for v, at, on in typed if at in at_byte and at_byte[at].receiver not in bound]
    types, attributes = tuple((v, t) for v, t, _ in kept), tuple((v, t) for v, t, on in kept if on)
    return Uses(tuple(out), frozenset(bound), types, attributes, tuple(literals))
