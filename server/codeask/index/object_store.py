"""LanceDB on S3-compatible object storage: the connection options from the standard AWS variables
(:func:`storage_options`), and how its errors and filters are spelled (for :mod:`codeask.index.shared`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = ["storage_options", "sql_literal", "timedelta", "is_conflict", "vector_schema"]


def storage_options(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """LanceDB ``storage_options`` for S3 from the standard AWS environment variables.

    Timeouts are kept short (connect 5 s, request 60 s, 2 retries within 20 s) so an unreachable
    store costs seconds, not the object store's default three minutes of retries.
    """
    env = os.environ if env is None else env
    opts: dict[str, str] = {
        "connect_timeout": "5s",
        "timeout": "60s",
        "client_max_retries": "2",
        "client_retry_timeout": "20",
    }
    for var, key in (
        ("AWS_ACCESS_KEY_ID", "aws_access_key_id"),
        ("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"),
        ("AWS_SESSION_TOKEN", "aws_session_token"),
    ):
        if env.get(var):
            opts[key] = env[var]
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        opts["aws_region"] = region
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        opts["aws_endpoint"] = endpoint
        if endpoint.startswith("http://"):
            opts["allow_http"] = "true"
    return opts


def sql_literal(value: str) -> str:
    """``value`` as a quoted SQL string literal (a LanceDB filter)."""
    return "'" + value.replace("'", "''") + "'"


def timedelta(**kw: float) -> Any:
    """A :class:`datetime.timedelta` (imported here, on first use)."""
    import datetime

    return datetime.timedelta(**kw)


def is_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is LanceDB's commit conflict with a concurrent writer (worth a retry)."""
    text = str(exc).lower()
    return "conflict" in text or "retryable" in text or "concurrent" in text


def vector_schema(dim: int) -> Any:
    """The Arrow schema of the shared ``vectors`` table: ``model``, ``embed_hash``, ``vector``
    (``dim`` float32), ``published`` (seconds since the epoch), ``text``."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("model", pa.string()),
            pa.field("embed_hash", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
            pa.field("published", pa.float64()),
            pa.field("text", pa.string()),
        ]
    )
