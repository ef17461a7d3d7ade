"""``codeask mcp PATH...``: the codeask engine as a Model Context Protocol server for AI agents.

Built on the official ``mcp`` Python SDK (:class:`mcp.server.MCPServer`), over stdio or, with
``--http HOST:PORT``, the streamable HTTP transport (endpoint ``/mcp``, behind a bearer token:
:mod:`codeask.mcp_http`). It serves the same :class:`~codeask.service.Service` as the CLI and the
language server: one index per root, one writer at a time. When another process (an editor's
``codeask serve``) is writing the index, this server reads it as it is and says so in
``index_status`` (state ``read-only``). While it runs, a watcher keeps the index current, as
``codeask serve`` does.

Tools (JSON schemas from the signatures, structured results from the pydantic models of
:mod:`codeask.mcp_results`):

* ``search_code(query, top_k?, max_files?, path_glob?)`` -> :class:`SearchResult` (no LLM call);
* ``ask_codebase(question, max_files?)`` -> :class:`AskResult`;
* ``explain_code(path, start_line, end_line)`` -> :class:`ExplainResult`;
* ``related_code(symbol)`` -> :class:`RelatedResult` (definitions, callers, callees; no LLM call);
* ``resolve_citation(path, start_line, end_line, symbol?, hash?, open_line?)`` -> :class:`CitationOut`;
* ``index_status()`` -> :class:`IndexStatus`.

Expected failures (a path outside the roots, a secret file, bad lines, a bad glob) are tool errors
with a one-line message (``isError: true``), never protocol failures. Resources:
``codeask://status`` (JSON) and ``codeask://source/{+path}{?start,end,root}`` (the cited lines of
an indexed file; every source in a result names its ``resource_uri``).

The trust rules of the rest of codeask hold: only files inside the roots are read, and files the
indexer skips (secrets, ``.gitignore``d, default excludes) are never returned
(:class:`~codeask.mcp_files.AgentFiles` resolves every path an agent gives).
"""

import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import Field

from codeask import __version__
from codeask.mcp_files import AgentFiles
from codeask.mcp_results import (
    AskResult,
    CitationOut,
    ExplainResult,
    IndexOut,
    IndexStatus,
    RelatedResult,
    SearchResult,
    SourceOut,
    index_line,
    one_line_tool_errors,
    related_lines,
    source_lines,
    source_outs,
    tool_result,
)
from codeask.service import ExplainRequest, NotExplainable, Service, UnknownSymbol

if TYPE_CHECKING:
    from codeask.listen import Listener

__all__ = ["CodeaskMCP", "make_server", "run", "SearchResult", "AskResult", "ExplainResult", "IndexStatus"]

log = logging.getLogger("codeask.mcp")

#: Seconds a tool waits for the first keyword index of a root before answering from what is there.
SEARCHABLE_WAIT = 300.0

INSTRUCTIONS = """\
codeask indexes this codebase (keyword + embedding search, kept current while files change) and
answers questions about it with cited sources. Use search_code to find where something is
implemented (fast, no LLM), ask_codebase for an explained answer with numbered sources, explain_code
for a line range, related_code for who calls a function and what it calls, index_status to see
whether indexing is still running.
Sources are file:// URIs with #Lstart-Lend line ranges (1-based) and codeask://source resources."""


class CodeaskMCP:
    """The service and the tool implementations (plain Python, run by the SDK in worker threads):
    each turns the tool's arguments into a :class:`~codeask.service.Service` call and its result
    into a model of :mod:`codeask.mcp_results`.

    Args:
        roots: workspace folders (absolute or relative to the current directory).
        env: environment mapping for the settings (default ``os.environ``).

    Raises:
        FileNotFoundError: a root does not exist.
        SettingsError: a root's ``.codeask.toml`` is invalid.
    """

    def __init__(self, roots: Sequence[Path | str], *, env: dict[str, str] | None = None):
        self.service = Service(roots, env=env, background_indexing=True)  # agents search while it indexes
        self.roots = self.service.roots
        #: The files an agent may name, and their lines (:class:`~codeask.mcp_files.AgentFiles`).
        self.files = AgentFiles(self.service, self.roots)

    # ------------------------------------------------------------- indexing
    def start(self) -> "CodeaskMCP":
        """Index in the background (keyword phase, then vectors; a root another process writes is
        read as it is), then watch for changes."""
        self.service.start_indexing(
            retry_locked=False, watch=True, on_watch_error=lambda exc: log.warning("updating the index failed: %s", exc)
        )
        return self

    def stop(self) -> None:
        """Stop the watcher and the indexing thread at its next batch (waits up to 2 s)."""
        self.service.stop(2.0)

    def _wait_searchable(self) -> None:
        self.service.wait_searchable(timeout=SEARCHABLE_WAIT)

    def index_state(self) -> IndexOut:
        """The service's readiness and counts now, for a tool result."""
        status = self.service.status()
        counts = status.counts
        return IndexOut(
            state=status.state,
            files=counts["files"],
            chunks_total=counts["chunks_total"],
            vectors_pending=counts["vectors_pending"],
            note=status.note,
        )

    # ------------------------------------------------------------- sources
    def sources(self, items: list[dict[str, Any]]) -> list[SourceOut]:
        """``Source`` dicts (``Answer.to_json()["sources"]``) -> :class:`SourceOut`, ranked from 1."""
        return source_outs(items, self.files.resource_uri)

    # ------------------------------------------------------------- tools
    def search_code(
        self, query: str, top_k: int | None = None, max_files: int | None = None, path_glob: str | None = None
    ) -> SearchResult:
        """Ranked sources for ``query`` (hybrid retrieval, no LLM).

        Raises:
            ToolError: an empty query, bad numbers or a bad glob.
        """
        query = (query or "").strip()
        if not query:
            raise ToolError("query is empty")
        self._wait_searchable()
        try:
            answer = self.service.search(query, top_k=top_k, max_files=max_files, path_glob=path_glob)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        return SearchResult(query=query, sources=self.sources(answer.to_json()["sources"]), index=self.index_state())

    def ask_codebase(self, question: str, max_files: int | None = None) -> AskResult:
        """The full ask pipeline; without a configured LLM the ranked sources with a note.

        Raises:
            ToolError: an empty question or a bad ``max_files``.
        """
        question = (question or "").strip()
        if not question:
            raise ToolError("question is empty")
        self._wait_searchable()
        try:
            request = self.service.ask_request(question, max_files=max_files, sources_on_llm_error=True)
            out = self.service.ask(request).to_json()
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        note = None
        if out.get("llm") is None and not out.get("error"):
            note = (
                "No LLM is configured for codeask, so these are the ranked sources without an answer: "
                "read them, or set OPENAI_API_KEY / ANTHROPIC_API_KEY (or CODEASK_LLM) for the server."
            )
        return AskResult(
            question=out["question"],
            answer=out["answer"],
            markdown=out["markdown"],
            subquestions=out.get("subquestions") or [],
            sources=self.sources(out["sources"]),
            also_relevant=self.sources(out["also_relevant"]),
            llm=out.get("llm"),
            note=note,
            error=out.get("error"),
            index=self.index_state(),
            question_digest=out.get("question_digest"),
        )

    def explain_code(self, path: str, start_line: int, end_line: int) -> ExplainResult:
        """Explain lines ``start_line..end_line`` (1-based, inclusive) of ``path``.

        Raises:
            ToolError: the path is not a readable workspace file or the lines are not inside it
                (:meth:`AgentFiles.selection <codeask.mcp_files.AgentFiles.selection>`).
        """
        rel, abs_path, start_line, end_line = self.files.selection(path, start_line, end_line)
        request = ExplainRequest(abs_path, start_line, end_line)
        try:
            self.service.check_explain(request)  # blank lines: refused before any wait for the index
            self._wait_searchable()
            result = self.service.explain(request).to_json()
        except NotExplainable as exc:  # blank lines ("nothing to explain: ..."), or changed since read: binary now
            raise ToolError(str(exc)) from None
        return ExplainResult(
            path=rel,
            start_line=start_line,
            end_line=end_line,
            markdown=result["markdown"],
            sources=self.sources(result["sources"]),
            llm=result.get("llm"),
            error=result.get("error"),
        )

    def related_code(self, symbol: str) -> RelatedResult:
        """The definitions, callers and callees of ``symbol`` (:meth:`Service.related`); a
        ``ToolError`` when ``symbol`` is not an identifier or dotted name, or the index knows
        nothing of it (the CLI's exit 1, the LSP command's error)."""
        self._wait_searchable()
        try:
            found = self.service.related(symbol).to_json()
        except (ValueError, UnknownSymbol) as exc:
            raise ToolError(str(exc)) from None
        return RelatedResult.model_validate({**found, "index": self.index_state().model_dump()})

    def index_status(self) -> IndexStatus:
        """What the index holds now, and the indexing state."""
        full = self.service.status()
        status = full.counts
        return IndexStatus(
            state=full.state,
            note=full.note,
            files=status["files"],
            chunks_total=status["chunks_total"],
            vectors_pending=status["vectors_pending"],
            embedding_model=status["embedding_model"],
            llm=status["llm"],
            roots=[dict(root) for root in status["roots"]],
        )


def make_server(engine: CodeaskMCP) -> MCPServer:
    """The :class:`MCPServer` exposing ``engine``'s tools and resources."""
    server = MCPServer(
        "codeask",
        title="codeask: ask your codebase",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        middleware=[one_line_tool_errors],
    )
    _add_search_tools(server, engine)
    _add_code_tools(server, engine)
    _add_status(server, engine)
    return server


def _add_search_tools(server: MCPServer, engine: CodeaskMCP) -> None:
    """``search_code`` and ``ask_codebase``."""

    @server.tool(name="search_code", title="Search code")
    def search_code(
        query: Annotated[
            str, Field(description="what to find, in words or code names (e.g. 'where are redirects followed')")
        ],
        top_k: Annotated[
            int | None, Field(ge=1, le=200, description="chunks retrieved before keeping one per file (default 20)")
        ] = None,
        max_files: Annotated[
            int | None, Field(ge=1, le=50, description="files returned, best first (default 8)")
        ] = None,
        path_glob: Annotated[
            str | None, Field(description="only files matching this gitignore-style glob, e.g. 'src/**/*.py' or '*.ts'")
        ] = None,
    ) -> Annotated[CallToolResult, SearchResult]:
        """Find where something is implemented in this codebase: hybrid keyword + semantic search
        over an always-current index. Returns the most relevant files, best first, each with its
        most relevant chunk (path, 1-based line range, enclosing symbol, code). Fast, no LLM call.
        Prefer it over grep for questions in words ("how are retries handled")."""
        result = engine.search_code(query, top_k, max_files, path_glob)
        text = source_lines(result.sources) or "No matching code found."
        return tool_result(text + index_line(result.index), result, result.sources)

    @server.tool(name="ask_codebase", title="Ask the codebase")
    def ask_codebase(
        question: Annotated[str, Field(description="a question about this codebase, or a pasted bug report with logs")],
        max_files: Annotated[
            int | None, Field(ge=1, le=50, description="files the answer may draw on (default 8)")
        ] = None,
    ) -> Annotated[CallToolResult, AskResult]:
        """Answer a question about this codebase with numbered, clickable sources: codeask retrieves
        the relevant code and its configured LLM answers from it (the sources come from retrieval,
        never from the model). Without a configured LLM it returns the ranked sources and a note.
        Slower than search_code (an LLM call)."""
        result = engine.ask_codebase(question, max_files)
        text = result.markdown or "No matching code found."
        if result.note:
            text = f"{result.note}\n\n{source_lines(result.sources)}"
        elif result.error and result.error not in text:  # the markdown says it already when it has one
            text += f"\n\nLLM error: {result.error}"
        return tool_result(text + index_line(result.index), result, result.sources)


def _add_code_tools(server: MCPServer, engine: CodeaskMCP) -> None:
    """``explain_code``, ``related_code`` and ``resolve_citation``."""

    @server.tool(name="explain_code", title="Explain code")
    def explain_code(
        path: Annotated[str, Field(description="file path relative to the workspace root (or absolute, inside it)")],
        start_line: Annotated[int, Field(ge=1, description="first line, 1-based")],
        end_line: Annotated[int, Field(ge=1, description="last line, 1-based, inclusive")],
    ) -> Annotated[CallToolResult, ExplainResult]:
        """Explain what lines start_line..end_line of a file do, grounded in related code found in
        the index (callers, definitions it uses). Without a configured LLM it returns the related
        code only."""
        result = engine.explain_code(path, start_line, end_line)
        return tool_result(result.markdown, result, result.sources)

    @server.tool(name="related_code", title="Related code")
    def related_code(
        symbol: Annotated[str, Field(description="a function, class or constant name, e.g. 'send' or 'Session.send'")],
    ) -> Annotated[CallToolResult, RelatedResult]:
        """Who calls a symbol and what it calls: its definitions, the code that calls, instantiates or
        reads it (callers) and the definitions it uses (callees), from the index's symbol graph
        (resolved by name). Each location is a path with 1-based lines. Fast, no LLM call."""
        result = engine.related_code(symbol)
        return tool_result(related_lines(result) + index_line(result.index), result, [])

    @server.tool(name="resolve_citation", title="Resolve a citation")
    def resolve_citation(
        path: Annotated[str, Field(description="the cited file, relative to the workspace root (or absolute)")],
        start_line: Annotated[int, Field(ge=1, description="first cited line, 1-based")],
        end_line: Annotated[int, Field(ge=1, description="last cited line, 1-based, inclusive")],
        symbol: Annotated[str, Field(description="the span's anchor.symbol ('' when none)")] = "",
        hash: Annotated[str, Field(description="the span's anchor.hash ('' when unknown)")] = "",
        open_line: Annotated[int, Field(ge=0, description="the span's open_line (0: its first line)")] = 0,
    ) -> CitationOut:
        """Where cited code is now, after edits: give a source span (path, lines, anchor, open_line)
        from an earlier answer; returns its current lines, the line to start reading at, and status
        same | moved | changed (the symbol's code changed since the answer) | gone (nearest match)."""
        return CitationOut(**engine.files.resolve_citation(path, start_line, end_line, symbol, hash, open_line))


def _add_status(server: MCPServer, engine: CodeaskMCP) -> None:
    """``index_status`` and the ``codeask://status`` and ``codeask://source`` resources."""

    @server.tool(name="index_status", title="Index status")
    def index_status() -> IndexStatus:
        """How much of the codebase is indexed: files, chunks, chunks still waiting for embeddings,
        and whether indexing is running or another process (an editor) is writing the index."""
        return engine.index_status()

    @server.resource(
        "codeask://status",
        name="status",
        title="codeask index status",
        description="index_status as JSON",
        mime_type="application/json",
    )
    def status_resource() -> str:
        return engine.index_status().model_dump_json(indent=2)

    @server.resource(
        "codeask://source/{+path}{?start,end,root}",
        name="source",
        title="Cited source lines",
        description="Lines start..end (1-based, inclusive) of a workspace file, as cited in a tool result",
        mime_type="text/plain",
    )
    def source_resource(path: str, start: str = "", end: str = "", root: str = "") -> str:
        return engine.files.source_text(path, start, end, root)


def run(paths: list[Path], listener: "Listener | None" = None) -> int:
    """Serve ``paths`` over stdio (or, with ``listener``, streamable HTTP at
    ``http://HOST:PORT/mcp`` behind its token: :func:`codeask.mcp_http.serve_http`) until the
    client disconnects; returns the exit code.

    Raises:
        FileNotFoundError, SettingsError: from :class:`~codeask.service.Service`.
    """
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="codeask mcp: %(message)s")
    engine = CodeaskMCP(paths).start()
    server = make_server(engine)
    try:
        if listener is not None:
            from codeask.mcp_http import serve_http

            serve_http(server, listener)
        else:
            server.run("stdio")
    except KeyboardInterrupt:
        pass
    finally:
        engine.stop()
    return 0
