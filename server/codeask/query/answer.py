"""Templates, the answer step, and the ``Answer`` a caller gets back.

Templates are Jinja2 rendered in its immutable sandbox
(:class:`jinja2.sandbox.ImmutableSandboxedEnvironment`) with no loader: a template (which may come
from an untrusted ``.codeask.toml``) can read the values it is given but cannot reach Python
internals, change objects, or ``include``/``import``/``extends`` files; trying to is a
:class:`~codeask.settings.SettingsError` naming the template. Templates use ``StrictUndefined``: a template that reads a missing key fails with an
error naming it (``TemplateError: 'dict object' has no attribute 'no_such_key'``); guard optional
keys with Jinja2's ``default`` filter (``{{ metadata.title | default("") }}``). The defaults live in
``codeask/templates/*.j2``; users override them per name (``subquestions``, ``answer``,
``document``, ``rerank``, ``summary``, ``explain``) in ``.codeask.toml`` ``[templates]`` or editor
settings.

The answer step follows Swiftide's ``answers::Simple``: the prompt template sees ``question`` and
``original`` (the question as asked), ``current`` (what the search looked for) and ``documents``:
each document rendered with the document template and joined with ``---`` lines, or, when a
response transformer replaced ``current`` after retrieval (a summary), that text instead.

The sources of an :class:`Answer` come from the documents, never from the model's text.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from typing import Any

import jinja2
import jinja2.sandbox

from codeask.index.walk import is_secret
from codeask.lines import split_lines
from codeask.llm import LLM, ContextLengthError, LLMError
from codeask.query.budget import Budget, budget_for, drop_lowest, fit_documents
from codeask.query.citations import check_citations
from codeask.query.pipeline import Document, Query
from codeask.settings import TEMPLATE_NAMES, Settings, SettingsError, TemplateOutsideRoot
from codeask.uris import markdown_link

__all__ = [
    "Templates",
    "TemplateError",
    "SimpleAnswer",
    "NoLLMAnswer",
    "Answer",
    "Source",
    "render_documents",
    "safe_documents",
    "scrub",
    "Withheld",
    "fence",
    "NOTHING_FOUND",
]

NOTHING_FOUND = "No matching code was found for this question in the indexed workspace."
_SNIPPET_LINES = 8


class TemplateError(ValueError):
    """A template failed to parse or render; the message names the template and the missing key."""


class UnsafeTemplateError(TemplateError, SettingsError):
    """A template tried something the sandbox forbids (an unsafe attribute, ``include``, ``import``,
    ``extends``); a settings error naming the template."""


def sandbox() -> jinja2.sandbox.ImmutableSandboxedEnvironment:
    """The one Jinja2 environment every template renders in: the immutable sandbox, no loader
    (so no file can be included), ``StrictUndefined``, no autoescape (prompts are not HTML)."""
    return jinja2.sandbox.ImmutableSandboxedEnvironment(
        undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True, loader=None
    )


class Templates:
    """The named Jinja2 templates, defaults overridden by ``settings.templates``.

    An override the sandbox refuses (an unsafe attribute, ``include``/``import``/``extends``) is a
    settings error: the message naming the template is added to :attr:`warnings` and the built-in
    template renders instead, so a hostile ``.codeask.toml`` can neither run code nor stop answers.

    Raises:
        SettingsError: an unknown name in ``[templates]`` or an unreadable / out-of-root ``@path``.
        TemplateError: a template with a syntax error (at load) or a missing key (at render).
    """

    def __init__(self, settings: Settings | None = None):
        self._env = sandbox()
        self._templates: dict[str, jinja2.Template] = {}
        self._overridden: set[str] = set()
        self.warnings: list[str] = []
        """One line per refused override, e.g. ``templates.answer: unsafe template refused by the
        sandbox: access to attribute '__class__' of 'str' object is unsafe; the built-in template
        was used``."""
        overrides = dict(settings.templates) if settings else {}
        for name in overrides:
            if name not in TEMPLATE_NAMES:
                raise SettingsError(f"templates.{name}: unknown template name; known: {', '.join(TEMPLATE_NAMES)}")
        for name in TEMPLATE_NAMES:
            try:
                source = settings.template_source(name) if settings and name in overrides else None
            except TemplateOutsideRoot as exc:  # never read; the built-in is used
                self.warnings.append(f"{exc}; the built-in template was used")
                source = None
            if source is None:
                source = _builtin(name)
            else:
                self._overridden.add(name)
            try:
                self._templates[name] = self._env.from_string(source)
            except jinja2.TemplateSyntaxError as exc:
                raise TemplateError(f"template {name!r}: line {exc.lineno}: {exc.message}") from exc

    @property
    def system(self) -> str:
        """The system message of every LLM call (``codeask/templates/system.j2``): the instructions,
        and that text between :func:`fence` markers is untrusted data. Not overridable by settings,
        so a workspace cannot remove it."""
        return _builtin("system").strip()

    def render(self, name: str, **context: Any) -> str:
        """Render template ``name`` with ``context``.

        Raises:
            TemplateError: a missing key or a failing filter, naming the template and the key.
            UnsafeTemplateError: the template broke out of the sandbox's rules (also a
                :class:`~codeask.settings.SettingsError`).
        """
        try:
            return self._render(name, **context)
        except UnsafeTemplateError as exc:
            if name not in self._overridden:
                raise
            line = f"{exc}; the built-in template was used"
            if line not in self.warnings:
                self.warnings.append(line)
            self._templates[name] = self._env.from_string(_builtin(name))
            self._overridden.discard(name)
            return self._render(name, **context)

    def _render(self, name: str, **context: Any) -> str:
        try:
            return self._templates[name].render(**context)
        except jinja2.sandbox.SecurityError as exc:
            raise UnsafeTemplateError(f"templates.{name}: unsafe template refused by the sandbox: {exc}") from exc
        except (jinja2.TemplateNotFound, jinja2.TemplatesNotFound) as exc:
            raise UnsafeTemplateError(
                f"templates.{name}: templates cannot include, import or extend files ({exc})"
            ) from exc
        except TypeError as exc:
            if "no loader" in str(exc):
                raise UnsafeTemplateError(
                    f"templates.{name}: templates cannot include, import or extend files"
                ) from exc
            raise TemplateError(f"template {name!r}: {exc}") from exc
        except jinja2.UndefinedError as exc:
            raise TemplateError(f"template {name!r}: {exc.message}") from exc
        except jinja2.TemplateError as exc:
            raise TemplateError(f"template {name!r}: {exc}") from exc


def _builtin(name: str) -> str:
    return resources.files("codeask.templates").joinpath(f"{name}.j2").read_text("utf-8")


def fence(text: str) -> str:
    """``text`` (repository text bound for a prompt) between ``<untrusted-data id="...">`` and
    ``</untrusted-data id="...">`` lines, which the system message (:attr:`Templates.system`)
    declares data, never instructions. The id is the first 12 hex digits of the text's SHA-256,
    so the text cannot contain its own closing line."""
    tag = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f'<untrusted-data id="{tag}">\n{text}\n</untrusted-data id="{tag}">'


def render_documents(templates: Templates, documents: list[Document]) -> str:
    """Each document through the ``document`` template (``metadata.n`` is its 1-based number, what an
    answer cites as ``[n]``), :func:`fence`-d as untrusted data (outside the template, so an override
    cannot drop it), joined with ``---`` lines."""
    rendered = [
        fence(templates.render("document", content=d.content, metadata={**d.metadata, "n": i}).strip("\n"))
        for i, d in enumerate(documents, 1)
    ]
    return "\n---\n".join(rendered)


@dataclass(frozen=True)
class Withheld:
    """Repository text kept from the LLM: ``path`` (relative to ``root``) and 1-based ``start_line``
    / ``end_line`` of the document, ``action`` ``"withheld"`` (not sent at all) or ``"redacted"``
    (the listed ``lines`` replaced), and ``reason``: ``"secret file"`` (``index.secret_patterns``),
    ``"outside the workspace"``, or ``"credentials: <kinds>"`` (:mod:`codeask.query.secrets`)."""

    path: str
    root: str
    start_line: int
    end_line: int
    action: str
    reason: str
    lines: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The fields as a plain dict (``lines`` as a list)."""
        out = asdict(self)
        out["lines"] = list(self.lines)
        return out


def _note(withheld: list[Withheld] | None, entry: Withheld) -> None:
    if withheld is not None and entry not in withheld:
        withheld.append(entry)


def scrub(document: Document, settings: Settings, withheld: list[Withheld] | None = None) -> Document | None:
    """``document`` as it may be sent to an LLM: ``None`` for a secret file (by name) or text holding a
    private key block, a copy with each line holding a credential redacted, or ``document`` itself.
    What was kept back is appended to ``withheld``. With ``llm.scan_secrets = false`` (trusted
    settings only) just the file-name check applies."""
    if is_secret(document.path, settings.index):
        _note(
            withheld,
            Withheld(document.path, document.root, document.start_line, document.end_line, "withheld", "secret file"),
        )
        return None
    if not settings.llm.scan_secrets:
        return document
    from codeask.query.secrets import redact, scan

    found = scan(document.content, document.path)
    if not found.findings:
        return document
    reason = f"credentials: {', '.join(found.kinds)}"
    if found.whole:
        _note(
            withheld, Withheld(document.path, document.root, document.start_line, document.end_line, "withheld", reason)
        )
        return None
    lines = tuple(sorted({document.start_line + f.line - 1 for f in found.findings}))
    _note(
        withheld,
        Withheld(document.path, document.root, document.start_line, document.end_line, "redacted", reason, lines),
    )
    return replace(document, content=redact(document.content, found))


def safe_documents(
    documents: list[Document], settings: Settings, withheld: list[Withheld] | None = None
) -> list[Document]:
    """``documents`` as they may leave the process: each through :func:`scrub` (secret files and
    private keys dropped, credential lines redacted), whatever the index holds.

    The walker never indexes a secret file, but a pattern added after indexing, or an index written
    by another settings file, could still hold one, and a token can sit in any file: everything that
    leaves the process (LLM prompts, the summary, the eval judge, the Ragas export) goes through this
    filter. What was kept back is appended to ``withheld`` (the answer's ``"withheld"`` metadata).
    """
    out = []
    for d in documents:
        clean = scrub(d, settings, withheld)
        if clean is not None:
            out.append(clean)
    return out


class SimpleAnswer:
    """Answers with one streamed LLM call (``answer`` template); no call when nothing was retrieved.

    When the call fails before any text, the error is recorded on ``query.errors`` and the answer is
    the ranked sources (:class:`NoLLMAnswer`). An answer that was cut off (``max_tokens``, a stream
    without its final event, a stream that broke) keeps its text; ``query.finish_reason`` and
    ``query.cut_reason`` say how it ended. A cancellation (``query.cancel``) aborts the call and
    raises :class:`~codeask.query.pipeline.Cancelled`.
    """

    name = "answer"

    def __init__(self, llm: LLM, templates: Templates, settings: Settings, *, stream=None, on_sources=None):
        self.llm = llm
        self.templates = templates
        self.settings = settings
        self.stream = stream
        """Optional ``callable(delta: str)``: the answer is streamed to it as it arrives."""
        self.on_sources = on_sources
        """Optional ``callable(query)``: called with the final documents just before the LLM call, so a
        caller can show where to look whatever the LLM then does."""

    def prompt(self, query: Query, documents: list[Document] | None = None) -> str:
        """The ``answer`` template rendered for ``query``: ``documents`` (default: the query's, secret
        files dropped) numbered and rendered, or ``query.current`` once a response transformer
        replaced it. ``wants_code`` tells the template whether the question asks for code.

        Raises:
            TemplateError: the template reads a missing key.
        """
        if query.response_transformed:
            rendered = query.current
        else:
            if documents is None:
                documents = safe_documents(query.documents, self.settings, query.withheld)
            rendered = render_documents(self.templates, documents)
        return self.templates.render(
            "answer",
            question=query.original,
            original=query.original,
            current=query.current,
            documents=rendered,
            wants_code=wants_code(query.original),
        )

    def fit(self, query: Query, documents: list[Document] | None = None) -> tuple[str, list[Document], Budget]:
        """The prompt fitted to the model's context (:mod:`codeask.query.budget`), the documents it
        holds (numbered ``[1]..[n]`` in this order) and the budget."""
        budget = budget_for(self.llm.context_tokens(), self.settings.llm.max_tokens)
        if query.response_transformed:
            return self.prompt(query), list(query.documents), budget
        if documents is None:
            documents = safe_documents(query.documents, self.settings, query.withheld)
        per_doc = self.settings.llm.tokens_per_document
        system = self.llm.count_tokens(self.templates.system) if self.templates.system else 0
        docs, prompt, _ = fit_documents(
            documents,
            lambda ds: self.prompt(query, ds),
            self.llm.count_tokens,
            budget.prompt - system,
            max_documents=max(1, budget.prompt // per_doc),
        )
        return prompt, docs, budget

    def __call__(self, query: Query) -> Query:
        if not query.documents:
            query.answered(self.name, NOTHING_FOUND, llm=False)
            return query
        prompt, documents, budget = self.fit(query)
        if self.on_sources is not None:
            self.on_sources(query)
        retried = False
        while True:
            try:
                done = self.llm.generate(
                    prompt,
                    system=self.templates.system,
                    max_tokens=budget.reply,
                    on_delta=self.stream,
                    cancel=query.cancel,
                )
                break
            except ContextLengthError as exc:  # the count was off: once more with half the documents
                if retried or len(documents) <= 1 or query.response_transformed:
                    query.errors.append(str(exc))
                    return NoLLMAnswer()(query)
                retried = True
                fewer = list(documents)
                while len(fewer) > max(1, len(documents) // 2):
                    drop_lowest(fewer)  # added spans first, then the lowest-ranked files
                prompt, documents, budget = self.fit(query, fewer)
            except LLMError as exc:  # the sources are still worth returning
                query.errors.append(str(exc))
                return NoLLMAnswer()(query)
        query.prompt_documents = documents
        query.finish_reason = done.finish_reason
        query.cut_reason = done.cut_reason()
        query.answered(
            self.name,
            done.text.strip(),
            llm=True,
            model=self.llm.describe(),
            prompt_chars=len(prompt),
            finish_reason=done.finish_reason,
            tokens=done.tokens,
            prompt_tokens=done.prompt_tokens,
            first_token_seconds=done.first_token_seconds,
            documents_sent=len(documents),
            context_tokens=budget.context,
            retried_with_fewer=retried,
        )
        return query


_WANTS_CODE = re.compile(
    r"\b(example|snippet|sample|show me|write|implement|code for|how (do|can|would|should) i (use|call|write))\b",
    re.IGNORECASE,
)


def wants_code(question: str) -> bool:
    """Whether the question asks for code (an example, a snippet, how to call or write something)."""
    return bool(_WANTS_CODE.search(question))


class NoLLMAnswer:
    """The answer without an LLM: the ranked sources, each with a short snippet."""

    name = "answer"

    def __call__(self, query: Query) -> Query:
        if not query.documents:
            query.answered(self.name, NOTHING_FOUND, llm=False)
            return query
        first = next((line for line in query.original.strip().splitlines() if line.strip()), query.original)
        lines = [f"Most relevant code for: *{first.strip()}*", ""]
        for i, d in enumerate(query.documents, 1):
            label = f"{d.label}:{d.start_line}-{d.end_line}"
            symbol = f" `{d.symbol}`" if d.symbol else ""
            lines.append(f"{i}. {markdown_link(label, d.uri)}{symbol}")
            content_lines = split_lines(d.content)
            snippet = content_lines[:_SNIPPET_LINES]
            fence = "````" if any("```" in s for s in snippet) else "```"
            lines.append(f"   {fence}{d.language if d.language != 'text' else ''}")
            lines.extend(f"   {s}" for s in snippet)
            if len(content_lines) > _SNIPPET_LINES:
                lines.append("   ...")
            lines.append(f"   {fence}")
        query.answered(self.name, "\n".join(lines), llm=False)
        return query


@dataclass
class Source:
    """One cited location: ``path`` relative to ``root``, 1-based inclusive lines, ``uri``
    ``file:///abs/path#Lstart-Lend``, fused (or rerank) ``score``, the chunk ``content``, and the
    ``label`` shown for it (``path``, prefixed by the root's name when the workspace has several
    roots: ``work/app/src/app.py`` and ``forks/app/src/app.py`` when two roots are named ``app``)."""

    path: str
    uri: str
    root: str
    start_line: int
    end_line: int
    symbol: str
    score: float
    content: str
    label: str = ""
    spans: list[dict[str, Any]] = field(default_factory=list)
    """Every span of this file the answer drew on, the best (this source's own lines) first, then
    those the ``widen`` step added: ``{"start_line", "end_line", "uri", "symbol", "content"}``
    (1-based inclusive lines, each with its own link)."""

    @classmethod
    def from_document(cls, d: Document, more: list[Document] | None = None) -> Source:
        """The source of ``d`` (its file's best span), with ``more`` spans of the same file after it
        in ``spans``; the score rounded to 6 decimals."""
        spans = [
            {"start_line": x.start_line, "end_line": x.end_line, "uri": x.uri, "symbol": x.symbol, "content": x.content}
            for x in [d, *(more or [])]
        ]
        return cls(
            d.path,
            d.uri,
            d.root,
            d.start_line,
            d.end_line,
            d.symbol,
            round(float(d.score), 6),
            d.content,
            d.label,
            spans,
        )


@dataclass
class Answer:
    """What ``ask`` returns; ``to_json()`` is the ``codeask ask --json`` object.

    ``sources`` are the distinct files of the documents, most relevant first (each file's best
    chunk), taken from the documents and never parsed from the model's text.
    """

    question: str
    answer: str
    markdown: str
    subquestions: list[str] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    llm: str | None = None
    error: str | None = None
    finish_reason: str | None = None
    """How the answer's LLM call ended: ``stop``, ``length`` (``max_tokens``), ``incomplete`` (the
    stream ended without its final event), ``error`` (it broke); ``None`` without an LLM answer."""
    truncated: bool = False
    """Whether the answer text is cut off (any finish reason but ``stop``)."""
    cut_reason: str | None = None
    """Why it is cut off, in words (``None`` when complete)."""
    citations: float | None = None
    """Share in ``[0, 1]`` of the answer's paragraphs citing at least one existing document ``[n]``;
    ``None`` without an LLM answer."""
    invalid_citations: list[int] = field(default_factory=list)
    """``[n]`` the answer cited that name no document (removed from the markdown)."""
    documents: list[dict[str, Any]] = field(default_factory=list)
    """The documents the LLM saw, numbered as the answer cites them:
    ``{"n", "path", "start_line", "end_line", "uri"}`` (empty without an LLM answer)."""
    withheld: list[Withheld] = field(default_factory=list)
    """Repository text kept from the LLM for this answer (secret files, credential lines)."""
    warnings: list[str] = field(default_factory=list)
    """Settings warnings: workspace values that were ignored, templates the sandbox refused."""
    index: dict[str, Any] | None = None
    """``{"state": "keyword-only" | "building" | "ready", "files_indexed", "vectors_pending"}``: what
    the answer stands on (:class:`codeask.workspace.IndexState`)."""

    def to_json(self) -> dict[str, Any]:
        """The fields as a plain dict (sources as dicts); ``error``, ``cut_reason`` and ``citations`` are
        left out when ``None``; ``finish_reason`` and ``truncated`` are always there."""
        out = asdict(self)
        out["withheld"] = [w.to_json() for w in self.withheld]
        for key in ("error", "cut_reason", "citations"):
            if out[key] is None:
                del out[key]
        return out

    @classmethod
    def from_query(
        cls,
        query: Query,
        *,
        llm: str | None = None,
        error: str | None = None,
        warnings: list[str] | None = None,
        index: dict[str, Any] | None = None,
    ) -> Answer:
        """The answer of ``query``: one source per distinct file (its first document, with the file's
        other documents as ``spans``). The markdown adds
        ``> **Answer cut off** (reason).`` when the answer is cut off, ``> **LLM error:** ...`` when
        ``error`` is given (``answer`` has the error line too, not the cut-off line), and an
        ``> **Index:**`` line when ``index`` (the index state) is not ``ready``."""
        by_file: dict[tuple[str, str], list[Document]] = {}
        for d in query.documents:
            by_file.setdefault(d.key(), []).append(d)
        sources = [Source.from_document(spans[0], spans[1:]) for spans in by_file.values()]
        body = query.answer or ""
        text = body + (("\n\n" if body else "") + f"> **LLM error:** {error}" if error else "")
        citations = invalid = None
        numbered: list[dict[str, Any]] = []
        if query.prompt_documents is not None and body:
            check = check_citations(body, query.prompt_documents)
            body, citations, invalid = check.markdown, check.share, check.invalid
            numbered = [
                {"n": i, "path": d.path, "start_line": d.start_line, "end_line": d.end_line, "uri": d.uri}
                for i, d in enumerate(query.prompt_documents, 1)
            ]
        answer = cls(
            question=query.original,
            answer=text,
            markdown="",
            subquestions=list(query.subquestions),
            sources=sources,
            llm=llm,
            error=error,
            finish_reason=query.finish_reason,
            truncated=query.cut_reason is not None,
            cut_reason=query.cut_reason,
            citations=citations,
            invalid_citations=invalid or [],
            documents=numbered,
            withheld=list(query.withheld),
            warnings=list(warnings or []),
            index=index,
        )
        answer.markdown = body + answer.footer()
        return answer

    def footer(self) -> str:
        """What the markdown shows after the answer's own text: the cut-off line, the LLM error line,
        then ``Sources:`` with ``[path:start-end](file:///abs/path#Lstart-Lend)`` links."""
        notes = []
        if note := index_note(self.index):
            notes.append(note)
        if self.truncated:
            notes.append(f"> **Answer cut off** ({self.cut_reason}).")
        if self.error:
            notes.append(f"> **LLM error:** {self.error}")
        if self.invalid_citations:
            shown = ", ".join(f"[{n}]" for n in self.invalid_citations)
            notes.append(f"> Citations to sources that do not exist were removed: {shown}.")
        out = "".join("\n\n" + n for n in notes)
        return markdown(out, self.sources) if self.sources else out


def index_note(index: dict[str, Any] | None) -> str:
    """One markdown line saying what an answer from a not-``ready`` index misses; ``""`` when ready."""
    if not index or index.get("state") == "ready":
        return ""
    if index["state"] == "building":
        return (
            f"> **Index:** still being built ({index['files_indexed']:,} files so far): "
            "code not indexed yet cannot be found; ask again when indexing ends."
        )
    return (
        f"> **Index:** keyword search only for now: {index['vectors_pending']:,} chunks still wait for "
        "their vectors, so results may miss code that uses other words than the question."
    )


def markdown(text: str, sources: list[Source]) -> str:
    """The answer, then ``Sources:`` with ``[path:start-end](file:///abs/path#Lstart-Lend)`` links, one
    line per file; a file's further spans follow its link as ``[start-end](...#Lstart-Lend)``."""
    if not sources:
        return text

    def line(s: Source) -> str:
        first = markdown_link(f"{s.label or s.path}:{s.start_line}-{s.end_line}", s.uri)
        more = [markdown_link(f"{x['start_line']}-{x['end_line']}", x["uri"]) for x in s.spans[1:]]
        return ", ".join([first, *more])

    links = "\n".join(f"{i}. {line(s)}" for i, s in enumerate(sources, 1))
    return f"{text}\n\nSources:\n{links}\n"
