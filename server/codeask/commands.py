"""The ``codeask`` subcommands run in-process (``index``, ``ask``, ``explain``, ``related``, ``status``, ``watch``,
``clean``, ``doctor``, ``serve``, ``mcp``, ``token``): :data:`HANDLERS` maps each name to its handler
``handler(args) -> exit code``; :func:`codeask.cli.main` parses the arguments and reports errors.
``eval`` and ``publish`` bring their own handlers (``args.handler``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeask.cli_ask import cmd_ask, cmd_explain
from codeask.cli_related import cmd_related
from codeask.cli_service import open_service
from codeask.console import CLIError, IndexProgress, UsageError, stderr_console

__all__ = ["HANDLERS", "startup_seconds"]


def startup_seconds() -> float:
    """Seconds since this process started (``/proc/self/stat``; since codeask was imported elsewhere)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            fields = fh.read().rpartition(")")[2].split()
        with open("/proc/uptime", encoding="ascii") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.monotonic() - _IMPORTED


_IMPORTED = time.monotonic()


def _cmd_index(args) -> int:
    from codeask.service import IndexLocked, IndexReadOnly

    service = open_service(args.path)
    service.open_stores()  # open the tables (imports LanceDB): start-up, not indexing
    startup = startup_seconds()
    try:
        with IndexProgress.for_command(args.json) as progress:
            stats = service.index(progress=progress, embed=not args.no_embed, wait=not args.no_wait)
    except IndexLocked as exc:
        raise CLIError(f"{exc}; try again when it is done") from exc
    except IndexReadOnly as exc:
        raise CLIError(str(exc)) from exc
    out = stats.to_json()
    out["startup_seconds"] = round(startup, 3)
    if args.json:
        print(json.dumps(out))
        return 0
    for root in out["roots"]:
        print(f"{root['root']}: {_index_line(root)}")
    print(f"{'all: ' if out['roots'] else ''}{_index_line(out)} (+{startup:.1f} s start-up)")
    return 0


def _index_line(out: dict) -> str:
    """One human line of ``codeask index``'s counts (a root's, or the run's: :class:`IndexStats` as
    JSON): the files the index holds, then every file skipped, by name (``excluded``, ``secret``) or
    by content (``binary``, ``minified``, ...), so that the two add up to the files walked."""
    skipped = out["files_skipped"]
    skips = ", ".join(f"{k} {v}" for k, v in sorted(skipped.items()))
    return (
        f"{out['files_indexed']} files indexed ({out['files_changed']} changed, {out['files_removed']} removed; "
        + (f"skipped {sum(skipped.values())}: {skips}" if skipped else "none skipped")
        + f"); {out['chunks_total']} chunks, {out['chunks_embedded']} embedded, "
        f"{out['chunks_reused']} reused, {out['chunks_shared']} from the shared cache, "
        f"{out['vectors_pending']} pending; {out['seconds']:.1f} s"
        + (
            "; every file read again (the index was cut by an older release; the vectors of unchanged code kept)"
            if out["read_again"]
            else ""
        )
    )


def _cmd_status(args) -> int:
    service = open_service([args.path])
    service.check_cache_dir()  # a file there is no "not indexed": index would fail on it
    full = service.status()
    status = full.counts
    if args.json:
        print(json.dumps(full.to_json()))
    elif not status["indexed"]:
        root = status["roots"][0]["root"]
        print(f"not indexed: {root}\nrun: codeask index {root}\nllm: {status['llm'] or 'none (ranked sources only)'}")
    else:
        if status["read_only"]:
            print("read-only index: answers come from it as it is; it cannot be updated")
        print(
            f"{status['files']} files, {status['chunks_total']} chunks, {status['vectors_pending']} waiting for "
            f"vectors\nindex: {status['index_dir']}\nembedding model: {status['embedding_model']}\n"
            f"llm: {status['llm'] or 'none (ranked sources only)'}"
        )
        if full.note:
            print(f"note: {full.note}")
    return 0


def _cmd_watch(args) -> int:
    import signal

    service = open_service(args.path, background_indexing=True)  # it answers asks while it re-indexes changes
    console = stderr_console()
    asks = []

    def answer_asks() -> None:
        """Once phase 1 is done, ``codeask ask`` on this folder is answered here: keyword-first while
        phase 2 computes the vectors (as the language server and the MCP server do)."""
        if len(service.roots) != 1:
            return
        from codeask.resident import AskServer

        try:
            asks.append(AskServer(service).start())
        except OSError as exc:
            console.print(f"[yellow]note:[/] not answering asks for other processes: {exc}", highlight=False)

    def interrupt(signum, frame):  # ``kill`` stops it as Ctrl-C does: the socket is removed
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    try:
        with IndexProgress.for_command(args.json) as progress:
            service.index(progress=progress, on_keywords=answer_asks)
        answering = "; `codeask ask` on this folder is answered here" if asks else ""
        indexed = service.status().counts["files"]  # not the files read and skipped
        console.print(f"indexed {indexed} files; watching for changes{answering} (Ctrl-C to stop)", highlight=False)
        _watch_until_stopped(service, args.json, console)
    finally:
        service.stop()
        for server in asks:
            server.stop()
    return 0


def _watch_until_stopped(service, as_json: bool, console) -> None:
    """Re-index what changes until Ctrl-C, printing each batch (one JSON object with ``as_json``);
    the watch limit switches to polling with one warning (:mod:`codeask.index.watch`).

    Raises:
        CLIError: watching for changes stopped (an ``OSError`` / ``RuntimeError`` of the watcher).
    """

    def on_update(stats) -> None:
        if as_json:
            print(json.dumps(stats.to_json()), flush=True)
        else:
            console.print(
                f"{time.strftime('%H:%M:%S')} {stats.files_changed} changed, {stats.files_removed} removed, "
                f"{stats.chunks_embedded} embedded ({stats.seconds * 1000:.0f} ms)"
            )

    try:
        service.watch(on_update=on_update, block=True)
    except KeyboardInterrupt:
        pass
    except (OSError, RuntimeError) as exc:
        raise CLIError(f"watching for changes stopped: {exc}") from exc


def _cmd_clean(args) -> int:
    from codeask.clean import clean_command

    return clean_command(args)


def _cmd_doctor(args) -> int:
    from codeask.doctor import run_checks

    checks = run_checks(list(args.path), llm=not args.no_llm)
    failed = [c for c in checks if c.status == "fail"]
    if args.json:
        print(json.dumps({"ok": not failed, "checks": [c.to_json() for c in checks]}))
    else:
        for c in checks:
            print(f"{c.status:4}  {c.name}: {c.detail}")
            if c.fix and c.status != "ok":
                print(f"      fix: {c.fix}")
        warned = sum(c.status == "warn" for c in checks)
        passed = f"all checks passed, {warned} with a warning (its fix above)" if warned else "all checks passed"
        print(f"{len(failed)} problem(s) found" if failed else passed)
    return 1 if failed else 0


def _cmd_serve(args) -> int:
    from codeask.listen import open_listener
    from codeask.lsp.server import run
    from codeask.lsp.tcp import Gate

    if not args.tcp:
        if args.folder:
            raise UsageError("serve", "FOLDER is for --tcp: over stdio the editor names the workspace folders")
        return run()
    if not args.folder:
        raise UsageError("serve", "--tcp serves only the folders it is given: codeask serve --tcp HOST:PORT FOLDER...")
    listener = open_listener("serve", "--tcp", args.tcp, allow_remote=args.allow_remote)
    return run(Gate(listener, [Path(f).resolve() for f in args.folder]))


def _cmd_mcp(args) -> int:
    from codeask.listen import open_listener
    from codeask.mcp_server import run

    listener = None
    if args.http:
        hosts = tuple(args.allow_host)
        listener = open_listener("mcp", "--http", args.http, allow_remote=args.allow_remote, allow_hosts=hosts)
    return run(args.path, listener)


def _cmd_token(args) -> int:
    from codeask.listen import read_token, rotate_token, token_path

    token = rotate_token() if args.rotate else read_token()
    print(token_path() if args.path else token)
    return 0


#: Subcommand name -> ``handler(args) -> exit code``.
HANDLERS: dict[str, Callable[[Any], int]] = {
    "index": _cmd_index,
    "ask": cmd_ask,
    "explain": cmd_explain,
    "related": cmd_related,
    "status": _cmd_status,
    "watch": _cmd_watch,
    "serve": _cmd_serve,
    "mcp": _cmd_mcp,
    "token": _cmd_token,
    "clean": _cmd_clean,
    "doctor": _cmd_doctor,
}
