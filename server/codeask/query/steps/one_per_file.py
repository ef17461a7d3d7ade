"""Response transformer: keep the first (best) document of each file, for at most ``max_files`` files,
folding near-duplicate files into the first of them.

Near-duplicates are the same non-code file in several locales (``messages.de.xlf`` and
``messages.fr.xlf``, ``locales/de/app.json`` and ``locales/fr/app.json``, ``docs/ja/index.md`` and
``docs/index.md``): same structure, different language strings. A file of kind ``data``, ``docs`` or
``config`` (:mod:`codeask.index.kinds`) whose path equals an earlier kept file's once locale parts
are taken out (:func:`near_duplicate_key`) is not kept as a file of its own: its label is added to
that file's ``similar`` list ("and N similar files"), and it does not count towards ``max_files``.
Code files never fold: two ``de/`` and ``fr/`` Go packages are two programs.
"""

from __future__ import annotations

import re
from dataclasses import replace

from codeask.query.pipeline import Document, Query

__all__ = ["OnePerFile", "near_duplicate_key"]

#: Kinds whose files may fold into a near-duplicate.
FOLDED_KINDS = frozenset({"data", "docs", "config"})
#: ISO 639-1 codes of the languages projects translate to most, as path parts or name parts.
_LOCALES = frozenset(
    [
        "af",
        "ar",
        "az",
        "be",
        "bg",
        "bn",
        "bs",
        "ca",
        "cs",
        "cy",
        "da",
        "de",
        "el",
        "en",
        "eo",
        "es",
        "et",
        "eu",
        "fa",
        "fi",
        "fil",
        "fr",
        "ga",
        "gl",
        "gu",
        "he",
        "hi",
        "hr",
        "hu",
        "hy",
        "id",
        "is",
        "it",
        "ja",
        "ka",
        "kk",
        "km",
        "kn",
        "ko",
        "ky",
        "lo",
        "lt",
        "lv",
        "mk",
        "ml",
        "mn",
        "mr",
        "ms",
        "my",
        "nb",
        "ne",
        "nl",
        "nn",
        "no",
        "pa",
        "pl",
        "ps",
        "pt",
        "ro",
        "ru",
        "si",
        "sk",
        "sl",
        "sq",
        "sr",
        "sv",
        "sw",
        "ta",
        "te",
        "th",
        "tl",
        "tr",
        "uk",
        "ur",
        "uz",
        "vi",
        "zh",
    ]
)
_PART = re.compile(r"[^/._-]+(?:[-_][A-Za-z]{2,4})?|[/._-]")
_REGION = re.compile(r"^([a-z]{2,3})(?:[-_]([A-Za-z]{2}|[A-Z][a-z]{3}|\d{3}))?$")


def _is_locale(part: str) -> bool:
    match = _REGION.match(part)
    return match is not None and match.group(1) in _LOCALES


def near_duplicate_key(path: str) -> str:
    """``path`` with each locale part (``de``, ``pt-BR``, ``zh_Hans``, a folder or a dotted name
    part) replaced by ``*`` and a locale-less default (``messages.xlf``) matching too:
    ``src/i18n/messages.de.xlf`` -> ``src/i18n/messages.*.xlf``; a path without locale parts is
    its own key."""
    parts = _PART.findall(path)
    out = ["*" if _is_locale(p) else p for p in parts]
    key = "".join(out)
    return re.sub(r"(?:\.\*|/\*)(?=[./])", "", key) if "*" in key else key


class OnePerFile:
    """Keeps the first document per ``(root, path)`` in rank order and caps the list at ``max_files``
    files; a kept file's added spans right after it (``Document.extra``: the callers a question asks
    for, :mod:`codeask.query.steps.callers`) stay with it.

    Like the seed's ``OnePerFile``: documents keep their order, ``current`` is untouched, so the answer
    still renders each document. ``query.options.max_files`` overrides ``max_files``. Near-duplicate
    files fold into the first kept one (see the module docstring). ``min_files`` is the least a later
    step needs (the reranker's ``rerank.top_k`` candidates), set when the pipeline is built.
    """

    name = "one_per_file"

    def __init__(self, max_files: int = 8, min_files: int = 0):
        self.max_files = max_files
        self.min_files = min_files

    def __call__(self, query: Query) -> Query:
        limit = max(query.options.max_files or self.max_files, self.min_files)
        seen: set[tuple[str, str]] = set()
        kept: list[Document] = []
        folded_into: dict[tuple[str, str], int] = {}
        folded = 0
        for d in query.documents:
            if d.key() in seen:
                if d.extra and kept and kept[-1].key() == d.key():  # a caller's added span (steps/callers.py)
                    kept.append(d)
                continue
            if len(seen) - folded >= limit:
                break
            seen.add(d.key())
            near = (d.root, near_duplicate_key(d.path)) if d.kind in FOLDED_KINDS else None
            if near is not None and near in folded_into:
                i = folded_into[near]
                kept[i] = replace(kept[i], similar=[*kept[i].similar, d.label])
                folded += 1
                continue
            if near is not None:
                folded_into[near] = len(kept)
            kept.append(d)
        query.reordered(self.name, kept, max_files=limit, folded=folded)
        return query
