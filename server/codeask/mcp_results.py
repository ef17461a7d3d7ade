"""What the MCP tools return: the structured results (pydantic models, whose JSON schemas the SDK
publishes as the tools' output schemas), their text and resource-link forms, and one-line tool errors.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from mcp.types import CallToolResult, ResourceLink, TextContent
from pydantic import BaseModel, Field

from codeask.sureness import alias_note, link_note, location_label, via_label

__all__ = [
    "AnchorOut",
    "CitationOut",
    "SourceOut",
    "SpanOut",
    "IndexOut",
    "SearchResult",
    "AskResult",
    "ExplainResult",
    "IndexStatus",
    "LocationOut",
    "RelatedResult",
    "related_lines",
    "source_lines",
    "source_outs",
    "resource_links",
    "tool_result",
    "index_line",
    "one_line",
    "one_line_tool_errors",
]


class AnchorOut(BaseModel):
    """What re-finds a cited span after edits (give it to ``resolve_citation``)."""

    symbol: str = Field(description="the span's enclosing definition, '' when none")
    hash: str = Field(description="hash of the cited text (16 hex digits)")


#: ``open_line`` of a source or span (:func:`codeask.query.opening.open_line`).
OPEN_LINE = Field(
    default=0,
    description="where to start reading, inside the lines (1-based): the definition matching the question best",
)


class SpanOut(BaseModel):
    """One span of a source's file: 1-based inclusive lines."""

    start_line: int = Field(description="first line, 1-based")
    end_line: int = Field(description="last line, 1-based, inclusive")
    open_line: int = OPEN_LINE
    symbol: str = Field(description="enclosing definition (class/function), '' when none")
    content: str = Field(description="the code of these lines")
    uri: str = Field(description="file:///abs/path#Lstart-Lend")
    anchor: AnchorOut | None = Field(default=None, description="symbol and text hash of these lines")


class CitationOut(BaseModel):
    """``resolve_citation``: where cited code is now."""

    path: str = Field(description="path relative to the workspace root")
    uri: str = Field(description="file:///abs/path#Lstart-Lend of the current lines")
    status: str = Field(description="same | moved | changed (changed since the answer) | gone (nearest match)")
    start_line: int = Field(description="first line now, 1-based")
    end_line: int = Field(description="last line now, 1-based, inclusive")
    note: str = Field(description="what the status means for a reader, '' when same")
    open_line: int = Field(
        default=0, description="where to start reading the lines now (1-based): the open_line given, moved"
    )


class SourceOut(BaseModel):
    """One cited location: 1-based inclusive lines of ``path`` (relative to ``root``)."""

    rank: int = Field(description="1 = most relevant")
    path: str = Field(description="path relative to the workspace root, POSIX separators")
    root: str = Field(description="absolute workspace root the path belongs to")
    start_line: int = Field(description="first line, 1-based")
    end_line: int = Field(description="last line, 1-based, inclusive")
    open_line: int = OPEN_LINE
    symbol: str = Field(description="enclosing definition (class/function), '' when none")
    score: float = Field(description="fused retrieval score, higher is better (only comparable within one result)")
    content: str = Field(description="the code of these lines")
    uri: str = Field(description="file:///abs/path#Lstart-Lend")
    resource_uri: str = Field(description="codeask://source resource returning these lines")
    spans: list[SpanOut] = Field(
        default_factory=list,
        description="every span of this file the result drew on: these lines first, then the file's "
        "next-best spans (codeask.query.steps.widen.SPANS_PER_FILE)",
    )
    via: str = Field(
        default="",
        description="why this file was added along the symbol graph (e.g. 'calls send from src/app.py:12'); "
        "'' for files the search found",
    )
    via_sure: float = Field(
        default=0.0,
        description="how sure the via link is: 1.0 sure, 0.7 typed, 0.5 import alias, 0.3 by name only; 0 without via",
    )
    kind: str = Field(default="source", description="source | test | docs | config | data | generated | vendored")
    similar: list[str] = Field(
        default_factory=list, description="near-duplicate files folded into this one (the same file in other locales)"
    )


class IndexOut(BaseModel):
    """How current the index was when a result was computed (:class:`codeask.service.ServiceStatus`)."""

    state: str = Field(description="not-indexed | building | keyword-only | ready | read-only | locked-elsewhere")
    files: int
    chunks_total: int
    vectors_pending: int = Field(description="chunks not yet embedded: keyword search only for them")
    note: str | None = Field(default=None, description="why the state is not 'ready', when known")


class SearchResult(BaseModel):
    """``search_code``: ranked sources, best first, one chunk per file."""

    query: str
    sources: list[SourceOut]
    index: IndexOut


class AskResult(BaseModel):
    """``ask_codebase``: the answer (markdown with numbered ``Sources:``) and its sources."""

    question: str
    answer: str = Field(description="the LLM's answer; '' when no LLM is configured")
    markdown: str = Field(description="answer followed by numbered source links")
    subquestions: list[str]
    sources: list[SourceOut] = Field(
        description="with an LLM answer: exactly the documents it was sent, source n = citation [n]"
    )
    also_relevant: list[SourceOut] = Field(
        default_factory=list, description="found by retrieval but not sent to the model (the token budget)"
    )
    llm: str | None = Field(description="provider:model that answered, null when none")
    note: str | None = Field(default=None, description="e.g. that no LLM is configured")
    error: str | None = Field(default=None, description="LLM error; the sources are still valid")
    index: IndexOut
    question_digest: dict[str, int] | None = Field(
        default=None,
        description="{chars_in, chars_sent} when a long question was cut to a digest for search and the LLM",
    )


class ExplainResult(BaseModel):
    """``explain_code``: an explanation of the lines, grounded in related code."""

    path: str
    start_line: int
    end_line: int
    markdown: str = Field(description="the explanation, then links to related code")
    sources: list[SourceOut] = Field(description="related code the explanation used")
    llm: str | None
    error: str | None = None


class LocationOut(BaseModel):
    """A definition, caller or callee: 1-based inclusive lines of ``path`` (relative to ``root``)."""

    path: str = Field(description="path relative to the workspace root, POSIX separators")
    root: str = Field(description="absolute workspace root the path belongs to")
    start_line: int = Field(description="first line, 1-based")
    end_line: int = Field(description="last line, 1-based, inclusive")
    symbol: str = Field(description="the definition there (Class.method), '' when none")
    name: str = Field(description="the name that links it: the symbol asked about, or the name a callee defines")
    sure: float = Field(
        1.0, description="how sure the link is: 1.0 names the class or module, 0.7 typed, 0.5 alias, 0.3 name only"
    )
    of: str = Field(
        "",
        description="for a caller or callee, the definition it links to as path:start_line (a symbol with two "
        "definitions has callers of each); '' for a definition",
    )
    uri: str = Field(description="file:///abs/path#Lstart-Lend")


class RelatedResult(BaseModel):
    """``related_code``: a symbol's definitions, callers and callees from the index's symbol graph."""

    symbol: str
    definitions: list[LocationOut]
    callers: list[LocationOut] = Field(description="code that calls, instantiates or reads the symbol")
    callees: list[LocationOut] = Field(description="definitions the symbol's definitions call, read or take")
    counts: dict[str, int] = Field(description="how many definitions, callers and callees were found")
    truncated: bool = Field(description="whether a list holds fewer than were found (the surest are listed)")
    alias: dict[str, Any] | None = Field(
        default=None,
        description="{name, path, line, uri} when the symbol asked for is a name a file imports `symbol` under",
    )
    index: IndexOut


class IndexStatus(BaseModel):
    """``index_status``: what the index holds and whether it is being updated."""

    state: str = Field(description="not-indexed | building | keyword-only | ready | read-only | locked-elsewhere")
    note: str | None = None
    files: int
    chunks_total: int
    vectors_pending: int
    embedding_model: str
    llm: str | None = Field(description="provider:model used by ask_codebase/explain_code, null when none")
    roots: list[dict[str, Any]]


# ----------------------------------------------------------------------------- engine side


def related_lines(result: RelatedResult) -> str:
    """``related_code``'s text: a heading per kind, one ``path:start-end symbol`` line per location
    (``(sure 0.3)`` on a link less than sure and, when the symbol has several definitions,
    ``(of path:line)`` naming the one it links to, as ``codeask related`` prints them), and a line
    saying how many more were found under a list cut to the limit."""
    out = []
    several = len(result.definitions) > 1
    for kind in ("definitions", "callers", "callees"):
        found: list[LocationOut] = getattr(result, kind)
        lines = [
            f"- {x.path}:{x.start_line}-{x.end_line} {location_label(kind, x.symbol, x.name)}{link_note(x.sure, x.of, several)}   {x.uri}"
            for x in found
        ]
        if result.counts.get(kind, 0) > len(found):
            lines.append(f"- ... {result.counts[kind] - len(found)} more (the {len(found)} surest are listed)")
        out.append(f"{kind} of {result.symbol}:\n" + ("\n".join(lines) or "- none found"))
    return "\n\n".join([alias_note(result.symbol, result.alias), *out]).lstrip("\n")


def source_lines(sources: list[SourceOut]) -> str:
    """The sources as text for a tool result: rank, location, symbol, score, URI and a code block each."""
    out = []
    for s in sources:
        symbol = f" ({s.symbol})" if s.symbol else ""
        via = f" ({s.via}{via_label(s.via_sure)})" if s.via else ""
        out.append(
            f"{s.rank}. {s.path}:{s.start_line}-{s.end_line}{symbol} score {s.score:.4f}{via}\n   {s.uri}\n```\n{s.content}\n```"
        )
    return "\n".join(out)


def source_outs(items: list[dict[str, Any]], resource_uri: Callable[[str, str, int, int], str]) -> list[SourceOut]:
    """``Source`` dicts (``Answer.to_json()["sources"]``) -> :class:`SourceOut`, ranked from 1;
    ``resource_uri(root, path, start, end)`` names each one's ``codeask://source`` resource."""
    return [
        SourceOut(
            rank=i,
            path=s["path"],
            root=s["root"],
            start_line=s["start_line"],
            end_line=s["end_line"],
            open_line=s["open_line"],
            symbol=s.get("symbol") or "",
            score=s["score"],
            content=s["content"],
            uri=s["uri"],
            resource_uri=resource_uri(s["root"], s["path"], s["start_line"], s["end_line"]),
            spans=[
                SpanOut(
                    start_line=x["start_line"],
                    end_line=x["end_line"],
                    open_line=x["open_line"],
                    symbol=x.get("symbol") or "",
                    content=x.get("content", ""),
                    uri=x["uri"],
                    anchor=AnchorOut(**x["anchor"]) if x.get("anchor") else None,
                )
                for x in s.get("spans") or []
            ],
            via=s.get("via") or "",
            via_sure=float(s.get("via_sure") or 0.0),
            kind=s.get("kind") or "source",
            similar=list(s.get("similar") or []),
        )
        for i, s in enumerate(items, 1)
    ]


def resource_links(sources: list[SourceOut]) -> list[ResourceLink]:
    """One ``codeask://source`` resource link per source (what an agent reads the cited lines from)."""
    return [
        ResourceLink(
            uri=s.resource_uri,
            name=f"{s.path}:{s.start_line}-{s.end_line}",
            description=s.symbol or None,
            mime_type="text/plain",
        )
        for s in sources
    ]


def tool_result(text: str, model: BaseModel, sources: list[SourceOut]) -> CallToolResult:
    """A tool result: ``text`` and the sources' resource links as content, ``model`` as structured content."""
    return CallToolResult(
        content=[TextContent(text=text), *resource_links(sources)],
        structured_content=model.model_dump(mode="json"),
    )


def index_line(index: IndexOut) -> str:
    """A closing line naming the index state when it is not ``ready`` (``""`` when it is)."""
    if index.state == "ready" and not index.vectors_pending:
        return ""
    note = f" ({index.note})" if index.note else ""
    return f"\n\n[index {index.state}: {index.files} files, {index.vectors_pending} chunks waiting for vectors{note}]"


_VALIDATION = re.compile(r"^(\S+)\n\s+(.+?)(?: \[type=[^\]]*\])?$", re.M)


def one_line(message: str) -> str:
    """A tool error as one line: the SDK's ``Error executing tool NAME:`` prefix dropped and a
    pydantic argument-validation report reduced to ``invalid arguments: field: reason; ...``."""
    message = re.sub(r"^Error executing tool \S+: ?", "", message.strip())
    if re.match(r"^\d+ validation errors? for ", message):
        fields = [f"{name}: {reason}" for name, reason in _VALIDATION.findall(message)]
        return "invalid arguments: " + "; ".join(fields) if fields else message.splitlines()[0]
    return " ".join(message.split())


async def one_line_tool_errors(ctx: Any, call_next: Any) -> Any:
    """Server middleware: every failed ``tools/call`` result carries one-line messages."""
    result = await call_next(ctx)  # the wire form: a dict with "content" and "isError"
    if getattr(ctx, "method", None) == "tools/call" and isinstance(result, dict) and result.get("isError"):
        for block in result.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "text":
                block["text"] = one_line(block.get("text", ""))
    return result
