"""Response transformer: widen each kept file with its other top-scoring spans.

``one_per_file`` keeps one document per file, its best span; the code that answers a question is
often split over two or three definitions of that file (``Session.request`` and the
``Session.send`` it calls). This step, after ``one_per_file`` (and rerank, if on), adds to each
kept document the file's next-best chunks among those retrieved (``query.retrieved_documents``),
up to :data:`SPANS_PER_FILE` spans per file, never a boilerplate chunk
(:mod:`codeask.query.boilerplate`). Built with the roots searched (``targets``), it adds first the
definition of that file the best span calls holding most of the question's words
(:mod:`codeask.query.steps.callee_spans`: ``Session.get_adapter`` after ``Session.send`` for "how
does Session.send pick an adapter?"). Spans that touch or overlap are merged into one span.

The output keeps one document per span, grouped by file in the kept files' order: the file's
best span first (still the first document of its path, as ``one_per_file`` left it), then the
spans added for it (``Document.extra``), best first. Each span keeps its own line range and link,
so the prompt numbers each one (``[n]``), ``Answer.sources`` lists them (under their file's
``spans`` without an LLM, one source per document sent with one) and the token budget (:func:`codeask.query.budget.fit_documents`) drops added spans
before any file's best span.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from codeask.lines import split_lines
from codeask.query.boilerplate import is_boilerplate
from codeask.query.pipeline import Document, Query, per_file
from codeask.query.question_words import question_terms, relabelled
from codeask.query.steps.callee_spans import callee_spans
from codeask.query.steps.retrieve import SearchTarget

__all__ = ["SPANS_PER_FILE", "Widen", "merge_spans", "overlaps"]

#: Spans (chunks) each kept file may bring to the answer: its best one plus the file's next
#: top-scoring retrieved chunks, merged when adjacent; 1 leaves widening out of the chain. 3: the
#: code that answers a question is often split over two or three definitions of one file (see the
#: module docstring), and the token budget drops added spans first. A pipeline may set it per step
#: (``pipeline.options = {widen = {spans_per_file = 1}}``). Was ``retrieval.spans_per_file``.
SPANS_PER_FILE = 3


def overlaps(a: Document, b: Document) -> bool:
    """Whether the line ranges of ``a`` and ``b`` share a line (their files are not compared)."""
    return a.start_line <= b.end_line and b.start_line <= a.end_line


def merge_spans(first: Document, second: Document) -> Document:
    """``first`` and ``second`` (same file, overlapping or adjacent lines) as one document covering
    both: lines ``min(start)..max(end)``, content stitched without repeating shared lines, the
    higher score, the id of the non-added span (else of ``first``), and ``extra`` only if both were
    added spans. Its symbol names the definitions it holds as a reader meets them: the non-added
    span's (else ``first``'s), with the other span's first definition before or after it, in the
    file's order (``BaseAdapter, HTTPAdapter``: the span opens on ``BaseAdapter``; ``Session.send,
    Session.merge``: it ends in ``Session.merge``; see :func:`_joined`), as
    :func:`~codeask.query.question_words.matched_symbol` names a chunk."""
    lo, hi = (first, second) if first.start_line <= second.start_line else (second, first)
    lines = _span_lines(lo)
    tail = _span_lines(hi)[max(0, lo.end_line - hi.start_line + 1) :]
    end = max(lo.end_line, hi.end_line)
    # the lead's (non-added) span gives the name and id
    named, other = (second, first) if first.extra and not second.extra else (first, second)
    symbol = _joined(named.symbol, other.symbol, before=other.start_line < named.start_line)
    return replace(
        lo,
        symbol=symbol,
        id=named.id,
        content="\n".join(lines + tail) if hi.end_line > lo.end_line else lo.content,
        end_line=end,
        score=max(first.score, second.score),
        extra=first.extra and second.extra,
    )


def _span_lines(document: Document) -> list[str]:
    """The lines of ``document``, one per line of its range (:func:`codeask.lines.split_lines`): a chunk
    ending in blank lines holds them as its text's final line end (flask's ``config.py`` 126-186 ends
    ``return True\\n``), which a merge that dropped them shifted every later line up by one."""
    lines = split_lines(document.content)
    return lines + [""] * (document.end_line - document.start_line + 1 - len(lines))


def _joined(named: str, neighbour: str, before: bool) -> str:
    """``named`` (a span's symbol; ``"A, B"`` when it holds several definitions) with the first
    definition of a span merged into it (``neighbour``'s) put ``before`` or after its names. Left out
    when empty, already named, or the class a named definition belongs to (``BaseAdapter`` beside
    ``BaseAdapter.close``: the span opens on its own class's head)."""
    names = [n for n in named.split(", ") if n]
    first = neighbour.split(", ", 1)[0]
    if not first or any(n == first or n.startswith(f"{first}.") for n in names):
        return named
    return ", ".join([first, *names] if before else [*names, first])


class Widen:
    """Adds each kept file's other top-scoring retrieved spans, up to ``spans_per_file`` per file,
    the best span's own callee first when ``targets`` (the roots searched) are given.

    ``query.options.spans_per_file`` overrides ``spans_per_file``; 1 leaves the documents as
    they are. A summary-replaced ``current`` is left alone (the step only touches documents).
    """

    name = "widen"

    def __init__(self, spans_per_file: int = SPANS_PER_FILE, targets: Callable[[], list[SearchTarget]] | None = None):
        self.spans_per_file = spans_per_file
        self.targets = targets

    def __call__(self, query: Query) -> Query:
        limit = query.options.spans_per_file or self.spans_per_file
        if limit <= 1:
            query.reordered(self.name, query.documents, spans_per_file=limit, added=0)
            return query
        pool: dict[tuple[str, str], list[Document]] = {}
        for d in query.retrieved_documents:
            pool.setdefault(d.key(), []).append(d)
        terms = question_terms(query.original)
        groups = per_file(query.documents)
        leads = [g[0] for g in groups]
        callees = callee_spans(self.targets, leads, terms) if self.targets is not None else {}
        out: list[Document] = []
        added = 0
        for group in groups:  # a file's spans an earlier step cited stay its own
            spans = list(group)
            callee = callees.get(group[0].key())
            called = [callee] if callee is not None else []
            for candidate in called + pool.get(group[0].key(), []):  # the callee, then retrieval order
                if len(spans) >= max(limit, len(group)):
                    break
                if any(overlaps(candidate, s) for s in spans):
                    continue
                if is_boilerplate(candidate.content, candidate.language, candidate.symbol):
                    continue
                spans.append(candidate if candidate is callee else replace(relabelled(candidate, terms), extra=True))
            added += len(spans) - len(group)
            out.extend(_merged(spans))
        query.reordered(self.name, out, spans_per_file=limit, added=added)
        return query


def _merged(spans: list[Document]) -> list[Document]:
    """``spans`` (lead first) with touching or overlapping ones merged; the lead's group stays
    first, the others keep their order."""
    groups = list(spans)
    changed = True
    while changed:
        changed = False
        for i in range(len(groups)):
            for j in range(i + 1, len(groups)):
                a, b = groups[i], groups[j]
                if a.start_line <= b.end_line + 1 and b.start_line <= a.end_line + 1:
                    groups[i] = merge_spans(a, b)
                    del groups[j]
                    changed = True
                    break
            if changed:
                break
    return groups
