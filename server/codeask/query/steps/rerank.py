"""Response transformer: reorder and trim the documents with a local cross-encoder (fastembed).

Like Swiftide's ``Rerank``: every document is rendered with the ``rerank`` template (path and
symbol before the content, so a chunk that is mostly code still says where it lives), scored
against ``query.asked`` (the question as asked, or its digest; never the rewritten ``current``), and the
documents are replaced by the ``top_k`` best, best first (ties keep retrieval order). ``current``
is untouched, so the answer still renders the documents; the change is recorded with
``query.reordered`` and each kept document's ``score`` becomes its rerank score.

Where it runs (see docs/pipeline.md, "Rerank")::

    retrieve (>= 2 * top_k chunks) -> one_per_file (max(max_files, top_k) files)
        -> rerank (keeps min(top_k, max_files); top_k: :data:`TOP_K`) -> summary -> answer

The model is loaded when the pipeline is built (never lazily in the middle of a question) and
only from local files: ``rerank.model`` is either a folder holding ``model.onnx`` and the
tokenizer files (``tokenizer.json``, ``tokenizer_config.json``, optionally ``config.json`` and
``special_tokens_map.json``), or a fastembed cross-encoder name already in fastembed's cache.
Nothing is ever downloaded: ``HF_HUB_OFFLINE=1`` and ``local_files_only`` are set, and a missing
model is a :class:`RerankModelError` that says how to provide one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from codeask.imports import load
from codeask.query.pipeline import Document, Query
from codeask.settings import Settings, SettingsError

__all__ = [
    "Rerank",
    "CrossEncoder",
    "RerankModelError",
    "load_cross_encoder",
    "DEFAULT_RERANK_MODEL",
    "BATCH_SIZE",
    "TOP_K",
]

#: Documents the rerank step keeps (and half the chunks retrieval fetches for it, ``2 * TOP_K``):
#: 10, above ``retrieval.max_files`` (8), so ``one_per_file`` hands the reranker 10 files and it keeps
#: the best ``max_files`` of them. A pipeline sets it per step (``pipeline.options = {rerank = {top_k = 5}}``).
#: Was ``rerank.top_k``.
TOP_K = 10

#: Query-document pairs per cross-encoder call: a batch of 8 keeps the model's memory small while
#: the whole rerank of :data:`TOP_K` (10) documents takes one or two calls. Was ``rerank.batch_size``.
BATCH_SIZE = 8
#: Tried (offline, from fastembed's cache) when ``rerank.enabled`` and no ``rerank.model`` is set.
DEFAULT_RERANK_MODEL = "Xenova/ms-marco-MiniLM-L-6-v2"

_HOWTO = (
    "set rerank.model to a local folder holding model.onnx, tokenizer.json and tokenizer_config.json "
    "(e.g. an ONNX export of cross-encoder/ms-marco-MiniLM-L-6-v2), or to a fastembed cross-encoder "
    "name whose files are already in fastembed's cache (FASTEMBED_CACHE_PATH); codeask never downloads "
    "models. Or set rerank.enabled = false"
)


class RerankModelError(SettingsError):
    """The cross-encoder cannot be loaded offline; the message says how to provide one."""


class CrossEncoder:
    """A fastembed ``TextCrossEncoder`` behind a lock (one ONNX session shared by all queries).

    Args:
        model: a folder with ``model.onnx`` + tokenizer files, or a fastembed model name.
        batch_size: pairs per ONNX call.

    Raises:
        RerankModelError: the model is not available offline.
    """

    def __init__(self, model: str | None, *, batch_size: int = 8, threads: int | None = None):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        TextCrossEncoder = load("fastembed.rerank.cross_encoder").TextCrossEncoder

        self.batch_size = batch_size
        self._lock = threading.Lock()
        name = model or DEFAULT_RERANK_MODEL
        folder = Path(name).expanduser()
        try:
            if folder.is_dir():
                if not (folder / "model.onnx").is_file():
                    raise RerankModelError(f"rerank.model {name!r}: no model.onnx in that folder; {_HOWTO}")
                fe_name = _register_folder(TextCrossEncoder, folder)
                self._model = TextCrossEncoder(
                    fe_name, specific_model_path=str(folder), threads=threads, local_files_only=True
                )
                self.name = str(folder)
            else:
                if name.startswith((".", "/", "~")) or (os.sep != "/" and os.sep in name):
                    raise RerankModelError(f"rerank.model {name!r}: folder not found; {_HOWTO}")
                self._model = TextCrossEncoder(name, threads=threads, local_files_only=True)
                self.name = name
        except RerankModelError:
            raise
        except Exception as exc:
            what = "no rerank.model is set and the default" if model is None else "rerank.model"
            raise RerankModelError(
                f"cannot load the cross-encoder offline ({what} {name!r}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); "
                f"{_HOWTO}"
            ) from exc

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance score per text (higher is more relevant), in input order."""
        if not texts:
            return []
        with self._lock:
            return [float(s) for s in self._model.rerank(query, list(texts), batch_size=self.batch_size)]


_registered: dict[str, str] = {}
_registry_lock = threading.Lock()


def _register_folder(cls: Any, folder: Path) -> str:
    """Register a local model folder with fastembed under a stable made-up name (once per folder)."""
    from fastembed.common.model_description import ModelSource

    key = str(folder.resolve())
    with _registry_lock:
        if key in _registered:
            return _registered[key]
        name = "codeask-local/reranker-" + hashlib.sha1(key.encode()).hexdigest()[:12]
        try:
            cls.add_custom_model(
                model=name,
                sources=ModelSource(hf="codeask-local/unused"),
                model_file="model.onnx",
                description="local cross-encoder folder (codeask rerank.model)",
            )
        except ValueError:
            pass  # already registered by an earlier load in this process
        _registered[key] = name
        return name


_cache: dict[tuple, CrossEncoder] = {}
_cache_lock = threading.Lock()


def load_cross_encoder(model: str | None, batch_size: int = 8) -> CrossEncoder:
    """The process-wide :class:`CrossEncoder` for ``model`` (loaded once).

    Raises:
        RerankModelError: the model is not available offline.
    """
    key = (
        str(Path(model).expanduser().resolve()) if model and Path(model).expanduser().is_dir() else model,
        batch_size,
    )
    with _cache_lock:
        encoder = _cache.get(key)
        if encoder is None:
            encoder = _cache[key] = CrossEncoder(model, batch_size=batch_size)
        return encoder


class Rerank:
    """The rerank step.

    Args:
        encoder: a loaded :class:`CrossEncoder` (or anything with ``score(query, texts)``); when
            ``None`` the model is loaded from ``model`` / ``settings.rerank.model`` right away.
        templates: the :class:`~codeask.query.templates.Templates` (``rerank`` template).
        top_k: documents kept (default :data:`TOP_K`).
        max_files: an extra cap (``query.options.max_files`` overrides it); ``None`` = none.
        settings: the full settings, for defaults.
    """

    name = "rerank"

    def __init__(
        self,
        encoder: Any | None = None,
        templates: Any | None = None,
        *,
        top_k: int | None = None,
        max_files: int | None = None,
        model: str | None = None,
        batch_size: int | None = None,
        settings: Settings | None = None,
    ):
        rs = settings.rerank if settings is not None else None
        self.top_k = int(top_k or TOP_K)
        self.max_files = max_files
        if templates is None:
            from codeask.query.templates import Templates

            templates = Templates(settings)
        self.templates = templates
        if encoder is None:
            encoder = load_cross_encoder(
                model if model is not None else (rs.model if rs else None),
                int(batch_size or BATCH_SIZE),
            )
        self.encoder = encoder

    def render(self, document: Document) -> str:
        """The text the cross-encoder scores for ``document``: the ``rerank`` template (``content``,
        ``metadata``) without outer newlines. Raises :class:`~codeask.query.templates.TemplateError`."""
        return self.templates.render("rerank", content=document.content, metadata=document.metadata).strip("\n")

    def __call__(self, query: Query) -> Query:
        keep = self.top_k
        cap = query.options.max_files or self.max_files
        if cap:
            keep = min(keep, int(cap))
        documents = list(query.documents)
        if not documents:
            query.reordered(self.name, [], top_k=keep, scored=0)
            return query
        scores = self.encoder.score(query.asked, [self.render(d) for d in documents])
        order = sorted(range(len(documents)), key=lambda i: (-scores[i], i))[:keep]
        kept = []
        for i in order:
            d = documents[i]
            kept.append(dataclasses.replace(d, score=scores[i]))
        kept_set = set(order)
        query.reordered(
            self.name,
            kept,
            top_k=keep,
            scored=len(documents),
            model=getattr(self.encoder, "name", None),
            dropped=[f"{d.path}:{d.start_line}" for i, d in enumerate(documents) if i not in kept_set],
        )
        return query
