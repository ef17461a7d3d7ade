"""The engine behind the CLI and the language server: roots, their indexes, and the ask pipeline.

A :class:`Workspace` serves one or more workspace roots. Each root has its own index
(:class:`~codeask.index.engine.RootIndex`, settings from its own ``.codeask.toml``); questions
search all of them, and every source says which root it came from. The workspace holds the
settings, the roots and the LLM client; a question is answered by :mod:`codeask.query.ask`.
The front doors do not use it directly: :class:`codeask.service.Service` holds one, with the
scheduling that indexes it.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from codeask.index.embed import Embedder, import_model_modules, load_embedder
from codeask.index.engine import RootIndex
from codeask.index.phases import PhaseHooks, run_phases
from codeask.index.records import IndexState, WorkspaceStatus
from codeask.index.stats import IndexStats, ProgressFn
from codeask.llm import LLM, LLMError, make_llm
from codeask.projects import project_root_of
from codeask.query.ask import ask, index_state
from codeask.query.assemble import any_vectors, build_ask_pipeline, search_targets
from codeask.query.pipeline import Pipeline, Query, root_labels
from codeask.query.related_code import RelatedCode, related
from codeask.query.request import AskRequest
from codeask.query.result import Answer, Source
from codeask.query.templates import Templates
from codeask.settings import Settings, load_settings

__all__ = ["Workspace", "IndexState", "WorkspaceStatus"]


class Workspace:
    """Roots, their indexes and the ask pipeline, with one settings model.

    Args:
        roots: workspace folders (at least one).
        env, editor, workspace_editor, flags: settings layers (see
            :func:`codeask.settings.load_settings`); ``editor`` is user-scoped (trusted),
            ``workspace_editor`` workspace-scoped (untrusted: trusted-only keys are ignored).
        background_indexing: phase 2 embeds in a child process niced by ``embedding.index_nice``
            (``True``, the default: a process that searches while it indexes, such as the language
            server, the MCP server and ``codeask watch``), or in this process at its own priority
            (``False``: a foreground command whose user waits for the index, such as ``codeask
            index``, ``ask``, ``explain`` and ``eval``). Every root's index gets it
            (:class:`~codeask.index.engine.RootIndex`).

    Raises:
        SettingsError: a ``.codeask.toml`` or a value is invalid.
        FileNotFoundError: a root does not exist.
        NotADirectoryError: a root is a file.
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
        self.background_indexing = background_indexing
        self._env, self._editor, self._flags = env, dict(editor or {}), dict(flags or {})
        self._workspace_editor = dict(workspace_editor or {})
        self._lock = threading.RLock()
        self.indexes: dict[str, RootIndex] = {}
        self._llm: LLM | None = None
        self._llm_key: object = None
        folders = [Path(os.path.abspath(r)) for r in roots]  # as named: a symlinked root stays the link
        for root in folders:
            if root.is_file():
                holder = project_root_of(root) or root.parent
                raise NotADirectoryError(
                    f"not a folder: {root} is a file; give the workspace folder that holds it ({holder})"
                )
            if not root.is_dir():
                raise FileNotFoundError(f"workspace folder not found: {root}")
        self.settings = self._load(folders[0] if folders else None)
        for root in folders:
            self.add_root(root)

    # ---------------------------------------------------------------- settings
    def _load(self, root: Path | None) -> Settings:
        return load_settings(
            root, env=self._env, editor=self._editor, workspace_editor=self._workspace_editor, flags=self._flags
        )

    @property
    def warnings(self) -> list[str]:
        """Every settings warning of the workspace and its roots (values an untrusted layer tried to
        set and that were ignored), each once, in order."""
        lines = list(self.settings.warnings)
        for index in list(self.indexes.values()):
            lines.extend(index.settings.warnings)
        return list(dict.fromkeys(lines))

    def reconfigure(self, editor: Mapping[str, Any], workspace_editor: Mapping[str, Any] | None = None) -> bool:
        """Apply new editor settings (``workspace/didChangeConfiguration``): ``editor`` user-scoped
        (trusted), ``workspace_editor`` workspace-scoped (untrusted).

        A root whose ``index`` or ``embedding`` settings changed gets a new :class:`RootIndex` (new
        ignore and secret rules, the new model's vectors); the caller should then re-index.

        Returns:
            True when some root's index must be brought up to date with the new settings.

        Raises:
            SettingsError: the new settings are invalid (nothing is changed then).
        """
        with self._lock:
            old_editor, old_workspace = self._editor, self._workspace_editor
            self._editor = dict(editor or {})
            self._workspace_editor = dict(workspace_editor or {})
            try:
                first = next(iter(self.indexes), None)
                settings = self._load(Path(first) if first else None)
                per_root = {root: self._load(Path(root)) for root in self.indexes}
            except Exception:
                self._editor, self._workspace_editor = old_editor, old_workspace
                raise
            self.settings = settings
            self._llm, self._llm_key = None, None
            stale = False
            for root, new in per_root.items():
                index = self.indexes[root]
                if new.index != index.settings.index or new.embedding != index.settings.embedding:
                    # The old object may still be in use by an indexing thread: it finishes its
                    # write under the shared lock file, then is dropped.
                    self.indexes[root] = RootIndex(
                        Path(root), new, embedder=None, background_indexing=self.background_indexing
                    )
                    stale = True
                else:
                    index.settings = new
            return stale

    # ------------------------------------------------------------------- roots
    def add_root(self, root: Path | str) -> RootIndex:
        """Add ``root`` (absolute, as named: a symlinked root is not resolved, so citations use the
        path the client opened) with settings loaded for it (its own ``.codeask.toml`` plus the other
        layers); returns its :class:`RootIndex` (the existing one when already added, also under
        another name of the same real folder).

        Raises:
            SettingsError: the root's settings are invalid.
            ValueError: the index folder would be inside the root.
        """
        root = Path(os.path.abspath(root))
        with self._lock:
            if str(root) not in self.indexes:
                real = root.resolve()
                same = next((i for i in self.indexes.values() if i.real_root == real), None)
                if same is not None:
                    return same
                self.indexes[str(root)] = RootIndex(
                    root, self._load(root), embedder=None, background_indexing=self.background_indexing
                )
            return self.indexes[str(root)]

    def remove_root(self, root: Path | str) -> None:
        """Stop serving ``root`` (its index folder stays on disk); nothing for an unknown root.

        The index object is not closed here: an indexing or watcher thread may still be inside one of
        its writes; its SQLite connection closes when the last user drops it.
        """
        named = Path(os.path.abspath(root))
        with self._lock:
            if self.indexes.pop(str(named), None) is None:
                real = named.resolve()
                for key, index in list(self.indexes.items()):
                    if index.real_root == real:
                        del self.indexes[key]

    def root_for(self, path: Path | str) -> RootIndex | None:
        """The index whose root contains ``path`` (the deepest, for nested roots).

        The path as given (a symlink's own location) counts first, then its resolved target, so a
        link inside a root belongs to that root even when it points elsewhere.
        """
        indexes = list(self.indexes.values())
        for candidate in (Path(os.path.abspath(path)), Path(path).resolve()):
            for attr in ("root", "real_root"):  # a symlinked root has two names
                inside = [i for i in indexes if candidate == getattr(i, attr) or getattr(i, attr) in candidate.parents]
                if inside:
                    return max(inside, key=lambda i: len(getattr(i, attr).parts))
        return None

    def embedder(self) -> Embedder:
        """The embedding model of questions (:func:`~codeask.index.embed.load_embedder`): in a one-shot
        command (without ``background_indexing``) the quick-loading one (``queries=True``), in a
        server the shared normal-priority one.

        Raises:
            EmbeddingError: the model's files are not available offline.
        """
        one_shot = not self.background_indexing
        return load_embedder(self.settings.embedding, bulk=one_shot, queries=one_shot)

    def warm_query(self, text: str) -> None:
        """In a one-shot command (without ``background_indexing``), load the question's model and
        embed ``text`` in a thread while this thread imports LanceDB (~1.7 s) and brings the index
        up to date: the embedding step then finds the vector (:meth:`Embedder.embed_query` keeps it).
        ONNX Runtime releases the GIL while it loads and runs. A server (which keeps its model
        loaded) starts nothing; an error is left for the embedding step to report."""
        if self.background_indexing:
            return
        import_model_modules(self.settings.embedding)  # in the thread they would wait for LanceDB's

        def run() -> None:
            try:
                self.embedder().embed_query(text)
            except Exception:  # the embedding step meets it again and reports it
                return

        threading.Thread(target=run, name="codeask-warm-query", daemon=True).start()

    # ---------------------------------------------------------------- indexing
    def index(
        self,
        *,
        progress: ProgressFn | None = None,
        embed: bool = True,
        should_stop: Callable[[], bool] | None = None,
        wait: bool = True,
        hooks: PhaseHooks | None = None,
    ) -> IndexStats:
        """Bring every root's index up to date: phase 1 for all roots first, then phase 2
        (:func:`codeask.index.phases.run_phases`, which documents the arguments).

        Raises:
            IndexLocked: another process writes a root, ``wait`` is false and ``hooks`` has no
                ``locked`` hook.
            IndexReadOnly: a root's index cannot be written.
        """
        return run_phases(
            list(self.indexes.values()),
            progress=progress,
            embed=embed,
            should_stop=should_stop,
            wait=wait,
            hooks=hooks,
        )

    def update_paths(self, paths: Iterable[Path | str]) -> IndexStats:
        """Re-index specific files (saves, watcher events), routed to their roots."""
        by_root: dict[str, list[Path]] = {}
        for p in paths:
            index = self.root_for(p)
            if index is not None:
                by_root.setdefault(str(index.root), []).append(Path(p))
        total = IndexStats()
        for root, group in by_root.items():
            total = total.merge(self.indexes[root].update_paths(group))
        return total

    def status(self) -> WorkspaceStatus:
        """``{"indexed", "read_only", "outdated", "files", "files_by_encoding", "chunks_total",
        "vectors_pending", "index_dir", "embedding_model", "roots", "llm"}``.

        ``indexed``: every root has an index (a root never indexed creates nothing here);
        ``read_only``: some root's index cannot be updated; ``outdated``: some root's rows were cut by an
        older release (the next index run reads its files again); ``index_dir`` is the first root's;
        ``roots`` lists each root's own status.
        """
        roots = [index.status() for index in list(self.indexes.values())]
        llm = self.settings.resolved_llm()
        return {
            "indexed": bool(roots) and all(r["indexed"] for r in roots),
            "read_only": any(r["read_only"] for r in roots),
            "outdated": any(r["outdated"] for r in roots),
            "files": sum(r["files"] for r in roots),
            "files_by_encoding": dict(sum((Counter(r["files_by_encoding"]) for r in roots), Counter())),
            "chunks_total": sum(r["chunks_total"] for r in roots),
            "vectors_pending": sum(r["vectors_pending"] for r in roots),
            "index_dir": roots[0]["index_dir"] if roots else None,
            "embedding_model": self.settings.embedding.model,
            "llm": llm.describe() if llm else None,
            "roots": roots,
        }

    # --------------------------------------------------------------------- ask
    def llm(self) -> LLM | None:
        """The configured LLM client, or ``None`` (then ask returns ranked sources only).

        Raises:
            LLMError: ``llm.provider`` names a provider explicitly (``--provider``, ``CODEASK_LLM``,
                ``.codeask.toml``, editor settings) but neither its key nor a base URL is set: a
                choice the user made never silently becomes "no LLM".
        """
        resolved = self.settings.resolved_llm()
        if resolved is None:
            provider = self.settings.llm.provider
            if provider in ("openai", "anthropic"):
                key = "OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY"
                base = "OPENAI_BASE_URL" if provider == "openai" else "ANTHROPIC_BASE_URL"
                raise LLMError(
                    f"llm.provider is {provider} but no key is set: set {key} (or {base} for a local "
                    f"server), or use --no-llm / --provider none"
                )
            return None
        with self._lock:
            if self._llm is None or self._llm_key != resolved:
                self._llm = make_llm(resolved, self.settings.llm)
                self._llm_key = resolved
            return self._llm

    def root_labels(self) -> dict[str, str]:
        """``{root: label}`` naming each root in citation labels (:func:`~codeask.query.pipeline.root_labels`)."""
        return root_labels(list(self.indexes))

    def build_pipeline(
        self,
        *,
        llm: LLM | None,
        stream: Callable[[str], None] | None = None,
        on_sources: Callable[[Query], None] | None = None,
        templates: Templates | None = None,
    ) -> Pipeline:
        """The ask pipeline for the current settings (:func:`~codeask.query.assemble.build_ask_pipeline`);
        without ``llm``: no subquestions, no LLM answer. ``templates`` (default: new from the
        settings) collects the warnings of refused overrides.

        Raises:
            SettingsError: an unknown step name, or a rerank model that cannot be loaded offline.
        """
        return build_ask_pipeline(
            self.settings,
            llm=llm,
            templates=templates or Templates(self.settings),
            embedder=self.embedder,
            has_vectors=lambda: any_vectors(list(self.indexes.values())),
            targets=lambda: search_targets(list(self.indexes.values())),
            context={"workspace": self},
            stream=stream,
            on_sources=on_sources,
        )

    def ask(
        self,
        question: str,
        *,
        top_k: int | None = None,
        max_files: int | None = None,
        path_glob: str | None = None,
        no_llm: bool = False,
        cancelled: Callable[[], bool] | None = None,
        progress: Callable[[str], None] | None = None,
        stream: Callable[[str], None] | None = None,
        on_sources: Callable[[list[Source]], None] | None = None,
        sources_on_llm_error: bool = False,
    ) -> Answer:
        """Answer ``question`` from the current index (callers update it first if they want): the
        options make an :class:`~codeask.query.request.AskRequest` (which documents them and raises
        ``QuestionError`` / ``ValueError``), answered by :func:`codeask.query.ask.ask` (``LLMError``,
        ``Cancelled``). The front doors go through :meth:`codeask.service.Service.ask` instead."""
        request = AskRequest(
            question,
            self.settings.retrieval.max_question_chars,
            top_k=top_k,
            max_files=max_files,
            path_glob=path_glob,
            no_llm=no_llm,
            sources_on_llm_error=sources_on_llm_error,
        )
        return ask(self, request, cancelled=cancelled, progress=progress, stream=stream, on_sources=on_sources)

    def related(self, symbol: str, limit: int = 50) -> RelatedCode:
        """The definitions, callers and callees of ``symbol`` (``send``, ``Session.send``) in every
        root's symbol graph, at most ``limit`` of each (:func:`codeask.query.related_code.related`).

        Raises:
            ValueError: ``symbol`` is not an identifier or dotted name.
        """
        return related([(str(i.root), i.store) for i in list(self.indexes.values())], symbol, limit)

    def index_state(self) -> IndexState:
        """How far the indexes of all roots are (:func:`codeask.query.ask.index_state`); reads only counts."""
        return index_state(list(self.indexes.values()))
