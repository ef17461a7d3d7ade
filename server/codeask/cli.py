"""The ``codeask`` command line: the same engine as the language server.

Commands: ``index``, ``ask``, ``status``, ``watch``, ``eval``, ``serve``, ``mcp``. Exit codes: 0 on success,
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
from typing import Any

from codeask.console import CLIError, positive_int, stderr_console

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The ``codeask`` argument parser: subcommands ``index``, ``ask``, ``status``, ``watch``,
    ``serve``, ``mcp`` and ``eval`` (added by :func:`codeask.eval.cli.add_eval_parser`); a subcommand is required."""
    parser = argparse.ArgumentParser(
        prog="codeask",
        description="Ask your codebase a question and get a cited answer (offline by default).",
    )
    from codeask import __version__

    parser.add_argument("--version", action="version", version=f"codeask {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("index", help="index (or catch up with) a workspace folder")
    p.add_argument("path", nargs="+", type=Path, help="workspace folder(s)")
    p.add_argument("--json", action="store_true", help="print the stats as one JSON object")
    p.add_argument("--no-embed", action="store_true", help="phase 1 only: keyword-searchable, vectors pending")
    p.add_argument("--no-wait", action="store_true", help="fail instead of waiting when another process writes the index")

    p = sub.add_parser("ask", help="ask a question about a workspace folder")
    p.add_argument("path", type=Path, help="workspace folder")
    p.add_argument("question", help="the question")
    p.add_argument("--json", action="store_true", help="print the answer as one JSON object")
    p.add_argument("--no-llm", action="store_true", help="no LLM: ranked sources with snippets")
    p.add_argument("--top-k", type=positive_int, help="chunks retrieved (default 20)")
    p.add_argument("--max-files", type=positive_int, help="files kept, one chunk each (default 8)")
    p.add_argument("--model", help="LLM model name (provider from CODEASK_LLM or the keys set)")
    p.add_argument("--provider", choices=["auto", "openai", "anthropic", "none"], help="LLM provider")
    p.add_argument("--summary", action="store_true", help="answer from an LLM summary of the documents")
    p.add_argument("--no-update", action="store_true", help="answer from the index as it is, without catching up first")

    p = sub.add_parser("status", help="show what the index of a workspace folder holds")
    p.add_argument("path", type=Path, help="workspace folder")
    p.add_argument("--json", action="store_true", help="print one JSON object")

    p = sub.add_parser("watch", help="index, then follow changes on disk until interrupted")
    p.add_argument("path", nargs="+", type=Path, help="workspace folder(s)")
    p.add_argument("--json", action="store_true", help="print one JSON object per update")

    p = sub.add_parser("serve", help="run the language server")
    p.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")

    p = sub.add_parser("mcp", help="run the MCP server for AI agents (stdio)")
    p.add_argument("path", nargs="+", type=Path, help="workspace folder(s)")
    p.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")

    from codeask.eval.cli import add_eval_parser
    from codeask.publish import add_publish_parser

    add_eval_parser(sub, progress=IndexProgress)
    add_publish_parser(sub)
    return parser


_console = stderr_console


class IndexProgress:
    """Progress of both indexing phases on stderr: rich bars (files, then chunks, with ETA) on a
    terminal, otherwise one line when a phase with work starts."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self._bar = None
        self._tasks: dict[str, Any] = {}
        self._announced: set[str] = set()

    def __enter__(self):
        if self.enabled and self.tty:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                console=_console(), transient=True,
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
            if p.phase in ("index", "embed") and p.phase not in self._announced and p.total > p.done:
                self._announced.add(p.phase)
                what = "files changed" if p.phase == "index" else "chunks to embed (about 40 per second on 2 cores)"
                print(f"codeask: {p.total} {what}...", file=sys.stderr, flush=True)
            return
        label = {"scan": "listing files", "index": "indexing files", "embed": "embedding chunks"}.get(p.phase, p.phase)
        task = self._tasks.get(p.phase)
        if task is None:
            task = self._tasks[p.phase] = self._bar.add_task(label, total=p.total)
        self._bar.update(task, completed=p.done, total=max(p.total, p.done))


def _workspace(paths: Sequence[Path], flags: dict[str, Any] | None = None):
    from codeask.workspace import Workspace

    ws = Workspace(paths, flags=flags)
    for line in ws.warnings:
        print(f"codeask: warning: {line}", file=sys.stderr)
    return ws


def _cmd_index(args) -> int:
    from codeask.index.engine import IndexLocked, IndexReadOnly

    ws = _workspace(args.path)
    try:
        with IndexProgress(not args.json) as progress:
            stats = ws.index(progress=progress, embed=not args.no_embed, wait=not args.no_wait)
    except IndexLocked as exc:
        raise CLIError(f"{exc}; try again when it is done") from exc
    except IndexReadOnly as exc:
        raise CLIError(str(exc)) from exc
    out = stats.to_json()
    if args.json:
        print(json.dumps(out))
    else:
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(out["files_skipped"].items())) or "none"
        print(
            f"{out['files_seen']} files ({out['files_changed']} changed, {out['files_removed']} removed; "
            f"skipped: {skipped}); {out['chunks_total']} chunks, {out['chunks_embedded']} embedded, "
            f"{out['vectors_pending']} pending; {out['seconds']:.1f} s"
        )
    return 0


def _cmd_ask(args) -> int:
    from codeask.index.engine import IndexLocked, IndexReadOnly

    flags = {"llm.model": args.model, "llm.provider": args.provider}
    if args.summary:
        flags["summary.enabled"] = True
    ws = _workspace([args.path], flags)
    console = _console()
    index = next(iter(ws.indexes.values()))
    if index.read_only:
        console.print(
            f"[yellow]note:[/] the index {index.index_dir} is read-only: answering from it as it is "
            "(it cannot be updated)", highlight=False,
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
        args.question, top_k=args.top_k, max_files=args.max_files, no_llm=args.no_llm, stream=stream,
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
    status = 0
    if answer.truncated:
        print(f"codeask: answer cut off ({answer.cut_reason})", file=sys.stderr)
        status = 1
    if answer.error:
        print(f"codeask: {answer.error}", file=sys.stderr)
        status = 1
    return status


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
    console.print(f"indexed {stats.files_seen} files; watching for changes (Ctrl-C to stop)")

    def on_update(stats) -> None:
        if args.json:
            print(json.dumps(stats.to_json()), flush=True)
        else:
            console.print(
                f"{time.strftime('%H:%M:%S')} {stats.files_changed} changed, {stats.files_removed} removed, "
                f"{stats.chunks_embedded} embedded ({stats.seconds * 1000:.0f} ms)"
            )

    watcher = Watcher(ws, on_update=on_update)
    try:
        watcher.run()  # the watch limit switches to polling with one warning (codeask.index.watch)
    except KeyboardInterrupt:
        pass
    except (OSError, RuntimeError) as exc:
        raise CLIError(f"watching for changes stopped: {exc}") from exc
    finally:
        watcher.stop()
    return 0


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
    if extra:  # report it with the subcommand's own usage line
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        sub.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command != "serve":
        import logging

        logging.basicConfig(level=logging.WARNING, format="codeask: %(message)s", stream=sys.stderr)
    handlers = {
        "index": _cmd_index,
        "ask": _cmd_ask,
        "status": _cmd_status,
        "watch": _cmd_watch,
        "serve": _cmd_serve,
        "mcp": _cmd_mcp,
    }
    handler = handlers.get(args.command) or getattr(args, "handler", None)
    from codeask.index.embed import EmbeddingError
    from codeask.index.engine import IndexReadOnly
    from codeask.index.shared import SharedCacheError
    from codeask.llm import LLMError
    from codeask.settings import SettingsError

    try:
        return handler(args)
    except (
        CLIError, SettingsError, EmbeddingError, LLMError, IndexReadOnly, SharedCacheError, FileNotFoundError, ValueError,
    ) as exc:
        print(f"codeask: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("codeask: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``codeask ask ... | head``): stop quietly, as the Python docs advise.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
