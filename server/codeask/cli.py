"""The ``codeask`` command line: the same engine as the language server.

Commands: ``index``, ``ask``, ``explain``, ``status``, ``watch``, ``eval``, ``serve``, ``mcp``, ``clean``, ``doctor``, ``publish``. Exit codes: 0 on success,
1 with a one-line error on failure, 2 on usage errors. ``--json`` output uses the same snake_case
objects as the LSP commands.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from codeask.console import CLIError, Parser, folder_arg, positive_int, stderr_console

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The ``codeask`` argument parser: subcommands ``index``, ``ask``, ``status``, ``watch``,
    ``serve``, ``mcp`` and ``eval`` (added by :func:`codeask.eval.cli.add_eval_parser`); a subcommand is required."""
    parser = Parser(
        prog="codeask",
        description="Ask your codebase a question and get a cited answer (offline by default).",
    )
    from codeask import __version__

    parser.add_argument("--version", action="version", version=f"codeask {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("index", help="index (or catch up with) a workspace folder")
    p.add_argument("path", nargs="+", type=folder_arg, help="workspace folder(s)")
    p.add_argument("--json", action="store_true", help="print the stats as one JSON object")
    p.add_argument("--no-embed", action="store_true", help="phase 1 only: keyword-searchable, vectors pending")
    p.add_argument(
        "--no-wait", action="store_true", help="fail instead of waiting when another process writes the index"
    )

    p = sub.add_parser("ask", help="ask a question about a workspace folder")
    p.add_argument("path", type=folder_arg, help="workspace folder")
    p.add_argument("question", help="the question")
    p.add_argument("--json", action="store_true", help="print the answer as one JSON object")
    p.add_argument("--no-llm", action="store_true", help="no LLM: ranked sources with snippets")
    p.add_argument("--top-k", type=positive_int, help="chunks retrieved (default 20)")
    p.add_argument("--max-files", type=positive_int, help="files kept, one chunk each (default 8)")
    p.add_argument("--model", help="LLM model name (provider from CODEASK_LLM or the keys set)")
    p.add_argument("--provider", choices=["auto", "openai", "anthropic", "none"], help="LLM provider")
    p.add_argument("--summary", action="store_true", help="answer from an LLM summary of the documents")
    p.add_argument("--no-update", action="store_true", help="answer from the index as it is, without catching up first")

    p = sub.add_parser("explain", help="explain lines of a file, grounded in related code of the workspace")
    p.add_argument("path", type=folder_arg, help="workspace folder")
    p.add_argument(
        "target", metavar="FILE[:START[-END]]", help="the file (relative to the folder or absolute) and 1-based lines"
    )
    p.add_argument("--json", action="store_true", help="print the explanation as one JSON object")
    p.add_argument("--no-llm", action="store_true", help="no LLM: the related code only")
    p.add_argument("--brief", action="store_true", help="a short explanation (as in hover)")

    p = sub.add_parser("status", help="show what the index of a workspace folder holds")
    p.add_argument("path", type=folder_arg, help="workspace folder")
    p.add_argument("--json", action="store_true", help="print one JSON object")

    p = sub.add_parser("watch", help="index, then follow changes on disk until interrupted")
    p.add_argument("path", nargs="+", type=folder_arg, help="workspace folder(s)")
    p.add_argument("--json", action="store_true", help="print one JSON object per update")

    p = sub.add_parser("serve", help="run the language server")
    p.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")

    p = sub.add_parser("mcp", help="run the MCP server for AI agents (stdio)")
    p.add_argument("path", nargs="+", type=folder_arg, help="workspace folder(s)")
    p.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")

    p = sub.add_parser(
        "clean",
        help="list the indexes in the cache dir with their sizes, or remove some",
        description="Without options: list every index (workspace folder, size) and remove nothing.",
    )
    p.add_argument("path", nargs="*", type=folder_arg, help="remove the index of these workspace folders")
    p.add_argument("--missing", action="store_true", help="remove the indexes of folders that no longer exist")
    p.add_argument("--all", action="store_true", help="remove every index")
    p.add_argument("--json", action="store_true", help="print one JSON object")

    p = sub.add_parser(
        "doctor",
        help="check Python, packages, the model, the cache dir, the LLM and the index; print fixes",
    )
    p.add_argument("path", nargs="*", type=folder_arg, help="workspace folders whose index to check")
    p.add_argument("--no-llm", action="store_true", help="do not send the one test request to the LLM")
    p.add_argument("--json", action="store_true", help="print one JSON object")

    from codeask.eval.cli import add_eval_parser
    from codeask.publish import add_publish_parser

    add_eval_parser(sub, progress=IndexProgress)
    add_publish_parser(sub)
    return parser


_console = stderr_console


class IndexProgress:
    """Progress of both indexing phases on stderr.

    On a terminal: rich bars (files, then chunks, with ETA). Otherwise (a log, CI, an editor's
    output panel): plain lines, one when a phase with work starts, then at most one every
    ``interval`` seconds (``$CODEASK_PROGRESS_SECONDS``, default 10), and one when it ends, e.g.
    ``codeask progress: embedding chunks: 512/3,000 (17%), 41.2 chunks/s, ETA 60 s``.
    """

    _UNITS: ClassVar[dict[str, tuple[str, str]]] = {
        "index": ("indexing files", "files"),
        "embed": ("embedding chunks", "chunks"),
    }

    def __init__(self, enabled: bool, *, interval: float | None = None):
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        if interval is None:
            try:
                interval = float(os.environ.get("CODEASK_PROGRESS_SECONDS", "10"))
            except ValueError:
                interval = 10.0
        self.interval = interval
        self._bar = None
        self._tasks: dict[str, Any] = {}
        self._started: dict[str, float] = {}
        self._last_line: dict[str, float] = {}
        self._finished: set[str] = set()
        self._previous = time.monotonic()

    def __enter__(self):
        if self.enabled and self.tty:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=_console(),
                transient=True,
            )
            self._bar.__enter__()
        return self

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.__exit__(*exc)

    def __call__(self, p) -> None:
        if not self.enabled:
            return
        if self._bar is None:
            self._plain(p)
            return
        label = {"scan": "listing files", "index": "indexing files", "embed": "embedding chunks"}.get(p.phase, p.phase)
        task = self._tasks.get(p.phase)
        if task is None:
            task = self._tasks[p.phase] = self._bar.add_task(label, total=p.total)
        self._bar.update(task, completed=p.done, total=max(p.total, p.done))

    def _plain(self, p) -> None:
        """One plain line for report ``p`` when its phase starts, every ``interval`` s, and at its end.

        A phase's rate counts from the previous report of any phase (its first report comes after
        its first batch), or from the start of the command."""
        now = time.monotonic()
        previous, self._previous = self._previous, now
        if p.phase not in self._UNITS or p.total <= 0 or p.phase in self._finished:
            return
        first = p.phase not in self._started
        if first:
            self._started[p.phase] = previous
        finished = p.done >= p.total
        if first or finished or now - self._last_line[p.phase] >= self.interval:
            self._last_line[p.phase] = now
            if finished:
                self._finished.add(p.phase)
            self._line(p, now)

    def _line(self, p, now: float) -> None:
        label, unit = self._UNITS[p.phase]
        elapsed = now - self._started[p.phase]
        parts = [f"codeask progress: {label}: {p.done:,}/{p.total:,} ({p.percent}%)"]
        if p.done and elapsed > 0:
            parts.append(f"{p.done / elapsed:.1f} {unit}/s")
        if p.done >= p.total:
            parts.append(f"done in {elapsed:.1f} s")
        elif p.eta_seconds is not None:
            parts.append(f"ETA {p.eta_seconds:.0f} s")
        print(", ".join(parts), file=sys.stderr, flush=True)


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


_opened: list[Any] = []  # the Workspace of the running command, to name its indexes in an error


def _workspace(paths: Sequence[Path], flags: dict[str, Any] | None = None):
    from codeask.workspace import Workspace

    ws = Workspace(paths, flags=flags)
    _opened.append(ws)
    for line in ws.warnings:
        print(f"codeask: warning: {line}", file=sys.stderr)
    return ws


def describe_error(exc: BaseException) -> str:
    """One line for an error that escaped a command: what failed, and where.

    An ``OSError`` names its path (and says when that path is inside an index); any other error
    (LanceDB, Arrow, SQLite, ...) names the index folder(s) of the command's workspace and how to
    start that index over (``codeask clean PATH``).
    """
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    indexes = [i for ws in _opened for i in list(ws.indexes.values())]
    if isinstance(exc, OSError) and exc.filename is not None:
        path = str(exc.filename)
        what = f"{exc.strerror or text}: {path}"
        index_dir = _index_dir_holding(Path(path))
        if index_dir is not None:
            try:
                fix = f"`codeask clean {(index_dir / 'root.txt').read_text(encoding='utf-8').strip()}` starts it over"
            except OSError:
                fix = f"delete {index_dir} to start it over"
            return f"the index {index_dir} failed: {what}; {fix}"
        return what
    if isinstance(exc, OSError):
        return f"{exc.strerror or text}"
    if indexes:
        where = ", ".join(f"{i.root} (index {i.index_dir})" for i in indexes)
        roots = " ".join(str(i.root) for i in indexes)
        return f"reading or writing the index of {where} failed: {type(exc).__name__}: {text}; `codeask clean {roots}` starts it over"
    return f"{type(exc).__name__}: {text}"


def _index_dir_holding(path: Path) -> Path | None:
    """The codeask index folder (it holds ``manifest.sqlite``) that ``path`` is in, or ``None``."""
    for folder in (path, *path.parents):
        if (folder / "manifest.sqlite").is_file():
            return folder
    return None


def _cmd_index(args) -> int:
    from codeask.index.engine import IndexLocked, IndexReadOnly

    ws = _workspace(args.path)
    for index in ws.indexes.values():
        _ = index.store  # open the tables (imports LanceDB): start-up, not indexing
    startup = startup_seconds()
    try:
        with IndexProgress(not args.json) as progress:
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
            from codeask.workspace import QuestionError

            raise QuestionError(reply["error"])
        raise CLIError(reply.get("error") or "the running watch failed to answer")
    out = reply["answer"]
    print(json.dumps(out, ensure_ascii=False) if args.json else out["markdown"])
    if out.get("error"):
        print(f"codeask: {out['error']}", file=sys.stderr)
        return 1
    return 0


def _cmd_ask(args) -> int:
    from codeask.index.engine import IndexLocked

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
    console = _console()
    index = next(iter(ws.indexes.values()))
    if index.read_only:
        console.print(
            f"[yellow]note:[/] the index {index.index_dir} is read-only: answering from it as it is "
            "(it cannot be updated)",
            highlight=False,
        )
    elif not args.no_update:
        try:
            with IndexProgress(not args.json) as progress:
                index.sync(progress=progress, wait=False)
        except IndexLocked as exc:
            console.print(f"[yellow]note:[/] {exc}; answering from the index as it is", highlight=False)
    streamed = []
    stream = None
    tty = not args.json and sys.stdout.isatty()

    def show_sources(sources) -> None:
        """Where to look, before the answer's LLM call (stdout on a terminal, else stderr)."""
        lines = "\n".join(f"{i}. {s.path}:{s.start_line}-{s.end_line}" for i, s in enumerate(sources, 1))
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


def _explain_target(root: Path, target: str) -> tuple[Path, int, int | None]:
    """``FILE[:START[-END]]`` -> (absolute file, start, end or ``None`` for the whole file from start).

    Raises:
        CLIError: bad line numbers, or the file does not exist.
    """
    file, start, end = target, 1, None
    head, sep, lines = target.rpartition(":")
    if sep and lines and all(part.isdigit() for part in lines.split("-", 1)) and head:
        file = head
        first, _, last = lines.partition("-")
        start, end = int(first), int(last or first)
        if start < 1 or end < start:
            raise CLIError(f"bad line range {lines!r}: use START-END, 1-based, START <= END")
    path = Path(file) if Path(file).is_absolute() else Path(root) / file
    if not path.is_file():
        raise CLIError(f"file not found: {path}")
    return path, start, end


def _cmd_explain(args) -> int:
    from codeask.index.engine import IndexLocked
    from codeask.query.explain import explain, make_span

    ws = _workspace([args.path])
    index = next(iter(ws.indexes.values()))
    path, start, end = _explain_target(index.root, args.target)
    if end is None:
        end = max(start, len(path.read_text(encoding="utf-8", errors="replace").splitlines()))
    try:
        index.sync(wait=False)
    except IndexLocked as exc:
        print(f"codeask: note: {exc}; explaining from the index as it is", file=sys.stderr)
    result = explain(ws, make_span(ws, str(path), start, end), brief=args.brief, no_llm=args.no_llm)
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        print(result.markdown)
    for line in result.warnings:
        if line not in ws.warnings:
            print(f"codeask: warning: {line}", file=sys.stderr)
    if result.error:
        print(f"codeask: {result.error}", file=sys.stderr)
        return 1
    return 0


def _cmd_status(args) -> int:
    ws = _workspace([args.path])
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
    from codeask.index.watch import Watcher

    ws = _workspace(args.path)
    console = _console()
    with IndexProgress(not args.json) as progress:
        stats = ws.index(progress=progress)
    asks = None
    if len(ws.indexes) == 1:
        from codeask.resident import AskServer

        try:
            asks = AskServer(ws).start()
        except OSError as exc:
            console.print(f"[yellow]note:[/] not answering asks for other processes: {exc}", highlight=False)
    answering = "; `codeask ask` on this folder is answered here" if asks else ""
    console.print(
        f"indexed {stats.files_seen} files; watching for changes{answering} (Ctrl-C to stop)", highlight=False
    )

    def on_update(stats) -> None:
        if args.json:
            print(json.dumps(stats.to_json()), flush=True)
        else:
            console.print(
                f"{time.strftime('%H:%M:%S')} {stats.files_changed} changed, {stats.files_removed} removed, "
                f"{stats.chunks_embedded} embedded ({stats.seconds * 1000:.0f} ms)"
            )

    watcher = Watcher(ws, on_update=on_update)
    import signal

    def interrupt(signum, frame):  # ``kill`` stops it as Ctrl-C does: the socket is removed
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    try:
        watcher.run()  # the watch limit switches to polling with one warning (codeask.index.watch)
    except KeyboardInterrupt:
        pass
    except (OSError, RuntimeError) as exc:
        raise CLIError(f"watching for changes stopped: {exc}") from exc
    finally:
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
    removed, failed = [], []
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
        }
        print(json.dumps(out))
    else:
        for index in indexes:
            mark = "removed " if index in removed else ("gone    " if not index.root_exists else "        ")
            print(f"{mark}{_size(index.bytes):>9}  {index.root or '?'}  ({index.index_dir.name})")
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


def _size(n: int) -> str:
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
    from codeask.lsp.server import run

    return run(tcp=args.tcp)


def _cmd_mcp(args) -> int:
    from codeask.mcp_server import run

    return run(args.path, http=args.http)


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Cap glibc's per-thread malloc arenas (``mallopt(M_ARENA_MAX)``, as ``MALLOC_ARENA_MAX`` does).

    Indexing runs LanceDB's and ONNX Runtime's thread pools; with glibc's default of 8 arenas per
    core their freed memory stays fragmented: a cold index of the sphinx sdist peaked at 1.10 GB RSS
    without the cap. A no-op where glibc is absent or the user set ``MALLOC_ARENA_MAX``.
    """
    if os.environ.get("MALLOC_ARENA_MAX") or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-8, arenas)  # -8 = M_ARENA_MAX
    except (OSError, AttributeError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 failure with one line on stderr, 2 usage)."""
    limit_malloc_arenas()
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # report it with the subcommand's own name
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        sub.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command != "serve":
        import logging

        logging.basicConfig(level=logging.WARNING, format="codeask: %(message)s", stream=sys.stderr)
    handlers = {
        "index": _cmd_index,
        "ask": _cmd_ask,
        "explain": _cmd_explain,
        "status": _cmd_status,
        "watch": _cmd_watch,
        "serve": _cmd_serve,
        "mcp": _cmd_mcp,
        "clean": _cmd_clean,
        "doctor": _cmd_doctor,
    }
    handler = handlers.get(args.command) or getattr(args, "handler", None)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    if args.command == "ask" and not (args.question or "").strip():
        sub.choices["ask"].error("the question is empty")
    try:
        return handler(args)
    except KeyboardInterrupt:
        print("codeask: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``codeask ask ... | head``): stop quietly, as the Python docs advise.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # the CLI boundary: one line, never a traceback
        if os.environ.get("CODEASK_DEBUG"):
            raise
        return _report(exc)
    finally:
        _opened.clear()


def _report(exc: Exception) -> int:
    """Print ``exc`` as one ``codeask:`` line on stderr; returns its exit code (2 for a question that
    cannot be asked, else 1)."""
    from codeask.workspace import QuestionError

    if isinstance(exc, QuestionError):
        print(f"codeask ask: error: {exc}", file=sys.stderr)
        return 2
    module = type(exc).__module__
    ours = module.startswith("codeask")  # its message was written for users
    if module == "builtins" and not (isinstance(exc, OSError) and exc.filename is not None):
        ours = _raised_in_codeask(exc)  # a ValueError of ours, not one of LanceDB's
    message = str(exc) if ours else describe_error(exc)
    print(f"codeask: {message.splitlines()[0] if message else type(exc).__name__}", file=sys.stderr)
    return 1


def _raised_in_codeask(exc: BaseException) -> bool:
    """Whether the innermost frame of ``exc`` is codeask's own code (not LanceDB's, Arrow's, ...)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return False
    return Path(tb.tb_frame.f_code.co_filename).resolve().is_relative_to(Path(__file__).resolve().parent)
