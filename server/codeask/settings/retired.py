"""Settings that are no longer settings, and the deprecated second ways to give a key or a base URL.

A layer that still sets a retired key loses nothing but that key: it is dropped with one warning
(:attr:`~codeask.settings.Settings.warnings`) naming it and where its value now lives. A deprecated
key keeps working, with one warning naming the one way to give it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["RETIRED", "DEPRECATED", "DEPRECATED_EXTRAS", "PROVIDER_KEYS", "drop_retired", "warn_deprecated"]

#: Dotted key -> the constant that now holds its value (an internal no user needs to tune; each
#: constant's docstring says where its value comes from), or the setting that does its work.
RETIRED: dict[str, str] = {
    "llm.default_openai_model": "codeask.settings.provider.DEFAULT_OPENAI_MODEL; set llm.model",
    "llm.default_anthropic_model": "codeask.settings.provider.DEFAULT_ANTHROPIC_MODEL; set llm.model",
    "llm.temperature": "codeask.llm.TEMPERATURE",
    "llm.connect_timeout": "codeask.llm.CONNECT_TIMEOUT",
    "llm.max_retries": "codeask.llm.MAX_RETRIES",
    "llm.tokens_per_document": "codeask.query.budget.TOKENS_PER_DOCUMENT; llm.context_tokens and retrieval.max_files",
    "llm.subquestion_similarity": "codeask.query.steps.subquestions.SUBQUESTION_SIMILARITY",
    "embedding.batch_size": "codeask.index.embed.BATCH_SIZE",
    "embedding.max_tokens": "codeask.index.embed.MAX_TOKENS",
    "embedding.threads": "codeask.index.embed.THREADS",
    "embedding.machine_cache_mb": "codeask.index.machine.MACHINE_CACHE_MB",
    "embedding.index_idle": "codeask.index.embed_process.IDLE_SUPPORTED",
    "index.build_outputs": "codeask.settings.defaults.DEFAULT_BUILD_OUTPUTS; use index.exclude",
    "index.max_line_length": "codeask.index.filetext.MAX_LINE_LENGTH",
    "index.embed_third_party": "codeask.index.kinds.EMBED_THIRD_PARTY",
    "index.chunk_lines": "codeask.index.chunking.CHUNK_LINES",
    "index.max_chunk_chars": "codeask.index.chunking.MAX_CHUNK_CHARS",
    "index.write_batch_files": "codeask.index.phase1.WRITE_BATCH_FILES",
    "index.compact_every": "codeask.index.engine.COMPACT_EVERY",
    "index.keep_versions_minutes": "codeask.index.store.KEEP_VERSIONS_MINUTES",
    "index.ann_min_rows": "codeask.index.store.ANN_MIN_ROWS",
    "index.embed_commit_rows": "codeask.index.phase2.EMBED_COMMIT_ROWS",
    "index.embed_commit_seconds": "codeask.index.phase2.EMBED_COMMIT_SECONDS",
    "retrieval.downweight": "retrieval.downweight_patterns; [] turns downweighting off",
    "retrieval.hub_damping": "codeask.query.steps.priors.HUB_DAMPING",
    "retrieval.report_evidence": "codeask.query.steps.evidence.REPORT_EVIDENCE",
    "retrieval.spans_per_file": "codeask.query.steps.widen.SPANS_PER_FILE; a pipeline sets pipeline.options.widen",
    "retrieval.candidates": "codeask.query.steps.retrieve.CANDIDATES",
    "retrieval.rrf_k": "codeask.query.steps.retrieve.RRF_K",
    "retrieval.downweight_factor": "codeask.query.steps.priors.DOWNWEIGHT_FACTOR",
    "retrieval.third_party_factor": "codeask.query.steps.priors.THIRD_PARTY_FACTOR",
    "retrieval.question_digest_chars": "codeask.query.digest.QUESTION_DIGEST_CHARS",
    "rerank.top_k": "codeask.query.steps.rerank.TOP_K; a pipeline sets pipeline.options.rerank",
    "rerank.batch_size": "codeask.query.steps.rerank.BATCH_SIZE",
    "hover.delay_ms": "codeask.lsp.hover.HOVER_DELAY_MS",
    "hover.timeout": "codeask.lsp.hover.HOVER_LLM_TIMEOUT",
    "shared.retention_days": "codeask.index.shared.RETENTION_DAYS",
}

#: The providers' own keys and base URLs: read from ``$OPENAI_API_KEY``, ``$OPENAI_BASE_URL``,
#: ``$ANTHROPIC_API_KEY``, ``$ANTHROPIC_BASE_URL`` (:class:`~codeask.settings.provider.ProviderEnv`);
#: in a file, the editor or a flag they are deprecated (:data:`DEPRECATED`); trusted layers only.
PROVIDER_KEYS: tuple[str, ...] = ("openai_api_key", "openai_base_url", "anthropic_api_key", "anthropic_base_url")

#: Deprecated ``extra_`` lists -> the list they add to. Every layer's ``index.exclude`` and
#: ``index.secret_patterns`` add to the trusted value where a workspace sets them; a trusted layer's
#: ``extra_`` list still adds to the list below it (the loader folds it in, with one warning).
DEPRECATED_EXTRAS: dict[str, str] = {
    "index.extra_exclude": "index.exclude (a workspace's list adds to it; a user's replaces the defaults)",
    "index.extra_secret_patterns": "index.secret_patterns (a workspace's list adds to it; a user's replaces the defaults)",
}

#: Deprecated dotted key -> the one way to give it (the deprecated key still works).
DEPRECATED: dict[str, str] = {
    **{
        f"llm.{name}": f'llm.{name.split("_", 1)[1]} with llm.provider = "{name.split("_", 1)[0]}"'
        for name in PROVIDER_KEYS
    },
    **DEPRECATED_EXTRAS,
}


def _split(dotted: str) -> tuple[str, str]:
    section, _, leaf = dotted.partition(".")
    return section, leaf


def drop_retired(
    layer: Mapping[str, Any], source: str, warnings: list[str], spelled: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``layer`` (a normalized nested dict) without the :data:`RETIRED` keys it sets, one warning
    each appended to ``warnings``, e.g. ``.codeask.toml: `index.compact_every` is no longer a
    setting (now codeask.index.engine.COMPACT_EVERY); ignored``. ``spelled`` maps a dotted key to
    the way ``source`` spells it (the environment's ``$CODEASK_LLM_MAX_RETRIES``), named first."""
    out = dict(layer)
    for dotted, where in RETIRED.items():
        section, leaf = _split(dotted)
        values = out.get(section)
        if isinstance(values, Mapping) and leaf in values:
            out[section] = {k: v for k, v in values.items() if k != leaf}
            name = f"{spelled[dotted]} ({dotted})" if spelled and dotted in spelled else dotted
            warnings.append(f"{source}: `{name}` is no longer a setting (now {where}); ignored")
    return out


def warn_deprecated(
    layer: Mapping[str, Any], source: str, warnings: list[str], keys: Mapping[str, str] = DEPRECATED
) -> None:
    """One warning per deprecated key of ``keys`` (:data:`DEPRECATED`) ``layer`` sets, naming the
    one way to give it."""
    for dotted, instead in keys.items():
        section, leaf = _split(dotted)
        values = layer.get(section)
        if isinstance(values, Mapping) and values.get(leaf) is not None:
            warnings.append(f"{source}: `{dotted}` is deprecated (it still works): use {instead}")
