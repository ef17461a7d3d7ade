"""What a question says about the files it wants: languages ("the C code", "in TypeScript", "the Go
tests") and kinds ("the tests", "the docs", "vendored code"), see :mod:`codeask.index.kinds`, plus
``example`` (the example programs of ``examples/``); and
the symbols whose callers it asks for ("callers of `should_strip_auth`", "who calls Session.send",
"where is parse_url used": :func:`caller_symbols`).

Short language names that are also English words (``Go``, ``C``) count only capitalised and in a
phrase that names code: ``in Go``, ``the C code``, ``Go files``. A question asks for tests when it
speaks of one, singular or plural ("the test function that verifies ...", "the TestRequests class",
"test_to_native_string", "the exception-raising test"), and for examples when it speaks of them
("building the examples", not "for example"): repository-QA how-questions name the test they ask
about this way, and their reference answers cite it: of the 29 SWE-QA-Bench rows of the 129-row
multi-file dev set, all 10 questions that speak of a test need a test file, 4 of the 19 others do;
of the 97 how-questions added later (bench/multifile, not used to write this rule), 24 of 28 and 20
of 69. Pure functions; never raise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Intent", "question_intent", "caller_symbols"]

#: Words after a language name that make it name code ("the C code", "Go tests").
_CODE_NOUNS = (
    r"(?:code|files?|sources?|tests?|implementation|side|parts?|modules?|packages?|functions?|"
    r"bindings?|extensions?|library|structs?|types?|programs?|version|port|backend|frontend|server|client)"
)
#: ``{chunk language names: pattern}``; patterns are case-insensitive unless ``(?-i:...)``.
_LANGUAGES: dict[frozenset[str], str] = {
    frozenset({"python"}): r"\bpython\b",
    frozenset({"typescript", "tsx"}): r"\btypescript\b",
    frozenset({"javascript"}): r"\bjavascript\b|\bnode\.?js\b",
    frozenset({"rust"}): r"\brust\b",
    frozenset({"java"}): r"\bjava\b(?!\s*script)",
    frozenset({"kotlin"}): r"\bkotlin\b",
    frozenset({"ruby"}): r"\bruby\b",
    frozenset({"swift"}): r"\bswift\b",
    frozenset({"php"}): r"\bphp\b",
    frozenset({"c_sharp"}): r"\bc#|\bcsharp\b",
    frozenset({"cpp"}): r"\bc\+\+|\bcpp\b",
    frozenset({"bash"}): r"\b(?:shell|bash) (?:scripts?|code)\b",
    frozenset({"go"}): rf"\bgolang\b|(?-i:\b(?:in|the|our|its|written in) Go\b|\bGo {_CODE_NOUNS}\b)",
    frozenset({"c"}): rf"(?-i:\b(?:in|the|our|its|written in) C\b(?![+#])|\bC {_CODE_NOUNS}\b)",
}
_COMPILED = [(langs, re.compile(pattern, re.IGNORECASE)) for langs, pattern in _LANGUAGES.items()]
#: ``{kind: pattern}`` of phrases that ask for files of that kind.
_KINDS = {
    "test": re.compile(r"(?<![\w-])tests?(?![\w-])|(?-i:\bTest[A-Z]\w*|\btest_\w+|\b\w+_test\b)", re.IGNORECASE),
    "example": re.compile(r"(?<!\bfor )(?<![\w-])examples?(?![\w-])", re.IGNORECASE),
    "docs": re.compile(r"\b(?:the|our|its|in)\s+(?:docs|documentation)\b|\breadme\b", re.IGNORECASE),
    "config": re.compile(
        r"\b(?:config(?:uration)? files?|the config(?:uration)?|CI (?:config|workflow)s?)\b", re.IGNORECASE
    ),
    "vendored": re.compile(r"\bvendored\b|\bvendor (?:folder|directory|code)\b|\bthird[- ]party\b", re.IGNORECASE),
    "generated": re.compile(r"\bgenerated (?:code|files?)\b", re.IGNORECASE),
}


@dataclass(frozen=True)
class Intent:
    """``languages``: chunk language names the question asks for (empty: any); ``kinds``: file kinds
    it asks for (:data:`codeask.index.kinds.KINDS`, and ``example``; empty: none named)."""

    languages: frozenset[str] = frozenset()
    kinds: frozenset[str] = frozenset()


def question_intent(question: str) -> Intent:
    """The languages and kinds ``question`` names (see the module docstring)."""
    languages: set[str] = set()
    for langs, pattern in _COMPILED:
        if pattern.search(question):
            languages |= langs
    kinds = {kind for kind, pattern in _KINDS.items() if pattern.search(question)}
    return Intent(frozenset(languages), frozenset(kinds))


#: A symbol: dotted or ``::`` parts, each may start with ``#`` (a TypeScript private name, ``Ky.#retry``).
_NAME = r"`?(#?[A-Za-z_$][\w$]*(?:(?:\.|::)#?[A-Za-z_$][\w$]*)*)`?(?:\(\))?"
_WHAT = r"(?:the\s+)?(?:(?:function|method|class|macro|constant|type|struct|constructor)\s+)?"
#: Phrases that ask who calls or uses a symbol, the symbol in group 1.
_CALLERS = [
    re.compile(
        rf"\b(?:callers?|call\s+sites?|calls|usages?|uses|users|references?|invocations?)\s+(?:of|to|for)\s+{_WHAT}{_NAME}",
        re.IGNORECASE,
    ),
    re.compile(rf"\b(?:who|what|which\s+\w+)\s+(?:calls|uses|invokes|references)\s+{_WHAT}{_NAME}", re.IGNORECASE),
    re.compile(
        rf"\bwhere\s+(?:is|are|does)\s+{_WHAT}{_NAME}\s+(?:get\s+)?(?:called|used|invoked|referenced)", re.IGNORECASE
    ),
    re.compile(rf"{_NAME}'s\s+(?:callers|call\s+sites|usages|uses|users)\b", re.IGNORECASE),
]
#: Words a caller phrase may catch that name no symbol ("who calls it", "uses of this").
_NOT_SYMBOLS = frozenset({"it", "this", "that", "them", "these", "those", "its", "the", "a", "an", "my", "our"})


def caller_symbols(question: str) -> list[str]:
    """The symbols whose callers, uses or references ``question`` asks for, in order, ``::`` read as
    ``.`` (``callers of Config::load`` -> ``Config.load``); ``[]`` when it asks for none."""
    found: dict[str, None] = {}
    for pattern in _CALLERS:
        for m in pattern.finditer(question):
            name = m.group(1).replace("::", ".")
            if name.lower() not in _NOT_SYMBOLS and len(name) >= 3:
                found[name] = None
    return list(found)
