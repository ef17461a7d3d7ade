"""``codeask cite-check``: are the links to code in a markdown file still true?

A link to code is ``[text](path#Lx-Ly)`` (``#Lx`` for one line; ``file:///abs/path#Lx-Ly`` too)
outside code, or a bare ``path:line`` / ``path:x-y`` outside links and code blocks (inline code
included: docs often write `` `adapters.py:40` ``). Relative paths are taken from the
markdown file's folder, then from ``root``; a file outside ``root`` is not read. Each link is
checked against the file as it is now (read as the indexer reads it,
:func:`codeask.index.walk.read_text`):

* a link codeask wrote carries its anchor in the link title (``"codeask:<hash> <symbol>"``, see
  :func:`codeask.query.result.source_link`): the cited text must still be at those lines
  (:func:`codeask.query.anchors.resolve`);
* a link whose text names a symbol (an identifier, in backticks or not, ``send``, ``Session.send``,
  ``send()``) must have that symbol's definition line inside its range
  (:func:`codeask.index.chunking.symbols.definitions`); a code-shaped name (backticked, dotted,
  snake_case, CamelCase) the file does not define is wrong too;
* every link's lines must exist in the file (bare ``path:line`` whose file does not exist are not
  taken as links: they may be host names).

A wrong link is reported with where the code is now (:class:`Problem`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from codeask.index.chunking.languages import language_for
from codeask.index.chunking.symbols import definitions
from codeask.index.filetext import read_text
from codeask.index.walk import is_secret
from codeask.lines import split_lines
from codeask.query.anchors import resolve
from codeask.settings import IndexSettings
from codeask.uris import uri_to_path

__all__ = ["Link", "Problem", "check_file", "find_links"]

_LINK = re.compile(r"\[(?P<text>(?:[^\[\]\\]|\\.)*)\]\((?P<target><[^>\n]*>|[^\s()]+)(?:\s+\"(?P<title>[^\"\n]*)\")?\)")
_BARE = re.compile(r"(?<![\w/.\-#:\[(])(?P<path>[\w.\-/]*\w\.\w+):(?P<start>\d+)(?:-(?P<end>\d+))?(?![\w:])")
_FRAGMENT = re.compile(r"#L(\d+)(?:-L?(\d+))?$")
_ANCHOR = re.compile(r"codeask:([0-9a-f]{16})(?:\s+(\S+))?")
_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_IDENT = re.compile(r"^(`?)([A-Za-z_][\w.]*)(?:\(\))?\1$")
_CODE_SHAPED = re.compile(r"[._]|[a-z][A-Z]")


@dataclass(frozen=True)
class Link:
    """One link to code: the markdown ``line`` (1-based) it is on, its ``text`` (``""`` for a bare
    ``path:line``), ``target`` as written, 1-based inclusive lines, and the anchor of its title."""

    line: int
    text: str
    target: str
    start_line: int
    end_line: int
    digest: str = ""
    symbol: str = ""


@dataclass(frozen=True)
class Problem:
    """A wrong link and why, with where the code is now (``now``: 1-based lines, or ``None``)."""

    link: Link
    message: str
    now: tuple[int, int] | None = None


def find_links(markdown: str) -> Iterator[Link]:
    """The links to code of ``markdown`` (see the module docstring), in order; fenced code skipped."""
    in_code = False
    for number, line in enumerate(split_lines(markdown), 1):
        if _FENCE.match(line):
            in_code = not in_code
            continue
        if in_code:
            continue
        masked = _INLINE_CODE.sub(lambda code: " " * len(code.group()), line)  # same offsets as line
        for m in _LINK.finditer(masked):
            text = line[m.start("text") : m.end("text")]
            target = m["target"].strip("<>")
            frag = _FRAGMENT.search(target)
            if frag is None or target.startswith(("http:", "https:", "#")):
                continue
            start = int(frag[1])
            anchor = _ANCHOR.match(m["title"] or "")
            yield Link(
                number,
                text,
                target[: frag.start()],
                start,
                int(frag[2] or start),
                anchor[1] if anchor else "",
                (anchor[2] or "") if anchor else "",
            )
        for m in _BARE.finditer(_LINK.sub(" ", line)):
            start = int(m["start"])
            yield Link(number, "", m["path"], start, int(m["end"] or start))


def _locate(target: str, base: Path, root: Path) -> Path | None:
    """The file ``target`` names (``file:`` URI, absolute, or relative to ``base`` then ``root``)."""
    if target.startswith("file:"):
        path = uri_to_path(target)
        return Path(path) if path else None
    for folder in (base, root):
        candidate = Path(os.path.abspath(folder / target))
        if candidate.exists():
            return candidate
    return None


def _symbol_problem(link: Link, text: str, language: str) -> Problem | None:
    """Whether the symbol ``link``'s text names is defined inside its lines (``None``: fine or no symbol)."""
    m = _IDENT.match(link.text.strip())
    defs = definitions(text, language) if m else []
    if m is None or not defs:
        return None
    name = m[2]
    last = name.rsplit(".", 1)[-1]
    named = [d for d in defs if d.symbol == name or d.name == last]
    if any(link.start_line <= d.name_line <= link.end_line for d in named):
        return None
    if named:
        d = min(named, key=lambda d: abs(d.start_line - link.start_line))
        return Problem(link, f"{name} is defined at lines {d.start_line}-{d.end_line}", (d.start_line, d.end_line))
    if m[1] or _CODE_SHAPED.search(name):
        return Problem(link, f"{name} is not defined in {link.target}")
    return None


def check_link(link: Link, path: Path, settings: IndexSettings) -> Problem | None:
    """The problem of ``link`` to ``path`` (an existing file), or ``None`` when it is true."""
    if is_secret(path.as_posix().lstrip("/"), settings):
        return Problem(link, "links to a secret file (index.secret_patterns); not read")
    read = read_text(path, settings)
    if isinstance(read, str):
        return Problem(link, f"cannot read {link.target}: {read.replace('_', ' ')}")
    lines = split_lines(read.text)
    language = language_for(path.name)
    if link.digest:
        found = resolve(read.text, language, link.start_line, link.end_line, link.symbol, link.digest)
        if found.status == "same":
            return None
        return Problem(
            link, f"{found.note}: now lines {found.start_line}-{found.end_line}", (found.start_line, found.end_line)
        )
    if link.end_line > len(lines) or link.start_line < 1:
        return Problem(link, f"lines {link.start_line}-{link.end_line} are past the end ({len(lines)} lines)")
    return _symbol_problem(link, read.text, language)


def check_file(
    markdown_path: Path, root: Path | None = None, settings: IndexSettings | None = None
) -> tuple[int, list[Problem]]:
    """``(links checked, problems)`` of the markdown file ``markdown_path``; ``root`` (default: the
    file's folder) bounds the files read.

    Raises:
        OSError: the markdown file cannot be read.
    """
    settings = settings or IndexSettings()
    base = markdown_path.parent.absolute()
    root = Path(os.path.abspath(root or base))
    text = markdown_path.read_text(encoding="utf-8", errors="replace")
    checked, problems = 0, []
    for link in find_links(text):
        path = _locate(link.target, base, root)
        if path is None and not link.text:
            continue  # a bare name:number that is not a file here
        checked += 1
        if path is None:
            problems.append(Problem(link, f"{link.target} not found"))
        elif not path.is_relative_to(root):
            problems.append(Problem(link, f"{link.target} is outside {root} (give --root)"))
        elif (problem := check_link(link, path, settings)) is not None:
            problems.append(problem)
    return checked, problems
