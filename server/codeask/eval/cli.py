"""``codeask eval PATH --questions FILE``: run a question set through the ask pipeline and score it.

Steps: load the questions (JSON array, JSONL or YAML; duplicates rejected), bring the index up to
date (like ``ask``), run every question through the same pipeline as ``codeask ask`` on a bounded
thread pool (``--concurrency``, default 4) with a :class:`~codeask.eval.ragas.Ragas` evaluator
attached, write the dataset (``--out``, default ``ragas.json``) in the order of the questions
file, then print the scores (a table, or one JSON object with ``--json``).

With ``--judge-model`` each answer is scored by :class:`~codeask.eval.judge.Judge`; a judge reply
that fails (cut off, not the expected JSON) makes that row an error (``"error": "judge: ..."``, a
stderr line, exit code 1), left out of the means, never a score. ``"judge"`` in the JSON names the
judge ``model`` and counts the rows ``scored`` and the judge ``errors``; the table prints them.

Retrieval metrics (rows with ``expected_files``/``gold_files``) rank the DISTINCT files of the
documents as retrieved, before ``one_per_file`` caps them at ``max_files`` and before rerank
(``--rank-from final`` ranks the documents the answer saw instead, e.g. to measure rerank). So
that at least 10 files are ranked, ``--no-llm`` runs retrieve ``max(retrieval.top_k, 50)`` chunks
unless ``--top-k`` is given; LLM runs keep ``retrieval.top_k`` (the contexts are exported).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeask.console import folder_arg, positive_int

if TYPE_CHECKING:  # the command's parser is built at every start: the engine is imported when it runs
    from codeask.eval.metrics import RetrievalScores
    from codeask.eval.questions import EvalQuestion
    from codeask.eval.ragas import Ragas
    from codeask.llm import LLM
    from codeask.query.options import RetrievalOptions
    from codeask.query.pipeline import Pipeline
    from codeask.workspace import Workspace

#: ``progress(json_output)`` -> context manager yielding a ``Progress`` callback (:meth:`codeask.console.IndexProgress.for_command`).
ProgressFactory = Callable[[bool], AbstractContextManager[Any]]

__all__ = ["add_eval_parser", "run_eval", "NO_LLM_TOP_K"]

#: Chunks retrieved per question by ``--no-llm`` runs (enough to rank >= 10 distinct files).
NO_LLM_TOP_K = 50


def add_eval_parser(subparsers, progress: ProgressFactory | None = None) -> argparse.ArgumentParser:
    """Add the ``eval`` subcommand to ``subparsers`` (an argparse sub-parsers action) and return its parser.

    Defaults: ``--out ragas.json``, ``--concurrency 4``, ``--rank-from retrieved``. ``progress`` shows
    the indexing before the questions run (see :func:`run_eval`); :mod:`codeask.cli` passes its own.
    """

    p = subparsers.add_parser("eval", help="run a question set and score retrieval and answers")
    p.add_argument("path", type=folder_arg, help="workspace folder")
    p.add_argument(
        "--questions",
        required=True,
        type=Path,
        metavar="FILE",
        help="JSON array, JSONL or YAML rows: question (or query), ground_truth, expected_files (or gold_files)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path("ragas.json"),
        metavar="FILE",
        help="where to write the Ragas dataset (default ragas.json)",
    )
    p.add_argument("--record-ground-truth", action="store_true", help="copy each answer into its ground_truth")
    p.add_argument("--judge-model", metavar="M", help="score answers with this LLM (the configured provider)")
    p.add_argument("--no-llm", action="store_true", help="no LLM: retrieval only, ranked sources as answers")
    p.add_argument("--json", action="store_true", help="print the scores as one JSON object")
    p.add_argument("--top-k", type=positive_int, help="chunks retrieved per question")
    p.add_argument(
        "--max-files",
        type=positive_int,
        help="files kept for the answer (each with up to 3 spans)",
    )
    p.add_argument("--concurrency", type=positive_int, default=4, help="questions run at once (default 4)")
    p.add_argument(
        "--rank-from",
        choices=["retrieved", "final"],
        default="retrieved",
        help="rank files from the retrieved documents (default) or those the answer saw",
    )
    p.set_defaults(handler=functools.partial(_handler, progress=progress))
    return p


def _handler(args, progress: ProgressFactory | None = None) -> int:
    result = run_eval(args, progress)
    return result["exit_code"]


def _short(text: str, width: int = 52) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "\u2026"


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _mean(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def run_eval(args, progress: ProgressFactory | None = None) -> dict[str, Any]:
    """Run ``codeask eval`` for parsed ``args``; returns the summary (plus ``exit_code``).

    ``progress(json_output)`` is a context manager yielding the indexing progress callback (e.g.
    :meth:`codeask.console.IndexProgress.for_command`), entered with ``args.json``; None shows none.
    """
    from codeask.eval.questions import load_questions
    from codeask.eval.ragas import Ragas
    from codeask.query.options import RetrievalOptions
    from codeask.workspace import Workspace

    questions = load_questions(args.questions)
    flags = {"retrieval.max_files": args.max_files}
    ws = Workspace([args.path], flags=flags, background_indexing=False)  # the user waits for it
    settings = ws.settings
    judge_llm = _judge_llm(ws, args.judge_model) if args.judge_model else None
    with progress(args.json) if progress is not None else contextlib.nullcontext() as report:
        ws.index(progress=report)

    llm = None if args.no_llm else ws.llm()
    top_k = args.top_k or (max(settings.retrieval.top_k, NO_LLM_TOP_K) if llm is None else None)
    ragas = Ragas([(q.question, q.ground_truth) for q in questions], settings=settings)
    pipeline = ws.build_pipeline(llm=llm)
    pipeline.evaluators = [*pipeline.evaluators, ragas]
    options = RetrievalOptions(top_k=top_k, max_files=args.max_files)
    errors = _run_questions(pipeline, [q.question for q in questions], options, args.concurrency)
    retrieval, per_question = _retrieval_rows(questions, ragas, args.rank_from, errors)
    if args.record_ground_truth:
        ragas.record_answers_as_ground_truth()
    judge_summary = None
    if judge_llm is not None:
        judge_summary = _judge_all(judge_llm, questions, ragas, errors, per_question, args.concurrency)

    out = Path(args.out)
    if out.parent and not out.parent.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(ragas.to_json() + "\n", encoding="utf-8")

    summary: dict[str, Any] = {
        "questions": len(questions),
        "retrieval": retrieval.mean(),
        "judge": judge_summary,
        "with_expected_files": sum(1 for q in questions if q.expected_files),
        "llm": llm.describe() if llm is not None else None,
        "top_k": top_k or settings.retrieval.top_k,
        "rank_from": args.rank_from,
        "out": str(out),
        "errors": len(errors),
        "per_question": per_question,
    }
    if args.json:
        print(json.dumps(summary, ensure_ascii=False))
    else:
        _print_table(summary, judge_llm is not None)
    for question, error in errors.items():
        print(f"codeask: {_short(question, 60)}: {error}", file=sys.stderr)
    summary["exit_code"] = 1 if errors else 0
    return summary


def _judge_llm(ws: Workspace, model: str) -> LLM:
    """The configured provider's LLM with ``model``, for ``--judge-model``.

    Raises:
        ValueError: no LLM provider is configured (no key, no ``llm.base_url``).
    """
    from codeask.llm import make_llm

    resolved = ws.settings.resolved_llm()
    if resolved is None:
        raise ValueError(
            "--judge-model needs an LLM provider: set OPENAI_API_KEY or ANTHROPIC_API_KEY, or llm.base_url"
        )
    return make_llm(dataclasses.replace(resolved, model=model), ws.settings.llm)


def _run_questions(
    pipeline: Pipeline, questions: list[str], options: RetrievalOptions, concurrency: int
) -> dict[str, str]:
    """Run every question through ``pipeline`` on ``concurrency`` threads; ``{question: error}``
    for those whose LLM call failed (the others' rows are on the pipeline's evaluators)."""
    from codeask.imports import preload
    from codeask.llm import LLMError
    from codeask.query.pipeline import Query

    errors: dict[str, str] = {}

    def run_one(question: str) -> None:
        try:
            pipeline.run(Query(question, options=options))
        except LLMError as exc:
            errors[question] = str(exc)

    preload()  # no first import of a heavy module in the pool's threads (see codeask.imports)
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(run_one, questions))
    return errors


def _retrieval_rows(
    questions: list[EvalQuestion], ragas: Ragas, rank_from: str, errors: dict[str, str]
) -> tuple[RetrievalScores, list[dict[str, Any]]]:
    """The retrieval scores of every question (files ranked from the documents as retrieved, or
    as the answer saw them with ``rank_from="final"``) and one summary row per question."""
    from codeask.eval.metrics import RetrievalScores, distinct_files

    retrieval = RetrievalScores()
    per_question: list[dict[str, Any]] = []
    for q in questions:
        docs = ragas.retrieved(q.question) if rank_from == "retrieved" else ragas.final_documents(q.question)
        scores = retrieval.add(distinct_files(d.path for d in docs), q.expected_files)
        per_question.append(
            {
                "question": q.question,
                "id": q.id,
                "contexts": len(ragas.retrieved(q.question)),
                "ctx": len(ragas.final_documents(q.question)),
                "retrieval": scores,
                "error": errors.get(q.question),
            }
        )
    return retrieval, per_question


def _judge_all(
    judge_llm: LLM,
    questions: list[EvalQuestion],
    ragas: Ragas,
    errors: dict[str, str],
    per_question: list[dict[str, Any]],
    concurrency: int,
) -> dict[str, float | str | None]:
    """Score every answered question with :class:`~codeask.eval.judge.Judge` (``"judge"`` and
    ``"error"`` set on its row of ``per_question``; a failed judge reply goes on ``errors`` as
    ``"judge: ..."``); returns the means, the judge ``model`` and the ``scored`` and ``errors`` counts."""
    from codeask.eval.judge import Judge
    from codeask.llm import LLMError

    judge = Judge(judge_llm)
    rows = {r["question"]: r for r in ragas.rows()}

    def score_one(q: EvalQuestion) -> dict[str, Any] | None:
        row = rows[q.question]
        if q.question in errors:
            return None
        contexts = [d.content for d in ragas.final_documents(q.question)]
        try:
            return judge.score(q.question, row["answer"], row["ground_truth"], contexts).to_json()
        except LLMError as exc:
            errors[q.question] = f"judge: {exc}"
            return None

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        judged = list(pool.map(score_one, questions))
    for item, scores in zip(per_question, judged):
        item["judge"] = scores
        item["error"] = errors.get(item["question"])
    keys = ("faithfulness", "answer_recall", "context_recall")
    summary: dict[str, float | str | None] = {k: _mean([s[k] for s in judged if s]) for k in keys}
    summary["model"] = judge_llm.describe()
    summary["scored"] = sum(1 for s in judged if s)
    summary["errors"] = sum(1 for e in errors.values() if e.startswith("judge: "))
    return summary


def _print_table(summary: dict[str, Any], judged: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    has_retrieval = summary["retrieval"] is not None
    table = Table(box=None, pad_edge=False, show_edge=False)
    table.add_column("#", justify="right")
    table.add_column("question")
    table.add_column("ctx", justify="right")
    if has_retrieval:
        for name in ("R@1", "R@5", "R@10", "RR"):
            table.add_column(name, justify="right")
    if judged:
        table.add_column("faithful", justify="right")
        table.add_column("answer\nrecall", justify="right")
        table.add_column("context\nrecall", justify="right")
    for i, row in enumerate(summary["per_question"], 1):
        cells = [str(i), _short(row["question"]), str(row["ctx"])]
        if has_retrieval:
            r = row["retrieval"] or {}
            cells += [_fmt(r.get("recall@1")), _fmt(r.get("recall@5")), _fmt(r.get("recall@10")), _fmt(r.get("mrr"))]
        if judged:
            j = row.get("judge") or {}
            cells += [_fmt(j.get("faithfulness")), _fmt(j.get("answer_recall")), _fmt(j.get("context_recall"))]
        table.add_row(*cells)
    mean = ["", "mean", ""]
    if has_retrieval:
        r = summary["retrieval"]
        mean += [_fmt(r["recall@1"]), _fmt(r["recall@5"]), _fmt(r["recall@10"]), _fmt(r["mrr"])]
    if judged:
        j = summary["judge"]
        mean += [_fmt(j["faithfulness"]), _fmt(j["answer_recall"]), _fmt(j["context_recall"])]
    table.add_row(*mean, style="bold")
    console.print(table)
    console.print()
    if judged:
        j = summary["judge"]
        line = f"Judge: {j['model']}; {j['scored']} of {summary['questions']} answers scored"
        if j["errors"]:
            line += f"; {j['errors']} judge errors (listed below), left out of the means"
        console.print(line, highlight=False, markup=False)
    console.print(f"RAGAS dataset written to {summary['out']}", highlight=False)
