"""An LLM judge modelled on the ragas metrics (as the seed's docs-qa judge), with structured output.

For each question the judge splits the answer and the ground truth into claims
(:class:`Claims`), then checks each claim against a reference (:class:`Verdicts`):

* ``faithfulness``: share of the answer's claims that the documents the answer generator saw
  support (after rerank / one_per_file: what the LLM saw, ``ctx`` in the table);
* ``answer_recall``: share of the ground truth's claims that the answer states;
* ``context_recall``: share of the ground truth's claims that those documents support.

Recalls are ``None`` without a ground truth; faithfulness is ``None`` when the answer has no
claims. Every call goes through :meth:`codeask.llm.LLM.structured` (pydantic models, every field
required, no extra keys). A reply that is cut off (finish reason ``length``), does not validate, or
gives a verdict count other than the claim count raises: ``codeask eval`` reports that row as a
judge error and leaves it out of the means; it is never scored.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from codeask.llm import LLM, LLMError

__all__ = ["Claims", "Verdict", "Verdicts", "Judge", "JudgeError", "JudgeScores"]

_MAX_CONTEXT_CHARS = 24000


# Every field is required and no other key is allowed: a reply that is only part of the expected
# object (an inner verdict picked out of a cut-off reply) must fail validation, never read as an
# empty list (which would score 0.0 or "no claims").


class Claims(BaseModel):
    """The atomic factual claims of a text."""

    model_config = ConfigDict(extra="forbid")
    claims: list[str] = Field(description="One self-contained factual claim per item")


class Verdict(BaseModel):
    """Whether the reference supports one claim, with a short reason."""

    model_config = ConfigDict(extra="forbid")
    claim: str
    supported: bool = Field(description="Whether the reference supports (states) the claim")
    reason: str


class Verdicts(BaseModel):
    """One verdict per claim, in the order of the claims."""

    model_config = ConfigDict(extra="forbid")
    verdicts: list[Verdict]


class JudgeError(LLMError):
    """The judge's reply cannot be scored: it was cut off, is not the expected JSON, or gives a
    different number of verdicts than there are claims. The row is an error, never a score."""


SPLIT_PROMPT = """Split the text below into short, self-contained factual claims. Each claim must be
understandable on its own (replace pronouns with the names they refer to). Leave out greetings,
hedges and statements that make no factual claim.

Question the text answers: {question}

Text:
{text}
"""

CHECK_PROMPT = """For each claim, decide whether the reference supports it: true only if the
reference states it or it follows directly from the reference. Return one verdict per claim, in
the same order, repeating the claim.

Reference:
{reference}

Claims:
{claims}
"""


@dataclass
class JudgeScores:
    """The judge's scores for one answer: each a share in ``[0, 1]``, or ``None`` (recalls without a
    ground truth, faithfulness when the answer has no claims)."""

    faithfulness: float | None
    answer_recall: float | None
    context_recall: float | None

    def to_json(self) -> dict[str, float | None]:
        """``{"faithfulness", "answer_recall", "context_recall"}``: ``float`` in ``[0, 1]`` or ``None``."""
        return {
            "faithfulness": self.faithfulness,
            "answer_recall": self.answer_recall,
            "context_recall": self.context_recall,
        }


class Judge:
    """Scores answers with ``llm`` via :meth:`~codeask.llm.LLM.structured`, using this module's
    :data:`SPLIT_PROMPT` (claims) and :data:`CHECK_PROMPT` (verdicts).

    Every method that calls the model raises :class:`~codeask.llm.LLMError` when the call fails.
    """

    def __init__(self, llm: LLM):
        self.llm = llm

    def claims(self, question: str, text: str) -> list[str]:
        """The claims of ``text`` (one :data:`SPLIT_PROMPT` call, ``question`` as context), stripped, empty
        ones dropped; ``[]`` without a call when ``text`` is blank. Raises :class:`~codeask.llm.LLMError`."""
        if not text.strip():
            return []
        reply = self.llm.structured(SPLIT_PROMPT.format(question=question, text=text), Claims)
        return [c.strip() for c in reply.claims if isinstance(c, str) and c.strip()]

    def supported_share(self, claims: list[str], reference: str) -> float | None:
        """Share in ``[0, 1]`` of ``claims`` that ``reference`` supports: one :data:`CHECK_PROMPT` call with
        ``reference`` cut to its first 24000 characters; verdicts match claims by position. ``None``
        without a call when ``claims`` is empty.

        Raises:
            JudgeError: the reply holds a different number of verdicts than ``claims``.
            LLMError: the call failed, or its reply was cut off (finish reason ``length``) or does not
                validate as :class:`Verdicts`.
        """
        if not claims:
            return None
        listed = "\n".join(f"{i}. {c}" for i, c in enumerate(claims, 1))
        reply = self.llm.structured(
            CHECK_PROMPT.format(reference=reference[:_MAX_CONTEXT_CHARS] or "(empty)", claims=listed), Verdicts
        )
        if len(reply.verdicts) != len(claims):
            raise JudgeError(
                f"{self.llm.describe()}: judge gave {len(reply.verdicts)} verdicts for {len(claims)} claims",
                provider=getattr(self.llm, "provider", None),
                model=getattr(self.llm, "model", None),
            )
        return sum(1 for v in reply.verdicts if v.supported) / len(claims)

    def score(self, question: str, answer: str, ground_truth: str, contexts: list[str]) -> JudgeScores:
        """The :class:`JudgeScores` of ``answer``; ``contexts`` (chunk texts) are joined with ``---`` lines.

        At most 5 LLM calls (2 when ``ground_truth`` is blank). Raises :class:`~codeask.llm.LLMError`.
        """
        context = "\n---\n".join(contexts)
        answer_claims = self.claims(question, answer)
        faithfulness = self.supported_share(answer_claims, context)
        answer_recall = context_recall = None
        if ground_truth.strip():
            truth_claims = self.claims(question, ground_truth)
            answer_recall = self.supported_share(truth_claims, answer)
            context_recall = self.supported_share(truth_claims, context)
        return JudgeScores(faithfulness, answer_recall, context_recall)
