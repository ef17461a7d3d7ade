"""What the MCP tools return: the structured results (pydantic models, whose JSON schemas the SDK
publishes as the tools' output schemas), their text and resource-link forms, and one-line tool errors.
"""

from __future__ import annotations

import re
from typing import Any

from mcp.types import CallToolResult, ResourceLink, TextContent
from pydantic import BaseModel, Field

__all__ = [
    "SourceOut",
    "SpanOut",
    "IndexState",
    "SearchResult",
    "AskResult",
    "ExplainResult",
    "IndexStatus",
    "source_lines",
    "resource_links",
    "tool_result",
    "index_line",
    "one_line",
    "one_line_tool_errors",
]


class SpanOut(BaseModel):
    """One span of a source's file: 1-based inclusive lines."""

    start_line: int = Field(description="first line, 1-based")
    end_line: int = Field(description="last line, 1-based, inclusive")
    symbol: str = Field(description="enclosing definition (class/function), '' when none")
    content: str = Field(description="the code of these lines")
    uri: str = Field(description="file:///abs/path#Lstart-Lend")


class SourceOut(BaseModel):
    """One cited location: 1-based inclusive lines of ``path`` (relative to ``root``)."""

    rank: int = Field(description="1 = most relevant")
    path: str = Field(description="path relative to the workspace root, POSIX separators")
    root: str = Field(description="absolute workspace root the path belongs to")
    start_line: int = Field(description="first line, 1-based")
    end_line: int = Field(description="last line, 1-based, inclusive")
    symbol: str = Field(description="enclosing definition (class/function), '' when none")
    score: float = Field(description="fused retrieval score, higher is better (only comparable within one result)")
    content: str = Field(description="the code of these lines")
    uri: str = Field(description="file:///abs/path#Lstart-Lend")
    resource_uri: str = Field(description="codeask://source resource returning these lines")
    spans: list[SpanOut] = Field(
        default_factory=list,
        description="every span of this file the result drew on: these lines first, then the file's "
        "next-best spans (retrieval.spans_per_file)",
    )
    kind: str = Field(default="source", description="source | test | docs | config | data | generated | vendored")
    similar: list[str] = Field(
        default_factory=list, description="near-duplicate files folded into this one (the same file in other locales)"
    )


class IndexState(BaseModel):
    """How current the index was when a result was computed."""

    state: str = Field(description="indexing | embedding | ready | read-only | failed")
    files: int
    chunks_total: int
    vectors_pending: int = Field(description="chunks not yet embedded: keyword search only for them")
    note: str | None = Field(default=None, description="why the state is not 'ready', when known")


class SearchResult(BaseModel):
    """``search_code``: ranked sources, best first, one chunk per file."""

    query: str
    sources: list[SourceOut]
    index: IndexState


class AskResult(BaseModel):
    """``ask_codebase``: the answer (markdown with numbered ``Sources:``) and its sources."""

    question: str
    answer: str = Field(description="the LLM's answer; '' when no LLM is configured")
    markdown: str = Field(description="answer followed by numbered source links")
    subquestions: list[str]
    sources: list[SourceOut]
    llm: str | None = Field(description="provider:model that answered, null when none")
    note: str | None = Field(default=None, description="e.g. that no LLM is configured")
    error: str | None = Field(default=None, description="LLM error; the sources are still valid")
    index: IndexState


class ExplainResult(BaseModel):
    """``explain_code``: an explanation of the lines, grounded in related code."""

    path: str
    start_line: int
    end_line: int
    markdown: str = Field(description="the explanation, then links to related code")
    sources: list[SourceOut] = Field(description="related code the explanation used")
    llm: str | None
    error: str | None = None


class IndexStatus(BaseModel):
    """``index_status``: what the index holds and whether it is being updated."""

    state: str = Field(description="indexing | embedding | ready | read-only | failed")
    note: str | None = None
    files: int
    chunks_total: int
    vectors_pending: int
    embedding_model: str
    llm: str | None = Field(description="provider:model used by ask_codebase/explain_code, null when none")
    roots: list[dict[str, Any]]


# ----------------------------------------------------------------------------- engine side


def source_lines(sources: list[SourceOut]) -> str:
    """The sources as text for a tool result: rank, location, symbol, score, URI and a code block each."""
    out = []
    for s in sources:
        symbol = f" ({s.symbol})" if s.symbol else ""
        out.append(
            f"{s.rank}. {s.path}:{s.start_line}-{s.end_line}{symbol} score {s.score:.4f}\n   {s.uri}\n```\n{s.content}\n```"
        )
    return "\n".join(out)


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


def index_line(index: IndexState) -> str:
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
