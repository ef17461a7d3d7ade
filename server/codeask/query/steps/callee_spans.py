"""The definition a file's best span calls in its own file, as a span of that file (the ``widen`` step).

The code that answers a question is often one call away from the best span, in the same file:
``Session.send`` picks its adapter in ``Session.get_adapter`` (``self.get_adapter(url=...)``), fd's
``spawn_receiver`` buffers results in ``ReceiverBuffer``. Retrieval ranks chunks by their words, so
such a callee is often not among the retrieved chunks of the file, and ``widen`` could not add it.
Here each kept file's best span is looked up in the symbol graph (:func:`~codeask.query.graph.one_hop`
with ``same_file``): of the definitions of its own file it calls surely or typed (never by the name
only), the one holding most of the question's words (at least one; the file's path is no word of
it) is the file's callee span, cut to that definition (:meth:`~codeask.query.graph.Edge.definition`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from codeask.index.rows import Hit
from codeask.query.graph import Edge, one_hop
from codeask.query.pipeline import Document
from codeask.query.question_words import term_overlap
from codeask.query.resolve import NAME_ONLY
from codeask.query.steps.retrieve import SearchTarget

__all__ = ["callee_spans"]


def callee_spans(
    targets: Callable[[], list[SearchTarget]], leads: list[Document], terms: set[str]
) -> dict[tuple[str, str], Document]:
    """``{(root, path): span}``: for each of ``leads`` (each kept file's best span) the definition of
    its own file it calls that holds most of ``terms`` (:func:`~codeask.query.question_words.question_terms`),
    as an added span (``extra``) scored as the lead; files with no such callee are left out (module
    docstring). One graph lookup per root."""
    out: dict[tuple[str, str], Document] = {}
    for target in targets():
        mine = {d.id: d for d in leads if d.root == target.root and d.id}
        if not mine:
            continue
        store = target.store()
        rows = list(store.linked(list(mine)).values())
        edges, _ = one_hop(store, rows, {}, same_file=True)
        by_path = {d.path: d for d in mine.values()}
        best: dict[str, tuple[float, Edge, Hit]] = {}
        for e in edges:
            lead = by_path.get(e.source_path)
            if lead is None or not _own_callee(e, lead):
                continue
            definition = e.definition()
            if not _outside(definition, lead):
                continue
            words = term_overlap(terms, replace(definition, path=""))
            if words > 0 and words > best.get(lead.path, (0.0, e, definition))[0]:
                best[lead.path] = (words, e, definition)
        for path, (_, e, definition) in best.items():
            lead = by_path[path]
            span = Document.from_hit(definition, target.root, lead.score, target.label)
            out[lead.key()] = replace(span, symbol=e.symbol or span.symbol, extra=True)
    return out


def _own_callee(edge: Edge, lead: Document) -> bool:
    """Whether ``edge`` leads from ``lead`` to a definition of its own file that ``lead`` calls surely
    or typed (a callee, not a caller: the target defines the name)."""
    return edge.target.path == lead.path and edge.sure > NAME_ONLY and edge.symbol.rsplit(".", 1)[-1] == edge.name


def _outside(definition: Hit, lead: Document) -> bool:
    """Whether ``definition`` lies outside ``lead``'s lines."""
    return definition.end_line < lead.start_line or definition.start_line > lead.end_line
