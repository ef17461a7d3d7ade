"""The ``Query`` a question becomes, and the pipeline that moves it from pending to answered.

A query's state is explicit, as in Swiftide's query pipeline: ``pending`` (query transformers
rewrite ``current``), ``retrieved`` (documents found; response transformers reorder, trim or
summarize them), ``answered`` (``answer`` set). Every step records an :class:`Event` on
``history``, so evaluation and debugging read the same record; the ``retrieve`` event keeps the
documents exactly as retrieved (before rerank), which evaluators record as contexts.

Steps are small callables ``step(query) -> query`` with a ``name`` attribute:

* query transformer: runs while pending (``subquestions``, ``embed``);
* retriever: pending -> retrieved;
* response transformer: runs while retrieved (``one_per_file``, ``rerank``, ``summary``);
* answer generator: retrieved -> answered;
* evaluator: ``evaluator(stage, query)`` called with ``"retrieved"`` and ``"answered"``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from codeask.llm.cancel import Cancelled, is_cancelled  # one type for "cancelled", between steps or mid-LLM-call
from codeask.query.digest import QuestionDigest
from codeask.query.options import RetrievalOptions
from codeask.query.report import QuestionParts
from codeask.uris import file_uri

__all__ = [
    "Document",
    "Event",
    "Query",
    "Pipeline",
    "Cancelled",
    "Step",
    "Evaluator",
    "file_uri",
    "per_file",
    "along_chain",
    "root_labels",
]


def root_labels(roots: Sequence[str | Path]) -> dict[str, str]:
    """What names each root in citation labels: ``{root: label}``.

    One root: ``""`` (labels are the workspace-relative path). Several roots: the root's folder
    name, or, for roots that share a name (``~/work/app`` and ``~/forks/app``), the shortest tail
    of its path that no other root ends with (``work/app``, ``forks/app``).
    """
    keys = [str(r) for r in roots]
    if len(keys) < 2:
        return {k: "" for k in keys}
    parts = {k: tuple(p for p in Path(k).parts if p not in ("/", "\\")) for k in keys}
    out: dict[str, str] = {}
    for key in keys:
        mine = parts[key]
        tail = mine
        for n in range(1, len(mine) + 1):
            tail = mine[-n:]
            if not any(other != key and parts[other][-n:] == tail for other in keys):
                break
        out[key] = "/".join(tail) or key
    return out


@dataclass
class Document:
    """One retrieved chunk.

    ``path`` is relative to ``root`` (POSIX); lines are 1-based inclusive; ``score`` is the fused
    retrieval score (or the rerank score after a rerank), higher is better; ``root_label`` names the
    root in labels when the workspace has several (:func:`root_labels`).
    """

    path: str
    root: str
    start_line: int
    end_line: int
    symbol: str
    language: str
    content: str
    score: float = 0.0
    id: str = ""
    root_label: str = ""
    extra: bool = False
    """A span the ``widen`` step added to its file's best span (:mod:`codeask.query.steps.widen`);
    the token budget drops these first."""
    via: str = ""
    """Why the ``neighbours`` step brought this document in: the graph edge it came along (``"calls send from
    a.py:560"``), ``""`` when retrieved; ``via_sure``: how sure it is (:mod:`codeask.query.resolve`)."""
    via_path: str = ""
    """The file (same root) the ``via`` edge came from; ``""`` when retrieved or for a name in the
    question. The prompt places the document after that file's (:func:`along_chain`)."""
    kind: str = "source"  # the file's kind (codeask.index.kinds)
    similar: list[str] = field(default_factory=list)
    """Labels of near-duplicate files folded into this one (``messages.fr.xlf`` into
    ``messages.de.xlf``: :mod:`codeask.query.steps.one_per_file`)."""
    via_sure: float = 0.0

    @classmethod
    def from_hit(cls, hit: Any, root: str, score: float, root_label: str = "") -> Document:
        """The document of a search hit (:class:`codeask.index.rows.Hit`) of ``root`` scored ``score``."""
        return cls(
            path=hit.path,
            root=root,
            start_line=hit.start_line,
            end_line=hit.end_line,
            symbol=hit.symbol,
            language=hit.language,
            content=hit.content,
            score=score,
            id=hit.id,
            root_label=root_label,
            kind=getattr(hit, "kind", "source"),
        )

    @property
    def label(self) -> str:
        """``path``, prefixed by ``root_label/`` in a workspace of several roots (``app/src/x.py``)."""
        return f"{self.root_label}/{self.path}" if self.root_label else self.path

    @property
    def abs_path(self) -> str:
        """``root / path`` as a string (native separators)."""
        return str(Path(self.root) / self.path)

    @property
    def uri(self) -> str:
        """``file:///abs/path#Lstart-Lend``."""
        return file_uri(self.abs_path, self.start_line, self.end_line)

    @property
    def metadata(self) -> dict[str, Any]:
        """What templates see as ``metadata``: path, label, root, uri, start_line, end_line, symbol,
        language, score (``label`` is ``path`` with the root's name when roots are several)."""
        return {
            "path": self.path,
            "label": self.label,
            "root": self.root,
            "uri": self.uri,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "symbol": self.symbol,
            "language": self.language,
            "score": self.score,
        }

    def key(self) -> tuple[str, str]:
        """``(root, path)``: the file this chunk belongs to (one source per file)."""
        return (self.root, self.path)


def per_file(documents: Sequence[Document]) -> list[list[Document]]:
    """``documents`` grouped by file (:meth:`Document.key`): files in the order of their first
    document, each file's documents in their order. One source per file is numbered this way in
    ``Sources:`` and in the answer without an LLM, so the two always agree."""
    groups: dict[tuple[str, str], list[Document]] = {}
    for d in documents:
        groups.setdefault(d.key(), []).append(d)
    return list(groups.values())


def along_chain(documents: Sequence[Document]) -> list[Document]:
    """``documents`` with each one a graph link brought in (``via_path``) moved right after the documents of the
    file its edge came from (and those added there before it), so a prompt reads along the call
    chain; the others keep their order. Only the prompt is reordered: sources stay ranked."""
    out = [d for d in documents if not d.via_path]
    for d in documents:
        if not d.via_path:
            continue
        at = max((i for i, x in enumerate(out) if x.path == d.via_path and x.root == d.root), default=-1)
        if at < 0:
            out.append(d)
            continue
        while at + 1 < len(out) and out[at + 1].via_path == d.via_path:
            at += 1
        out.insert(at + 1, d)
    return out


#: Where a :class:`Query` is: ``pending`` (asked) -> ``retrieved`` (has documents) -> ``answered``.
QueryState = Literal["pending", "retrieved", "answered"]
#: When an :class:`Evaluator` is called: after retrieval, then after the answer.
Stage = Literal["retrieved", "answered"]


@dataclass
class Event:
    """One step's record: its name, ``current`` before and after, documents, extra data, seconds."""

    step: str
    before: str
    after: str
    documents: list[Document] | None = None
    data: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class Query:
    """A question moving through the pipeline: what it was asked with (``original``, ``options``,
    ``parts``, ``digest``) and what it accumulates (``current``, documents, history, the answer and
    how its LLM call ended). Its :attr:`state` (``pending`` -> ``retrieved`` -> ``answered``) and
    :attr:`subquestions` are read from the history, not kept beside it.

    Attributes:
        original: the question as asked.
        current: the text the next step works on (subquestions, a summary, finally the answer).
        documents: retrieved documents, best first.
        history: one :class:`Event` per step.
        search_texts: what retrieval searches for (original first, then subquestions).
        embeddings: one ``(dim,)`` float32 vector per search text, once embedded.
        options: the question's knobs (:class:`~codeask.query.options.RetrievalOptions`: ``top_k``,
            ``max_files``, ``path_glob``, an explain's selection), frozen: set once by the front door.
        errors: LLM failures that steps recovered from (the query went on without that step's
            LLM call), one line each.
        parts: the question's stack frames, messages and search text (``parse_question`` step).
        digest: the question's bounded digest (:mod:`codeask.query.digest`), ``None`` when not made.
    """

    original: str
    current: str = ""
    documents: list[Document] = field(default_factory=list)
    history: list[Event] = field(default_factory=list)
    search_texts: list[str] = field(default_factory=list)
    embeddings: list[Any] = field(default_factory=list)
    answer: str | None = None
    options: RetrievalOptions = field(default_factory=RetrievalOptions)
    errors: list[str] = field(default_factory=list)
    withheld: list[Any] = field(default_factory=list)
    """:class:`~codeask.query.result.Withheld` entries: repository text kept from the LLM."""
    cancel: Any = field(default=None, repr=False, compare=False)
    """What :meth:`Pipeline.run` got as ``cancelled`` (a ``() -> bool``, ``threading.Event`` or
    :class:`~codeask.llm.CancelToken`); steps pass it to their LLM calls as ``cancel=``, so a
    cancellation aborts a running call (its connection is closed) instead of waiting for it."""
    finish_reason: str | None = None
    """How the answer's LLM call ended (``stop``, ``length``, ``incomplete``, ``error``); ``None`` without one."""
    cut_reason: str | None = None
    """Why the answer is cut off (``None`` when complete), in words for the reader."""
    prompt_documents: list[Document] | None = None
    """The documents the answer's prompt held, numbered in order (``[1]`` first): what its ``[n]`` cite."""
    parts: QuestionParts | None = None
    digest: QuestionDigest | None = None
    started: float = field(default_factory=time.monotonic, repr=False, compare=False)
    """``time.monotonic()`` when asked: a local model's time budget counts the whole ask from it."""

    def __post_init__(self) -> None:
        if not self.current:
            self.current = self.asked
        if not self.search_texts:
            self.search_texts = [self.asked]

    @property
    def asked(self) -> str:
        """The question as the search and the LLM get it: its digest when one was made, else the
        question as asked (steps that embed it or put it in a prompt read this, not ``original``)."""
        return self.digest.text if self.digest is not None else self.original

    @property
    def state(self) -> QueryState:
        """``answered`` once ``answer`` is set, ``retrieved`` once a step recorded documents (the
        retriever is the first), else ``pending``: read from what the query accumulated."""
        if self.answer is not None:
            return "answered"
        return "retrieved" if any(e.documents is not None for e in self.history) else "pending"

    @property
    def subquestions(self) -> list[str]:
        """The search queries the ``subquestions`` step added (its event's ``questions``), ``[]`` without it."""
        for event in self.history:
            if event.step == "subquestions" and "questions" in event.data:
                return list(event.data["questions"])
        return []

    # State changes, each recorded on history.
    def transformed_query(self, step: str, new_current: str, **data: Any) -> None:
        """A query transformer replaced ``current`` with ``new_current``; ``data`` goes on the event."""
        self.history.append(Event(step, self.current, new_current, data=data))
        self.current = new_current

    def retrieved(self, step: str, documents: Sequence[Document], **data: Any) -> None:
        """The retriever found ``documents`` (best first): they become ``documents``, state ``retrieved``."""
        self.history.append(Event(step, self.current, self.current, documents=list(documents), data=data))
        self.documents = list(documents)

    def transformed_response(self, step: str, new_current: str, **data: Any) -> None:
        """A response transformer produced text for the answer to use instead of the documents."""
        self.history.append(Event(step, self.current, new_current, documents=list(self.documents), data=data))
        self.current = new_current

    def reordered(self, step: str, documents: Sequence[Document], **data: Any) -> None:
        """A response transformer changed the documents only (``current`` stays)."""
        self.history.append(Event(step, self.current, self.current, documents=list(documents), data=data))
        self.documents = list(documents)

    def answered(self, step: str, text: str, **data: Any) -> None:
        """The answer generator produced ``text``: it becomes ``answer`` and ``current``, state ``answered``."""
        self.history.append(Event(step, self.current, text, data=data))
        self.answer = text
        self.current = text

    def retrieval_event(self) -> Event | None:
        """The ``retrieve`` step's event (``data``: ``defining``, ``rankings``...); ``None`` before it."""
        return next((event for event in self.history if event.step == "retrieve"), None)

    @property
    def retrieved_documents(self) -> list[Document]:
        """The documents as the retriever returned them (before any response transformer)."""
        event = self.retrieval_event()
        return event.documents if event is not None and event.documents is not None else self.documents

    @property
    def current_at_retrieval(self) -> str | None:
        """``current`` as the ``retrieve`` step left it, or ``None`` before retrieval."""
        event = self.retrieval_event()
        return event.after if event is not None else None

    @property
    def response_transformed(self) -> bool:
        """Whether a response transformer replaced ``current`` after retrieval (e.g. a summary)."""
        at = self.current_at_retrieval
        return at is not None and self.current != at


class Step(Protocol):
    """A pipeline step: a ``name`` and ``step(query) -> query``."""

    name: str

    def __call__(self, query: Query) -> Query: ...


class Evaluator(Protocol):
    """Called as ``evaluator(stage, query)`` with stage ``"retrieved"``, then ``"answered"``."""

    name: str

    def __call__(self, stage: Stage, query: Query) -> None: ...


ProgressFn = Callable[[str], None]


@dataclass
class Pipeline:
    """Query transformers -> retriever -> response transformers -> answer generator.

    ``run`` checks ``cancelled()`` before each step and reports each step's name to ``progress``.
    """

    query_transformers: list[Step]
    retriever: Step
    response_transformers: list[Step]
    answerer: Step
    evaluators: list[Evaluator] = field(default_factory=list)

    def run(
        self,
        query: Query,
        *,
        cancelled: Callable[[], bool] | None = None,
        progress: ProgressFn | None = None,
    ) -> Query:
        """Run every step on ``query`` and return it answered.

        ``cancelled`` is also handed to the steps (``query.cancel``) for their LLM calls.

        Raises:
            Cancelled: ``cancelled()`` returned true between steps or during an LLM call.
            Exception: whatever a step raises (template errors, ``LLMError``), unchanged.
        """
        if cancelled is not None:
            query.cancel = cancelled

        def step(s: Step) -> None:
            nonlocal query
            if cancelled is not None and is_cancelled(cancelled):
                raise Cancelled(f"cancelled before {s.name}")
            if progress is not None:
                progress(s.name)
            t0 = time.perf_counter()
            query = s(query)
            if query.history:
                query.history[-1].seconds = query.history[-1].seconds or (time.perf_counter() - t0)

        for s in self.query_transformers:
            step(s)
        step(self.retriever)
        for evaluator in self.evaluators:
            evaluator("retrieved", query)
        for s in self.response_transformers:
            step(s)
        step(self.answerer)
        for evaluator in self.evaluators:
            evaluator("answered", query)
        return query
