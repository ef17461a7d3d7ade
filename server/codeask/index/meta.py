"""Which embedding model and schema an index was built for, and starting over when they change.

The manifest's ``meta`` row ``index`` holds ``{"model", "dim", "schema", "third_party", "graph",
"chunking"}`` (JSON; ``third_party``: :data:`codeask.index.kinds.EMBED_THIRD_PARTY`, which decides which
rows have a vector at all; ``graph``: :data:`codeask.index.chunking.graph.GRAPH_VERSION`, which names
each row's ``defines`` and ``refs``; ``chunking``: :data:`codeask.index.chunking.CHUNKING_VERSION`,
which decides where chunks begin and end). Opening an index
built with the configured model reads the vector dimension from it (no model load, so ``status``
and keyword search stay fast); a new index, or another model or schema, needs the model's
dimension, and another model, schema, graph or chunking version clears the manifest and deletes the LanceDB folder
(vectors of two models are not comparable), once, under the write lock.
"""

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

__all__ = ["SCHEMA_VERSION", "open_store", "built_for"]

#: Bumped when the table layout changes; an index of another schema is rebuilt.
SCHEMA_VERSION = "3"  # 3: the symbol graph columns ``defines`` and ``refs``, and ``kind``


def _versions() -> dict[str, str | bool]:
    """What an index's rows depend on besides the model, as its meta records them: the schema, the
    third-party rule, the graph queries' and the chunker's versions (the module docstring)."""
    return {
        "schema": SCHEMA_VERSION,
        "third_party": kinds.EMBED_THIRD_PARTY,
        "graph": graph.GRAPH_VERSION,
        "chunking": chunking.CHUNKING_VERSION,
    }


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
    try:
        meta = json.loads(have) if have else {}
    except ValueError:
        meta = {}
    if meta.get("model") == model and meta.get("schema") == SCHEMA_VERSION and meta.get("dim"):
        dim = int(meta["dim"])
    else:
        dim = model_dim()
    want = json.dumps({"model": model, "dim": dim, **_versions()})
    if have != want and manifest.read_only:
        raise IndexReadOnly(
            f"the index {index_dir} is read-only and was built for another embedding model or "
            f"schema ({have}); it cannot be rebuilt"
        )
    if have is None:
        manifest.set_meta("index", want)  # a new index: nothing to clear
    elif have != want:
        with writing():
            # Re-read under the write lock: another process (or another RootIndex of this folder)
            # may have just done this; only the first one starts over.
            if manifest.get_meta("index") != want:
                manifest.clear()
                shutil.rmtree(Path(index_dir) / "lance", ignore_errors=True)
                (Path(index_dir) / "pending.json").unlink(missing_ok=True)
                manifest.set_meta("index", want)
    return store_cls(
        index_dir,
        dim,
    )


def built_for(manifest: Manifest, settings: Settings) -> bool:
    """Whether the index of ``manifest`` was built for the configured model (``settings``), this schema,
    third-party rule, graph and chunking version, so that opening it keeps its rows: :func:`open_store` starts
    over otherwise, and a question asked before that rebuild's keyword phase ends would read an empty
    index (``related`` answered "no definition" for the first seconds after an upgrade)."""
    try:
        meta = json.loads(manifest.get_meta("index") or "{}")
    except ValueError:
        return False
    return (
        isinstance(meta, dict)
        and meta.get("model") == settings.embedding.model
        and all(meta.get(key) == value for key, value in _versions().items())
    )
