"""Pipeline steps, one per module: each a small callable ``step(query) -> query`` with a ``name``.

Query transformers: :class:`GenerateSubquestions`, :class:`ParseQuestion`, :class:`EmbedQuery`. Retriever:
:class:`HybridRetrieve`. Response transformers: :class:`OnePerFile` (and, in their own modules,
rerank and summary).
"""

from codeask.query.steps.embed import EmbedQuery
from codeask.query.steps.one_per_file import OnePerFile
from codeask.query.steps.parse import ParseQuestion
from codeask.query.steps.retrieve import HybridRetrieve
from codeask.query.steps.subquestions import GenerateSubquestions, parse_subquestions

__all__ = ["EmbedQuery", "GenerateSubquestions", "HybridRetrieve", "OnePerFile", "ParseQuestion", "parse_subquestions"]
