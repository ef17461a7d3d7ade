"""The prompt templates: Jinja2 rendered in its immutable sandbox, defaults overridable per name.

Templates are Jinja2 rendered in its immutable sandbox
(:class:`jinja2.sandbox.ImmutableSandboxedEnvironment`) with no loader: a template (which may come
from an untrusted ``.codeask.toml``) can read the values it is given but cannot reach Python
internals, change objects, or ``include``/``import``/``extends`` files; trying to is a
:class:`~codeask.settings.SettingsError` naming the template. Templates use ``StrictUndefined``: a
template that reads a missing key fails with an error naming it (``TemplateError: 'dict object' has
no attribute 'no_such_key'``); guard optional keys with Jinja2's ``default`` filter
(``{{ metadata.title | default("") }}``). The defaults live in ``codeask/templates/*.j2``; users
override them per name (``subquestions``, ``answer``, ``document``, ``rerank``, ``summary``,
``explain``) in ``.codeask.toml`` ``[templates]`` or editor settings.

Repository text bound for a prompt is :func:`fence`-d as untrusted data; :func:`render_documents`
renders the numbered documents every answer-like step puts in its prompt.
"""

from __future__ import annotations

import functools
import hashlib
from importlib import resources
from typing import Any

import jinja2
import jinja2.sandbox

from codeask.query.pipeline import Document
from codeask.settings import TEMPLATE_NAMES, Settings, SettingsError, TemplateOutsideRoot

__all__ = ["Templates", "TemplateError", "UnsafeTemplateError", "sandbox", "fence", "render_documents"]


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
                self._templates[name] = _compile(source)
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
            self._templates[name] = _compile(_builtin(name))
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


@functools.lru_cache(maxsize=64)
def _compile(source: str) -> jinja2.Template:
    """``source`` compiled once in one shared sandbox (compiling every template cost each ask
    ~0.1 s); a compiled template renders safely from several threads. Syntax errors are raised,
    not cached."""
    return _shared_sandbox().from_string(source)


@functools.lru_cache(maxsize=1)
def _shared_sandbox() -> jinja2.sandbox.ImmutableSandboxedEnvironment:
    return sandbox()


@functools.lru_cache(maxsize=32)
def _builtin(name: str) -> str:
    return resources.files("codeask.templates").joinpath(f"{name}.j2").read_text("utf-8")


def fence(text: str) -> str:
    """``text`` (repository text bound for a prompt) between ``<untrusted-data id="...">`` and
    ``</untrusted-data id="...">`` lines, which the system message (:attr:`Templates.system`)
    declares data, never instructions. The id is the first 12 hex digits of the text's SHA-256,
    so the text cannot contain its own closing line."""
    tag = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f'<untrusted-data id="{tag}">\n{text}\n</untrusted-data id="{tag}">'


def render_documents(templates: Templates, documents: list[Document], first: int = 1) -> str:
    """Each document through the ``document`` template (``metadata.n`` is its number, from ``first``
    on, what an answer cites as ``[n]``), :func:`fence`-d as untrusted data (outside the template, so
    an override cannot drop it), joined with ``---`` lines."""
    rendered = [
        fence(templates.render("document", content=d.content, metadata={**d.metadata, "n": i}).strip("\n"))
        for i, d in enumerate(documents, first)
    ]
    return "\n---\n".join(rendered)
