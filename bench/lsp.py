"""The language server as an editor sees it: ``python -m codeask serve`` driven by a real LSP client.

Usage::

    python bench/lsp.py [--sdist requests==2.34.2 | --path DIR] [--set requests] [-n 20]
                        [--cache-dir DIR] [--saves 3]

Starts the server over stdio with pygls 2's ``LanguageClient`` (which owns the JSON-RPC framing),
declares ``window.workDoneProgress`` and ``workspace.configuration`` like an editor, answers
``window/workDoneProgress/create`` / ``workspace/configuration`` / ``client/registerCapability``
and follows ``$/progress``. The workspace is a copy in a temp folder (a file is written into it);
the index goes to a fresh temp ``CODEASK_CACHE_DIR`` unless ``--cache-dir`` is given (then the copy
is always at the same path, so that a second run reuses the index: no phase 2); the child has
no ``OPENAI_*`` / ``ANTHROPIC_*`` variables. Measures:

1. ``codeask.status`` latency while indexing (every ``--status-interval`` s, at most
   ``--status-max`` requests), split by the progress phase in which each request was sent;
2. seconds from ``initialized`` to keyword-searchable (end of the "codeask: indexing" progress) and
   to all vectors (end of "codeask: embedding", or ``vectors_pending == 0``);
3. ``codeask.ask`` (``no_llm``) latency over ``-n`` questions from ``shared/eval/<set>.jsonl``;
4. a new ``.py`` file written on disk (not through the editor): seconds until ``codeask.ask`` for
   its unique function name returns it as the first source (polled every 100 ms);
5. ``shutdown`` + ``exit``: the server's exit code (0 expected).

Prints a table and writes ``bench/results/lsp-<name>.json``. Percentiles are nearest-rank.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import EVAL_DIR, fetch_sdist, write_result  # noqa: E402

from lsprotocol import types as lsp  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402
from pygls.uris import from_fs_path  # noqa: E402

PHASE1 = "codeask: indexing"
PHASE2 = "codeask: embedding"


def pct(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (``None`` for no values)."""
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


def r(value: float | None, nd: int = 1) -> float | None:
    return None if value is None else round(value, nd)


def field(obj: Any, name: str, default: Any = None) -> Any:
    """``obj[name]`` for a dict, ``obj.name`` otherwise (results / progress values may be either)."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def child_env(cache_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["CODEASK_CACHE_DIR"] = str(cache_dir)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env["PYTHONUNBUFFERED"] = "1"
    return env


class Bench:
    """One server process, one client, the events seen so far."""

    def __init__(self, args: argparse.Namespace, root: Path, cache_dir: Path, log_path: Path):
        self.args = args
        self.root = root
        self.cache_dir = cache_dir
        self.log_path = log_path
        self.client = LanguageClient("codeask-bench", "0.1")
        self.t0: float | None = None  # `initialized` sent
        self.titles: dict[str, str] = {}  # progress token -> title
        self.phase_begin: dict[str, float] = {}
        self.phase_end: dict[str, float] = {}
        self.phase_end_message: dict[str, str | None] = {}
        self.progress_events = 0
        self.progress_created = 0
        self.messages: list[str] = []
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self.phase2_done = asyncio.Event()
        self.phase1_done = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self._install_handlers()

    # -------------------------------------------------------------- client side
    def _install_handlers(self) -> None:
        c = self.client

        @c.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def create(params: lsp.WorkDoneProgressCreateParams):
            self.progress_created += 1
            return None

        @c.feature(lsp.PROGRESS)
        def progress(params: lsp.ProgressParams):
            now = time.monotonic()
            self.progress_events += 1
            token, value = str(params.token), params.value
            kind = field(value, "kind")
            if kind == "begin":
                title = field(value, "title") or ""
                self.titles[token] = title
                self.phase_begin.setdefault(title, now)
            elif kind == "end":
                title = self.titles.get(token, "")
                if title in (PHASE1, PHASE2):
                    self.phase_end[title] = now
                    self.phase_end_message[title] = field(value, "message")
                    (self.phase1_done if title == PHASE1 else self.phase2_done).set()

        @c.feature(lsp.WORKSPACE_CONFIGURATION)
        def configuration(params: lsp.ConfigurationParams):
            return [None for _ in params.items]

        @c.feature(lsp.CLIENT_REGISTER_CAPABILITY)
        def register(params: lsp.RegistrationParams):
            return None

        @c.feature(lsp.WINDOW_SHOW_MESSAGE)
        def show(params: lsp.ShowMessageParams):
            self.messages.append(f"{params.type.name}: {params.message}")

        @c.feature(lsp.WINDOW_LOG_MESSAGE)
        def log_message(params: lsp.LogMessageParams):
            pass

    def phase(self) -> str:
        """The progress phase right now: phase1 / phase2 / other (before, between, after)."""
        if PHASE2 in self.phase_begin and PHASE2 not in self.phase_end:
            return "phase2"
        if PHASE1 in self.phase_begin and PHASE1 not in self.phase_end:
            return "phase1"
        return "other"

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        with self.log_path.open("w", encoding="utf-8", errors="replace") as log:
            while True:
                line = await stream.readline()
                if not line:
                    return
                text = line.decode("utf-8", "replace").rstrip()
                self.stderr_tail.append(text)
                log.write(text + "\n")
                log.flush()

    async def request(self, coro, timeout: float | None = None):
        return await asyncio.wait_for(coro, timeout or self.args.request_timeout)

    async def command(self, name: str, *arguments: Any, timeout: float | None = None):
        params = lsp.ExecuteCommandParams(command=name, arguments=list(arguments))
        return await self.request(self.client.workspace_execute_command_async(params), timeout)

    async def status(self) -> tuple[float, Any]:
        t = time.perf_counter()
        out = await self.command("codeask.status")
        return (time.perf_counter() - t) * 1000, out

    async def ask(self, question: str) -> tuple[float, Any]:
        t = time.perf_counter()
        out = await self.command("codeask.ask", {"question": question, "no_llm": True})
        return (time.perf_counter() - t) * 1000, out

    # ------------------------------------------------------------------ phases
    async def start(self) -> dict[str, Any]:
        t = time.perf_counter()
        await self.client.start_io(sys.executable, "-m", "codeask", "serve", env=child_env(self.cache_dir))
        proc = self.client._server  # pygls keeps the subprocess here; stderr is piped: drain it
        if proc is not None and proc.stderr is not None:
            self._tasks.append(asyncio.create_task(self._drain_stderr(proc.stderr)))
        uri = from_fs_path(str(self.root))
        caps = lsp.ClientCapabilities(
            window=lsp.WindowClientCapabilities(work_done_progress=True),
            workspace=lsp.WorkspaceClientCapabilities(configuration=True, workspace_folders=True),
        )
        params = lsp.InitializeParams(
            process_id=os.getpid(),
            root_uri=uri,
            capabilities=caps,
            workspace_folders=[lsp.WorkspaceFolder(uri=uri, name=self.root.name)],
            client_info=lsp.ClientInfo(name="codeask-bench", version="0.1"),
        )
        result = await self.request(self.client.initialize_async(params), self.args.start_timeout)
        init_ms = (time.perf_counter() - t) * 1000
        self.client.initialized(lsp.InitializedParams())
        self.t0 = time.monotonic()
        commands = result.capabilities.execute_command_provider
        return {
            "spawn_to_initialize_result_ms": r(init_ms),
            "server": f"{result.server_info.name} {result.server_info.version}" if result.server_info else None,
            "commands": list(commands.commands) if commands else [],
        }

    async def poll_status_while_indexing(self) -> dict[str, Any]:
        """Status every interval until indexing is over (seen true then false, or phase 2 ended)
        or ``--status-max`` requests; then wait for the vectors without the load."""
        a = self.args
        lat: dict[str, list[float]] = {"phase1": [], "phase2": [], "other": []}
        stale = 0
        seen_indexing = False
        last: Any = None
        deadline = time.monotonic() + a.index_timeout
        sent = 0
        while sent < a.status_max and time.monotonic() < deadline:
            tick = time.monotonic()
            where = self.phase()
            ms, last = await self.status()
            sent += 1
            lat[where].append(ms)
            stale += bool(field(last, "stale"))
            indexing = bool(field(last, "indexing"))
            seen_indexing |= indexing or where != "other"
            if not indexing and (seen_indexing or self.phase2_done.is_set()) and self._caught_up(last):
                break
            await asyncio.sleep(max(0.0, a.status_interval - (time.monotonic() - tick)))
        # keyword search / vectors: from the progress notifications, else vectors_pending == 0
        vectors_by_status = None
        while not self._vectors_done(last) and time.monotonic() < deadline:
            try:
                await asyncio.wait_for(self.phase2_done.wait(), 0.5)
            except asyncio.TimeoutError:
                pass
            if self.phase2_done.is_set():
                break
            _, last = await self.status()
            if not field(last, "indexing") and field(last, "vectors_pending") == 0 and PHASE2 not in self.phase_begin:
                vectors_by_status = time.monotonic()
                break
        # indexing flag down (the watcher starts right after) before we go on
        while field(last, "indexing") and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            _, last = await self.status()
        if field(last, "indexing"):
            raise TimeoutError(f"still indexing after {a.index_timeout}s")
        keyword_at = self.phase_end.get(PHASE1)
        vectors_at = self.phase_end.get(PHASE2) or vectors_by_status
        if vectors_at is None and field(last, "vectors_pending") == 0:
            vectors_at = keyword_at  # nothing to embed (a warm --cache-dir)
        all_lat = lat["phase1"] + lat["phase2"] + lat["other"]
        return {
            "status_requests": sent,
            "status_during_phase1": len(lat["phase1"]),
            "status_during_phase2": len(lat["phase2"]),
            "status_outside_phases": len(lat["other"]),
            "status_stale": stale,
            "status_ms_p50": r(pct(all_lat, 0.5)),
            "status_ms_p95": r(pct(all_lat, 0.95)),
            "status_ms_max": r(max(all_lat) if all_lat else None),
            "status_ms_p50_phase1": r(pct(lat["phase1"], 0.5)),
            "status_ms_p50_phase2": r(pct(lat["phase2"], 0.5)),
            "status_ms_max_phase2": r(max(lat["phase2"]) if lat["phase2"] else None),
            "status_ms_max_phase1": r(max(lat["phase1"]) if lat["phase1"] else None),
            "status_ms_max_outside": r(max(lat["other"]) if lat["other"] else None),
            "seconds_to_phase1_begin": r(self.phase_begin[PHASE1] - self.t0, 2) if PHASE1 in self.phase_begin else None,
            "seconds_to_keyword_searchable": r(keyword_at - self.t0, 2) if keyword_at else None,
            "seconds_to_phase2_begin": r(self.phase_begin[PHASE2] - self.t0, 2) if PHASE2 in self.phase_begin else None,
            "seconds_to_all_vectors": r(vectors_at - self.t0, 2) if vectors_at else None,
            "phase2_ran": PHASE2 in self.phase_begin,
            "files": field(last, "files"),
            "chunks": field(last, "chunks_total"),
            "vectors_pending": field(last, "vectors_pending"),
            "llm": field(last, "llm"),
        }

    def _caught_up(self, status: Any) -> bool:
        """Polling under load may stop: phase 2 over, or no phase 2 coming (nothing pending)."""
        return self.phase2_done.is_set() or (self.phase1_done.is_set() and field(status, "vectors_pending") == 0)

    def _vectors_done(self, status: Any) -> bool:
        return self.phase2_done.is_set() or (
            self.phase1_done.is_set() and PHASE2 not in self.phase_begin and field(status, "vectors_pending") == 0
            and not field(status, "indexing")
        )

    async def asks(self, questions: list[str]) -> dict[str, Any]:
        warm_ms, _ = await self.ask("warm up the model and the tables")
        lat, empty = [], 0
        for q in questions:
            ms, out = await self.ask(q)
            lat.append(ms)
            empty += not field(out, "sources")
        return {
            "questions": len(lat),
            "ask_warmup_ms": r(warm_ms),
            "ask_ms_p50": r(pct(lat, 0.5)),
            "ask_ms_p95": r(pct(lat, 0.95)),
            "ask_ms_max": r(max(lat) if lat else None),
            "ask_empty_answers": empty,
        }

    async def save_to_searchable(self, n: int) -> dict[str, Any]:
        """Write new files outside the editor; time until ask() ranks each one first."""
        results, polls = [], []
        for i in range(n):
            name = f"codeask_probe_{uuid.uuid4().hex[:12]}"
            rel = f"{name}.py"
            path = self.root / rel
            path.write_text(
                f'"""A file written by bench/lsp.py."""\n\n\ndef {name}(value):\n'
                f'    """Return the value doubled ({name})."""\n    return value * 2\n',
                encoding="utf-8",
            )
            t_write = time.monotonic()
            found, count = None, 0
            while time.monotonic() - t_write < self.args.save_timeout:
                tick = time.monotonic()
                _, out = await self.ask(name)
                count += 1
                sources = field(out, "sources") or []
                if sources and Path(str(field(sources[0], "path", ""))).name == rel:
                    found = time.monotonic() - t_write
                    break
                await asyncio.sleep(max(0.0, 0.1 - (time.monotonic() - tick)))
            results.append(found)
            polls.append(count)
            await asyncio.sleep(0.5)  # let the watcher's batch settle before the next file
        ok = [x for x in results if x is not None]
        return {
            "save_files": n,
            "save_found": len(ok),
            "save_to_first_source_seconds": [r(x, 3) for x in results],
            "save_to_first_source_seconds_median": r(statistics.median(ok), 3) if ok else None,
            "save_to_first_source_seconds_max": r(max(ok), 3) if ok else None,
            "save_polls": polls,
        }

    async def shutdown(self) -> dict[str, Any]:
        t = time.perf_counter()
        await self.request(self.client.shutdown_async(None), self.args.request_timeout)
        shutdown_ms = (time.perf_counter() - t) * 1000
        self.client.exit(None)
        proc = self.client._server
        t = time.perf_counter()
        code = await asyncio.wait_for(proc.wait(), 15) if proc is not None else None
        return {"shutdown_ms": r(shutdown_ms), "exit_seconds": r(time.perf_counter() - t, 2), "exit_code": code}

    async def close(self) -> None:
        """Always: kill the server if it is still there, stop the client."""
        proc = self.client._server
        if proc is not None and proc.returncode is None:
            proc.kill()
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except asyncio.TimeoutError:
                pass
        try:
            await asyncio.wait_for(self.client.stop(), 5)
        except Exception:
            pass
        for task in self._tasks:
            task.cancel()


async def run(args: argparse.Namespace, root: Path, cache_dir: Path, log_path: Path, questions: list[str]) -> dict:
    bench = Bench(args, root, cache_dir, log_path)
    result: dict[str, Any] = {}
    try:
        result.update(await bench.start())
        result.update(await bench.poll_status_while_indexing())
        result.update(await bench.asks(questions))
        result.update(await bench.save_to_searchable(args.saves))
        result.update(await bench.shutdown())
    except BaseException as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        await bench.close()
        result["progress_tokens_created"] = bench.progress_created
        result["progress_notifications"] = bench.progress_events
        result["show_messages"] = bench.messages[:20]
        if "error" in result or result.get("exit_code") not in (0, None):
            print("server stderr (tail):", *bench.stderr_tail, sep="\n  ", file=sys.stderr)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = parser.add_mutually_exclusive_group()
    src.add_argument("--sdist", help="pinned sdist to index (default: the question set's pin)")
    src.add_argument("--path", type=Path, help="a folder to index (copied to a temp folder first)")
    parser.add_argument("--set", default="requests", help="question set in shared/eval")
    parser.add_argument("-n", type=int, default=20, help="questions timed with codeask.ask")
    parser.add_argument("--eval-dir", type=Path, default=EVAL_DIR)
    parser.add_argument("--cache-dir", type=Path, help="CODEASK_CACHE_DIR for the server (default: fresh temp)")
    parser.add_argument("--saves", type=int, default=3, help="new files written to time save-to-searchable")
    parser.add_argument("--status-interval", type=float, default=0.05, help="seconds between status requests")
    parser.add_argument("--status-max", type=int, default=200, help="status requests sent while indexing")
    parser.add_argument("--request-timeout", type=float, default=60.0)
    parser.add_argument("--start-timeout", type=float, default=60.0, help="for the initialize response")
    parser.add_argument("--index-timeout", type=float, default=900.0, help="for both indexing phases")
    parser.add_argument("--save-timeout", type=float, default=10.0)
    parser.add_argument("--name", help="result name (default: from the sdist / folder)")
    args = parser.parse_args()

    rows = [json.loads(x) for x in (args.eval_dir / f"{args.set}.jsonl").read_text().splitlines() if x.strip()]
    questions = [row["query"] for row in rows[: args.n]]
    if args.path:
        source, name = args.path.resolve(), args.path.resolve().name
    else:
        pin = args.sdist or rows[0]["sdist"]
        source, name = fetch_sdist(pin), pin.replace("==", "-")
    name = args.name or name

    tmp = Path(tempfile.mkdtemp(prefix="codeask-bench-lsp-"))
    try:
        # with --cache-dir the copy always lives at the same path, so that a second run reuses the index
        root = (Path(tempfile.gettempdir()) / "codeask-bench-lsp-workspace" if args.cache_dir else tmp) / source.name
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(source, root, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        cache_dir = args.cache_dir.resolve() if args.cache_dir else tmp / "cache"
        cache_dir.mkdir(parents=True, exist_ok=True)
        result = asyncio.run(run(args, root, cache_dir, tmp / "server.log", questions))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if args.cache_dir:
            shutil.rmtree(root, ignore_errors=True)
    result = {"name": name, "source": str(source), "cache": "given" if args.cache_dir else "fresh", **result}
    for key, value in result.items():
        print(f"{key:36} {value}")
    print(f"\nwritten to {write_result(f'lsp-{name}', result)}")
    return 0 if result.get("exit_code") == 0 and result.get("save_found") == args.saves else 1


if __name__ == "__main__":
    raise SystemExit(main())
