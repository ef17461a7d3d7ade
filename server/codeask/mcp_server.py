"""``codeask mcp PATH...``: the codeask engine as a Model Context Protocol server for AI agents.

Built on the official ``mcp`` Python SDK (:class:`mcp.server.MCPServer`), over stdio or, with
``--http HOST:PORT``, the streamable HTTP transport (endpoint ``/mcp``). It serves the same
:class:`~codeask.workspace.Workspace` as the CLI and the language server: one index per root, one
writer at a time. When another process (an editor's ``codeask serve``) is writing the index, this
server reads it as it is and says so in ``index_status``. While it runs, a watcher keeps the index
current, as ``codeask serve`` does.

Tools (JSON schemas from the signatures, structured results from the pydantic models of
:mod:`codeask.mcp_results`):

* ``search_code(query, top_k?, max_files?, path_glob?)`` -> :class:`SearchResult` (no LLM call);
* ``ask_codebase(question, max_files?)`` -> :class:`AskResult`;
* ``explain_code(path, start_line, end_line)`` -> :class:`ExplainResult`;
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
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import Field

from codeask import __version__
from codeask.index.engine import IndexLocked
from codeask.index.phases import Phase, PhaseHooks
from codeask.index.watch import Watcher
from codeask.mcp_files import AgentFiles
from codeask.mcp_results import (
    AskResult,
    ExplainResult,
    IndexState,
    IndexStatus,
    SearchResult,
    SourceOut,
    SpanOut,
    index_line,
    one_line_tool_errors,
    source_lines,
    tool_result,
)
from codeask.query.explain import NotExplainable, explain, make_span
from codeask.workspace import Workspace

__all__ = ["CodeaskMCP", "make_server", "run", "SearchResult", "AskResult", "ExplainResult", "IndexStatus"]

log = logging.getLogger("codeask.mcp")

#: Seconds a tool waits for the first keyword index of a root before answering from what is there.
SEARCHABLE_WAIT = 300.0

INSTRUCTIONS = """\
codeask indexes this codebase (keyword + embedding search, kept current while files change) and
answers questions about it with cited sources. Use search_code to find where something is
implemented (fast, no LLM), ask_codebase for an explained answer with numbered sources,
explain_code for a line range, index_status to see whether indexing is still running.
Sources are file:// URIs with #Lstart-Lend line ranges (1-based) and codeask://source resources."""


class CodeaskMCP:
    """The workspace, its indexing thread and watcher, and the tool implementations (plain Python,
    run by the SDK in worker threads).

    Args:
        roots: workspace folders (absolute or relative to the current directory).
        env: environment mapping for the settings (default ``os.environ``).

    Raises:
        FileNotFoundError: a root does not exist.
        SettingsError: a root's ``.codeask.toml`` is invalid.
    """

    def __init__(self, roots: Sequence[Path | str], *, env: dict[str, str] | None = None):
        self.ws = Workspace(roots, env=env, background_indexing=True)  # agents search while it indexes
        self.roots = list(self.ws.indexes)
        #: The files an agent may name, and their lines (:class:`~codeask.mcp_files.AgentFiles`).
        self.files = AgentFiles(self.ws, self.roots)
        self.state = "indexing"
        self.note: str | None = None
        self.searchable = threading.Event()
        self.stopping = threading.Event()
        self.watcher: Watcher | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------- indexing
    def start(self) -> "CodeaskMCP":
        """Index in a background thread (keyword phase, then vectors), then watch for changes."""
        self._thread = threading.Thread(target=self._index, name="codeask-mcp-index", daemon=True)
        self._thread.start()
        return self

    def _index(self) -> None:
        stop = self.stopping.is_set
        locked: list[str] = []

        def keywords_done(phase: Phase, finished: bool) -> None:
            if phase == "keywords":
                self.searchable.set()
                self.state = "embedding"

        def skip_locked(exc: IndexLocked) -> bool:  # read as it is: that process keeps it current
            locked.append(str(exc))
            return False

        try:
            self.ws.index(should_stop=stop, wait=False, hooks=PhaseHooks(end=keywords_done, locked=skip_locked))
            if locked:
                self.state = "read-only"
                self.note = f"{locked[0]}; reading the index as it is (that process keeps it current)"
            else:
                self.state = "ready"
        except Exception as exc:  # the server keeps answering from what is indexed
            log.exception("indexing failed")
            self.state, self.note = "failed", f"indexing failed: {exc}"
        finally:
            self.searchable.set()
        if not stop():
            self.watcher = Watcher(self.ws, on_error=lambda exc: log.warning("updating the index failed: %s", exc))
            self.watcher.start()

    def stop(self) -> None:
        """Stop the watcher and ask the indexing thread to end at its next batch (waits up to 2 s)."""
        self.stopping.set()
        if self.watcher is not None:
            self.watcher.stop()
        if self._thread is not None:
            self._thread.join(2.0)

    def _wait_searchable(self) -> None:
        self.searchable.wait(SEARCHABLE_WAIT)

    def index_state(self) -> IndexState:
        """The current :class:`IndexState` (counts read from the index)."""
        status = self.ws.status()
        return IndexState(
            state=self.state,
            files=status["files"],
            chunks_total=status["chunks_total"],
            vectors_pending=status["vectors_pending"],
            note=self.note,
        )

    # ------------------------------------------------------------- sources
    def sources(self, items: list[dict[str, Any]]) -> list[SourceOut]:
        """``Source`` dicts (``Answer.to_json()["sources"]``) -> :class:`SourceOut`, ranked from 1."""
        return [
            SourceOut(
                rank=i,
                path=s["path"],
                root=s["root"],
                start_line=s["start_line"],
                end_line=s["end_line"],
                symbol=s.get("symbol") or "",
                score=s["score"],
                content=s["content"],
                uri=s["uri"],
                resource_uri=self.files.resource_uri(s["root"], s["path"], s["start_line"], s["end_line"]),
                spans=[
                    SpanOut(
                        start_line=x["start_line"],
                        end_line=x["end_line"],
                        symbol=x.get("symbol") or "",
                        content=x.get("content", ""),
                        uri=x["uri"],
                    )
                    for x in s.get("spans") or []
                ],
                kind=s.get("kind") or "source",
                similar=list(s.get("similar") or []),
            )
            for i, s in enumerate(items, 1)
        ]

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
            answer = self.ws.ask(query, top_k=top_k, max_files=max_files, path_glob=path_glob, no_llm=True)
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
            out = self.ws.ask(question, max_files=max_files, sources_on_llm_error=True).to_json()
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
            llm=out.get("llm"),
            note=note,
            error=out.get("error"),
            index=self.index_state(),
        )

    def explain_code(self, path: str, start_line: int, end_line: int) -> ExplainResult:
        """Explain lines ``start_line..end_line`` (1-based, inclusive) of ``path``.

        Raises:
            ToolError: the path is not a readable workspace file or the lines are not inside it
                (:meth:`AgentFiles.selection <codeask.mcp_files.AgentFiles.selection>`).
        """
        rel, abs_path, start_line, end_line = self.files.selection(path, start_line, end_line)
        self._wait_searchable()
        try:
            span = make_span(self.ws, abs_path, start_line, end_line)
        except NotExplainable as exc:  # blank lines ("nothing to explain: ..."), or changed since read: binary now
            raise ToolError(str(exc)) from None
        result = explain(self.ws, span).to_json()
        return ExplainResult(
            path=rel,
            start_line=start_line,
            end_line=end_line,
            markdown=result["markdown"],
            sources=self.sources(result["sources"]),
            llm=result.get("llm"),
            error=result.get("error"),
        )

    def index_status(self) -> IndexStatus:
        """What the index holds now, and the indexing state."""
        status = self.ws.status()
        return IndexStatus(
            state=self.state,
            note=self.note,
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
        question: Annotated[str, Field(description="a question about this codebase, in words")],
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

    return server


def run(paths: list[Path], http: str | None = None) -> int:
    """Serve ``paths`` over stdio (or streamable HTTP at ``HOST:PORT``, endpoint ``/mcp``) until the
    client disconnects; returns the exit code.

    Raises:
        ValueError: ``http`` is not ``HOST:PORT``.
        FileNotFoundError, SettingsError: from :class:`~codeask.workspace.Workspace`.
    """
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="codeask mcp: %(message)s")
    host, port = "127.0.0.1", 0
    if http:
        named, _, port_s = http.rpartition(":")
        if not port_s.isdigit():
            raise ValueError(f"--http wants HOST:PORT, got {http!r}")
        host, port = named or host, int(port_s)
    engine = CodeaskMCP(paths).start()
    server = make_server(engine)
    try:
        if http:
            server.run("streamable-http", host=host, port=port)
        else:
            server.run("stdio")
    except KeyboardInterrupt:
        pass
    finally:
        engine.stop()
    return 0
