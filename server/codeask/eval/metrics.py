"""File-level retrieval metrics, as in shared/eval/README.md.

The ranking is the list of DISTINCT files of the documents, in document order (first occurrence).
``file recall@k`` = share of the gold files among the top ``k`` distinct files; the reciprocal rank
is ``1 / rank`` of the first gold file (0 when none is ranked); MRR is its mean.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = ["distinct_files", "file_recall_at_k", "reciprocal_rank", "RetrievalScores", "KS"]

KS = (1, 5, 10)


def distinct_files(paths: Iterable[str]) -> list[str]:
    """Paths in first-occurrence order, each once."""
    seen: set[str] = set()
    out = []
    for p in paths:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def file_recall_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Share in ``[0, 1]`` of the distinct ``gold`` paths among the first ``k`` of ``ranked``; ``0.0``
    when ``gold`` is empty."""
    gold = set(gold)
    if not gold:
        return 0.0
    return len(gold & set(ranked[:k])) / len(gold)


def reciprocal_rank(ranked: Sequence[str], gold: Iterable[str]) -> float:
    """``1 / rank`` (1-based) of the first path of ``ranked`` that is in ``gold``; ``0.0`` when none is."""
    gold = set(gold)
    for i, p in enumerate(ranked, 1):
        if p in gold:
            return 1.0 / i
    return 0.0


@dataclass
class RetrievalScores:
    """Per-question scores and their means over the questions that have expected files."""

    rows: list[dict[str, float] | None] = field(default_factory=list)

    def add(self, ranked: Sequence[str], gold: Sequence[str]) -> dict[str, float] | None:
        """Score one question and append its row ``{"recall@1", "recall@5", "recall@10", "mrr"}`` (``k``
        from :data:`KS`); without ``gold`` files ``None`` is appended and returned."""
        if not gold:
            self.rows.append(None)
            return None
        row = {f"recall@{k}": file_recall_at_k(ranked, gold, k) for k in KS}
        row["mrr"] = reciprocal_rank(ranked, gold)
        self.rows.append(row)
        return row

    def mean(self) -> dict[str, float] | None:
        """Each score averaged over the rows that are not ``None`` (keys as in :meth:`add`); ``None`` when
        no row has scores."""
        rows = [r for r in self.rows if r is not None]
        if not rows:
            return None
        return {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}
