"""What callers of an LLM see: the :class:`LLM` protocol, the :class:`Completion` of a call, the
:class:`LLMError` family, and the token and time estimates the calls are planned with.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypeVar, runtime_checkable
from urllib.parse import urlsplit

import pydantic

from codeask.llm.cancel import CancelLike

__all__ = [
    "LLM",
    "LLMError",
    "ContextLengthError",
    "PassThrough",
    "Completion",
    "Event",
    "TextStream",
    "COMPLETE_REASONS",
    "Speed",
    "estimate_tokens",
    "is_local_url",
    "first_token_seconds",
    "M",
]

#: A pydantic model class a structured call returns an instance of.
M = TypeVar("M", bound=pydantic.BaseModel)


class LLMError(RuntimeError):
    """One clear line naming provider and model, e.g.
    ``openai model 'gpt-x' at http://..: 401 invalid api key``.

    Attributes ``provider``, ``model``, ``base_url`` and ``status`` (the HTTP status code, or
    ``None`` for connection errors, timeouts and bad replies) are set when known. The API key
    never appears in the message.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.model = model
        self.base_url = base_url
        self.status = status


class PassThrough(Exception):
    """An adapter's own signal raised from ``_open`` that the call passes on unchanged (not retried)."""


class ContextLengthError(LLMError):
    """The server refused the prompt as longer than the model's context (HTTP 400 naming the context)."""


#: Finish reasons after which the text is complete.
COMPLETE_REASONS = frozenset({"stop", "tool_calls"})

_REASON_TEXT = {
    "length": "the max_tokens limit was reached",
    "repetition": "the reply started repeating itself, so it was stopped early",
    "content_filter": "the provider's content filter stopped it",
    "incomplete": "the stream ended without its final event",
    "error": "the stream broke",
}


@dataclass(frozen=True)
class Speed:
    """How fast an endpoint works, tokens per second: ``prompt`` (prompt tokens read before the first
    token) and ``generated`` (answer tokens written after it); ``None`` where a call could not tell
    (a prompt the server had cached, a reply of a few tokens)."""

    prompt: float | None = None
    generated: float | None = None

    def merged(self, older: Speed | None) -> Speed:
        """This measurement, with ``older``'s value where this one has none."""
        if older is None:
            return self
        return Speed(
            self.prompt if self.prompt is not None else older.prompt,
            self.generated if self.generated is not None else older.generated,
        )

    def writing(self) -> Speed:
        """The writing rate alone, for a call whose prompt the server had mostly cached (a second
        part after the first part's prompt): llama.cpp reads its few new tokens at 100-108
        tokens/s where a whole first prompt reads at ~45 (a33's issue-30 run), so that reading
        rate would over-fill the next first prompt."""
        return Speed(None, self.generated)


@dataclass
class Completion:
    """How one streamed LLM call ended.

    Attributes:
        text: everything received (partial when cut off).
        finish_reason: ``stop``, ``length``, ``content_filter``, ``tool_calls``, ``incomplete`` (no
            final event), ``error`` (broken after some text), ``repetition`` (stopped once the reply
            repeated itself, :mod:`codeask.llm.repetition`) or ``deadline`` (stopped when the call's
            ``deadline`` seconds ran out); ``None`` never leaves :meth:`BaseLLM.generate`.
        tokens: text deltas received (llama.cpp and OpenAI send about one token per delta).
        prompt_tokens: the prompt's size, tokens (the server's count when it reported usage, else
            :func:`estimate_tokens`).
        error: what broke or stopped the stream (``finish_reason`` ``error`` or ``deadline``), one line.
        first_token_seconds / seconds: from the request to the first delta / to the end.
        speed: the endpoint's speed measured on this call (:func:`codeask.llm.speed.measure`).
    """

    text: str
    finish_reason: str | None = None
    tokens: int = 0
    prompt_tokens: int = 0
    error: str | None = None
    first_token_seconds: float | None = None
    seconds: float = 0.0
    speed: Speed | None = None

    @property
    def truncated(self) -> bool:
        """Whether the text is cut off (any finish reason but ``stop`` / ``tool_calls``)."""
        return self.finish_reason not in COMPLETE_REASONS

    def cut_reason(self) -> str | None:
        """``"max_tokens reached"``-style words for a cut-off answer, ``None`` when complete."""
        if not self.truncated:
            return None
        if self.error:
            return self.error
        return _REASON_TEXT.get(self.finish_reason or "", f"finish reason {self.finish_reason}")


class Event(NamedTuple):
    """One stream event as an adapter reports it: a text delta, the finish reason, the prompt's size
    (the server's count) and llama.cpp's ``timings`` object, each ``None`` when the event has none."""

    text: str | None
    finish: str | None = None
    prompt_tokens: int | None = None
    timings: dict[str, Any] | None = None


class TextStream:
    """The deltas of one streamed call (iterate once); :attr:`completion` is set when exhausted."""

    def __init__(self, run: Generator[str, None, Completion]) -> None:
        self._run = run
        self.completion: Completion | None = None

    def __iter__(self) -> Iterator[str]:
        self.completion = yield from self._run

    def close(self) -> None:
        """Stop early: the request is aborted and its connection closed."""
        self._run.close()


def estimate_tokens(text: str) -> int:
    """A calibrated token estimate for chat prompts over code: one token per 3 characters.

    Measured with llama.cpp's ``/tokenize`` on this repository's prompts: Qwen2.5 and SmolLM2 BPE
    tokenizers give 3.3-3.9 characters per token on Python code and English; 3 errs on the high
    side so a budget built on it does not overflow. Used where the endpoint cannot count.
    """
    return (len(text) + 2) // 3


_LOCAL_HOSTS = ("localhost", "127.", "::1", "[::1]", "0.0.0.0", "host.docker.internal")


def is_local_url(url: str | None) -> bool:
    """Whether ``url`` points at this machine or a private network (a local model server)."""
    if not url:
        return False
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    if host.startswith(_LOCAL_HOSTS) or host.endswith(".local") or host == "::1":
        return True
    return host.startswith(("10.", "192.168.")) or bool(re.match(r"^172\.(1[6-9]|2\d|3[01])\.", host))


def first_token_seconds(prompt_tokens: int, *, base: float, local: bool) -> float:
    """Default time to first token, seconds: ``base`` (``llm.timeout``) plus the prompt's evaluation
    time at a slow rate, 4 tokens/s for a local endpoint and 200 tokens/s for a hosted one.

    The local rate is below the slowest measured on this project's 2-core machine under load:
    Qwen2.5-Coder-1.5B (Q4_K_M, llama.cpp) evaluated prompts at 4.8-12 tokens/s at load average 15-29
    (25-60 when idle); at 20 tokens/s a 4,257-token prompt timed out after 273 s while the server
    was 70% through it. The request is streamed and closed on timeout, so a long wait costs no
    server work, and the sources are shown before the call."""
    rate = 4.0 if local else 200.0
    return base + prompt_tokens / rate


@runtime_checkable
class LLM(Protocol):
    """A chat model: one prompt in, text (whole, streamed) or a validated pydantic object out.

    The interface the query steps use (:class:`BaseLLM` implements it for both providers). All
    calls raise :class:`LLMError` on any failure and :class:`Cancelled` when ``cancel`` says so.
    """

    provider: str
    model: str
    base_url: str | None

    def describe(self) -> str:
        """``provider:model``, e.g. ``openai:gpt-4o-mini``."""
        ...

    def context_tokens(self) -> int:
        """The model's context window, tokens."""
        ...

    def speed(self) -> Speed | None:
        """The endpoint's speed measured on this object's calls so far, or ``None``."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` (the endpoint's tokenizer, else :func:`estimate_tokens`)."""
        ...

    def generate(
        self,
        prompt: str,
        *,
        system: str | None = None,
        max_tokens: int | None = None,
        on_delta: Callable[[str], None] | None = None,
        cancel: CancelLike = None,
        deadline: float | None = None,
    ) -> Completion:
        """One streamed call; each text delta goes to ``on_delta``; stopped after ``deadline`` seconds
        (``None``: no limit); returns the :class:`Completion`."""
        ...

    def complete(
        self, prompt: str, *, system: str | None = None, max_tokens: int | None = None, cancel: CancelLike = None
    ) -> str:
        """The whole answer text."""
        ...

    def stream(
        self, prompt: str, *, system: str | None = None, max_tokens: int | None = None, cancel: CancelLike = None
    ) -> Iterator[str]:
        """The answer as text deltas, in order; their concatenation is the answer."""
        ...

    def structured(self, prompt: str, schema: type[M], *, system: str | None = None, cancel: CancelLike = None) -> M:
        """An instance of ``schema`` produced by the model and validated."""
        ...
