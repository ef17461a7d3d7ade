"""Evaluation: question sets, retrieval metrics, a Ragas-style export and an LLM judge.

``codeask eval PATH --questions FILE`` (see :mod:`codeask.eval.cli` and docs/pipeline.md) runs
every question through the same pipeline as ``codeask ask``, records each question's retrieved
documents and answer with :class:`~codeask.eval.ragas.Ragas` (the seed's evaluator), writes the
dataset as JSON for the Python ragas toolkit, and scores file retrieval (recall@k, MRR) and,
with ``--judge-model``, faithfulness / answer recall / context recall.
"""

import importlib

# Names are imported on first use, so that ``codeask --help`` (which adds the ``eval`` subcommand
# from codeask.eval.cli) does not import the evaluation code with its templates and YAML.
_WHERE = {
    "RetrievalScores": "metrics",
    "distinct_files": "metrics",
    "file_recall_at_k": "metrics",
    "reciprocal_rank": "metrics",
    "EvalQuestion": "questions",
    "load_questions": "questions",
    "Ragas": "ragas",
}


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(f"codeask.eval.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'codeask.eval' has no attribute {name!r}")


__all__ = [
    "EvalQuestion",
    "load_questions",
    "Ragas",
    "RetrievalScores",
    "distinct_files",
    "file_recall_at_k",
    "reciprocal_rank",
]
