"""Which workspace files an MCP client (an AI agent) may read, and which of their lines.

An agent names a file by a path relative to a workspace root, or an absolute one inside it.
:class:`AgentFiles` turns that into an indexable file of a root, or refuses it with a one-line
:class:`~mcp.server.mcpserver.exceptions.ToolError`, under the indexer's own trust rules: links are
followed only while they stay inside their root, and files the indexer skips (secrets,
``.gitignore``d, default excludes: :meth:`codeask.index.walk.Ignorer.reason`) are never read.

Line numbers are 1-based and inclusive, counted in codeask's one line model
(:func:`codeask.lines.split_lines`), so the lines a ``codeask://source`` resource returns are the
lines a citation names.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError

from codeask.lines import split_lines
from codeask.query.span import NotExplainable, explain_source
from codeask.workspace import Workspace

__all__ = ["AgentFiles"]

_NEVER_READ = {"secret": "a secret file", "ignored": "an ignored file", "excluded": "an excluded file"}


class AgentFiles:
    """The readable files of ``ws`` for an agent, by path.

    Args:
        ws: the served workspace.
        roots: its roots in the order the server lists them (a ``root`` number picks one).
    """

    def __init__(self, ws: Workspace, roots: list[str]):
        self.ws = ws
        self.roots = roots

    def resolve(self, path: str, *, root: int | None = None) -> tuple[str, str, str]:
        """A path from an agent -> ``(root, rel_path, abs_path)`` of an indexable file.

        ``path`` is relative to a root (the first root holding it; ``root`` picks one by position)
        or absolute. Links are followed only when they stay inside their root.

        Raises:
            ToolError: the path is outside every root, missing, not a file, or a file codeask never
                reads (secret, ignored, excluded).
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
        for candidate in candidates:
            index = self.ws.root_for(candidate)
            if index is None or str(index.root) not in roots:
                continue
            if not candidate.is_file():
                continue
            real = os.path.realpath(candidate)
            root_real = os.path.realpath(index.root)
            if os.path.commonpath([real, root_real]) != root_real:
                raise ToolError(f"{path} links outside the workspace root; codeask does not read it")
            try:
                rel = candidate.relative_to(index.root).as_posix()
            except ValueError:  # given through a symlinked form of the root
                rel = Path(real).relative_to(root_real).as_posix()
            reason = index.ignorer.reason(rel)
            if reason is not None:
                raise ToolError(f"{path} is {_NEVER_READ.get(reason, reason)}; codeask never reads it")
            return str(index.root), rel, str(candidate)
        inside = [c for c in candidates if (index := self.ws.root_for(c)) is not None and str(index.root) in roots]
        if not inside:
            raise ToolError(f"{path} is outside the workspace root(s): {', '.join(roots)}")
        if any(c.is_dir() for c in inside):
            raise ToolError(f"{path} is a folder, not a file")
        if any(c.exists() for c in inside):  # a FIFO, socket or device: never opened
            raise ToolError(f"{path} is not a regular file; codeask does not read it")
        raise ToolError(f"{path}: no such file in the workspace")

    def read_lines(self, rel: str, abs_path: str) -> list[str]:
        """The lines of a resolved file (UTF-8, undecodable bytes replaced), without line ends.

        Raises:
            ToolError: the file cannot be read (``"<rel>: cannot read: <why>"``).
        """
        try:
            with open(abs_path, encoding="utf-8", errors="replace", newline="") as f:
                return split_lines(f.read())
        except OSError as exc:
            raise ToolError(f"{rel}: cannot read: {exc.strerror or exc}") from None

    def selection(self, path: str, start_line: int, end_line: int) -> tuple[str, str, int, int]:
        """The ``explain_code`` target: ``(rel_path, abs_path, start_line, end_line)``, the end cut
        at the file's last line.

        Raises:
            ToolError: the path is not readable (see :meth:`resolve`), explain does not read it
                (:func:`~codeask.query.span.explain_source`: binary, too large, minified), the lines
                are not ``1 <= start_line <= end_line``, or ``start_line`` is past the end of the file.
        """
        _root, rel, abs_path = self.resolve(path)
        if start_line < 1 or end_line < start_line:
            raise ToolError(f"lines {start_line}-{end_line}: need 1 <= start_line <= end_line")
        try:  # explain's own rules: binary, too large or minified files are not explained
            n_lines = len(split_lines(explain_source(self.ws, abs_path)))
        except NotExplainable as exc:
            raise ToolError(f"cannot explain: {exc}") from None
        if start_line > n_lines:
            raise ToolError(f"{rel} has {n_lines} lines; start_line {start_line} is past the end")
        return rel, abs_path, start_line, min(end_line, n_lines)

    def source_text(self, path: str, start: str = "", end: str = "", root: str = "") -> str:
        """The ``codeask://source/{+path}{?start,end,root}`` resource: lines ``start..end`` (1-based,
        inclusive; default the whole file) of a workspace file, joined with ``\\n``.

        Raises:
            ResourceNotFoundError: the file is not a readable workspace file, or bad line numbers.
            ResourceError: the file cannot be read.
        """
        try:
            first = int(start) if start else 1
            last = int(end) if end else None
            root_n = int(root) if root else None
            _, rel, abs_path = self.resolve(path, root=root_n)
        except ValueError:
            raise ResourceNotFoundError(f"codeask://source/{path}: start, end and root must be integers") from None
        except ToolError as exc:
            raise ResourceNotFoundError(str(exc)) from None
        try:
            lines = self.read_lines(rel, abs_path)
        except ToolError as exc:
            raise ResourceError(str(exc)) from None
        last = len(lines) if last is None else min(last, len(lines))
        if first < 1 or first > max(1, len(lines)) or last < first - 1:
            raise ResourceNotFoundError(f"{rel}: lines {first}-{last} are not in the file ({len(lines)} lines)")
        return "\n".join(lines[first - 1 : last])

    def resource_uri(self, root: str, path: str, start: int, end: int) -> str:
        """``codeask://source/<path>?start=S&end=E`` (plus ``&root=N`` when serving several roots)."""
        uri = f"codeask://source/{quote(path, safe='/')}?start={start}&end={end}"
        if len(self.roots) > 1 and root in self.roots:
            uri += f"&root={self.roots.index(root)}"
        return uri
