"""Response transformer: condense the documents into one LLM summary the answer uses instead.

Like Swiftide's ``response_transformers::Summary``: the ``summary`` template sees only
``documents`` (a list of ``{"content", "metadata"}``; the question is not in its context), the
reply replaces ``query.current`` through ``query.transformed_response``, and the documents stay on
the query, so the answer's sources are still listed. :class:`~codeask.query.answer.SimpleAnswer`
then renders the summary into the ``answer`` template's ``documents`` instead of the documents.

Opt-in: ``summary.enabled`` (``codeask ask --summary``); skipped when no LLM is configured.
Secret files are never sent (same filter as the answer step). When the call fails, the error is
recorded on ``query.errors`` and the answer uses the documents.
"""

from __future__ import annotations

from codeask.llm import LLM, LLMError
from codeask.query.answer import Templates, fence, safe_documents
from codeask.query.pipeline import Query
from codeask.settings import Settings

__all__ = ["Summary"]


class Summary:
    """Asks ``llm`` for one summary of ``query.documents`` (template ``summary``).

    Args:
        llm: the chat model.
        templates: the :class:`~codeask.query.answer.Templates`.
        settings: for the secret-file filter and ``llm.max_tokens``.
    """

    name = "summary"

    def __init__(self, llm: LLM, templates: Templates, settings: Settings):
        self.llm = llm
        self.templates = templates
        self.settings = settings

    def prompt(self, query: Query) -> str:
        """The ``summary`` template rendered with ``documents`` (``{"content", "metadata"}`` each; secret
        files dropped). Raises :class:`~codeask.query.answer.TemplateError`."""
        docs = safe_documents(query.documents, self.settings)
        return self.templates.render(
            "summary", documents=[{"content": fence(d.content), "metadata": d.metadata} for d in docs]
        )

    def __call__(self, query: Query) -> Query:
        if not query.documents:
            query.reordered(self.name, [], skipped="no documents")
            return query
        prompt = self.prompt(query)
        try:
            text = self.llm.complete(prompt, system=self.templates.system, max_tokens=self.settings.llm.max_tokens).strip()
        except LLMError as exc:  # answer from the documents instead
            query.errors.append(str(exc))
            query.reordered(self.name, query.documents, error=str(exc))
            return query
        query.transformed_response(
            self.name, text, model=self.llm.describe(), documents=len(query.documents), prompt_chars=len(prompt)
        )
        return query
