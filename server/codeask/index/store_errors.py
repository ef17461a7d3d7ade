"""One short cause for an object-store error LanceDB raises (its Rust error chain is printed as one
600-900 character ``Debug`` dump: ``Invalid input, Failed to connect to namespace: IO { source:
Generic { store: "S3", ... ConnectError(..., Os { code: 111, kind: ConnectionRefused ...``).

:func:`store_error_cause` picks out what a user acts on: the S3 error code and message the store
answered (``NoSuchBucket``, ``AccessDenied``, ``SignatureDoesNotMatch``, ``InvalidAccessKeyId``, ...),
else the HTTP status, else the connection failure (refused, name not resolved, timed out) with the
endpoint it tried. The patterns are those of lance-io 13 / object_store 0.12 as seen from a real
SeaweedFS server (``tests/s3_server.py``); an error matching none is shortened to 300 characters.
"""

from __future__ import annotations

import re

__all__ = ["store_error_cause"]

_CODE = re.compile(r"<Code>([^<]+)</Code>(?:\s*<Message>([^<]*)</Message>)?")
_STATUS = re.compile(r"\bstatus: (\d{3})\b")
_ENDPOINT = re.compile(r"uri: Some\((https?://[^/?)\s]+)")
_DENIED = {
    "AccessDenied",
    "SignatureDoesNotMatch",
    "InvalidAccessKeyId",
    "ExpiredToken",
    "InvalidToken",
    "TokenRefreshRequired",
    "AllAccessDisabled",
}
_CONNECT = (
    ("ConnectionRefused", "connection refused by {endpoint}: is the store running, and AWS_ENDPOINT_URL right?"),
    ("dns error", "cannot resolve the host of {endpoint}"),
    ("failed to lookup address", "cannot resolve the host of {endpoint}"),
    ("TimedOut", "timed out connecting to {endpoint}"),
    ("operation timed out", "timed out connecting to {endpoint}"),
    ("certificate", "TLS certificate refused for {endpoint}"),
)


def store_error_cause(exc: BaseException) -> str:
    """A short cause for ``exc`` (one line, at most 160 characters for a recognised error).

    E.g. ``no such bucket (NoSuchBucket)``, ``access denied (SignatureDoesNotMatch): check
    AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY``, ``connection refused by http://127.0.0.1:9000: ...``.
    """
    text = " ".join(str(exc).split())
    endpoint_match = _ENDPOINT.search(text)
    endpoint = endpoint_match.group(1) if endpoint_match else "the store's endpoint"
    if found := _CODE.search(text):
        code, message = found.group(1), (found.group(2) or "").strip()
        if code == "NoSuchBucket":
            return f"no such bucket ({code})"
        if code in _DENIED:
            return f"access denied ({code}): check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY"
        return (f"{code}: {message}" if message else code)[:160]
    for needle, cause in _CONNECT:
        if needle in text:
            return cause.format(endpoint=endpoint)
    if status := _STATUS.search(text):
        code = int(status.group(1))
        what = {403: "access denied", 404: "not found", 401: "not authenticated"}.get(code, "the store answered")
        return f"{what} (HTTP {code} from {endpoint})"
    return (text[:300] + "...") if len(text) > 300 else text or type(exc).__name__
