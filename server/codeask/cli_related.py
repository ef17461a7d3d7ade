"""``codeask related PATH SYMBOL [--json]``: a symbol's definitions, callers and callees from the
index's symbol graph, with ``file:line`` and how sure each link is; no LLM, no search.

The same data as the MCP tool ``related_code`` and the LSP command ``codeask.related``
(:meth:`codeask.service.Service.related`); ``--json`` prints its object, keys ``symbol``,
``definitions``, ``callers``, ``callees`` (each location ``path``, ``root``, ``start_line``,
``end_line``, ``symbol``, ``name``, ``sure``, ``of``, ``uri``; at most 50 each, surest first; ``of``
is the ``path:start_line`` of the definition a caller or callee links to), ``counts``
(``{kind: how many were found}``), ``truncated`` (whether a list holds fewer), ``alias`` (``{"name",
"path", "line", "uri"}`` when SYMBOL is a name a file imports another under, whose related code is
listed: ``RequestsSSLError`` -> ``SSLError``; else null) and ``index``. It reads the index as it is
(``codeask index PATH`` brings it up to date). Exit codes: 0 found, 1 no index or nothing known of
the symbol, 2 not a symbol name.
"""

from __future__ import annotations

import json
from typing import Any

from codeask.console import CLIError, UsageError
from codeask.sureness import alias_note, link_note, location_label

__all__ = ["add_related_parser", "cmd_related"]


def add_related_parser(sub: Any) -> None:
    """The ``related`` subcommand's arguments."""
    from codeask.console import folder_arg

    p = sub.add_parser(
        "related",
        help="show where a symbol is defined, who calls it and what it calls (the symbol graph)",
    )
    p.add_argument("path", type=folder_arg, help="workspace folder (indexed with codeask index)")
    p.add_argument("symbol", help="a name such as should_strip_auth, Session.send or Config::load")
    p.add_argument("--json", action="store_true", help="print one JSON object (the MCP tool related_code's)")


def cmd_related(args: Any) -> int:
    """``codeask related PATH SYMBOL``; returns the exit code.

    Raises:
        UsageError: ``SYMBOL`` is not an identifier or dotted name.
        CLIError: the folder has no index, or the index knows nothing of the symbol.
    """
    from codeask.cli_service import folder_first, open_service
    from codeask.service import UnknownSymbol

    folder_first("related", args.path, args.symbol, args.argv)
    service = open_service([args.path])
    if service.index_presence() == "none":
        raise CLIError(f"{service.roots[0]} has no index yet: run 'codeask index {args.path}' first")
    try:
        found = service.related(args.symbol).to_json()
    except ValueError as exc:
        raise UsageError("related", str(exc)) from None
    except UnknownSymbol as exc:
        raise CLIError(str(exc)) from None
    if args.json:
        print(json.dumps({**found, "index": _index(service)}))
    else:
        print(related_text(found))
    return 0


def _index(service: Any) -> dict[str, Any]:
    """How current the index is: ``state``, ``files``, ``chunks_total``, ``vectors_pending``, ``note``
    (the MCP result's ``index``)."""
    status = service.status()
    counts = status.counts
    keys = ("files", "chunks_total", "vectors_pending")
    return {"state": status.state, **{k: counts[k] for k in keys}, "note": status.note}


def related_text(found: dict[str, Any]) -> str:
    """The text of ``codeask related``: a heading per kind, one ``path:start-end  symbol`` line per
    location (``(top level)`` for a caller outside every definition), with ``(sure 0.3)`` on links
    less than sure, ``(of path:line)`` naming the definition a caller or callee links to when the
    symbol has several, and ``... N more (the N surest are listed)`` under a list cut to the limit."""
    out = []
    several = len({x["of"] for x in found["callers"] + found["callees"]}) > 1 or len(found["definitions"]) > 1
    for kind in ("definitions", "callers", "callees"):
        lines = []
        for x in found[kind]:
            sure = link_note(x["sure"], x["of"], several, gap="  ")
            named = kind == "callees" and x["symbol"] and x["symbol"].rsplit(".", 1)[-1] != x["name"]
            called = f" -> {x['name']}" if named else ""
            label = location_label(kind, x["symbol"], x["name"])
            lines.append(f"  {x['path']}:{x['start_line']}-{x['end_line']}  {label}{called}{sure}")
        more = found["counts"][kind] - len(found[kind])
        if more > 0:
            lines.append(f"  ... {more} more (the {len(found[kind])} surest of {found['counts'][kind]} are listed)")
        out.append(f"{kind} of {found['symbol']}:\n" + ("\n".join(lines) or "  none found"))
    return "\n\n".join([alias_note(found["symbol"], found.get("alias")), *out]).lstrip("\n")
