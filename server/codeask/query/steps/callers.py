"""The callers a question asks for ("callers of `should_strip_auth`", "who calls Session.send"), as
documents of the ``neighbours`` step (:mod:`codeask.query.steps.neighbours`), before ``one_per_file``.

Retrieval ranks chunks by their words; a question about callers wants the definitions that call
a symbol, which the symbol graph knows (:func:`codeask.query.related_code.caller_sites`: each
calling definition, tests included, narrowed to its own lines, surest first). Of the files the
answer keeps, those holding callers come first and get their callers cited (a retrieved span
holding callers is replaced by them, the others follow as added spans, ``Document.extra``); a
caller file outside them enters after the best file, its surest caller first
(:func:`with_callers`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from codeask.query.graph import edge_kind, via_of
from codeask.query.intent import caller_symbols
from codeask.query.links import Links
from codeask.query.pipeline import Document
from codeask.query.related_code import caller_sites, definitions
from codeask.query.sites import Site, narrowed
from codeask.query.steps.retrieve import SearchTarget, path_filter

if TYPE_CHECKING:
    from codeask.index.rows import Hit
    from codeask.index.store import Store

__all__ = ["MAX_CALLERS", "caller_documents", "callers_ahead", "callers_first", "with_callers", "with_sites"]

#: Calling definitions cited per symbol asked about, surest first: a page of a "who calls" answer.
MAX_CALLERS = 20


def caller_documents(target: SearchTarget, symbols: list[str], score: float) -> list[tuple[Document, float]]:
    """``(document, sure)`` of each definition of ``target``'s index that calls one of ``symbols``
    (at most :data:`MAX_CALLERS` per symbol, surest first), scored ``score`` times how sure the
    link is, ``via`` naming the definition the call links to most surely, the first of them on a
    tie, as ``codeask related`` pairs them (``caller of should_strip_auth in
    src/requests/sessions.py:154``) and ``via_path`` its file."""
    store = target.store()
    out = []
    seen: set[tuple[str, int]] = set()
    for symbol in symbols:
        name = symbol.rsplit(".", 1)[-1]
        for site, called in _linked_sites(store, symbol)[:MAX_CALLERS]:
            if (site.hit.path, site.hit.start_line) in seen:
                continue
            seen.add((site.hit.path, site.hit.start_line))
            doc = Document.from_hit(site.hit, target.root, score * site.sure, target.label)
            where = f"{target.label + '/' if target.label else ''}{called.path}:{called.start_line}"
            via = via_of(edge_kind(name, site.hit.content, called), name, where, up=True)
            out.append((replace(doc, via=via, via_path=called.path, via_sure=site.sure), site.sure))
    return out


def _linked_sites(store: Store, symbol: str) -> list[tuple[Site, Hit]]:
    """The caller sites of ``symbol``'s definitions in ``store`` (:func:`caller_sites`), each with the
    definition (narrowed) it links to most surely, the first on a tie; surest first, then by path and line."""
    name = symbol.rsplit(".", 1)[-1]
    found = definitions(store, symbol)
    defs = [narrowed(row.hit, inner) for row, inner in found]
    chunks, links = [row.hit for row, _ in found], Links(store)
    best: dict[tuple[str, int], tuple[Site, Hit]] = {}
    for d in defs:
        for site in caller_sites(store, name, [d], chunks, links):
            key = (site.hit.path, site.hit.start_line)
            if key not in best or site.sure > best[key][0].sure:
                best[key] = (site, d)
    return sorted(best.values(), key=lambda p: (-p[0].sure, p[0].hit.path, p[0].hit.start_line))


def with_callers(
    targets: list[SearchTarget], question: str, path_glob: str | None, docs: list[Document], limit: int
) -> tuple[list[Document], int]:
    """``docs`` (ranked, every file's documents together) for a ``question`` that asks for the
    callers of symbols (:func:`~codeask.query.intent.caller_symbols`; else ``docs`` unchanged):
    of the first ``limit`` files, those holding callers first, cited at them (:func:`callers_first`);
    then, after at least the best file (at file ``max(1, limit - n)``), the ``n`` caller files
    outside them, surest first, one group each (its surest caller, the others as added spans);
    then the rest. Returns the documents and ``n``. Each caller is scored the lowest score of the
    first ``limit`` files times how sure its link is; only paths ``path_glob`` accepts."""
    symbols = caller_symbols(question)
    if not symbols:
        return docs, 0
    keys = list(dict.fromkeys(d.key() for d in docs))
    head = set(keys[:limit])
    floor = min((d.score for d in docs if d.key() in head), default=1.0)
    only = path_filter(path_glob)
    files: dict[tuple[str, str], list[tuple[Document, float]]] = {}
    for target in targets:
        for doc, sure in caller_documents(target, symbols, floor):
            if only is None or only(doc.path):
                files.setdefault(doc.key(), []).append((doc, sure))
    holding = set(files)
    held = callers_first([d for d in docs if d.key() in head], files)
    groups = sorted(files.values(), key=lambda s: -s[0][1])
    new = [replace(doc, extra=i > 0) for s in groups for i, (doc, _) in enumerate(s)]
    ahead = set(list(dict.fromkeys(d.key() for d in held))[: max(1, limit - len(groups))])
    rest = [d for d in docs if d.key() not in head and d.key() not in files]
    ordered = [d for d in held if d.key() in ahead] + new + [d for d in held if d.key() not in ahead] + rest
    return callers_ahead(ordered, holding), len(groups)


def callers_first(docs: list[Document], files: dict[tuple[str, str], list[tuple[Document, float]]]) -> list[Document]:
    """``docs`` (retrieved, best first) with each file's caller sites cited (:func:`with_sites`;
    ``files``: ``{document key: [(caller document, sure)]}``, the files used are popped), the files
    holding callers first, in retrieved order: the answer to a caller question is its callers, and
    cutting the retrieved files to ``max_files`` drops the last ones (a newcomer's "callers of
    should_strip_auth" lost the five tests that ``codeask related`` lists)."""
    held: list[Document] = []
    rest: list[Document] = []
    for d in docs:
        sites = files.pop(d.key(), None)
        if sites is None:
            rest.append(d)
        else:
            held += with_sites(d, [doc for doc, _ in sites])
    return held + rest


def callers_ahead(docs: list[Document], callers: set[tuple[str, str]]) -> list[Document]:
    """``docs`` (a caller question's documents, a file's spans together) with the files in ``callers``
    (their :meth:`~codeask.query.pipeline.Document.key`: the files holding callers of the symbol
    asked about, retrieved or added) first, each part in its order. :func:`with_callers` keeps the
    best retrieved files before the caller files it adds, so without this, with ``--max-files 3``,
    requests' "who calls should_strip_auth" listed ``auth.py`` (no caller, retrieved for its words)
    before ``tests/test_requests.py`` (five callers)."""
    return [d for d in docs if d.key() in callers] + [d for d in docs if d.key() not in callers]


def with_sites(doc: Document, sites: list[Document]) -> list[Document]:
    """``doc`` (a retrieved file's span) with that file's caller ``sites``: the sites it holds take
    its place (the first with its rank and score), the others follow as added spans (``extra``).
    When it holds none, the file's surest caller takes its rank and ``doc`` follows the callers as
    an added span: it was retrieved for the symbol's name, which a comment or a string may hold
    (chi's ``Mux.ServeHTTP`` mentions ``RouteContext`` in a comment; ``Mux.Mount`` calls it). All
    keep an empty ``via``: the file was retrieved, and the prompt keeps its spans together."""
    inside = [s for s in sites if doc.start_line <= s.start_line and s.end_line <= doc.end_line]
    rest = [replace(s, extra=True, via="", via_path="", via_sure=0.0) for s in sites if s not in inside]
    if not inside and rest:
        return [replace(rest[0], score=doc.score, extra=doc.extra), *rest[1:], replace(doc, extra=True)]
    if not inside:
        return [doc]
    lead = replace(inside[0], score=doc.score, via="", via_path="", via_sure=0.0, extra=doc.extra)
    return [
        lead,
        *(replace(s, score=doc.score, extra=True, via="", via_path="", via_sure=0.0) for s in inside[1:]),
        *rest,
    ]
