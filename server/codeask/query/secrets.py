"""Content secret scan: credentials in repository text are redacted or withheld before any LLM call.

File names catch ``.env`` or ``id_rsa`` (``index.secret_patterns``); this module catches a token
pasted into ``config.py`` or ``settings.json``. It runs Yelp's ``detect-secrets`` (1.5, offline,
every plugin: cloud keys such as AWS, provider tokens such as GitHub, Slack, Stripe, OpenAI,
private key blocks, ``password = ...`` keyword assignments, high-entropy strings) with its default
false-positive filters, through its public ``scan_file`` on a copy of the text in a private
temporary folder (0700, removed at exit).

A finding's line is replaced by ``[codeask: line withheld, possible <kind>]``; a private key block
withholds the whole text (its body spans lines the plugin does not report). Results are cached by
content hash, so a chunk is scanned once per process (about 5 ms for a 60-line chunk here).
"""

from __future__ import annotations

import hashlib
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = ["Finding", "Scan", "scan", "redact"]

#: detect-secrets types whose finding withholds the whole text rather than one line.
WHOLE_TEXT_KINDS = frozenset({"Private Key"})

_LOCK = threading.Lock()
_CACHE: OrderedDict[str, Scan] = OrderedDict()
_CACHE_SIZE = 4096


@dataclass(frozen=True)
class Finding:
    """One credential: ``kind`` is the detect-secrets type (e.g. ``"AWS Access Key"``), ``line``
    1-based within the scanned text."""

    kind: str
    line: int


@dataclass(frozen=True)
class Scan:
    """The findings of one text, in line order (empty: nothing found)."""

    findings: tuple[Finding, ...]

    @property
    def whole(self) -> bool:
        """Whether the whole text must be withheld (a private key block)."""
        return any(f.kind in WHOLE_TEXT_KINDS for f in self.findings)

    @property
    def kinds(self) -> list[str]:
        """The distinct kinds found, sorted."""
        return sorted({f.kind for f in self.findings})


def _configure() -> None:
    """Enable every detect-secrets plugin (its default filters stay on); once per process."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.settings import get_settings

    settings = get_settings()
    if not settings.plugins:
        plugins: dict[str, type] = get_mapping_from_secret_type_to_class()
        settings.configure_plugins([{"name": cls.__name__} for cls in plugins.values()])


def scan(text: str, filename: str = "snippet.txt") -> Scan:
    """The credentials in ``text``.

    Args:
        text: repository text (a chunk, a selection).
        filename: its path; only the name is used, so language-aware plugins (the keyword
            detector's per-language patterns) and filters (lock files) see the right kind of file.

    Returns:
        A :class:`Scan`; cached by (name suffix, text) hash.
    """
    name = PurePosixPath(filename.replace("\\", "/")).name or "snippet.txt"
    key = hashlib.sha256(f"{PurePosixPath(name).suffix}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
        from detect_secrets.core.scan import scan_file

        _configure()
        # detect-secrets scans files by path; a folder per scan (removed at once, even on error)
        # keeps the file's own name for its language-aware plugins and leaves nothing behind when a
        # process is killed between scans.
        with tempfile.TemporaryDirectory(prefix="codeask-scan-") as folder:
            path = Path(folder) / name
            path.write_text(text, encoding="utf-8", errors="surrogateescape")
            found = {(s.type, s.line_number) for s in scan_file(str(path))}
        result = Scan(tuple(Finding(kind, line) for kind, line in sorted(found, key=lambda f: (f[1], f[0]))))
        _CACHE[key] = result
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
        return result


def redact(text: str, result: Scan) -> str:
    """``text`` with every line holding a finding replaced by ``[codeask: line withheld, possible
    <kind>]`` (its indentation kept). Line endings are normalized to ``\\n``."""
    if not result.findings:
        return text
    lines = text.splitlines()
    by_line: dict[int, list[str]] = {}
    for f in result.findings:
        by_line.setdefault(f.line, []).append(f.kind)
    for number, kinds in by_line.items():
        if 1 <= number <= len(lines):
            line = lines[number - 1]
            indent = line[: len(line) - len(line.lstrip())]
            lines[number - 1] = f"{indent}[codeask: line withheld, possible {', '.join(sorted(set(kinds)))}]"
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")
