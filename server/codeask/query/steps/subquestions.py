"""Query transformer: widen the question into search queries that add words to it (LLM).

The model is asked for twice as many queries as are kept; candidates that are paraphrases of the
question or of an earlier candidate are dropped (:func:`distinct_queries`: cosine similarity of
their embeddings from the same model that embeds the chunks and the question), and the first
``num_questions`` distinct ones are kept, in the model's order. A paraphrase only repeats the
original question, which is always searched anyway, and takes a slot from a query that adds terms.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from codeask.index.embed import Embedder
from codeask.index.embed_process import EmbeddingError
from codeask.llm import LLM, LLMError
from codeask.query.pipeline import Query
from codeask.query.templates import Templates

__all__ = ["GenerateSubquestions", "distinct_queries", "parse_subquestions"]

#: Cosine similarity (of the embedding model's vectors) from which a generated search query is a
#: paraphrase of the question or of an earlier query, and is dropped. 0.8 lies between what the
#: built-in all-MiniLM-L6-v2 gives paraphrases (0.83-0.99 against the question or each other) and
#: queries that add identifiers or behaviour (0.31-0.64 against the question, up to 0.78 between two
#: queries naming the same function), measured on the pairs in ``tests/test_subquestions.py``.
SUBQUESTION_SIMILARITY = 0.8

_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+(.*\S)\s*$")
_MARKER = re.compile(r"^(?:[-*\u2022]|\d+[.)])\s+")
_QUOTES = "\"'`\u201c\u201d\u2018\u2019"


def _clean(item: str) -> str:
    """One query with what small models wrap it in removed: nested bullet markers (``- - "x"``),
    quotes and backticks around it, a trailing comma or semicolon."""
    text = item.strip()
    while True:
        before = text
        text = _MARKER.sub("", text).strip().rstrip(",;").strip().strip(_QUOTES).strip()
        if text == before:
            return text


def parse_subquestions(text: str, original: str, limit: int) -> list[str]:
    """The queries of ``text``, without the original, deduplicated, at most ``limit``.

    The template asks for one query per line starting with ``- ``; lines starting with ``* ``,
    ``\u2022 `` or ``1. `` are read the same way, nested markers and surrounding quotes are removed,
    and a reply that is a JSON list of strings (a common small-model answer) is read as that list.
    """
    items = [m.group(1) for line in text.splitlines() if (m := _BULLET.match(line))]
    if not items:
        try:
            parsed = json.loads(text.strip())
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            items = [x for x in parsed if isinstance(x, str)]
    seen = {original.strip().lower()}
    out: list[str] = []
    for item in items:
        q = _clean(item)
        if q and q.lower() not in seen:
            seen.add(q.lower())
            out.append(q)
    return out[:limit]


def distinct_queries(
    original: str, candidates: Sequence[str], vectors: np.ndarray, max_similarity: float
) -> tuple[list[str], list[dict[str, Any]]]:
    """Split ``candidates`` into those kept and those dropped as paraphrases, in order.

    Args:
        original: the question.
        candidates: the model's queries, best (first written) first.
        vectors: ``(1 + len(candidates), dim)`` float32 embeddings: the question's, then each candidate's.
        max_similarity: a candidate whose cosine similarity to the question or to a kept candidate
            is at least this is a paraphrase (:data:`SUBQUESTION_SIMILARITY`).

    Returns:
        ``(kept, dropped)``; each dropped entry is ``{"query", "like", "similarity"}`` (``like`` is the
        question or the kept query it paraphrases; ``similarity`` the cosine, rounded to 3 places).
    """
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1.0, norms)
    kept_rows = [0]
    texts = [original, *candidates]
    kept: list[str] = []
    dropped: list[dict[str, Any]] = []
    for i, text in enumerate(candidates, 1):
        sims = unit[kept_rows] @ unit[i]
        j = int(np.argmax(sims))
        if float(sims[j]) >= max_similarity:
            dropped.append({"query": text, "like": texts[kept_rows[j]], "similarity": round(float(sims[j]), 3)})
            continue
        kept_rows.append(i)
        kept.append(text)
    return kept, dropped


class GenerateSubquestions:
    """Asks the LLM for search queries (template ``subquestions``) and keeps ``num_questions`` distinct ones.

    With an ``embedder``, the model is asked for ``2 * num_questions`` queries and paraphrases are
    dropped (:func:`distinct_queries`, threshold ``max_similarity``); without one (or when the
    model cannot be loaded) the first ``num_questions`` are kept (``query.subquestions`` reads them);
    ``search_texts`` becomes the original question followed by them, and ``current`` their lines
    (``- question``), as Swiftide's ``GenerateSubquestions`` does. The step's event records
    ``questions`` and ``dropped``. When the LLM call fails, the error is recorded on
    ``query.errors`` and the search uses the original question alone.

    Args:
        llm: the model asked.
        templates: renders ``subquestions``.
        num_questions: queries kept.
        embedder: returns the shared :class:`~codeask.index.embed.Embedder` (called lazily), or ``None``.
        max_similarity: cosine similarity in ``[0, 1]`` from which a query counts as a paraphrase.
        deadline: seconds the call may take (a local model's share of the time budget), ``None``:
            no limit; a reply cut there keeps its whole lines, one with none searches the question alone.
    """

    name = "subquestions"

    def __init__(
        self,
        llm: LLM,
        templates: Templates,
        num_questions: int = 3,
        *,
        embedder: Callable[[], Embedder] | None = None,
        max_similarity: float = SUBQUESTION_SIMILARITY,
        deadline: float | None = None,
    ):
        self.llm = llm
        self.templates = templates
        self.num_questions = num_questions
        self.embedder = embedder
        self.max_similarity = max_similarity
        self.deadline = deadline

    def __call__(self, query: Query) -> Query:
        asked = 2 * self.num_questions if self.embedder is not None else self.num_questions
        prompt = self.templates.render("subquestions", question=query.asked, num_questions=asked)
        try:
            done = self.llm.generate(
                prompt, system=self.templates.system, max_tokens=400, cancel=query.cancel, deadline=self.deadline
            )
            reply = done.text if done.finish_reason != "deadline" else done.text.rpartition("\n")[0]
        except LLMError as exc:  # search with the original question alone
            query.errors.append(str(exc))
            query.transformed_query(self.name, query.current, error=str(exc))
            return query
        candidates = parse_subquestions(reply, query.asked, asked)
        dropped: list[dict[str, Any]] = []
        if self.embedder is not None and candidates:
            try:
                vectors = self.embedder().embed([query.asked, *candidates])
            except EmbeddingError as exc:  # keep the model's first ones
                query.errors.append(str(exc))
            else:
                candidates, dropped = distinct_queries(query.asked, candidates, vectors, self.max_similarity)
        subs = candidates[: self.num_questions]
        query.search_texts = [query.asked, *subs]
        query.transformed_query(
            self.name, "\n".join(f"- {q}" for q in query.search_texts), questions=subs, dropped=dropped
        )
        return query
