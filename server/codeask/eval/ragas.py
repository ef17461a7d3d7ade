"""The Ragas evaluator and dataset export (Swiftide's ``evaluators::Ragas``).

An evaluator called twice per question by the pipeline: at ``"retrieved"`` it records the contents
of the documents as retrieved (``query.retrieved_documents``, before any response transformer:
rerank and one_per_file do not change them) as the question's ``contexts``; at ``"answered"`` it
records the answer. Rows are matched by ``query.original``; a query whose question is not in the
dataset fails with ``Question not found``. Thread-safe, so questions can run concurrently.

``to_json()`` is a pretty JSON array (``indent=2``, keys sorted) of
``{"answer", "contexts", "ground_truth", "question"}`` in the order of the questions file.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from typing import Any

from codeask.query.answer import safe_documents
from codeask.query.pipeline import Document, Query
from codeask.settings import Settings

__all__ = ["Ragas", "QuestionNotFound"]


class QuestionNotFound(KeyError):
    """The evaluator saw a query whose ``original`` question is not in the dataset."""


class Ragas:
    """The Ragas evaluator and its dataset: one row per question, filled in at ``"retrieved"`` and
    ``"answered"`` (see the module docstring).

    Raises:
        ValueError: a question appears twice in ``questions`` (plain strings or ``(question, ground_truth)``).
        QuestionNotFound: when called with a query whose question is not in the dataset.
    """

    name = "ragas"

    def __init__(self, questions: Iterable[tuple[str, str]] | Iterable[str], settings: Settings | None = None):
        """``questions``: strings or ``(question, ground_truth)`` pairs; with ``settings``, secret files
        are dropped from the recorded documents (the export goes to an external LLM toolkit)."""
        self._settings = settings
        self._lock = threading.Lock()
        self._rows: dict[str, dict[str, Any]] = {}
        self._documents: dict[str, list[Document]] = {}
        self._final: dict[str, list[Document]] = {}
        for item in questions:
            question, truth = (item, "") if isinstance(item, str) else item
            if question in self._rows:
                raise ValueError(f"duplicate question: {question!r}")
            self._rows[question] = {"question": question, "answer": "", "contexts": [], "ground_truth": truth or ""}

    @classmethod
    def parse(cls, text: str) -> Ragas:
        """Load an export (keeps its ground truths; answers and contexts are overwritten by a run)."""
        rows = json.loads(text)
        ragas = cls([(r["question"], r.get("ground_truth") or "") for r in rows])
        for r in rows:
            ragas._rows[r["question"]]["answer"] = r.get("answer") or ""
            ragas._rows[r["question"]]["contexts"] = list(r.get("contexts") or [])
        return ragas

    def questions(self) -> list[Query]:
        """One new :class:`~codeask.query.pipeline.Query` per dataset question, in dataset order."""
        return [Query(q) for q in self._rows]

    def _row(self, query: Query) -> dict[str, Any]:
        row = self._rows.get(query.original)
        if row is None:
            raise QuestionNotFound(f"Question not found: {query.original!r}")
        return row

    def __call__(self, stage: str, query: Query) -> None:
        with self._lock:
            row = self._row(query)
            if stage == "retrieved":
                docs = self._safe(query.retrieved_documents)
                self._documents[query.original] = docs
                row["contexts"] = [d.content for d in docs]
            elif stage == "answered":
                row["answer"] = query.answer or ""
                self._final[query.original] = self._safe(query.documents)

    def _safe(self, documents: list[Document]) -> list[Document]:
        return safe_documents(list(documents), self._settings) if self._settings else list(documents)

    def retrieved(self, question: str) -> list[Document]:
        """The documents recorded as retrieved for ``question`` (empty before the run)."""
        return list(self._documents.get(question, []))

    def final_documents(self, question: str) -> list[Document]:
        """The documents the answer generator saw (after response transformers)."""
        return list(self._final.get(question, []))

    def record_answers_as_ground_truth(self) -> None:
        """Copy each row's current ``answer`` into its ``ground_truth`` (``--record-ground-truth``)."""
        with self._lock:
            for row in self._rows.values():
                row["ground_truth"] = row["answer"]

    def rows(self) -> list[dict[str, Any]]:
        """Copies of the rows ``{"question", "answer", "contexts", "ground_truth"}``, in dataset order."""
        with self._lock:
            return [dict(r, contexts=list(r["contexts"])) for r in self._rows.values()]

    def to_json(self) -> str:
        """The rows as a pretty JSON array (``indent=2``, keys sorted, non-ASCII kept as is)."""
        return json.dumps(self.rows(), indent=2, sort_keys=True, ensure_ascii=False)
