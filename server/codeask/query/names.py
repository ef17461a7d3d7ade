"""Names too common to link code by: a selection's identifiers (explain), a hovered word, and the
symbol graph's edges (:mod:`codeask.query.graph`) leave them out."""

from __future__ import annotations

import builtins
import keyword

__all__ = ["COMMON_NAMES"]

#: Names too common to say anything about a selection: Python keywords and every builtin (``bytes``,
#: ``open``, ``map``: a reference to one is the builtin, not the workspace's one definition of that
#: name; a newcomer found ``uses bytes from auth.py`` leading to requests' ``compat.py``), and the
#: keywords of the other tree-sitter languages that read like identifiers.
COMMON_NAMES = (
    set(keyword.kwlist)
    | set(keyword.softkwlist)
    | set(dir(builtins))
    | set(
        [
            "self",
            "cls",
            "None",
            "True",
            "False",
            "print",
            "len",
            "str",
            "int",
            "dict",
            "list",
            "set",
            "tuple",
            "range",
            "return",
            "const",
            "let",
            "var",
            "function",
            "this",
            "new",
            "null",
            "undefined",
            "true",
            "false",
            "void",
            "public",
            "private",
            "static",
            "func",
            "err",
            "nil",
            "fn",
            "mut",
            "impl",
            "pub",
            "use",
            "the",
            "and",
            "for",
            "args",
            "kwargs",
            "isinstance",
            "super",
            "object",
            "type",
            "bool",
            "float",
            "sum",
            "min",
            "max",
            "enumerate",
            "zip",
        ]
    )
)
