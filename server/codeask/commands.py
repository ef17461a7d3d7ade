"""The ``codeask`` subcommands run in-process (``index``, ``ask``, ``explain``, ``status``, ``watch``,
``clean``, ``doctor``, ``serve``, ``mcp``, ``token``): :data:`HANDLERS` maps each name to its handler
``handler(args) -> exit code``; :func:`codeask.cli.main` parses the arguments and reports errors.
``eval`` and ``publish`` bring their own handlers (``args.handler``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from codeask.console import CLIError, IndexProgress, UsageError, stderr_console
from codeask.lines import split_lines

__all__ = ["HANDLERS", "OPENED", "startup_seconds"]


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


#: The Workspace of the running command, to name its indexes in an error (cleared by ``main``).
OPENED: list[Any] = []


def _workspace(paths: Sequence[Path], flags: dict[str, Any] | None = None, *, background_indexing: bool = False):
    """The command's Workspace (settings warnings printed on stderr). Phase 2 embeds at this process's
    priority unless ``background_indexing`` (``watch``, which answers asks while it indexes): the user
    of a foreground command waits for exactly that work (see :class:`codeask.workspace.Workspace`)."""
    from codeask.workspace import Workspace

    ws = Workspace(paths, flags=flags, background_indexing=background_indexing)
    OPENED.append(ws)
    for line in ws.warnings:
        print(f"codeask: warning: {line}", file=sys.stderr)
    return ws


def _cmd_index(args) -> int:
    from codeask.index.engine import IndexLocked, IndexReadOnly

    ws = _workspace(args.path)
    for index in ws.indexes.values():
        _ = index.store  # open the tables (imports LanceDB): start-up, not indexing
    startup = startup_seconds()
    try:
        with IndexProgress.for_command(args.json) as progress:
            stats = ws.index(progress=progress, embed=not args.no_embed, wait=not args.no_wait)
    except IndexLocked as exc:
        raise CLIError(f"{exc}; try again when it is done") from exc
    except IndexReadOnly as exc:
        raise CLIError(str(exc)) from exc
    out = stats.to_json()
    out["startup_seconds"] = round(startup, 3)
    if args.json:
        print(json.dumps(out))
    else:
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(out["files_skipped"].items())) or "none"
        print(
            f"{out['files_seen']} files ({out['files_changed']} changed, {out['files_removed']} removed; "
            f"skipped: {skipped}); {out['chunks_total']} chunks, {out['chunks_embedded']} embedded, "
            f"{out['chunks_reused']} reused, {out['chunks_shared']} from the shared cache, "
            f"{out['vectors_pending']} pending; {out['seconds']:.1f} s (+{startup:.1f} s start-up)"
        )
    return 0


def _ask_resident(args) -> int | None:
    """Answer through a running ``codeask watch`` of the same folder (:mod:`codeask.resident`);
    ``None`` when there is none, or it answers with other LLM settings (then ``ask`` runs in-process)."""
    from codeask.resident import ask_resident, socket_path

    root = Path(args.path).resolve()
    if args.model or args.provider or args.summary or not root.is_dir() or not socket_path(root).exists():
        return None
    from codeask.settings import load_settings

    settings = load_settings(root)
    resolved = None if args.no_llm else settings.resolved_llm()
    if resolved is None and not args.no_llm and settings.llm.provider != "auto":
        return None  # an explicit provider without a key: the in-process path reports it
    request = {
        "question": args.question,
        "top_k": args.top_k,
        "max_files": args.max_files,
        "no_llm": args.no_llm,
        "llm": resolved.describe() if resolved is not None else None,
    }
    reply = ask_resident(root, request)
    if reply is None or reply.get("kind") == "mismatch":
        return None
    if not reply.get("ok"):
        if reply.get("kind") == "question":
            from codeask.service import QuestionError

            raise QuestionError(reply["error"])
        raise CLIError(reply.get("error") or "the running watch failed to answer")
    out = reply["answer"]
    print(json.dumps(out, ensure_ascii=False) if args.json else out["markdown"])
    if out.get("error"):
        print(f"codeask: {out['error']}", file=sys.stderr)
        return 1
    return 0


#: Bytes of standard input read for ``ask PATH -``: the most characters any setting accepts
#: (``retrieval.max_question_chars`` <= 1,000,000), 4 bytes each at most, and one more character.
STDIN_QUESTION_BYTES = 4 * 1_000_001


def question_from_stdin() -> str:
    """The question of ``codeask ask PATH -``: standard input, decoded as a file is
    (:func:`codeask.index.decode.decode`: a BOM, else UTF-8, else the detected legacy encoding, so a
    report PowerShell saved as UTF-16 reads), at most :data:`STDIN_QUESTION_BYTES` bytes (more is
    refused by the length check).

    Raises:
        UsageError: standard input is not text.
    """
    from codeask.index.decode import decode

    decoded = decode(sys.stdin.buffer.read(STDIN_QUESTION_BYTES))
    if decoded is None:
        raise UsageError("ask", "standard input is not text (binary data); pipe a text file to ask PATH -")
    return decoded.text


def _cmd_ask(args) -> int:
    from codeask.index.engine import IndexLocked

    if args.question == "-":
        args.question = question_from_stdin()
    served = _ask_resident(args)
    if served is not None:
        return served
    flags = {"llm.model": args.model, "llm.provider": args.provider}
    if args.summary:
        flags["summary.enabled"] = True
    ws = _workspace([args.path], flags)
    args.question = ws.check_question(args.question)  # before any indexing
    if not args.no_llm:
        ws.llm()  # an explicit provider without a key fails here, before any indexing
    console = stderr_console()
    index = next(iter(ws.indexes.values()))
    if index.read_only:
        console.print(
            f"[yellow]note:[/] the index {index.index_dir} is read-only: answering from it as it is "
            "(it cannot be updated)",
            highlight=False,
        )
    elif not args.no_update:
        try:
            with IndexProgress.for_command(args.json) as progress:
                index.sync(progress=progress, wait=False)
        except IndexLocked as exc:
            console.print(f"[yellow]note:[/] {exc}; answering from the index as it is", highlight=False)
    no_index = f"{index.root} has no index yet: run 'codeask index {args.path}' first, or ask without --no-update"
    if args.no_update and not index.exists():
        ws.build_pipeline(llm=None)  # a settings error (unknown step, missing rerank model) comes first
        raise CLIError(no_index)  # and asking would create an empty index folder
    streamed = []
    stream = None
    tty = not args.json and sys.stdout.isatty()

    def show_sources(sources) -> None:
        """Where to look, before the answer's LLM call (stdout on a terminal, else stderr)."""
        lines = "\n".join(
            f"{i}. {s.path}:{s.start_line}-{s.end_line}"
            + "".join(f", {x['start_line']}-{x['end_line']}" for x in s.spans[1:])
            for i, s in enumerate(sources, 1)
        )
        if tty:
            print(f"Sources:\n{lines}\n", flush=True)
        else:
            print(f"Sources (the answer follows):\n{lines}", file=sys.stderr, flush=True)

    if tty:

        def stream(delta: str) -> None:
            streamed.append(delta)
            sys.stdout.write(delta)
            sys.stdout.flush()

    answer = ws.ask(
        args.question,
        top_k=args.top_k,
        max_files=args.max_files,
        no_llm=args.no_llm,
        stream=stream,
        on_sources=show_sources,
    )
    # an index folder with no file recorded (a first run killed early) and nothing building it either
    if args.no_update and not answer.sources and index.manifest.count() == 0 and not index.is_locked_elsewhere():
        raise CLIError(no_index)
    if args.json:
        print(json.dumps(answer.to_json(), ensure_ascii=False))
    elif streamed and answer.finish_reason is not None:
        print(answer.footer())  # the answer itself was streamed already
    elif streamed:
        print("\n\n" + answer.markdown)  # the LLM failed: show what ask fell back to
    else:
        print(answer.markdown)
    for line in answer.warnings:
        if line not in ws.warnings:  # those were printed when the workspace was opened
            print(f"codeask: warning: {line}", file=sys.stderr)
    status = 0
    if answer.truncated:
        print(f"codeask: answer cut off ({answer.cut_reason})", file=sys.stderr)
        status = 1
    if answer.error:
        print(f"codeask: {answer.error}", file=sys.stderr)
        status = 1
    return status


def _explain_file(root: Path, file: str) -> tuple[Path, bool]:
    """``FILE`` as the user typed it -> (absolute path, whether it exists): an absolute ``FILE`` as
    is; a relative one against the workspace folder ``root`` first, then against the current
    folder (a path tab-completed in a subfolder); the folder's path when it is in neither."""
    if Path(file).is_absolute():
        path = Path(os.path.abspath(file))
        return path, os.path.lexists(path)
    for base in (Path(root), Path.cwd()):
        path = Path(os.path.abspath(base / file))
        if os.path.lexists(path):
            return path, True
    return Path(os.path.abspath(Path(root) / file)), False


def _explain_target(ws, root: Path, target: str) -> tuple[Path, int, int, str]:
    """``FILE[:START[-END]]`` -> (absolute file, start, end, its text): the whole file without a
    range, a range running past the last line cut there. ``FILE`` is found by :func:`_explain_file`
    and read once, here, by :func:`~codeask.query.span.explain_source` (the indexer's rules).

    Raises:
        UsageError: bad line numbers (not ``START-END``, 1-based, ``START <= END``, or starting past
            the file's last line), exit code 2.
        CLIError: the file does not exist, or codeask does not read it (a folder, a secret, binary,
            too large or minified file, a link out of the folder), exit code 1.
    """
    from codeask.query.span import NotExplainable, explain_source

    if not target.strip():
        raise UsageError("explain", "the file to explain is empty: use FILE or FILE:START-END")
    file, start, end = target, 1, None
    head, sep, lines = target.rpartition(":")
    is_range = bool(sep and lines and head) and all(part.isdigit() for part in lines.split("-", 1))
    if is_range:
        file = head
        first, _, last = lines.partition("-")
        start, end = int(first), int(last or first)
        if start < 1 or end < start:
            raise UsageError("explain", f"bad line range {lines!r}: use START-END, 1-based, START <= END")
    path, found = _explain_file(root, file)
    if not found:
        if sep and head and _explain_file(root, head)[1]:  # FILE:something that is not a line range
            raise UsageError("explain", f"bad line range {lines!r}: use FILE:START-END, 1-based")
        where = f"{root}" if Path(file).is_absolute() else f"{root} or the current folder {Path.cwd()}"
        raise CLIError(f"file not found: {file}" + ("" if Path(file).is_absolute() else f" (in {where})"))
    try:
        text = explain_source(ws, str(path))
    except NotExplainable as exc:
        raise CLIError(str(exc)) from None
    count = len(split_lines(text))  # codeask's line model
    if end is None:  # the whole file
        return path, start, max(start, count), text
    if start > count:
        raise UsageError("explain", f"line {start} is past the end of {file} ({count:,} lines)")
    return path, start, min(end, count), text


def _cmd_explain(args) -> int:
    from codeask.index.engine import IndexLocked
    from codeask.query.explain import NotExplainable, explain, make_span

    ws = _workspace([args.path])
    index = next(iter(ws.indexes.values()))
    path, start, end, text = _explain_target(ws, index.root, args.target)
    if ws.root_for(str(path)) is None:
        print(f"codeask: note: {path} is outside the workspace folder {index.root}", file=sys.stderr)
    if not "".join(split_lines(text)[start - 1 : end]).strip():
        try:  # blank lines: refused in one line before any indexing (make_span says so before reading the index)
            make_span(ws, str(path), start, end, text=text)
        except NotExplainable as exc:
            raise CLIError(str(exc)) from None
    try:  # a cold folder takes minutes: the same progress on stderr as ask and index
        with IndexProgress.for_command(args.json) as progress:
            index.sync(progress=progress, wait=False)
    except IndexLocked as exc:
        print(f"codeask: note: {exc}; explaining from the index as it is", file=sys.stderr)
    try:
        span = make_span(ws, str(path), start, end, text=text)
    except NotExplainable as exc:  # blank lines
        raise CLIError(str(exc)) from None
    result = explain(ws, span, brief=args.brief, no_llm=args.no_llm)
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        print(result.markdown)
    for line in result.warnings:
        if line not in ws.warnings:
            print(f"codeask: warning: {line}", file=sys.stderr)
    status = 0
    if result.truncated:  # as for ask: a cut-off explanation is not a success
        print(f"codeask: explanation cut off ({result.cut_reason})", file=sys.stderr)
        status = 1
    if result.error:
        print(f"codeask: {result.error}", file=sys.stderr)
        status = 1
    return status


def _cmd_status(args) -> int:
    from codeask.index.folders import check_cache_dir

    ws = _workspace([args.path])
    check_cache_dir(ws.settings)  # a file there is no "not indexed": index would fail on it
    status = ws.status()
    if args.json:
        print(json.dumps(status))
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
    return 0


def _cmd_watch(args) -> int:
    import signal

    from codeask.index.phases import PhaseHooks
    from codeask.index.watch import Watcher

    ws = _workspace(args.path, background_indexing=True)  # it answers asks while it re-indexes changes
    console = stderr_console()
    asks = None

    def answer_asks(phase, finished: bool) -> None:
        """Once phase 1 is done, ``codeask ask`` on this folder is answered here: keyword-first while
        phase 2 computes the vectors (as the language server and the MCP server do)."""
        nonlocal asks
        if phase != "keywords" or not finished or len(ws.indexes) != 1:
            return
        from codeask.resident import AskServer

        try:
            asks = AskServer(ws).start()
        except OSError as exc:
            console.print(f"[yellow]note:[/] not answering asks for other processes: {exc}", highlight=False)

    def on_update(stats) -> None:
        if args.json:
            print(json.dumps(stats.to_json()), flush=True)
        else:
            console.print(
                f"{time.strftime('%H:%M:%S')} {stats.files_changed} changed, {stats.files_removed} removed, "
                f"{stats.chunks_embedded} embedded ({stats.seconds * 1000:.0f} ms)"
            )

    def interrupt(signum, frame):  # ``kill`` stops it as Ctrl-C does: the socket is removed
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    watcher = None
    try:
        with IndexProgress.for_command(args.json) as progress:
            ws.index(progress=progress, hooks=PhaseHooks(end=answer_asks))
        answering = "; `codeask ask` on this folder is answered here" if asks else ""
        indexed = sum(index.manifest.count() for index in ws.indexes.values())  # not the files read and skipped
        console.print(f"indexed {indexed} files; watching for changes{answering} (Ctrl-C to stop)", highlight=False)
        watcher = Watcher(ws, on_update=on_update)
        watcher.run()  # the watch limit switches to polling with one warning (codeask.index.watch)
    except KeyboardInterrupt:
        if watcher is None:
            raise  # interrupted while indexing: "interrupted", exit 130
    except (OSError, RuntimeError) as exc:
        if watcher is None:
            raise
        raise CLIError(f"watching for changes stopped: {exc}") from exc
    finally:
        if watcher is not None:
            watcher.stop()
        if asks is not None:
            asks.stop()
    return 0


def _cmd_clean(args) -> int:
    from codeask.clean import list_indexes, remove_index
    from codeask.index.engine import cache_root, index_dir_for
    from codeask.settings import load_settings

    if args.all and (args.missing or args.path):
        raise CLIError("--all removes every index: give it alone")
    settings = load_settings(None)
    cache = cache_root(settings)
    indexes = list_indexes(cache)
    if args.all:
        chosen = list(indexes)
    else:
        chosen = [i for i in indexes if args.missing and not i.root_exists]
        for path in args.path:
            want = Path(path).expanduser().resolve()
            matches = [i for i in indexes if i.root == str(want) or i.index_dir == index_dir_for(want, settings)]
            if not matches:
                raise CLIError(f"no index of {want} in {cache}")
            chosen += [m for m in matches if m not in chosen]
    removing = bool(args.all or args.missing or args.path)
    stores, stores_removed, failed = _clean_vector_stores(cache, remove=bool(args.all))
    removed = []
    for index in chosen:
        try:
            remove_index(index)
            removed.append(index)
        except (RuntimeError, OSError) as exc:
            failed.append(f"{index.index_dir}: {exc}")
    if args.json:
        out = {
            "cache_dir": str(cache),
            "indexes": [dict(i.to_json(), removed=i in removed) for i in indexes],
            "removed": len(removed),
            "removed_bytes": sum(i.bytes for i in removed),
            "total_bytes": sum(i.bytes for i in indexes),
            "vector_stores": [dict(s.to_json(), removed=s in stores_removed) for s in stores],
            "vector_store_bytes": sum(s.bytes for s in stores),
        }
        print(json.dumps(out))
    else:
        for index in indexes:
            mark = "removed " if index in removed else ("gone    " if not index.root_exists else "        ")
            print(f"{mark}{_size(index.bytes):>9}  {index.root or '?'}  ({index.index_dir.name})")
        for store in stores:
            mark = "removed " if store in stores_removed else "        "
            print(
                f"{mark}{_size(store.bytes):>9}  {store.vectors:,} vectors shared by every index ({store.folder.name})"
            )
        total = sum(i.bytes for i in indexes)
        print(f"{len(indexes)} indexes, {_size(total)} in {cache}", end="")
        if removing:
            print(f"; removed {len(removed)} ({_size(sum(i.bytes for i in removed))})")
        else:
            gone = sum(1 for i in indexes if not i.root_exists)
            hint = f"; {gone} of folders that no longer exist (codeask clean --missing)" if gone else ""
            print(f"{hint}; remove with codeask clean PATH | --missing | --all")
    for line in failed:
        print(f"codeask: {line}", file=sys.stderr)
    return 1 if failed else 0


def _clean_vector_stores(cache: Path, *, remove: bool) -> tuple[list, list, list[str]]:
    """``codeask clean``'s part for the machine's vector stores (:func:`codeask.clean.list_vector_stores`):
    ``(stores, removed, failure lines)``, removing every store with ``--all``."""
    from codeask.clean import list_vector_stores, remove_vector_store

    stores, removed, failed = list_vector_stores(cache), [], []
    for store in stores if remove else []:
        try:
            remove_vector_store(store)
            removed.append(store)
        except (RuntimeError, OSError) as exc:
            failed.append(f"{store.folder}: {exc}")
    return stores, removed, failed


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


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
        print("all checks passed" if not failed else f"{len(failed)} problem(s) found")
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
    "ask": _cmd_ask,
    "explain": _cmd_explain,
    "status": _cmd_status,
    "watch": _cmd_watch,
    "serve": _cmd_serve,
    "mcp": _cmd_mcp,
    "token": _cmd_token,
    "clean": _cmd_clean,
    "doctor": _cmd_doctor,
}
