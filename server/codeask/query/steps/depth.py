"""How deep retrieval goes: each ranking gathers enough files, and the fused list keeps enough files.

Chunks are what the search tables rank, files are what an answer cites: a fixed number of chunks
can be used up by a few long files that match everywhere (on held-out bug reports, 14 of 44 asks
with ``--max-files 10`` got 4-9 files from 20 chunks). :func:`per_file` deepens a ranking until it
holds enough distinct files; :func:`keep_files` cuts the fused list by files as well as chunks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the store module imports LanceDB; only hits' paths are read here
    from codeask.index.rows import Hit

__all__ = ["MAX_CANDIDATES", "POOL", "keep_files", "per_file"]

#: Files each ranking gathers (:func:`per_file`) and retrieval keeps for the next steps
#: (:func:`keep_files`), per file the answer keeps: 30 candidates for ``--max-files 10``, of which
#: the ``neighbours`` step ranks the first 10. Was 2. On bench/multifile's 12 trees with kept
#: indexes (175 rows; offline, searches cached), the rows with every needed file among the files
#: ``neighbours`` ranks rose .920 -> .943 (how-questions .823 -> .855, pylint's .538 -> .692), all@10
#: .657 -> .657 (how .403 -> .419), MRR .826 -> .830 (``bench/multifile.py``, the same numbers);
#: at 4 the 9 smaller trees' candidates held more (.993 vs .980) but recall@10 fell (.881 vs .891).
POOL = 3


#: Most chunks one ranking fetches while it gathers enough files (:func:`per_file`).
MAX_CANDIDATES = 10_000


def per_file(search: Callable[[int], list[Hit]], limit: int, files: int) -> list[Hit]:
    """``search(limit)``, fetched again four times as deep while its hits hold fewer than
    ``files`` distinct files and it returned all it was asked for (more may match): a few long
    files with many matching chunks do not use up a ranking (at most :data:`MAX_CANDIDATES`)."""
    while True:
        hits = search(limit)
        if len(hits) < limit or len({h.path for h in hits}) >= files or limit >= MAX_CANDIDATES:
            return hits
        limit = min(limit * 4, MAX_CANDIDATES)


def keep_files(
    fused: list[tuple[float, float, str, Hit]], top_k: int, files: int
) -> list[tuple[float, float, str, Hit]]:
    """The first ``top_k`` of ``fused``, then the best chunk of each further file in order until
    ``files`` distinct files are kept: ``--max-files N`` gets N files whenever N match."""
    kept: list[tuple[float, float, str, Hit]] = []
    seen: set[tuple[str, str]] = set()
    for item in fused:
        key = (item[2], item[3].path)
        if len(kept) < top_k or (key not in seen and len(seen) < files):
            kept.append(item)
            seen.add(key)
        elif len(seen) >= files:
            break
    return kept
