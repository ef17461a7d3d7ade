"""Every codeask knob in one fully-defaulted model (:mod:`~codeask.settings.model`), its defaults
(:mod:`~codeask.settings.defaults`), and how it is loaded (:mod:`~codeask.settings.layers`).

Precedence, low to high (each layer only sets the keys it names):

1. the defaults below;
2. the user config file ``codeask.toml`` in the platform's user config dir (``platformdirs``;
   ``$CODEASK_CONFIG_DIR`` replaces the dir) -- trusted;
3. ``<workspace>/.codeask.toml`` (snake_case or camelCase keys, same nesting as the model) --
   **untrusted**, see below;
4. the environment: ``CODEASK_LLM`` (``llm.provider``), ``CODEASK_MODEL`` (``llm.model``),
   ``CODEASK_CACHE_DIR`` (``index.cache_dir``), ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
   ``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL`` (the providers' own variables, the one way to give
   a key or base URL there: :class:`~codeask.settings.provider.ProviderEnv`), and the LLM limits
   ``CODEASK_LLM_TIMEOUT``, ``CODEASK_LLM_FIRST_TOKEN_TIMEOUT``, ``CODEASK_LLM_FIRST_TOKEN_SECONDS``,
   ``CODEASK_LLM_ANSWER_SECONDS``, ``CODEASK_LLM_MAX_TOKENS``, ``CODEASK_LLM_CONTEXT_TOKENS``
   (``llm.<name>``) -- trusted; a value the model rejects (``CODEASK_LLM_TIMEOUT=abc``) is ignored
   with one warning naming the variable;
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
given by an untrusted layer is added to the trusted value instead of replacing it. A value of an
untrusted layer that the model rejects (an unknown key, a wrong type, a number out of range such
as ``retrieval.top_k = 0``) is dropped the same way, with one warning naming the key, and so is
one of the environment (the warning names the variable: :mod:`~codeask.settings.environment`); in
another trusted layer it is an error (:class:`SettingsError`, naming the key and that layer alone).
A retired key
(:data:`~codeask.settings.retired.RETIRED`, now a constant) is dropped from any layer with one
warning; a deprecated one (:data:`~codeask.settings.retired.DEPRECATED`) works, with one warning.
``docs/settings.md`` lists every setting (:mod:`codeask.settings.reference`).

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

from codeask.settings.defaults import (
    CONFIG_FILE,
    DEFAULT_BUILD_OUTPUTS,
    DEFAULT_DOWNWEIGHT_PATTERNS,
    DEFAULT_EXCLUDES,
    DEFAULT_SECRET_PATTERNS,
    TEMPLATE_NAMES,
    USER_CONFIG_ENV,
    USER_CONFIG_FILE,
)
from codeask.settings.environment import env_layer
from codeask.settings.layers import (
    ADD_ONLY,
    TRUSTED_ONLY,
    load_settings,
    read_config_file,
    restrict_untrusted,
    user_config_path,
)
from codeask.settings.model import (
    EmbeddingSettings,
    HoverSettings,
    IndexSettings,
    LLMSettings,
    PipelineSettings,
    RerankSettings,
    RetrievalSettings,
    Settings,
    SettingsError,
    SharedSettings,
    SummarySettings,
    TemplateOutsideRoot,
    add_only,
    template_path,
    trusted_only,
)
from codeask.settings.provider import ResolvedLLM, safe_url

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
    "TRUSTED_ONLY",
    "ADD_ONLY",
    "TemplateOutsideRoot",
    "trusted_only",
    "add_only",
    "template_path",
    "safe_url",
    "user_config_path",
    "read_config_file",
    "env_layer",
    "restrict_untrusted",
    "SettingsError",
    "ResolvedLLM",
    "load_settings",
    "CONFIG_FILE",
    "USER_CONFIG_FILE",
    "USER_CONFIG_ENV",
    "DEFAULT_SECRET_PATTERNS",
    "DEFAULT_EXCLUDES",
    "DEFAULT_BUILD_OUTPUTS",
    "DEFAULT_DOWNWEIGHT_PATTERNS",
    "TEMPLATE_NAMES",
]
