"""The one conversion between filesystem paths and ``file://`` URIs, and markdown links to them.

Built on :mod:`pygls.uris` (the same conversion the language server uses for the editor's URIs):
every character outside RFC 3986's unreserved set and ``/`` is percent-encoded, so a path with a
space, ``#``, ``%``, ``(``, ``)``, ``;``, ``&``, ``=`` or non-ASCII letters gives a URI that
round-trips to the same path and can sit inside a markdown link's parentheses unchanged.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pygls.uris import from_fs_path, to_fs_path

__all__ = ["file_uri", "uri_to_path", "markdown_link"]

_FRAGMENT = re.compile(r"#L\d+(?:-L\d+)?$")
#: Characters that would end or restyle a link's text (brackets, code spans, emphasis, HTML).
_MARKDOWN_SPECIAL = re.compile(r"([\\`*\[\]<>])")


def file_uri(path: str | Path, start_line: int | None = None, end_line: int | None = None) -> str:
    """``file:///abs/path`` for ``path`` (made absolute, not resolved), with ``#L10-L20`` (1-based
    lines) when ``start_line`` is given (``#L10`` without ``end_line``).

    >>> file_uri("/tmp/a b/x(1).py", 3, 4)
    'file:///tmp/a%20b/x%281%29.py#L3-L4'
    """
    uri = from_fs_path(os.path.abspath(os.fspath(path)))
    if start_line is not None:
        uri += f"#L{start_line}" + (f"-L{end_line}" if end_line is not None else "")
    return uri


def uri_to_path(uri: str) -> str | None:
    """The absolute path of a ``file://`` URI (a ``#L..`` fragment ignored); ``None`` for other
    schemes or a malformed URI."""
    if not uri or not uri.startswith("file:"):
        return None
    return to_fs_path(_FRAGMENT.sub("", uri))


def markdown_link(label: str, uri: str, title: str = "") -> str:
    """``[label](uri)`` (``[label](uri "title")`` with a ``title``, its ``"`` and ``\\`` dropped) with
    the label's ``\\ ` * [ ] < >`` backslash-escaped; the URI from :func:`file_uri` needs no
    escaping (no space or parenthesis survives its encoding)."""
    escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", label)
    clean = re.sub(r'["\\\n]', "", title)
    return f'[{escaped}]({uri} "{clean}")' if clean else f"[{escaped}]({uri})"
