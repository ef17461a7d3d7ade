"""The ``codeask`` command line: the same engine as the language server.

Commands: ``index``, ``ask``, ``explain``, ``related``, ``status``, ``watch``, ``eval``, ``serve``, ``mcp``, ``token``, ``clean``, ``doctor``, ``publish``, ``cite-check``. Exit codes: 0 on success,
1 with a one-line error on failure, 2 on usage errors. ``--json`` output uses the same snake_case
objects as the LSP commands.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from codeask.cli_related import add_related_parser
from codeask.cli_service import OPENED
from codeask.commands import HANDLERS
from codeask.console import IndexProgress, Parser, UsageError, folder_arg, positive_int

__all__ = ["main", "run", "build_parser", "FAST_EXIT"]


def build_parser() -> argparse.ArgumentParser:
    """The ``codeask`` argument parser: subcommands ``index``, ``ask``, ``related``, ``status``, ``watch``,
    ``serve``, ``mcp`` and ``eval`` (added by :func:`codeask.eval.cli.add_eval_parser`); a subcommand is required."""
    parser = Parser(
        prog="codeask",
        description="Ask your codebase a question and get a cited answer (offline by default).",
    )
    from codeask import __version__

    parser.add_argument("--version", action="version", version=f"codeask {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_index_and_ask(sub)
    _add_explain_status_watch(sub)
    add_related_parser(sub)
    _add_servers(sub)
    _add_maintenance(sub)

    from codeask.cite_cli import add_citecheck_parser
    from codeask.eval.cli import add_eval_parser
    from codeask.publish import add_publish_parser

    add_eval_parser(sub, progress=IndexProgress.for_command)
    add_publish_parser(sub)
    add_citecheck_parser(sub)
    parser.set_defaults(subcommands=sub.choices)  # {name: its parser}, for errors in its own name
    return parser


def _add_index_and_ask(sub) -> None:
    """The ``index`` and ``ask`` subcommands."""
    p = sub.add_parser("index", help="index (or catch up with) a workspace folder")
    p.add_argument("path", nargs="+", type=folder_arg, help="workspace folder(s)")
    p.add_argument("--json", action="store_true", help="print the stats as one JSON object")
    p.add_argument(
        "--no-embed",
        action="store_true",
        help="phase 1 only: keyword-searchable, vectors pending until the next index or ask",
    )
    p.add_argument(
        "--no-wait", action="store_true", help="fail instead of waiting when another process writes the index"
    )

    p = sub.add_parser("ask", help="ask a question about a workspace folder")
    p.add_argument("path", type=folder_arg, help="workspace folder")
    p.add_argument(
        "question", help="the question; - reads it from standard input (a pasted report, up to 200,000 characters)"
    )
    p.add_argument("--json", action="store_true", help="print the answer as one JSON object")
    p.add_argument("--no-llm", action="store_true", help="no LLM: ranked sources with snippets")
    p.add_argument("--top-k", type=positive_int, help="chunks retrieved (default 20)")
    p.add_argument(
        "--max-files",
        type=positive_int,
        help="files kept, each with its best span and up to 2 more (default 8)",
    )
    p.add_argument("--model", help="LLM model name (provider from CODEASK_LLM or the keys set)")
    p.add_argument("--provider", choices=["auto", "openai", "anthropic", "none"], help="LLM provider")
    p.add_argument("--summary", action="store_true", help="answer from an LLM summary of the documents")
    p.add_argument("--no-update", action="store_true", help="answer from the index as it is, without catching up first")


def _add_explain_status_watch(sub) -> None:
    """The ``explain``, ``status`` and ``watch`` subcommands."""
    p = sub.add_parser("explain", help="explain lines of a file, grounded in related code of the workspace")
    p.add_argument("path", type=folder_arg, help="workspace folder")
    p.add_argument(
        "target",
        metavar="FILE[:START[-END]]",
        help="the file (absolute, or relative to the folder, else to the current folder) and 1-based lines",
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


def _add_servers(sub) -> None:
    """The ``serve`` (language server), ``mcp`` and ``token`` subcommands."""
    p = sub.add_parser("serve", help="run the language server")
    p.add_argument(
        "--tcp",
        metavar="HOST:PORT",
        help="listen on TCP instead of stdio, for one client sending the token (`codeask token`)",
    )
    p.add_argument("folder", nargs="*", type=folder_arg, help="with --tcp: the folders served (clients get no other)")
    p.add_argument("--allow-remote", action="store_true", help="let --tcp listen on a non-loopback address")

    p = sub.add_parser("mcp", help="run the MCP server for AI agents (stdio)")
    p.add_argument("path", nargs="+", type=folder_arg, help="workspace folder(s)")
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio, to clients sending the token",
    )
    p.add_argument("--allow-remote", action="store_true", help="let --http listen on a non-loopback address")
    p.add_argument(
        "--allow-host",
        metavar="NAME",
        action="append",
        default=[],
        help="a Host header name --http accepts besides loopback and the bound address (repeatable)",
    )

    p = sub.add_parser("token", help="print the token TCP/HTTP listeners require (written on first use)")
    p.add_argument("--rotate", action="store_true", help="replace it with a new one (restart listeners after)")
    p.add_argument("--path", action="store_true", help="print the token file's path instead")


def _add_maintenance(sub) -> None:
    """The ``clean`` and ``doctor`` subcommands."""
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


def describe_error(exc: BaseException) -> str:
    """One line for an error that escaped a command: what failed, and where.

    An ``OSError`` names its path (and says when that path is inside an index); any other error
    (LanceDB, Arrow, SQLite, ...) names the index folder(s) of the command's workspace and how to
    start that index over (``codeask clean PATH``).
    """
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    indexes = [(root, index_dir) for service in OPENED for root, index_dir in service.index_locations().items()]
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
        where = ", ".join(f"{root} (index {index_dir})" for root, index_dir in indexes)
        roots = " ".join(root for root, _ in indexes)
        return f"reading or writing the index of {where} failed: {type(exc).__name__}: {text}; `codeask clean {roots}` starts it over"
    return f"{type(exc).__name__}: {text}"


def _index_dir_holding(path: Path) -> Path | None:
    """The codeask index folder (it holds ``manifest.sqlite``) that ``path`` is in, or ``None``."""
    for folder in (path, *path.parents):
        if (folder / "manifest.sqlite").is_file():
            return folder
    return None


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


#: Commands after which :func:`run` ends the process without Python's finalization: one-shot work,
#: done and committed when :func:`main` returns.
FAST_EXIT = frozenset({"ask", "explain", "index", "status"})


def run() -> NoReturn:
    """The ``codeask`` program (``python -m codeask`` too): :func:`main`, then the exit.

    After a :data:`FAST_EXIT` command the process exits at once once its output is flushed
    (``os._exit``): what it wrote is committed (LanceDB commits, the manifest's SQLite transactions;
    an embedding child process exits when its pipe closes) and its remaining threads are idle pools,
    so Python's finalization, which tears down every module and object (after ``import lancedb``
    alone ~0.5 s at load ~4, after a one-shot ask ~0.9 s), only delays the shell's prompt. Servers
    and ``watch`` exit normally. Tests call :func:`main`, which returns.
    """
    argv = sys.argv[1:]
    code = main(argv)
    if next((a for a in argv if not a.startswith("-")), None) in FAST_EXIT:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a reader that went away, a closed stream
                pass
        logging.shutdown()
        os._exit(code)
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 failure with one line on stderr, 2 usage)."""
    limit_malloc_arenas()
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # as typed: a usage hint shows it mended
    if extra:  # report it with the subcommand's own name
        args.subcommands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command != "serve":
        logging.basicConfig(level=logging.WARNING, format="codeask: %(message)s", stream=sys.stderr)
    handler = HANDLERS.get(args.command) or getattr(args, "handler", None)
    if handler is None:  # argparse requires a subcommand, and every subcommand has a handler
        parser.error(f"unknown command: {args.command}")
    if args.command == "ask" and not (args.question or "").strip():
        args.subcommands["ask"].error("the question is empty")
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
        OPENED.clear()


def _report(exc: Exception) -> int:
    """Print ``exc`` as one ``codeask:`` line on stderr; returns its exit code (2 for a question that
    cannot be asked, else 1)."""
    from codeask.service import QuestionError

    if isinstance(exc, QuestionError | UsageError):
        command = exc.command if isinstance(exc, UsageError) else "ask"
        print(f"codeask {command}: error: {exc} (codeask {command} --help shows the usage)", file=sys.stderr)
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
