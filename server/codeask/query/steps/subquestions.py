"""Query transformer: widen the question into the follow-up questions its answer involves (LLM)."""

from __future__ import annotations

import re

from codeask.llm import LLM, LLMError
from codeask.query.pipeline import Query
from codeask.query.templates import Templates

__all__ = ["GenerateSubquestions", "parse_subquestions"]

_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+(.*\S)\s*$")


def parse_subquestions(text: str, original: str, limit: int) -> list[str]:
    """The bulleted lines of ``text`` (``- ``, ``* ``, ``1. ``), without the original, deduplicated,
    at most ``limit``."""
    seen = {original.strip().lower()}
    out: list[str] = []
    for line in text.splitlines():
        m = _BULLET.match(line)
        if not m:
            continue
        q = m.group(1).strip().strip('"').strip()
        if q and q.lower() not in seen:
            seen.add(q.lower())
            out.append(q)
    return out[:limit]


class GenerateSubquestions:
    """Asks the LLM for ``num_questions`` follow-up questions (template ``subquestions``).

    Sets ``query.subquestions``; ``search_texts`` becomes the original question followed by them, and
    ``current`` their lines (``- question``), as Swiftide's ``GenerateSubquestions`` does. When the
    LLM call fails, the error is recorded on ``query.errors`` and the search uses the original
    question alone.
    """

    name = "subquestions"

    def __init__(self, llm: LLM, templates: Templates, num_questions: int = 3):
        self.llm = llm
        self.templates = templates
        self.num_questions = num_questions

    def __call__(self, query: Query) -> Query:
        prompt = self.templates.render("subquestions", question=query.original, num_questions=self.num_questions)
        try:
            reply = self.llm.complete(prompt, system=self.templates.system, max_tokens=400, cancel=query.cancel)
        except LLMError as exc:  # search with the original question alone
            query.errors.append(str(exc))
            query.transformed_query(self.name, query.current, error=str(exc))
            return query
        subs = parse_subquestions(reply, query.original, self.num_questions)
        query.subquestions = subs
        query.search_texts = [query.original, *subs]
        query.transformed_query(self.name, "\n".join(f"- {q}" for q in query.search_texts), questions=subs)
        return query
