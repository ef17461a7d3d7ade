"""Which workspace files an MCP client (an AI agent) may read, and which of their lines.

An agent names a file by a path relative to a workspace root, or an absolute one inside it.
:class:`AgentFiles` turns that into the text of a file of a root, or refuses it with one line
(a :class:`~mcp.server.mcpserver.exceptions.ToolError`; a ``ResourceNotFoundError`` for the
``codeask://source`` resource) naming the reason. The decision is the indexer's and explain's own
(:func:`codeask.query.span.explain_source` over :mod:`codeask.index.walk`'s rules: links, secret,
binary, too large and minified files), plus the names the indexer never indexes (``.gitignore``d,
excluded), which explain reads but an agent never gets.

Line numbers are 1-based and inclusive, counted in codeask's one line model
(:func:`codeask.lines.split_lines`), so the lines a ``codeask://source`` resource returns are the
lines a citation names.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError

from codeask.lines import split_lines
from codeask.service import NotExplainable, Service

__all__ = ["AgentFiles"]

#: Names the indexer skips that explain reads (and withholds): never given to an agent. Secret files are
#: explain_source's own refusal.
_NEVER_READ = {"ignored": "ignored (.gitignore / .codeaskignore)", "excluded": "excluded (index.exclude)"}


class AgentFiles:
    """The readable files of ``service`` for an agent, by path.

    Args:
        service: the served workspace.
        roots: its roots in the order the server lists them (a ``root`` number picks one).
    """

    def __init__(self, service: Service, roots: list[str]):
        self.service = service
        self.roots = roots

    def read(self, path: str, *, root: int | None = None) -> tuple[str, str, str, str]:
        """A path from an agent -> ``(root, rel_path, abs_path, text)`` of a file codeask reads.

        ``path`` is relative to a root (the first root holding it; ``root`` picks one by position)
        or absolute. Whether it is read is decided by the indexer's rules, as explain decides
        (:func:`~codeask.query.span.explain_source`: links that leave the root or, with
        ``index.follow_symlinks`` off, any link; FIFOs and devices; secret files; binary, too large
        or minified files), plus the names the indexer never indexes (``.gitignore``d, excluded:
        :meth:`Ignorer.reason <codeask.index.walk.Ignorer.reason>`), which an agent never gets.
        ``text`` is decoded as the indexer decodes it, so its lines are the lines a citation names.

        Raises:
            ToolError: the path is outside every root, missing, a folder, or a file codeask does not
                read, in one line naming the reason.
        """
        path = (path or "").strip()
        if not path:
            raise ToolError("path is empty; give a path relative to the workspace root")
        roots = self.roots if root is None else self.roots[root : root + 1]
        if root is not None and not roots:
            raise ToolError(f"root {root} does not exist; this server has {len(self.roots)} root(s)")
        if os.path.isabs(path):
            candidates = [Path(os.path.abspath(path))]
        else:
            candidates = [Path(os.path.abspath(Path(r) / path)) for r in roots]
        inside = [
            (c, found) for c in candidates if (found := self.service.root_of(c)) is not None and found[0] in roots
        ]
        if not inside:
            raise ToolError(f"{path} is outside the workspace root(s): {', '.join(roots)}")
        # the first root holding the name (a dangling link or a FIFO counts: it is refused below)
        candidate, (served, rel) = next(((c, f) for c, f in inside if os.path.lexists(c)), inside[0])
        if not rel:
            raise ToolError(f"{path} is a folder, not a file")
        reason = self.service.skip_reason(served, rel)
        if reason in _NEVER_READ:  # read by explain but withheld from an LLM; never given to an agent
            raise ToolError(f"{rel} is {_NEVER_READ[reason]}; codeask does not index or return it")
        try:
            text = self.service.read_source(str(candidate))
        except NotExplainable as exc:
            raise ToolError(str(exc)) from None
        return served, rel, str(candidate), text

    def selection(self, path: str, start_line: int, end_line: int) -> tuple[str, str, int, int]:
        """The ``explain_code`` target: ``(rel_path, abs_path, start_line, end_line)``, the end cut
        at the file's last line.

        Raises:
            ToolError: the path is not read (see :meth:`read`), the lines are not
                ``1 <= start_line <= end_line``, or ``start_line`` is past the end of the file.
        """
        _root, rel, abs_path, text = self.read(path)
        if start_line < 1 or end_line < start_line:
            raise ToolError(f"lines {start_line}-{end_line}: need 1 <= start_line <= end_line")
        n_lines = len(split_lines(text))
        if start_line > n_lines:
            raise ToolError(f"{rel} has {n_lines} lines; start_line {start_line} is past the end")
        return rel, abs_path, start_line, min(end_line, n_lines)

    def source_text(self, path: str, start: str = "", end: str = "", root: str = "") -> str:
        """The ``codeask://source/{+path}{?start,end,root}`` resource: lines ``start..end`` (1-based,
        inclusive; default the whole file) of a workspace file, joined with ``\\n``.

        Raises:
            ResourceNotFoundError: the file is not read (:meth:`read`'s one line), or bad line numbers.
        """
        try:
            first = int(start) if start else 1
            last = int(end) if end else None
            root_n = int(root) if root else None
        except ValueError:
            raise ResourceNotFoundError(f"codeask://source/{path}: start, end and root must be integers") from None
        try:
            _, rel, _abs_path, text = self.read(path, root=root_n)
        except ToolError as exc:
            raise ResourceNotFoundError(str(exc)) from None
        lines = split_lines(text)
        last = len(lines) if last is None else min(last, len(lines))
        if first < 1 or first > max(1, len(lines)) or last < first - 1:
            raise ResourceNotFoundError(f"{rel}: lines {first}-{last} are not in the file ({len(lines)} lines)")
        return "\n".join(lines[first - 1 : last])

    def resolve_citation(
        self, path: str, start_line: int, end_line: int, symbol: str, digest: str, open_line: int = 0
    ) -> dict[str, Any]:
        """Where the code cited as ``path`` lines ``start_line..end_line`` (anchor ``symbol`` /
        ``digest``, opened at ``open_line``) is now (:meth:`Service.resolve_citation
        <codeask.service.Service.resolve_citation>`): ``{"path" (relative), "uri", "status",
        "start_line", "end_line", "note", "open_line"}``.

        Raises:
            ToolError: the path is not read (:meth:`read`) or the lines are not
                ``1 <= start_line <= end_line``.
        """
        if start_line < 1 or end_line < start_line:
            raise ToolError(f"lines {start_line}-{end_line}: need 1 <= start_line <= end_line")
        _root, rel, abs_path, text = self.read(path)
        found = self.service.resolve_citation(
            abs_path, start_line, end_line, symbol, digest, open_line=open_line, text=text
        )
        return {**found, "path": rel}

    def resource_uri(self, root: str, path: str, start: int, end: int) -> str:
        """``codeask://source/<path>?start=S&end=E`` (plus ``&root=N`` when serving several roots)."""
        uri = f"codeask://source/{quote(path, safe='/')}?start={start}&end={end}"
        if len(self.roots) > 1 and root in self.roots:
            uri += f"&root={self.roots.index(root)}"
        return uri
