"""How fast a model endpoint reads prompts and writes answers: measured on every call
(:attr:`Completion.speed`, and :meth:`BaseLLM.speed` for the calls of one adapter so far) and cached
per endpoint and model (:class:`SpeedCache`), so the first call's timings size the next prompt.

The prompt of a local model is sized from this (:func:`codeask.query.budget.time_budget`), so the
estimate has to be the machine's own, under its present load, and one odd call must not set it
(:meth:`SpeedCache.get`): the cache keeps each rate's last :data:`SAMPLES` measurements with the
load average per core at the time, and the estimate is their median, each first scaled from the
load it was measured at to the load now when the endpoint runs on this machine (a loopback
address): a process on a machine with load ``L`` per core gets about ``1 / max(1, L)`` of a core.
So a busy moment neither shrinks every later prompt (one slow sample is outvoted, and its scale-up
undoes the load it saw) nor lets an idle measurement overfill the first prompt on a busy machine.

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
import statistics
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from codeask.llm.protocol import LLM, Completion, Speed
from codeask.settings import safe_url

__all__ = ["SpeedCache", "measure", "machine_load", "on_this_machine", "CACHE_FILE", "SAMPLES"]

#: The cache's file name, in codeask's cache folder (``index.cache_dir`` / ``CODEASK_CACHE_DIR``).
CACHE_FILE = "llm-speed.json"
MIN_PROMPT_TOKENS = 32
MIN_GENERATED_TOKENS = 8
#: Measurements kept per rate: the median of five outvotes two odd calls and follows a lasting
#: change of load after three (sooner through the load scaling).
SAMPLES = 5
_LOOPBACK = ("localhost", "127.", "::1", "0.0.0.0")


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


def machine_load() -> float:
    """This machine's load average over the last minute, per CPU core (``0.0`` where unknown)."""
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        return 0.0


def on_this_machine(url: str | None) -> bool:
    """Whether ``url``'s host is a loopback address (the model server shares this machine's CPUs)."""
    try:
        host = (urlsplit(url or "").hostname or "").lower()
    except ValueError:
        return False
    return host.startswith(_LOOPBACK)


class SpeedCache:
    """The measured speeds of each endpoint and model, in one JSON file ``{"<base url>
    <provider:model>": {"prompt": [[tokens/s, load per core], ...], "generated": [...]}}`` (oldest
    first, at most :data:`SAMPLES` each; the load is ``null`` where not scaled), and the estimate
    from them (:meth:`get`, see the module docstring).

    ``load`` gives the load average per core now (default :func:`machine_load`; tests pass their
    own). Reading and writing are best effort: a missing, unreadable or foreign file reads as
    empty, and a folder that cannot be written leaves the file as it was.
    """

    def __init__(self, path: Path, load: Callable[[], float] = machine_load) -> None:
        self.path = Path(path)
        self.load = load

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
        """The estimated speed of ``llm``'s endpoint and model now, or ``None`` when none was measured."""
        return self._estimate(llm, self._read().get(self.key(llm)))

    def now(self, llm: LLM) -> Speed | None:
        """``llm``'s speed for the next call of the same ask: its last measured call recorded
        (:meth:`record`), and the estimate no faster, rate by rate, than that call. A call of this
        ask (the search queries) that ran slower than the cached samples predict is a slowdown the
        median and the one-minute load average have not caught up with yet (issue 30: on a machine
        at load 4-7 the search queries took 36.8 s where the samples measured idle planned ~10 s).
        A call of an earlier ask is only one more sample (:meth:`record`)."""
        last = llm.speed()
        estimate = self.record(llm, last)
        if estimate is None or last is None:
            return estimate
        return Speed(_slower(estimate.prompt, last.prompt), _slower(estimate.generated, last.generated))

    def record(self, llm: LLM, speed: Speed | None) -> Speed | None:
        """Add ``speed``'s rates to ``llm``'s samples (a rate equal to the newest sample is that
        sample again, e.g. :meth:`~codeask.llm.base.BaseLLM.speed` read twice, and is not added;
        ``None`` adds nothing) and return the estimate now (:meth:`get`)."""
        data = self._read()
        key = self.key(llm)
        entry = data.get(key)
        entry = entry if isinstance(entry, dict) else {}
        if speed is None:
            return self._estimate(llm, entry)
        load = self.load() if on_this_machine(llm.base_url) else None
        entry = {name: _added(_samples(entry.get(name)), rate, load) for name, rate in _rates(speed)}
        data[key] = entry
        self._write(data)
        return self._estimate(llm, entry)

    def _estimate(self, llm: LLM, entry: Any) -> Speed | None:
        if not isinstance(entry, dict):
            return None
        now = self.load() if on_this_machine(llm.base_url) else None
        rates = [_median(_samples(entry.get(name)), now) for name in ("prompt", "generated")]
        return Speed(*rates) if any(rates) else None

    def _write(self, data: dict[str, Any]) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".llm-speed-", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=1, sort_keys=True)
            os.replace(tmp, self.path)
        except OSError:
            pass


def _slower(estimate: float | None, last: float | None) -> float | None:
    """The lower of two rates, either where the other is unknown."""
    return min(estimate, last) if estimate is not None and last is not None else estimate or last


def _rates(speed: Speed) -> list[tuple[str, float | None]]:
    return [("prompt", speed.prompt), ("generated", speed.generated)]


def _samples(value: Any) -> list[tuple[float, float | None]]:
    """The well-formed ``[rate, load]`` pairs of a cache entry's list (anything else dropped)."""
    out: list[tuple[float, float | None]] = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, list) and len(item) == 2 and _rate(item[0]):
            load = item[1] if isinstance(item[1], (int, float)) and not isinstance(item[1], bool) else None
            out.append((float(item[0]), float(load) if load is not None and load >= 0 else None))
    return out


def _added(samples: list[tuple[float, float | None]], rate: float | None, load: float | None) -> list[Any]:
    """``samples`` with ``(rate, load)`` appended unless ``rate`` is ``None`` or the newest
    sample's rate, the last :data:`SAMPLES` kept, as JSON lists."""
    if rate is not None and (not samples or samples[-1][0] != rate):
        samples = [*samples, (rate, load)]
    return [list(s) for s in samples[-SAMPLES:]]


def _median(samples: list[tuple[float, float | None]], now: float | None) -> float | None:
    """The median of the sampled rates, each scaled from its load to ``now`` where both are known
    (``rate * max(1, load) / max(1, now)``); ``None`` without samples."""
    if not samples:
        return None
    scaled = [r * max(1.0, then) / max(1.0, now) if then is not None and now is not None else r for r, then in samples]
    return statistics.median(scaled)
