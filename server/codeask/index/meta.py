"""Which embedding model and schema an index was built for, and starting over when they change.

The manifest's ``meta`` row ``index`` holds ``{"model", "dim", "schema", "third_party", "graph",
"chunking"}`` (JSON; ``third_party``: :data:`codeask.index.kinds.EMBED_THIRD_PARTY`, which decides which
rows have a vector at all; ``graph``: :data:`codeask.index.chunking.graph.GRAPH_VERSION`, which names
each row's ``defines`` and ``refs``; ``chunking``: :data:`codeask.index.chunking.CHUNKING_VERSION`,
which decides where chunks begin and end). Opening an index
built with the configured model reads the vector dimension from it (no model load, so ``status``
and keyword search stay fast); a new index, or another model or schema, needs the model's
dimension, and another model or schema clears the manifest and deletes the LanceDB folder
(vectors of two models are not comparable), once, under the write lock. Another third-party rule,
graph or chunking version keeps the rows: the next index run reads every file again and replaces
them (:func:`reread_if_stale`), and until then they are searched as they are."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from codeask.imports import load
from codeask.index import chunking, kinds
from codeask.index.chunking import graph
from codeask.index.folders import IndexReadOnly
from codeask.index.manifest import Manifest
from codeask.settings import Settings

if TYPE_CHECKING:
    from codeask.index.store import Store

__all__ = ["SCHEMA_VERSION", "built_for", "open_store", "reread_if_stale", "rows_outdated"]

#: Bumped when the table layout changes; an index of another schema is rebuilt.
SCHEMA_VERSION = "3"  # 3: the symbol graph columns ``defines`` and ``refs``, and ``kind``


def _row_versions() -> dict[str, str | bool]:
    """What an index's rows were cut and linked by, as its meta records them: the third-party rule, the
    graph queries' and the chunker's versions (the module docstring). Rows of other versions are still
    rows of the same layout and model: they are searched as they are until :func:`reread_if_stale`'s
    run replaces them."""
    return {"third_party": kinds.EMBED_THIRD_PARTY, "graph": graph.GRAPH_VERSION, "chunking": chunking.CHUNKING_VERSION}


def _meta(text: str | None) -> dict[str, object]:
    """The manifest's ``index`` meta (``manifest.get_meta("index")``) parsed, ``{}`` when missing or
    unreadable."""
    try:
        meta = json.loads(text or "{}")
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def _same_model(meta: dict[str, object], model: str) -> bool:
    """Whether ``meta`` is of an index built for ``model`` and this schema, its dimension known."""
    return meta.get("model") == model and meta.get("schema") == SCHEMA_VERSION and bool(meta.get("dim"))


def _outdated(meta: dict[str, object]) -> bool:
    """Whether an index meta (:func:`_meta`) records other row versions (:func:`_row_versions`) than this release's."""
    return bool(meta) and any(meta.get(key) != value for key, value in _row_versions().items())


def rows_outdated(manifest: Manifest) -> bool:
    """Whether the index of ``manifest`` holds rows cut or linked by other versions
    (:func:`_row_versions`) than this release's: the next index run reads every file again
    (:func:`reread_if_stale`); ``status`` and ``doctor`` say so until then."""
    return _outdated(_meta(manifest.get_meta("index")))


def reread_if_stale(manifest: Manifest) -> bool:
    """Under the write lock, before a run walks the root: when the index's rows were cut or linked by
    other versions (:func:`_row_versions`), mark every file not indexed and dirty, so the run reads
    each one again and replaces its rows (its vectors, keyed by text, are kept for the chunks that did
    not change), and record the current versions. The old rows stay searchable until then: ``status``,
    ``related`` and ``ask --no-update`` read them as they are (they emptied the index when opening it
    started over). True when it did."""
    meta = _meta(manifest.get_meta("index"))
    if not _outdated(meta):
        return False
    manifest.forget(list(manifest.all()))
    manifest.set_meta("index", json.dumps({**meta, **_row_versions()}))
    return True


def open_store(
    index_dir: Path,
    manifest: Manifest,
    settings: Settings,
    model_dim: Callable[[], int],
    writing: Callable[[], AbstractContextManager[object]],
) -> Store:
    """Open the tables of ``index_dir`` for the configured model, first starting over if the index
    was built for another model or schema.

    Args:
        index_dir: the index folder (``lance/`` is below it).
        manifest: its manifest (``meta`` row ``index``).
        settings: ``embedding.model``.
        model_dim: loads the model and returns its vector dimension (called only when needed).
        writing: the index's write lock (held while starting over).

    Raises:
        IndexReadOnly: the index is read-only and was built for another model or schema.
    """
    store_cls = load("codeask.index.store").Store  # under the one import lock (codeask.imports)
    model = settings.embedding.model
    have = manifest.get_meta("index")
    meta = _meta(have)
    same = _same_model(meta, model)
    dim = int(str(meta["dim"])) if same else model_dim()
    want = json.dumps({"model": model, "dim": dim, "schema": SCHEMA_VERSION, **_row_versions()})
    if have is None:
        manifest.set_meta("index", want)  # a new index: nothing to clear
    elif not same and manifest.read_only:
        raise IndexReadOnly(
            f"the index {index_dir} is read-only and was built for another embedding model or "
            f"schema ({have}); it cannot be rebuilt"
        )
    elif not same:
        with writing():
            # Re-read under the write lock: another process (or another RootIndex of this folder)
            # may have just done this; only the first one starts over.
            if not _same_model(_meta(manifest.get_meta("index")), model):
                manifest.clear()
                shutil.rmtree(Path(index_dir) / "lance", ignore_errors=True)
                (Path(index_dir) / "pending.json").unlink(missing_ok=True)
                manifest.set_meta("index", want)
    return store_cls(
        index_dir,
        dim,
    )


def built_for(manifest: Manifest, settings: Settings) -> bool:
    """Whether the index of ``manifest`` was built for the configured model (``settings``) and this
    schema, so that opening it keeps its rows: :func:`open_store` starts over otherwise, and a question
    asked before that rebuild's keyword phase ends would read an empty index (``related`` answered "no
    definition" for the first seconds after an upgrade). Rows cut by another chunker or graph version
    are kept (:func:`reread_if_stale`)."""
    return _same_model(_meta(manifest.get_meta("index")), settings.embedding.model)
