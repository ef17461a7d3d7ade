"""The one service under every front door: the CLI, the language server, the MCP server and the watch socket.

A door translates its protocol's arguments into a request, calls one :class:`Service` method and
translates the result back; it imports this module (and its protocol library), never
``codeask.index`` or ``codeask.query`` (``tests/test_import_graph.py`` says so). The service holds a
:class:`~codeask.workspace.Workspace` (roots, their indexes, settings, the LLM client), the one
:class:`~codeask.scheduler.IndexScheduler` that indexes it in the background, and the watcher that
keeps it current; :meth:`Service.status` reports one readiness every door shows the same way
(:mod:`codeask.readiness`). The types and errors a door needs are re-exported here.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from codeask.index.chunk import KNOWN_EXTENSIONS, KNOWN_FILENAMES, TREE_SITTER_LANGUAGES, language_for
from codeask.index.engine import RootIndex
from codeask.index.folders import IndexReadOnly, check_cache_dir
from codeask.index.lock import IndexLocked
from codeask.index.phases import Phase, PhaseHooks
from codeask.index.stats import IndexStats, Progress
from codeask.index.watch import is_relevant
from codeask.llm import LLM
from codeask.query.anchors import resolve_file
from codeask.query.ask import ask
from codeask.query.explain import ExplainCache, Explanation, NotExplainable, check_request, explain_request
from codeask.query.pipeline import Cancelled
from codeask.query.related_code import RelatedCode, UnknownSymbol
from codeask.query.request import AskRequest, ExplainRequest, QuestionError, decode_question
from codeask.query.result import Answer, Source
from codeask.query.span import explain_source
from codeask.readiness import Refresh, ServiceStatus, service_status
from codeask.scheduler import IndexEvents, IndexScheduler
from codeask.settings import Settings
from codeask.workspace import Workspace

__all__ = [
    "Service",
    "ServiceStatus",
    "AskRequest",
    "ExplainRequest",
    "Answer",
    "ExplainCache",
    "IndexStats",
    "IndexEvents",
    "Progress",
    "Phase",
    "QuestionError",
    "NotExplainable",
    "UnknownSymbol",
    "Cancelled",
    "IndexLocked",
    "IndexReadOnly",
    "decode_question",
    "KNOWN_EXTENSIONS",
    "KNOWN_FILENAMES",
]

log = logging.getLogger(__name__)


class Service:
    """The roots of a workspace, their indexes, the LLM, and the indexing that keeps them current.

    Args:
        roots: workspace folders (at least one for a command; the language server adds them later).
        env, editor, workspace_editor, flags: settings layers (:func:`codeask.settings.load_settings`;
            ``editor`` trusted, ``workspace_editor`` untrusted).
        background_indexing: phase 2 embeds in a niced child process (a server that answers while
            it indexes) or in this process (a foreground command): :class:`~codeask.workspace.Workspace`.

    Raises:
        SettingsError: a ``.codeask.toml`` or a value is invalid.
        FileNotFoundError, NotADirectoryError: a root does not exist, or is a file.
        CacheDirError: the index cache dir is a file or cannot be created.
    """

    def __init__(
        self,
        roots: Iterable[Path | str],
        *,
        env: Mapping[str, str] | None = None,
        editor: Mapping[str, Any] | None = None,
        workspace_editor: Mapping[str, Any] | None = None,
        flags: Mapping[str, Any] | None = None,
        background_indexing: bool = True,
    ):
        self.workspace = Workspace(
            roots,
            env=env,
            editor=editor,
            workspace_editor=workspace_editor,
            flags=flags,
            background_indexing=background_indexing,
        )
        self.scheduler = IndexScheduler(self.workspace)
        if any(index.searchable_as_is() for index in self._indexes()):
            self.scheduler.mark_existing()

    @property
    def settings(self) -> Settings:
        """The settings of the first root (with every layer)."""
        return self.workspace.settings

    @property
    def warnings(self) -> list[str]:
        """Every settings warning of the workspace and its roots, each once."""
        return self.workspace.warnings

    @property
    def roots(self) -> list[str]:
        """The roots served, absolute, as named."""
        return list(self.workspace.indexes)

    def _indexes(self) -> list[RootIndex]:
        return list(self.workspace.indexes.values())

    def add_root(self, root: Path | str) -> str:
        """Serve ``root`` too (:meth:`Workspace.add_root`); returns the root it is served as."""
        return str(self.workspace.add_root(root).root)

    def remove_root(self, root: Path | str) -> None:
        """Stop serving ``root`` (:meth:`Workspace.remove_root`)."""
        self.workspace.remove_root(root)

    def reconfigure(self, editor: Mapping[str, Any], workspace_editor: Mapping[str, Any] | None = None) -> bool:
        """New editor settings (:meth:`Workspace.reconfigure`); True when the index must be brought
        up to date (the caller then calls :meth:`request_index`)."""
        return self.workspace.reconfigure(editor, workspace_editor)

    def root_of(self, path: Path | str) -> tuple[str, str] | None:
        """``(root, relative POSIX path)`` of ``path`` in the deepest root holding it (``""`` for the
        root itself), or ``None`` outside every root."""
        index = self.workspace.root_for(path)
        if index is None:
            return None
        return str(index.root), index.relative(Path(os.path.abspath(path))) or ""

    def skip_reason(self, root: str, rel: str) -> str | None:
        """Why the indexer skips ``rel`` of ``root``: ``"secret"``, ``"excluded"``, ``"ignored"``,
        or ``None`` (it is indexed); ``None`` for an unknown root."""
        index = self.workspace.indexes.get(root)
        return None if index is None else index.ignorer.reason(rel)

    def is_relevant(self, path: str) -> bool:
        """Whether a change of ``path`` (absolute) can change an index (:func:`codeask.index.watch.is_relevant`)."""
        return is_relevant(self.workspace, path)

    def chunked_by_syntax(self, path: str) -> bool:
        """Whether codeask chunks ``path`` by its syntax (a tree-sitter language: hover is offered)."""
        return language_for(path) in TREE_SITTER_LANGUAGES

    def check_llm(self) -> LLM | None:
        """The configured LLM client, or ``None``; ``LLMError`` for an explicit provider without a key."""
        return self.workspace.llm()

    def index_locations(self) -> dict[str, str]:
        """``{root: its index folder}`` (nothing is opened: for naming them in an error)."""
        return {str(index.root): str(index.index_dir) for index in self._indexes()}

    def open_stores(self) -> None:
        """Open every root's tables now (imports LanceDB): start-up a command measures apart."""
        for index in self._indexes():
            _ = index.store

    def check_settings(self) -> None:
        """Build the ask pipeline without an LLM: ``SettingsError`` for an unknown step or a rerank
        model that cannot be loaded offline."""
        self.workspace.build_pipeline(llm=None)

    def check_cache_dir(self) -> None:
        """Raise ``CacheDirError`` when the index cache dir cannot hold an index (a file is there)."""
        check_cache_dir(self.settings)

    def ask_request(
        self,
        question: str,
        *,
        top_k: int | None = None,
        max_files: int | None = None,
        path_glob: str | None = None,
        no_llm: bool = False,
        sources_on_llm_error: bool = False,
    ) -> AskRequest:
        """An :class:`AskRequest` checked against this workspace's ``retrieval.max_question_chars``.

        Raises:
            QuestionError: the question is empty, blank or too long.
            ValueError: ``top_k`` / ``max_files`` is not a positive integer, or ``path_glob`` is invalid.
        """
        request = AskRequest(
            question,
            self.settings.retrieval.max_question_chars,
            top_k=top_k,
            max_files=max_files,
            path_glob=path_glob,
            no_llm=no_llm,
            sources_on_llm_error=sources_on_llm_error,
        )
        self.workspace.warm_query(request.question)  # a one-shot ask: the model loads meanwhile
        return request

    def ask(
        self,
        request: AskRequest,
        *,
        cancelled: Callable[[], bool] | None = None,
        progress: Callable[[str], None] | None = None,
        stream: Callable[[str], None] | None = None,
        on_sources: Callable[[list[Source]], None] | None = None,
    ) -> Answer:
        """Answer ``request`` from the indexes as they are (:func:`codeask.query.ask.ask`, which
        documents the callbacks); a door that wants them current first calls :meth:`refresh` or
        :meth:`wait_searchable`.

        Raises:
            LLMError: an explicit provider without a key, unless ``request.sources_on_llm_error``.
            Cancelled: ``cancelled()`` became true between steps or during an LLM call.
            TemplateError, SettingsError: a broken template or setting.
        """
        return ask(
            self.workspace, request, cancelled=cancelled, progress=progress, stream=stream, on_sources=on_sources
        )

    def search(
        self, query: str, *, top_k: int | None = None, max_files: int | None = None, path_glob: str | None = None
    ) -> Answer:
        """The ranked sources for ``query``, without any LLM call (MCP ``search_code``).

        Raises:
            QuestionError, ValueError: as :meth:`ask_request`.
        """
        request = self.ask_request(query, top_k=top_k, max_files=max_files, path_glob=path_glob, no_llm=True)
        return self.ask(request)

    def related(self, symbol: str, limit: int = 50) -> RelatedCode:
        """``symbol``'s definitions, callers and callees in every root's graph (:meth:`Workspace.related`).

        Raises:
            ValueError: ``symbol`` is not a name; UnknownSymbol: no root defines or uses it (every door's error).
        """
        return self.workspace.related(symbol, limit).known(self.roots)

    def read_source(self, path: str, *, text: str | None = None) -> str:
        """The text of ``path`` (absolute; ``text``: an editor's buffer) as codeask reads it
        (:func:`codeask.query.span.explain_source`); ``NotExplainable`` (one line) when it is not read."""
        return explain_source(self.workspace, path, text=text)

    def check_explain(self, request: ExplainRequest) -> str:
        """Refuse ``request`` before any indexing when it can be (:func:`codeask.query.explain.check_request`);
        returns the file's text as read.

        Raises:
            NotExplainable: the file is not read, or ``nothing to explain: ...`` (reason ``blank``).
        """
        return check_request(self.workspace, request)

    def explain(
        self,
        request: ExplainRequest,
        *,
        cancelled: Callable[[], bool] | None = None,
        progress: Callable[[str], None] | None = None,
        cache: ExplainCache | None = None,
        llm: LLM | None = None,
    ) -> Explanation:
        """Explain ``request``'s lines, or the definition its ``word`` names
        (:func:`codeask.query.explain.explain_request`: ``cache`` the LLM reply cache, ``llm`` an LLM
        in place of the workspace's, such as the hover's short-timeout one).

        Raises:
            NotExplainable: the file is not read, the lines are blank, or (a hover) no definition
                is found for the word (reason ``no-definition``).
            Cancelled: cancelled between steps or during the LLM call.
            TemplateError, SettingsError: a broken template or setting.
        """
        return explain_request(self.workspace, request, cancelled=cancelled, progress=progress, cache=cache, llm=llm)

    def resolve_citation(self, path: str, start_line: int, end_line: int, symbol: str, digest: str, *,
                         open_line: int = 0, text: str | None = None) -> dict[str, Any]:  # fmt: skip
        """Where code cited as ``path`` (absolute) lines ``start_line..end_line`` with anchor ``symbol``/
        ``digest``, opened at ``open_line``, is now (:func:`codeask.query.anchors.resolve_file`): ``{"path",
        "uri", "status", "start_line", "end_line", "note", "open_line"}``; ``text`` an editor's buffer.

        Raises:
            NotExplainable: the file may not be read (a secret file, a folder, binary...).
        """
        return resolve_file(self.workspace, path, start_line, end_line, symbol, digest, open_line=open_line, text=text)

    def status(self) -> ServiceStatus:
        """The readiness and counts now (:func:`codeask.readiness.service_status`)."""
        return service_status(self.workspace, self.scheduler)

    def index(
        self,
        *,
        progress: Callable[[Progress], None] | None = None,
        embed: bool = True,
        wait: bool = True,
        on_keywords: Callable[[], None] | None = None,
    ) -> IndexStats:
        """Bring every root's index up to date in this thread (``codeask index``, ``codeask watch``):
        phase 1, then phase 2 unless ``embed`` is false; ``on_keywords()`` once phase 1 has finished.
        ``IndexLocked``: another process writes a root and ``wait`` is false; ``IndexReadOnly``."""

        def keywords_done(phase: Phase, finished: bool) -> None:
            if phase == "keywords" and finished and on_keywords is not None:
                on_keywords()

        return self.workspace.index(progress=progress, embed=embed, wait=wait, hooks=PhaseHooks(end=keywords_done))

    def refresh(self, progress: Callable[[Progress], None] | None = None, *, update: bool = True) -> Refresh:
        """Update the first root's index before a one-shot ask or explain (``update`` false: only
        check it is writable), never waiting for another process's lock (:class:`Refresh` says how)."""
        index = self._indexes()[0]
        if index.read_only:
            return Refresh("read-only", f"the index {index.index_dir} is read-only")
        if not update:
            return Refresh("skipped")
        try:
            index.sync(progress=progress, wait=False)
        except IndexLocked as exc:
            return Refresh("locked", str(exc))
        return Refresh("updated")

    def index_presence(self) -> str:
        """The first root's index: ``none`` (no folder), ``empty`` (no file recorded and no other
        process building it: a first run killed early) or ``files``."""
        index = self._indexes()[0]
        if not index.exists():
            return "none"
        return "empty" if index.manifest.count() == 0 and not index.is_locked_elsewhere() else "files"

    def files_changed(self, paths: Iterable[Path | str]) -> IndexStats:
        """Re-index ``paths`` (saves, watcher events), routed to their roots, in this thread."""
        return self.workspace.update_paths(paths)

    def start_indexing(
        self,
        events: IndexEvents | None = None,
        *,
        retry_locked: bool = True,
        watch: bool = False,
        on_watch_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        """Index in the background (:class:`~codeask.scheduler.IndexScheduler`: phase 1, then
        vectors), telling ``events``; a root another process writes is retried (``retry_locked``)
        or read as it is. With ``watch``, once the first run ends a watcher keeps the index current
        (``on_watch_error`` gets what failed while applying a batch)."""
        scheduler = self.scheduler
        if events is not None:
            scheduler.events = events
        scheduler.retry_locked = retry_locked
        scheduler.watch_after_run, scheduler.watch_errors = watch, on_watch_error
        scheduler.request()

    def request_index(self) -> None:
        """Index again soon (requests made while a run is under way become one more run)."""
        self.scheduler.request()

    def reindex(self, cancelled: Callable[[], bool] = lambda: False) -> IndexStats:
        """Run an index now and wait for it (returns early when stopped or ``cancelled()``)."""
        return self.scheduler.run_now(cancelled)

    def keyword_ready(self) -> bool:
        """Keyword search has something to search (phase 1 finished once, or the index existed)."""
        return self.scheduler.keyword_ready()

    def wait_searchable(
        self,
        *,
        timeout: float | None = None,
        cancelled: Callable[[], bool] | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> bool:
        """Wait until keyword search has something to search, starting background indexing when it
        has not started (:meth:`IndexScheduler.wait_searchable`; ``Cancelled`` when ``cancelled()``)."""
        return self.scheduler.wait_searchable(timeout, cancelled, progress)

    def watch(
        self,
        *,
        on_update: Callable[[IndexStats], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
        on_fallback: Callable[[str], None] | None = None,
        block: bool = False,
    ) -> None:
        """Watch every root and re-index what changes (:class:`~codeask.index.watch.Watcher`), in a
        thread, or with ``block`` in this one until :meth:`stop` (``OSError``/``RuntimeError``: it failed)."""
        self.scheduler.watch(on_update=on_update, on_error=on_error, on_fallback=on_fallback, block=block)

    def stop(self, timeout: float = 2.0) -> bool:
        """Stop in order: the watcher (no new updates), then the indexing thread at its next batch
        (each commit is atomic), waiting up to ``timeout`` seconds; True when it ended."""
        return self.scheduler.stop(timeout)
