"""What ``ask`` returns: the :class:`Answer` with its :class:`Source` list, the record of text kept
from the LLM (:class:`Withheld`), and the one builder of the ``[path:start-end](uri)`` links every
answer, explanation and source list shows (:func:`source_link`).

The sources of an :class:`Answer` come from the documents, never from the model's text.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from codeask.lines import split_lines
from codeask.query.anchors import anchor
from codeask.query.citations import check_citations
from codeask.query.notes import answer_notes
from codeask.query.opening import open_line
from codeask.query.pipeline import Document, Query, per_file
from codeask.query.question_words import question_terms
from codeask.sureness import via_label
from codeask.uris import markdown_link

__all__ = ["Answer", "Source", "Withheld", "markdown", "sent_and_left_out", "source_link", "source_list"]

#: The heading of what retrieval found but the prompt left out (``Answer.also_relevant``).
ALSO_RELEVANT = "Also relevant, not sent to the model:"


def source_link(label: str, start_line: int, end_line: int, uri: str, title: str = "") -> str:
    """``[label:start-end](uri)``: a cited location as a markdown link (1-based inclusive lines; the
    label escaped by :func:`~codeask.uris.markdown_link`, ``uri`` a ``file:///abs/path#Lstart-Lend``,
    ``title`` the link's title: :func:`anchor_title` in ``Sources:``)."""
    return markdown_link(f"{label}:{start_line}-{end_line}", uri, title)


def source_list(sources: Sequence[Source]) -> str:
    """``1. [label:start-end](uri)`` lines, one per source (file), in order (``""`` for none); a
    file's further spans follow its link as ``[start-end](...#Lstart-Lend)``, and its folded
    near-duplicates as `` and N similar files``, a file a graph link brought in (``neighbours``) with `` (added: VIA)``."""

    return "\n".join(f"{i}. {line}" for i, line in enumerate(source_lines(sources), 1))


def source_lines(sources: Sequence[Source]) -> list[str]:
    """One ``[label:start-end](uri)`` line per source, its further spans after it as
    ``[start-end](...#Lstart-Lend)``."""

    def line(s: Source) -> str:
        spans = s.spans or [{}]
        first = source_link(s.label or s.path, s.start_line, s.end_line, s.uri, anchor_title(spans[0]))
        more = [markdown_link(f"{x['start_line']}-{x['end_line']}", x["uri"], anchor_title(x)) for x in spans[1:]]
        similar = f" and {len(s.similar)} similar file{'s' if len(s.similar) > 1 else ''}" if s.similar else ""
        via = f" (added: {s.via}{via_label(s.via_sure)})" if s.via else ""
        return ", ".join([first, *more]) + similar + via

    return [line(s) for s in sources]


def anchor_title(span: dict[str, Any]) -> str:
    """The link title carrying a span's anchor, ``codeask:<hash> <symbol>`` (what ``codeask
    cite-check`` checks, :mod:`codeask.query.citecheck`); ``""`` without an anchor."""
    found = span.get("anchor")
    if not found:
        return ""
    symbol = "".join(found["symbol"].split())
    return f"codeask:{found['hash']}" + (f" {symbol}" if symbol else "")


@dataclass(frozen=True)
class Withheld:
    """Repository text kept from the LLM: ``path`` (relative to ``root``) and 1-based ``start_line``
    / ``end_line`` of the document, ``action`` ``"withheld"`` (not sent at all) or ``"redacted"``
    (the listed ``lines`` replaced), and ``reason``: ``"secret file"`` (``index.secret_patterns``),
    ``"outside the workspace"``, or ``"credentials: <kinds>"`` (:mod:`codeask.query.secrets`)."""

    path: str
    root: str
    start_line: int
    end_line: int
    action: str
    reason: str
    lines: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The fields as a plain dict (``lines`` as a list)."""
        out = asdict(self)
        out["lines"] = list(self.lines)
        return out


@dataclass
class Source:
    """One cited location: ``path`` relative to ``root``, 1-based inclusive lines, ``uri``
    ``file:///abs/path#Lstart-Lend``, fused (or rerank) ``score``, the chunk ``content``, and the
    ``label`` shown for it (``path``, prefixed by the root's name when the workspace has several
    roots: ``work/app/src/app.py`` and ``forks/app/src/app.py`` when two roots are named ``app``)."""

    path: str
    uri: str
    root: str
    start_line: int
    end_line: int
    symbol: str
    score: float
    content: str
    label: str = ""
    spans: list[dict[str, Any]] = field(default_factory=list)
    """Every span of this file the answer drew on, the best (this source's own lines) first, then
    those the ``widen`` step added: ``{"start_line", "end_line", "open_line", "uri", "symbol",
    "content", "anchor"}`` (1-based inclusive lines, each with its own link; ``open_line`` as the
    source's; ``anchor`` is ``{"symbol", "hash"}`` (:func:`codeask.query.anchors.anchor`), what
    re-finds the span after an edit)."""
    via: str = ""
    """Why the ``neighbours`` step brought this file in, along which edge of the symbol graph
    (``"calls send from src/requests/sessions.py:560"``); ``""`` for a file retrieval found."""
    kind: str = "source"
    """The file's kind: ``source``, ``test``, ``docs``, ``config``, ``data``, ``generated`` or
    ``vendored`` (:mod:`codeask.index.kinds`)."""
    similar: list[str] = field(default_factory=list)
    """Near-duplicate files folded into this source (same file in other locales): their labels."""
    via_sure: float = 0.0
    """How sure the ``via`` edge is (:func:`codeask.query.resolve.sureness`): 1.0 sure (the name's
    class, module or own file), 0.7 typed (a variable of that class), 0.5 an import alias, 0.3 by the
    name alone (``r.request.copy()``: the receiver's type is unknown); 0.0 without ``via``."""
    open_line: int = 0
    """The 1-based line a reader starts on, inside the span: its labelled definition that matches the
    question best (:func:`codeask.query.opening.open_line`); where the editors open the citation."""

    @classmethod
    def from_document(cls, d: Document, more: Sequence[Document] = (), terms: Set[str] = frozenset()) -> Source:
        """The source of ``d`` (its file's best span), with ``more`` spans of the same file after it
        in ``spans``, each opening where a question of ``terms`` reads it (``open_line``); the score
        rounded to 6 decimals."""
        spans: list[dict[str, Any]] = [
            {"start_line": x.start_line, "end_line": x.end_line, "open_line": open_line(x, terms), "uri": x.uri,
             "symbol": x.symbol, "content": x.content, "anchor": anchor(x.content, x.symbol)}
            for x in [d, *more]
        ]  # fmt: skip
        return cls(
            d.path, d.uri, d.root, d.start_line, d.end_line, d.symbol, round(float(d.score), 6), d.content, d.label,
            spans, d.via, d.kind, list(d.similar), d.via_sure, spans[0]["open_line"],
        )  # fmt: skip


def _key(d: Document) -> tuple[str, str, int]:
    return (d.root, d.path, d.start_line)


def _origin(d: Document, documents: list[Document]) -> Document:
    """The retrieved document of ``documents`` that ``d`` (a document as sent, perhaps cut to some of
    its lines: :mod:`codeask.query.budget`) was cut from: same root and path, its lines inside;
    ``d`` itself when none is."""
    for o in documents:
        if (o.root, o.path) == (d.root, d.path) and o.start_line <= d.start_line and d.end_line <= o.end_line:
            return o
    return d


def _cut(query: Query) -> list[dict[str, Any]]:
    """:attr:`Answer.cut_documents` of ``query``: ``indexed_start_line`` / ``indexed_end_line`` are the
    lines retrieved, ``start_line`` / ``end_line`` those sent."""
    out = []
    for n, d in enumerate(query.prompt_documents or [], 1):
        o = _origin(d, query.documents)
        if (o.start_line, o.end_line) != (d.start_line, d.end_line):
            out.append(
                {"n": n, "path": d.path, "start_line": d.start_line, "end_line": d.end_line,
                 "indexed_start_line": o.start_line, "indexed_end_line": o.end_line}
            )  # fmt: skip
    return out


def sent_and_left_out(query: Query) -> tuple[list[Source], list[Source]]:
    """``(sources, also_relevant)`` of ``query``.

    With an LLM answer (``query.prompt_documents`` set): one source per document the prompt held, in
    its numbered order (source ``n`` is what the answer cites as ``[n]``), lines as sent (a document
    the budget cut to some of its lines keeps that range), text as indexed (before any redaction); then the
    documents retrieval found but the prompt left out, one source per file with its spans. Without
    one: one source per file of the documents (:func:`~codeask.query.pipeline.per_file`) and ``[]``.
    """
    terms = question_terms(query.asked)
    if query.prompt_documents is None:
        return [Source.from_document(spans[0], spans[1:], terms) for spans in per_file(query.documents)], []
    sent, sent_keys = [], set()
    for d in query.prompt_documents:
        o = _origin(d, query.documents)
        sent_keys.add(_key(o))
        kept = split_lines(o.content)[d.start_line - o.start_line : d.end_line - o.start_line + 1]
        sent.append(
            Source.from_document(
                replace(o, start_line=d.start_line, end_line=d.end_line, content="\n".join(kept)), (), terms
            )
        )
    left = [d for d in query.documents if _key(d) not in sent_keys]
    return sent, [Source.from_document(spans[0], spans[1:], terms) for spans in per_file(left)]


@dataclass
class Answer:
    """What ``ask`` returns; ``to_json()`` is the ``codeask ask --json`` object.

    ``sources`` are taken from the documents, never parsed from the model's text: with an LLM
    answer, exactly the documents its prompt held, numbered as it cites them; without one, the
    distinct files of the documents, most relevant first (each file's best chunk)
    (:func:`sent_and_left_out`).
    """

    question: str
    answer: str
    markdown: str
    subquestions: list[str] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    also_relevant: list[Source] = field(default_factory=list)
    """What retrieval found but the prompt left out (the token budget, secrets withheld), one item
    per file as without an LLM; always empty without an LLM answer."""
    llm: str | None = None
    error: str | None = None
    finish_reason: str | None = None
    """How the answer's LLM call ended: ``stop``, ``length`` (``max_tokens``), ``incomplete`` (the
    stream ended without its final event), ``error`` (it broke); ``None`` without an LLM answer."""
    truncated: bool = False
    """Whether the answer text is cut off (any finish reason but ``stop``)."""
    cut_reason: str | None = None
    """Why it is cut off, in words (``None`` when complete)."""
    citations: float | None = None
    """Share in ``[0, 1]`` of the answer's paragraphs citing at least one existing document ``[n]``;
    ``None`` without an LLM answer."""
    invalid_citations: list[int] = field(default_factory=list)
    """``[n]`` the answer cited that name no document (removed from the markdown)."""
    citations_attributed: float | None = None
    """Share in ``[0, 1]`` of paragraphs without a valid model-written ``[n]`` to which codeask
    attributed a citation from the names they use (:func:`codeask.query.citations.attribute`);
    ``None`` without an LLM answer."""
    citations_any: float | None = None
    """Share in ``[0, 1]`` of paragraphs with at least one valid citation, model-written or attributed
    (``citations + citations_attributed``); ``None`` without an LLM answer."""
    citations_mismatched: float | None = None
    """Share in ``[0, 1]`` of paragraphs whose valid model-written ``[n]`` cite none of the documents
    the names they use point to (their attributed citations are listed too); ``None`` without an
    LLM answer."""
    attributed_citations: list[dict[str, Any]] = field(default_factory=list)
    """The attributed citations: ``{"paragraph", "n", "name", "how"}`` (0-based paragraph, the
    document number, the name that points to it, ``"defined"``/``"mentioned"``/``"path"``); shown in
    the markdown as ``*(named here: [[n]](uri))*`` after the paragraph."""
    repointed_citations: list[dict[str, Any]] = field(default_factory=list)
    """Model citations moved to the one document defining the code their paragraph names:
    ``{"paragraph", "from", "to", "name"}`` (:func:`codeask.query.citations.check_citations`)."""
    unverified_citations: list[dict[str, Any]] = field(default_factory=list)
    """Model citations whose paragraph names code the cited document does not hold (and none
    re-pointed): ``{"paragraph", "n"}``; shown as ``[[n]](uri) *(unverified)*``."""
    documents: list[dict[str, Any]] = field(default_factory=list)
    """The documents the LLM saw, numbered as the answer cites them:
    ``{"n", "path", "start_line", "end_line", "uri"}`` (empty without an LLM answer)."""
    withheld: list[Withheld] = field(default_factory=list)
    """Repository text kept from the LLM for this answer (secret files, credential lines)."""
    warnings: list[str] = field(default_factory=list)
    """Settings warnings: workspace values that were ignored, templates the sandbox refused."""
    index: dict[str, Any] | None = None
    """``{"state": "keyword-only" | "building" | "ready", "files_indexed", "vectors_pending"}``: what
    the answer stands on (:class:`codeask.index.records.IndexState`)."""
    stale_sources: list[dict[str, Any]] = field(default_factory=list)
    """Retrieved files changed on disk after they were indexed (the answer read their indexed text):
    ``{"path", "root", "reason": "changed" | "deleted"}`` (:mod:`codeask.query.freshness`)."""
    not_reindexed: str | None = None
    """With ``stale_sources``: why they could not be re-indexed first (``"the index is read-only"``,
    ``"another process holds the index lock"``); left out of the JSON when ``None``."""
    cut_documents: list[dict[str, Any]] = field(default_factory=list)
    """Documents the token budget cut to some of their lines before sending: ``{"n", "path",
    "start_line", "end_line", "indexed_start_line", "indexed_end_line"}`` (``start_line`` /
    ``end_line`` the lines sent, the ``indexed_`` ones the lines retrieved)."""
    question_digest: dict[str, int] | None = None
    """``{"chars_in", "chars_sent"}`` when the question was cut to a digest for the search and the
    model (:mod:`codeask.query.digest`); ``None`` when all of it was used."""
    second_part: dict[str, Any] | None = None
    """A local model's second part (:mod:`codeask.query.more`): ``{"sent": ["path:first-last", ...],
    "lines_kept"}`` (0: it kept no line); left out of the JSON when none ran."""

    def to_json(self) -> dict[str, Any]:
        """The fields as a plain dict (sources as dicts); ``error``, ``cut_reason``, ``citations``,
        ``citations_attributed``, ``citations_any``, ``citations_mismatched``, ``question_digest`` and
        ``second_part`` are left out when ``None``; ``finish_reason`` and ``truncated`` are always there."""
        out = asdict(self)
        out["withheld"] = [w.to_json() for w in self.withheld]
        for key in (
            "not_reindexed",
            "error",
            "cut_reason",
            "citations",
            "citations_attributed",
            "citations_any",
            "citations_mismatched",
            "question_digest",
            "second_part",
        ):
            if out[key] is None:
                del out[key]
        return out

    @classmethod
    def from_query(
        cls,
        query: Query,
        *,
        llm: str | None = None,
        error: str | None = None,
        warnings: list[str] | None = None,
        index: dict[str, Any] | None = None,
        stale: list[dict[str, Any]] | None = None,
        not_reindexed: str | None = None,
    ) -> Answer:
        """The answer of ``query``: one source per distinct file (its first document, with the file's
        other documents as ``spans``). The markdown adds
        ``> **Answer cut off** (reason).`` when the answer is cut off, ``> **LLM error:** ...`` when
        ``error`` is given (``answer`` has the error line too, not the cut-off line), an
        ``> **Index:**`` line when ``index`` (the index state) is not ``ready``, and a
        ``> **Question shortened:**`` line when the question was cut to a digest."""
        sources, also_relevant = sent_and_left_out(query)
        body = query.answer or ""
        text = body + (("\n\n" if body else "") + f"> **LLM error:** {error}" if error else "")
        cited: dict[str, Any] = {}
        if query.prompt_documents is not None and body:
            body, cited = _cited(body, query.prompt_documents)
        answer = cls(
            question=query.original,
            answer=text,
            markdown="",
            subquestions=list(query.subquestions),
            sources=sources,
            also_relevant=also_relevant,
            llm=llm,
            error=error,
            finish_reason=query.finish_reason,
            truncated=query.cut_reason is not None,
            cut_reason=query.cut_reason,
            withheld=list(query.withheld),
            warnings=list(warnings or []),
            index=index,
            stale_sources=list(stale or []),
            not_reindexed=not_reindexed,
            cut_documents=_cut(query),
            question_digest=query.digest.to_json() if query.digest is not None and query.digest.shortened else None,
            second_part=next((e.data.get("second_part") for e in query.history if e.step == "answer"), None),
            **cited,
        )
        answer.markdown = body + answer.footer()
        return answer

    def footer(self) -> str:
        """What the markdown shows after the answer's own text: the cut-off line, the LLM error line,
        then ``Sources:`` with ``[path:start-end](file:///abs/path#Lstart-Lend)`` links."""
        notes = answer_notes(self)
        out = "".join("\n\n" + n for n in notes)
        out = markdown(out, self.sources) if self.sources else out
        if self.also_relevant:
            lines = "\n".join(f"- {line}" for line in source_lines(self.also_relevant))
            out += f"\n{ALSO_RELEVANT}\n{lines}\n"
        return out


def markdown(text: str, sources: list[Source]) -> str:
    """The answer, then ``Sources:`` with ``[path:start-end](file:///abs/path#Lstart-Lend)`` links, one
    line per file; a file's further spans follow its link as ``[start-end](...#Lstart-Lend)``."""
    if not sources:
        return text
    return f"{text}\n\nSources:\n{source_list(sources)}\n"


def _cited(body: str, documents: list[Document]) -> tuple[str, dict[str, Any]]:
    """``body`` with its ``[n]`` citations of ``documents`` (the prompt's, numbered) checked and
    linked (:func:`~codeask.query.citations.check_citations`), and the :class:`Answer` fields that
    check fills: the citation shares and lists, and ``documents`` (``{"n", "path", "start_line",
    "end_line", "uri"}``)."""
    check = check_citations(body, documents)
    return check.markdown, {
        "citations": check.share,
        "invalid_citations": check.invalid,
        "citations_attributed": check.attributed_share,
        "citations_any": round(check.share + check.attributed_share, 3),
        "citations_mismatched": check.mismatched_share,
        "attributed_citations": [a.to_json() for a in check.attributed],
        "repointed_citations": check.repointed,
        "unverified_citations": check.unverified,
        "documents": [
            {"n": i, "path": d.path, "start_line": d.start_line, "end_line": d.end_line, "uri": d.uri}
            for i, d in enumerate(documents, 1)
        ],
    }
