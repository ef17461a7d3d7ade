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

from dataclasses import asdict, dataclass, field
from importlib import resources
from typing import Any

import hashlib

import jinja2
import jinja2.sandbox

from codeask.index.walk import is_secret
from codeask.lines import split_lines
from codeask.llm import LLM, LLMError
from codeask.query.pipeline import Document, Query
from codeask.settings import TEMPLATE_NAMES, Settings, SettingsError

__all__ = [
    "Templates",
    "TemplateError",
    "SimpleAnswer",
    "NoLLMAnswer",
    "Answer",
    "Source",
    "render_documents",
    "safe_documents",
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

    Raises:
        SettingsError: an unknown name in ``[templates]`` or an unreadable ``@path``.
        TemplateError: a template with a syntax error (at load) or a missing key (at render).
    """

    def __init__(self, settings: Settings | None = None):
        self._env = sandbox()
        self._templates: dict[str, jinja2.Template] = {}
        overrides = dict(settings.templates) if settings else {}
        for name in overrides:
            if name not in TEMPLATE_NAMES:
                raise SettingsError(
                    f"templates.{name}: unknown template name; known: {', '.join(TEMPLATE_NAMES)}"
                )
        for name in TEMPLATE_NAMES:
            source = settings.template_source(name) if settings and name in overrides else None
            if source is None:
                source = resources.files("codeask.templates").joinpath(f"{name}.j2").read_text("utf-8")
            try:
                self._templates[name] = self._env.from_string(source)
            except jinja2.TemplateSyntaxError as exc:
                raise TemplateError(f"template {name!r}: line {exc.lineno}: {exc.message}") from exc

    @property
    def system(self) -> str:
        """The system message of every LLM call (``codeask/templates/system.j2``): the instructions,
        and that text between :func:`fence` markers is untrusted data. Not overridable by settings,
        so a workspace cannot remove it."""
        return resources.files("codeask.templates").joinpath("system.j2").read_text("utf-8").strip()

    def render(self, name: str, **context: Any) -> str:
        """Render template ``name`` with ``context``.

        Raises:
            TemplateError: a missing key or a failing filter, naming the template and the key.
            UnsafeTemplateError: the template broke out of the sandbox's rules (also a
                :class:`~codeask.settings.SettingsError`).
        """
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



def fence(text: str) -> str:
    """``text`` (repository text bound for a prompt) between ``<untrusted-data id="...">`` and
    ``</untrusted-data id="...">`` lines, which the system message (:attr:`Templates.system`)
    declares data, never instructions. The id is the first 12 hex digits of the text's SHA-256,
    so the text cannot contain its own closing line."""
    tag = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f'<untrusted-data id="{tag}">\n{text}\n</untrusted-data id="{tag}">'


def render_documents(templates: Templates, documents: list[Document]) -> str:
    """Each document through the ``document`` template, :func:`fence`-d as untrusted data (outside
    the template, so an override cannot drop it), joined with ``---`` lines."""
    rendered = [
        fence(templates.render("document", content=d.content, metadata=d.metadata).strip("\n")) for d in documents
    ]
    return "\n---\n".join(rendered)


def safe_documents(documents: list[Document], settings: Settings) -> list[Document]:
    """``documents`` without secret files (``index.secret_patterns``), whatever the index holds.

    The walker never indexes a secret, but a pattern added after indexing, or an index written by
    another settings file, could still hold one: everything that leaves the process (LLM prompts,
    the Ragas export) goes through this filter.
    """
    return [d for d in documents if not is_secret(d.path, settings.index)]


class SimpleAnswer:
    """Answers with one LLM call (``answer`` template); no call when nothing was retrieved.

    When the call fails, the error is recorded on ``query.errors`` and the answer is the ranked
    sources (:class:`NoLLMAnswer`).
    """

    name = "answer"

    def __init__(self, llm: LLM, templates: Templates, settings: Settings, *, stream=None):
        self.llm = llm
        self.templates = templates
        self.settings = settings
        self.stream = stream
        """Optional ``callable(delta: str)``: the answer is streamed to it as it arrives."""

    def prompt(self, query: Query) -> str:
        """The ``answer`` template rendered for ``query``: ``documents`` is the rendered documents (secret
        files dropped), or ``query.current`` once a response transformer replaced it.

        Raises:
            TemplateError: the template reads a missing key.
        """
        if query.response_transformed:
            documents = query.current
        else:
            documents = render_documents(self.templates, safe_documents(query.documents, self.settings))
        return self.templates.render(
            "answer",
            question=query.original,
            original=query.original,
            current=query.current,
            documents=documents,
        )

    def __call__(self, query: Query) -> Query:
        if not query.documents:
            query.answered(self.name, NOTHING_FOUND, llm=False)
            return query
        prompt = self.prompt(query)
        try:
            # Always streamed: a cancelled ask closes the stream (codeask.llm.CancelToken).
            parts = []
            for delta in self.llm.stream(prompt, system=self.templates.system, max_tokens=self.settings.llm.max_tokens):
                parts.append(delta)
                if self.stream is not None:
                    self.stream(delta)
            text = "".join(parts)
        except LLMError as exc:  # the sources are still worth returning
            query.errors.append(str(exc))
            return NoLLMAnswer()(query)
        query.answered(self.name, text.strip(), llm=True, model=self.llm.describe(), prompt_chars=len(prompt))
        return query


class NoLLMAnswer:
    """The answer without an LLM: the ranked sources, each with a short snippet."""

    name = "answer"

    def __call__(self, query: Query) -> Query:
        if not query.documents:
            query.answered(self.name, NOTHING_FOUND, llm=False)
            return query
        lines = [f"Most relevant code for: *{query.original.strip().splitlines()[0]}*", ""]
        for i, d in enumerate(query.documents, 1):
            label = f"{d.label}:{d.start_line}-{d.end_line}"
            symbol = f" `{d.symbol}`" if d.symbol else ""
            lines.append(f"{i}. [{label}]({d.uri}){symbol}")
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

    @classmethod
    def from_document(cls, d: Document) -> Source:
        """The source of ``d``, its score rounded to 6 decimals."""
        return cls(
            d.path, d.uri, d.root, d.start_line, d.end_line, d.symbol, round(float(d.score), 6), d.content, d.label
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

    def to_json(self) -> dict[str, Any]:
        """The fields as a plain dict (sources as dicts); ``error`` is left out when ``None``."""
        out = asdict(self)
        if out["error"] is None:
            del out["error"]
        return out

    @classmethod
    def from_query(cls, query: Query, *, llm: str | None = None, error: str | None = None) -> Answer:
        """The answer of ``query``: one source per distinct file (its first document), and ``error``, when
        given, appended to the text as a ``> **LLM error:**`` line."""
        sources: list[Source] = []
        seen: set[tuple[str, str]] = set()
        for d in query.documents:
            if d.key() in seen:
                continue
            seen.add(d.key())
            sources.append(Source.from_document(d))
        text = query.answer or ""
        if error:
            text = (text + "\n\n" if text else "") + f"> **LLM error:** {error}"
        return cls(
            question=query.original,
            answer=text,
            markdown=markdown(text, sources),
            subquestions=list(query.subquestions),
            sources=sources,
            llm=llm,
            error=error,
        )


def markdown(text: str, sources: list[Source]) -> str:
    """The answer, then ``Sources:`` with ``[path:start-end](file:///abs/path#Lstart-Lend)`` links."""
    if not sources:
        return text
    links = "\n".join(
        f"{i}. [{s.label or s.path}:{s.start_line}-{s.end_line}]({s.uri})" for i, s in enumerate(sources, 1)
    )
    return f"{text}\n\nSources:\n{links}\n"
