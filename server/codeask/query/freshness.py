"""How fresh an answer is: which of its files changed on disk after they were indexed.

A file is stale when its size or modification time differs from its manifest record
(:class:`codeask.index.manifest.FileRecord`) and its bytes hash differently (a ``touch`` alone is
not a change), or when it is gone. Callers re-index before asking when they can (the CLI, the
editor and the MCP server keep the index current); :func:`why_not_reindexed` says why it could not
have been: a read-only index, or a lock another process holds.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeask.index.filetext import read_text
from codeask.query.pipeline import Document

if TYPE_CHECKING:  # the engine imports LanceDB; this reads the manifest only
    from codeask.index.engine import RootIndex

__all__ = ["stale_sources", "why_not_reindexed", "stale_note"]


def _reason(index: RootIndex, path: str) -> str | None:
    """``"changed"``, ``"deleted"`` or ``None`` (as indexed) for ``path`` of ``index``'s root."""
    record = index.manifest.get(path)
    if record is None:
        return None  # not in this index (a document from another source): nothing to compare
    full = Path(index.root) / path
    try:
        st = os.stat(full)
    except OSError:
        return "deleted"
    if st.st_size == record.size and st.st_mtime_ns == record.mtime_ns:
        return None
    read = read_text(full, index.settings.index)
    if isinstance(read, str):
        return "deleted" if read == "vanished" else "changed"
    return None if read.content_hash == record.content_hash else "changed"


def stale_sources(indexes: Mapping[str, RootIndex], documents: Iterable[Document]) -> list[dict[str, Any]]:
    """``[{"path", "root", "reason": "changed" | "deleted"}]``: the files of ``documents`` (each once,
    in order) that differ from what their root's index (``indexes[root]``) read."""
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for d in documents:
        if d.key() in seen or d.root not in indexes:
            continue
        seen.add(d.key())
        reason = _reason(indexes[d.root], d.path)
        if reason is not None:
            out.append({"path": d.path, "root": d.root, "reason": reason})
    return out


def why_not_reindexed(indexes: Iterable[RootIndex]) -> str | None:
    """Why the index cannot be brought up to date now: ``"the index is read-only"``, ``"another
    process holds the index lock"``, or ``None``."""
    indexes = list(indexes)
    if any(i.read_only for i in indexes):
        return "the index is read-only"
    if any(i.is_locked_elsewhere() for i in indexes):
        return "another process holds the index lock"
    return None


def stale_note(stale: list[dict[str, Any]], not_reindexed: str | None) -> str:
    """The answer's markdown line about ``stale`` files (``""`` for none)."""
    if not stale:
        return ""
    names = ", ".join(f"`{s['path']}`" + (" (deleted)" if s["reason"] == "deleted" else "") for s in stale)
    why = f"; it could not be re-indexed first: {not_reindexed}" if not_reindexed else "; not re-indexed yet"
    return f"> **Changed on disk since indexed:** {names}: answered from the indexed text{why}."
