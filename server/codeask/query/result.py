"""What ``ask`` returns: the :class:`Answer` with its :class:`Source` list, the record of text kept
from the LLM (:class:`Withheld`), and the one builder of the ``[path:start-end](uri)`` links every
answer, explanation and source list shows (:func:`source_link`).

The sources of an :class:`Answer` come from the documents, never from the model's text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from codeask.query.citations import check_citations
from codeask.query.pipeline import Document, Query, per_file
from codeask.uris import markdown_link

__all__ = ["Answer", "Source", "Withheld", "index_note", "markdown", "source_link", "source_list"]


def source_link(label: str, start_line: int, end_line: int, uri: str) -> str:
    """``[label:start-end](uri)``: a cited location as a markdown link (1-based inclusive lines; the
    label escaped by :func:`~codeask.uris.markdown_link`, ``uri`` a ``file:///abs/path#Lstart-Lend``)."""
    return markdown_link(f"{label}:{start_line}-{end_line}", uri)


def source_list(sources: Sequence[Source]) -> str:
    """``1. [label:start-end](uri)`` lines, one per source (file), in order (``""`` for none); a
    file's further spans follow its link as ``[start-end](...#Lstart-Lend)``, and its folded
    near-duplicates as `` and N similar files``."""

    def line(s: Source) -> str:
        first = source_link(s.label or s.path, s.start_line, s.end_line, s.uri)
        more = [markdown_link(f"{x['start_line']}-{x['end_line']}", x["uri"]) for x in s.spans[1:]]
        similar = f" and {len(s.similar)} similar file{'s' if len(s.similar) > 1 else ''}" if s.similar else ""
        return ", ".join([first, *more]) + similar

    return "\n".join(f"{i}. {line(s)}" for i, s in enumerate(sources, 1))


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
    those the ``widen`` step added: ``{"start_line", "end_line", "uri", "symbol", "content"}``
    (1-based inclusive lines, each with its own link)."""
    kind: str = "source"
    """The file's kind: ``source``, ``test``, ``docs``, ``config``, ``data``, ``generated`` or
    ``vendored`` (:mod:`codeask.index.kinds`)."""
    similar: list[str] = field(default_factory=list)
    """Near-duplicate files folded into this source (same file in other locales): their labels."""

    @classmethod
    def from_document(cls, d: Document, more: list[Document] | None = None) -> Source:
        """The source of ``d`` (its file's best span), with ``more`` spans of the same file after it
        in ``spans``; the score rounded to 6 decimals."""
        spans = [
            {"start_line": x.start_line, "end_line": x.end_line, "uri": x.uri, "symbol": x.symbol, "content": x.content}
            for x in [d, *(more or [])]
        ]
        return cls(
            d.path,
            d.uri,
            d.root,
            d.start_line,
            d.end_line,
            d.symbol,
            round(float(d.score), 6),
            d.content,
            d.label,
            spans,
            d.kind,
            list(d.similar),
        )


@dataclass
class Answer:
    """What ``ask`` returns; ``to_json()`` is the ``codeask ask --json`` object.

    ``sources`` are the distinct files of the documents, most relevant first (each file's best
    chunk), taken from the documents and never parsed from the model's text.
    """

    question: str
    answer: str
    markdown: str
    subquestions: list[str] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
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

    def to_json(self) -> dict[str, Any]:
        """The fields as a plain dict (sources as dicts); ``error``, ``cut_reason``, ``citations``,
        ``citations_attributed``, ``citations_any`` and ``citations_mismatched`` are left out when
        ``None``; ``finish_reason`` and ``truncated`` are always there."""
        out = asdict(self)
        out["withheld"] = [w.to_json() for w in self.withheld]
        for key in (
            "error",
            "cut_reason",
            "citations",
            "citations_attributed",
            "citations_any",
            "citations_mismatched",
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
    ) -> Answer:
        """The answer of ``query``: one source per distinct file (its first document, with the file's
        other documents as ``spans``). The markdown adds
        ``> **Answer cut off** (reason).`` when the answer is cut off, ``> **LLM error:** ...`` when
        ``error`` is given (``answer`` has the error line too, not the cut-off line), and an
        ``> **Index:**`` line when ``index`` (the index state) is not ``ready``."""
        sources = [Source.from_document(spans[0], spans[1:]) for spans in per_file(query.documents)]
        body = query.answer or ""
        text = body + (("\n\n" if body else "") + f"> **LLM error:** {error}" if error else "")
        citations = invalid = attributed_share = any_share = mismatched = None
        attributed: list[dict[str, Any]] = []
        numbered: list[dict[str, Any]] = []
        if query.prompt_documents is not None and body:
            check = check_citations(body, query.prompt_documents)
            body, citations, invalid = check.markdown, check.share, check.invalid
            attributed_share = check.attributed_share
            any_share = round(check.share + check.attributed_share, 3)
            attributed = [a.to_json() for a in check.attributed]
            mismatched = check.mismatched_share
            numbered = [
                {"n": i, "path": d.path, "start_line": d.start_line, "end_line": d.end_line, "uri": d.uri}
                for i, d in enumerate(query.prompt_documents, 1)
            ]
        answer = cls(
            question=query.original,
            answer=text,
            markdown="",
            subquestions=list(query.subquestions),
            sources=sources,
            llm=llm,
            error=error,
            finish_reason=query.finish_reason,
            truncated=query.cut_reason is not None,
            cut_reason=query.cut_reason,
            citations=citations,
            invalid_citations=invalid or [],
            citations_attributed=attributed_share,
            citations_any=any_share,
            citations_mismatched=mismatched,
            attributed_citations=attributed,
            documents=numbered,
            withheld=list(query.withheld),
            warnings=list(warnings or []),
            index=index,
        )
        answer.markdown = body + answer.footer()
        return answer

    def footer(self) -> str:
        """What the markdown shows after the answer's own text: the cut-off line, the LLM error line,
        then ``Sources:`` with ``[path:start-end](file:///abs/path#Lstart-Lend)`` links."""
        notes = []
        if note := index_note(self.index):
            notes.append(note)
        if self.truncated:
            notes.append(f"> **Answer cut off** ({self.cut_reason}).")
        if self.error:
            notes.append(f"> **LLM error:** {self.error}")
        if self.invalid_citations:
            shown = ", ".join(f"[{n}]" for n in self.invalid_citations)
            notes.append(f"> Citations to sources that do not exist were removed: {shown}.")
        out = "".join("\n\n" + n for n in notes)
        return markdown(out, self.sources) if self.sources else out


def index_note(index: dict[str, Any] | None) -> str:
    """One markdown line saying what an answer from a not-``ready`` index misses; ``""`` when ready."""
    if not index or index.get("state") == "ready":
        return ""
    if index["state"] == "building":
        return (
            f"> **Index:** still being built ({index['files_indexed']:,} files so far): "
            "code not indexed yet cannot be found; ask again when indexing ends."
        )
    return (
        f"> **Index:** keyword search only for now: {index['vectors_pending']:,} chunks still wait for "
        "their vectors, so results may miss code that uses other words than the question."
    )


def markdown(text: str, sources: list[Source]) -> str:
    """The answer, then ``Sources:`` with ``[path:start-end](file:///abs/path#Lstart-Lend)`` links, one
    line per file; a file's further spans follow its link as ``[start-end](...#Lstart-Lend)``."""
    if not sources:
        return text
    return f"{text}\n\nSources:\n{source_list(sources)}\n"
