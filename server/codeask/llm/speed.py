"""How fast a model endpoint reads prompts and writes answers: measured on every call
(:attr:`Completion.speed`, and :meth:`BaseLLM.speed` for the calls of one adapter so far) and cached
per endpoint and model (:class:`SpeedCache`), so the first call's timings size the next prompt.

The prompt of a local model is sized from this (:func:`codeask.query.budget.time_budget`), so the
measurement has to be the machine's own, under its present load: each measurement replaces the
cached one (:meth:`SpeedCache.record`).

Where a number comes from (:func:`measure`):

* llama.cpp's ``timings`` on the last stream chunk (``prompt_per_second`` over ``prompt_n`` tokens
  it had to read, ``predicted_per_second``), when the server sends them;
* else the call's own clock: prompt tokens over the seconds to the first token (an upper bound of
  the wait; the network and a server queue count as reading time), and the tokens after the first
  over the seconds after it.

A rate measured on fewer than :data:`MIN_PROMPT_TOKENS` prompt tokens (a prompt the server had
cached) or :data:`MIN_GENERATED_TOKENS` generated ones says little and is left out (``None``).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codeask.llm.protocol import LLM, Completion, Speed
from codeask.settings import safe_url

__all__ = ["SpeedCache", "measure", "CACHE_FILE"]

#: The cache's file name, in codeask's cache folder (``index.cache_dir`` / ``CODEASK_CACHE_DIR``).
CACHE_FILE = "llm-speed.json"
MIN_PROMPT_TOKENS = 32
MIN_GENERATED_TOKENS = 8


def measure(completion: Completion, timings: Mapping[str, Any] | None) -> Speed | None:
    """The endpoint's speed on one finished call: llama.cpp's ``timings`` when given, else the
    call's own clock (see the module docstring); ``None`` when neither rate can be told."""
    prompt = generated = None
    if timings:
        if _number(timings.get("prompt_n")) >= MIN_PROMPT_TOKENS:
            prompt = _rate(timings.get("prompt_per_second"))
        if _number(timings.get("predicted_n")) >= MIN_GENERATED_TOKENS:
            generated = _rate(timings.get("predicted_per_second"))
    first = completion.first_token_seconds
    if first is not None and first > 0:
        if prompt is None and not timings and completion.prompt_tokens >= MIN_PROMPT_TOKENS:
            prompt = completion.prompt_tokens / first
        writing = completion.seconds - first
        if generated is None and not timings and completion.tokens >= MIN_GENERATED_TOKENS and writing > 0:
            generated = (completion.tokens - 1) / writing
    if prompt is None and generated is None:
        return None
    return Speed(prompt, generated)


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _rate(value: Any) -> float | None:
    rate = _number(value)
    return rate if rate > 0 else None


class SpeedCache:
    """The measured :class:`~codeask.llm.protocol.Speed` of each endpoint and model, in one JSON file
    ``{"<base url> <provider:model>": {"prompt": tokens/s, "generated": tokens/s}}``.

    Reading and writing are best effort: a missing, unreadable or foreign file reads as empty, and a
    folder that cannot be written leaves the cache as it was (the next call measures again).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @staticmethod
    def key(llm: LLM) -> str:
        """``<base URL without credentials> <provider:model>``."""
        return f"{safe_url(llm.base_url) or ''} {llm.describe()}"

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, llm: LLM) -> Speed | None:
        """The cached speed of ``llm``'s endpoint and model, or ``None``."""
        entry = self._read().get(self.key(llm))
        if not isinstance(entry, dict):
            return None
        speed = Speed(_rate(entry.get("prompt")), _rate(entry.get("generated")))
        return speed if speed.prompt or speed.generated else None

    def record(self, llm: LLM, speed: Speed | None) -> Speed | None:
        """Store ``speed`` for ``llm`` (merged over the cached one where it has no value) and return
        what is now known; nothing is written for ``None``."""
        if speed is None:
            return self.get(llm)
        data = self._read()
        merged = speed.merged(self.get(llm))
        data[self.key(llm)] = {"prompt": merged.prompt, "generated": merged.generated}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".llm-speed-", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=1, sort_keys=True)
            os.replace(tmp, self.path)
        except OSError:
            pass
        return merged
