"""Evaluation: question sets, retrieval metrics, a Ragas-style export and an LLM judge.

``codeask eval PATH --questions FILE`` (see :mod:`codeask.eval.cli` and docs/pipeline.md) runs
every question through the same pipeline as ``codeask ask``, records each question's retrieved
documents and answer with :class:`~codeask.eval.ragas.Ragas` (the seed's evaluator), writes the
dataset as JSON for the Python ragas toolkit, and scores file retrieval (recall@k, MRR) and,
with ``--judge-model``, faithfulness / answer recall / context recall.
"""

from codeask.eval.metrics import RetrievalScores, distinct_files, file_recall_at_k, reciprocal_rank
from codeask.eval.questions import EvalQuestion, load_questions
from codeask.eval.ragas import Ragas

__all__ = [
    "EvalQuestion",
    "load_questions",
    "Ragas",
    "RetrievalScores",
    "distinct_files",
    "file_recall_at_k",
    "reciprocal_rank",
]
