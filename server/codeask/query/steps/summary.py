"""Response transformer: condense the documents into one LLM summary the answer uses instead.

Like Swiftide's ``response_transformers::Summary``, but question-focused: the ``summary`` template
sees ``question`` (the question as asked) and ``documents`` (a list of ``{"content", "metadata"}``,
fitted to the model's context like the answer's, see :mod:`codeask.query.budget`), and keeps what
bears on the question with names and ``path:start-end`` references. The reply replaces ``query.current`` through ``query.transformed_response``, and the documents stay on
the query, so the answer's sources are still listed. :class:`~codeask.query.answer.SimpleAnswer`
then renders the summary into the ``answer`` template's ``documents`` instead of the documents.

Opt-in: ``summary.enabled`` (``codeask ask --summary``); skipped when no LLM is configured.
Secret files are never sent (same filter as the answer step). When the call fails, the error is
recorded on ``query.errors`` and the answer uses the documents.
"""

from __future__ import annotations

from codeask.llm import LLM, LLMError
from codeask.query.answer import safe_documents
from codeask.query.budget import Budget, budget_for, fit_documents
from codeask.query.pipeline import Document, Query
from codeask.query.templates import Templates, fence
from codeask.settings import Settings

__all__ = ["Summary"]


class Summary:
    """Asks ``llm`` for one summary of ``query.documents`` (template ``summary``).

    Args:
        llm: the chat model.
        templates: the :class:`~codeask.query.templates.Templates`.
        settings: for the secret-file filter and ``llm.max_tokens``.
    """

    name = "summary"

    def __init__(self, llm: LLM, templates: Templates, settings: Settings):
        self.llm = llm
        self.templates = templates
        self.settings = settings

    def prompt(self, query: Query, documents: list[Document] | None = None) -> str:
        """The ``summary`` template rendered with ``question`` and ``documents`` (``{"content",
        "metadata"}`` each; default the query's, secret files dropped).
        Raises :class:`~codeask.query.templates.TemplateError`."""
        docs = safe_documents(query.documents, self.settings, query.withheld) if documents is None else documents
        return self.templates.render(
            "summary",
            question=query.asked,
            documents=[{"content": fence(d.content), "metadata": d.metadata} for d in docs],
        )

    def fit(self, query: Query) -> tuple[str, Budget]:
        """The prompt with as many documents as fit the model's context (budget as for the answer)."""
        budget = budget_for(self.llm.context_tokens(), self.settings.llm.max_tokens)
        _, prompt, _ = fit_documents(
            safe_documents(query.documents, self.settings, query.withheld),
            lambda ds: self.prompt(query, ds),
            self.llm.count_tokens,
            budget.prompt,
        )
        return prompt, budget

    def __call__(self, query: Query) -> Query:
        if not query.documents:
            query.reordered(self.name, [], skipped="no documents")
            return query
        prompt, budget = self.fit(query)
        try:
            text = self.llm.complete(
                prompt, system=self.templates.system, max_tokens=budget.reply, cancel=query.cancel
            ).strip()
        except LLMError as exc:  # answer from the documents instead
            query.errors.append(str(exc))
            query.reordered(self.name, query.documents, error=str(exc))
            return query
        query.transformed_response(
            self.name, text, model=self.llm.describe(), documents=len(query.documents), prompt_chars=len(prompt)
        )
        return query
