"""Question sets for ``codeask eval``: JSON (an array), JSONL or YAML.

Each row is an object with ``question`` (alias ``query``), optional ``ground_truth``, optional
``expected_files`` (alias ``gold_files``: workspace-relative paths) and optional ``id``; a row may
also be a bare string (a question without ground truth). So ``shared/eval/*.jsonl`` rows
(``query`` + ``gold_files``) and a ``ragas.json`` export (``question`` + ``ground_truth``) both
load as they are. Questions must be unique (rows are matched back by question text).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeask.lines import split_lines

__all__ = ["EvalQuestion", "QuestionsError", "load_questions", "parse_questions"]


class QuestionsError(ValueError):
    """The questions file cannot be read or has invalid or duplicate rows."""


@dataclass
class EvalQuestion:
    """One row of a question set: ``question``, ``ground_truth`` (``""`` when absent),
    ``expected_files`` (workspace-relative paths) and an optional ``id``."""

    question: str
    ground_truth: str = ""
    expected_files: list[str] = field(default_factory=list)
    id: str | None = None


def _rows(text: str, suffix: str) -> list[Any]:
    suffix = suffix.lower()
    if suffix in (".yaml", ".yml"):
        import yaml

        data = yaml.safe_load(text)
        if isinstance(data, dict):
            data = data.get("questions", data)
        if not isinstance(data, list):
            raise QuestionsError("a YAML questions file must be a list of rows (or have a 'questions' list)")
        return data
    stripped = text.lstrip()
    if suffix == ".json" or stripped.startswith("["):
        try:
            data = json.loads(text)
        except ValueError as exc:
            if suffix == ".json":
                raise QuestionsError(f"invalid JSON: {exc}") from exc
        else:
            if isinstance(data, dict):
                data = data.get("questions", [data])
            if not isinstance(data, list):
                raise QuestionsError("a JSON questions file must be an array of rows")
            return data
    rows = []
    for n, line in enumerate(split_lines(text), 1):  # a JSON string may hold a raw U+2028
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError as exc:
            raise QuestionsError(f"line {n}: invalid JSON: {exc}") from exc
    return rows


def parse_questions(rows: list[Any]) -> list[EvalQuestion]:
    """Rows -> questions, in order.

    Raises:
        QuestionsError: a row without a question, a wrong type, or duplicate questions (named).
    """
    out: list[EvalQuestion] = []
    for n, row in enumerate(rows, 1):
        if isinstance(row, str):
            row = {"question": row}
        if not isinstance(row, dict):
            raise QuestionsError(f"row {n}: expected an object or a string, got {type(row).__name__}")
        question = row.get("question", row.get("query"))
        if not isinstance(question, str) or not question.strip():
            raise QuestionsError(f"row {n}: missing 'question' (or 'query')")
        gt = row.get("ground_truth") or ""
        if not isinstance(gt, str):
            raise QuestionsError(f"row {n}: 'ground_truth' must be a string")
        files = row.get("expected_files", row.get("gold_files")) or []
        if isinstance(files, str):
            files = [files]
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise QuestionsError(f"row {n}: 'expected_files' must be a list of paths")
        rid = row.get("id")
        out.append(
            EvalQuestion(
                question.strip(),
                gt,
                [f.strip()[2:] if f.strip().startswith("./") else f.strip() for f in files],
                str(rid) if rid is not None else None,
            )
        )
    seen: dict[str, int] = {}
    dups: list[str] = []
    for q in out:
        seen[q.question] = seen.get(q.question, 0) + 1
        if seen[q.question] == 2:
            dups.append(q.question)
    if dups:
        shown = "; ".join(repr(d if len(d) <= 80 else d[:77] + "...") for d in dups[:5])
        more = f" and {len(dups) - 5} more" if len(dups) > 5 else ""
        raise QuestionsError(f"duplicate questions (each question must be unique): {shown}{more}")
    return out


def load_questions(path: Path | str) -> list[EvalQuestion]:
    """Read a questions file (format from the suffix: ``.json``, ``.jsonl``, ``.yaml``/``.yml``).

    Raises:
        QuestionsError: unreadable, invalid, empty or with duplicate questions.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise QuestionsError(f"{path}: {exc.strerror or exc}") from exc
    try:
        questions = parse_questions(_rows(text, path.suffix))
    except QuestionsError as exc:
        raise QuestionsError(f"{path}: {exc}") from exc
    if not questions:
        raise QuestionsError(f"{path}: no questions")
    return questions
