"""Helpers shared by the adapters: error text (one line, no key, the HTTP status in words, the
cause chain), recognizing a context overflow or a failure before connecting, and JSON from a reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pydantic

from codeask.llm.protocol import LLMError, M, estimate_tokens

__all__ = [
    "one_line",
    "redact",
    "schema_name",
    "extract_json_object",
    "before_connect",
    "guard_tokens",
    "mentions_context_overflow",
    "status_detail",
    "cause_chain",
    "retry_delay",
    "validate_reply",
]


def one_line(text: str, limit: int = 500) -> str:
    """Collapse whitespace to single spaces and cap the length."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by ``***``; unchanged when ``secret`` is
    ``None`` or shorter than 4 characters."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, "***")
    return text


def schema_name(schema: type[pydantic.BaseModel]) -> str:
    """A tool / response-format name from the model class: ``[a-zA-Z0-9_-]{1,64}``."""
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", schema.__name__)[:64]
    return name or "result"


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def extract_json_object(text: str) -> Any:
    """The first JSON object (or array) in ``text``: the whole text, a fenced block, or the
    first ``{...}`` in the prose, which must parse: an object inside a broken one (a reply cut off
    mid-object) is never taken for the reply. Raises ``ValueError`` when there is none."""
    stripped = text.strip()
    if stripped:
        try:
            return json.loads(stripped)
        except ValueError:
            pass
    for match in _FENCE.finditer(text):
        try:
            return json.loads(match.group(1).strip())
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                value, _ = decoder.raw_decode(text, i)
            except ValueError:
                if ch == "{":  # a broken (cut-off) object: never fall back to an object inside it
                    raise ValueError("the reply's JSON object does not parse (cut off or malformed)") from None
                continue
            if isinstance(value, dict) or (ch == "[" and isinstance(value, list) and value):
                return value
    raise ValueError("no JSON object found in the reply")


#: httpx / httpcore (and their ``*2`` forks) errors raised while connecting.
_CONNECT_ERRORS = frozenset({"ConnectError", "ConnectTimeout", "PoolTimeout"})


def before_connect(exc: BaseException) -> bool:
    """Whether a transport error happened while connecting (nothing was sent: safe to retry)."""
    cur: BaseException | None = exc
    for _ in range(6):
        if cur is None:
            return False
        if isinstance(cur, ConnectionRefusedError) or type(cur).__name__ in _CONNECT_ERRORS:
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def guard_tokens(prompt: str, system: str | None) -> int:
    """:func:`estimate_tokens` of a call's prompt and system message."""
    return estimate_tokens((system or "") + prompt)


_CONTEXT_WORDS = (
    "context size",
    "context length",
    "context window",
    "maximum context",
    "prompt is too long",
    "too many tokens",
    "exceeds the available context",
    "n_ctx",
)


def mentions_context_overflow(text: str) -> bool:
    """Whether an error text says the prompt does not fit the model's context."""
    text = text.lower()
    return any(word in text for word in _CONTEXT_WORDS)


def status_detail(status: int | None, message: str | None, fallback: str) -> str:
    """``"401 invalid api key"``; strips the SDKs' ``Error code: 401 - `` prefix from fallbacks."""
    text = message or re.sub(r"^Error code: \d+\s*-?\s*", "", fallback or "").strip()
    if not text:
        text = "error"
    return f"{status} {text}" if status is not None else text


def cause_chain(exc: BaseException) -> str:
    """The innermost useful cause text of a connection error, e.g. ``[Errno 111] Connection refused``."""
    seen: list[str] = []
    cur: BaseException | None = exc.__cause__ or exc.__context__
    depth = 0
    while cur is not None and depth < 6:
        text = str(cur).strip()
        if text and text not in seen:
            seen.append(text)
        cur = cur.__cause__ or cur.__context__
        depth += 1
    return seen[-1] if seen else ""


def retry_delay(exc: BaseException, attempt: int) -> float:
    """Seconds before retry ``attempt + 1``: the server's ``retry-after(-ms)`` (at most 30 s), else
    0.5 s doubling up to 8 s."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    try:
        if headers.get("retry-after-ms"):
            return min(30.0, float(headers["retry-after-ms"]) / 1000)
        if headers.get("retry-after"):
            return min(30.0, float(headers["retry-after"]))
    except ValueError:
        pass
    return min(8.0, 0.5 * 2**attempt)


def validate_reply(schema: type[M], data: Any, raw: str | None, error: Callable[[str], LLMError]) -> M:
    """``data`` (JSON text, possibly inside prose or a fence, or an object) as an instance of ``schema``.

    Raises:
        LLMError: made by ``error`` from a line naming the fields that do not validate and the reply.
    """
    try:
        if isinstance(data, str):
            try:
                return schema.model_validate_json(data)
            except pydantic.ValidationError:
                data = extract_json_object(data)
        return schema.model_validate(data)
    except ValueError as exc:  # includes pydantic.ValidationError
        if isinstance(exc, pydantic.ValidationError):
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()[:5]
            )
        else:
            problems = str(exc)
        shown = raw if raw is not None else (data if isinstance(data, str) else json.dumps(data))
        raise error(f"reply does not match {schema.__name__}: {problems} (reply: {one_line(shown, 200)})") from exc
