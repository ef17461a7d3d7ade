"""``codeask cite-check FILE... [--root DIR] [--json]``: the links to code in markdown files,
checked against the code as it is now (:mod:`codeask.query.citecheck`).

Prints one ``FILE:LINE: LINK: what is wrong`` line per wrong link on stdout (or one JSON object
with ``--json``: ``{"checked", "problems": [{"file", "line", "text", "target", "start_line",
"end_line", "message", "now"}]}``). Exit code 1 when any link is wrong, 0 when none is, 2 for a
markdown file that cannot be read or a ``--root`` that is not a folder.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from codeask.console import UsageError, folder_arg

__all__ = ["add_citecheck_parser"]


def add_citecheck_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``codeask cite-check FILE... [--root DIR] [--json]``."""
    p = subparsers.add_parser(
        "cite-check",
        help="check the links to code in markdown files ([name](path#L10-L20), path:line); exit 1 when one is wrong",
        description=(
            "Check that every link to code in the markdown files still points at the code it names: "
            "a link whose text names a symbol must hold its definition, a link codeask wrote must still "
            "hold the text it cited. Paths are relative to the markdown file's folder, then to --root."
        ),
    )
    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help="markdown files")
    p.add_argument("--root", type=folder_arg, help="the folder links may point into (default: each file's folder)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_handler)
    return p


def _handler(args) -> int:
    from codeask.query.citecheck import check_file

    if args.root is not None and not args.root.is_dir():
        raise UsageError("cite-check", f"--root {args.root} is not a folder")
    checked = 0
    problems: list[dict[str, Any]] = []
    for file in args.files:
        if not file.is_file():
            raise UsageError("cite-check", f"{file} is not a file")
        try:
            n, found = check_file(file, args.root)
        except OSError as exc:
            raise UsageError("cite-check", f"cannot read {file}: {exc.strerror or exc}") from None
        checked += n
        for problem in found:
            link = problem.link
            problems.append(
                {
                    "file": str(file),
                    "line": link.line,
                    "text": link.text,
                    "target": link.target,
                    "start_line": link.start_line,
                    "end_line": link.end_line,
                    "message": problem.message,
                    "now": list(problem.now) if problem.now else None,
                }
            )
    if args.json:
        print(json.dumps({"checked": checked, "problems": problems}, ensure_ascii=False))
    else:
        for item in problems:
            target = f"{item['target']}#L{item['start_line']}-L{item['end_line']}"
            shown = f"[{item['text']}]({target})" if item["text"] else f"{item['target']}:{item['start_line']}"
            print(f"{item['file']}:{item['line']}: {shown}: {item['message']}")
    return 1 if problems else 0
