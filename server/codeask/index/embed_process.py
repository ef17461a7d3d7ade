"""Where the embedding model runs: in this process, or in a child process at a lower CPU priority
for background indexing (see :mod:`codeask.index.embed`, whose module docstring has the measurements).

The child is started with :mod:`subprocess` and speaks pickled requests over its standard input and
output (:class:`EmbeddingChild`, :func:`_child_main`).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import weakref
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from codeask.settings import EmbeddingSettings

__all__ = ["EmbeddingError", "EmbeddingChild", "IDLE_SUPPORTED", "NICE_SUPPORTED"]


class EmbeddingError(RuntimeError):
    """The embedding model cannot be loaded; the message says how to provide it."""


#: ``os.nice`` exists (POSIX); elsewhere ``embedding.index_nice`` is ignored.
NICE_SUPPORTED = hasattr(os, "nice")
#: The ``SCHED_IDLE`` scheduling policy exists (Linux): the indexing child then runs under it (a
#: normal-priority thread that wakes takes the core at once: ``bench/index.py`` on the sphinx sdist,
#: keyword p95 during phase 2 1.47x its value after, against 2.57x at nice 10 alone); elsewhere the
#: nice value alone applies. It was the setting ``embedding.index_idle`` (always on by default).
IDLE_SUPPORTED = hasattr(os, "SCHED_IDLE") and hasattr(os, "sched_setscheduler")


def _lower_priority(nice: int, idle: bool) -> None:
    """Raise every thread's nice value of this process by ``nice`` and, with ``idle``, put each
    under ``SCHED_IDLE``. On Linux both are per thread, and importing numpy has already started
    OpenBLAS's pool thread at normal priority; threads started later inherit both. Where the system
    forbids ``SCHED_IDLE``, the nice value alone applies."""
    os.nice(nice)
    level = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        threads = [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:  # no /proc: os.nice covered the process (or, on Linux, this thread)
        threads = [0]
    for tid in threads:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, level)
            if idle:
                os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
        except OSError:  # ended meanwhile, or a sandbox that forbids it
            pass


#: How the parent starts the child: this interpreter runs :func:`_child_main`.
_CHILD_CODE = "from codeask.index.embed_process import _child_main; _child_main()"


def _child_main() -> None:
    """The indexing child process (started by :class:`EmbeddingChild`): reads pickled requests on its
    standard input and writes pickled replies on what was its standard output, which then points at
    standard error (the parent's stdout may be a language server's or MCP server's protocol stream).

    The first request is ``(settings, nice)``: lower the priority of every thread
    (:func:`_lower_priority`), load the model, reply ``("ok", providers)`` or ``("error", message)``.
    Then each request is a list of texts, each reply ``("ok", (n, dim) float32)`` or
    ``("error", message)``. End of input (the parent closed the pipe, or died) ends the process at
    once, without the interpreter's shutdown: nobody waits for it, and at a low priority that work
    could take minutes on a busy machine."""
    requests = sys.stdin.buffer
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def reply(message: tuple) -> None:
        pickle.dump(message, replies, protocol=pickle.HIGHEST_PROTOCOL)
        replies.flush()

    try:
        from codeask.index.embed import Embedder  # the model this process runs

        settings, nice = pickle.load(requests)
        _lower_priority(nice, IDLE_SUPPORTED)
        try:
            model = Embedder(settings)
        except EmbeddingError as exc:
            reply(("error", str(exc)))
            return
        reply(("ok", model.providers))
        while True:
            texts = pickle.load(requests)
            try:
                reply(("ok", model.embed_batch(texts)))
            except Exception as exc:  # said to the parent, which raises EmbeddingError
                reply(("error", f"{type(exc).__name__}: {exc}"))
    except (EOFError, OSError):  # the parent is gone or closed the pipe
        pass
    finally:
        os._exit(0)


class EmbeddingChild:
    """The indexing child process that runs the model at a lower priority (see the module docstring).

    Started with :mod:`subprocess`, not :mod:`multiprocessing`: an exiting parent waits for its
    ``multiprocessing`` children (and ``concurrent.futures`` for its pool's), and a child that gets
    no CPU (``SCHED_IDLE`` on a busy machine) held the parent's exit for minutes. At exit, and when
    the :class:`Embedder` is collected, the child is killed and nobody waits for it; a child whose
    parent is killed reads end of input and ends too.

    Raises (from the constructor and :meth:`embed`):
        EmbeddingError: the model cannot be loaded in the child, or the child stopped (killed, out of
            memory).
    """

    def __init__(self, settings: EmbeddingSettings, nice: int):
        package_root = str(Path(__file__).resolve().parents[2])  # where ``codeask`` is imported from
        path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD_CODE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": path},
        )
        self.pid = self._proc.pid
        self._finalizer = weakref.finalize(self, _kill, self._proc)
        self.providers: list[str] = self._call((settings, nice))

    def embed(self, texts: list[str]) -> np.ndarray:
        """One batch -> ``(len(texts), dim)`` float32."""
        return self._call(texts)

    def _call(self, request: Any) -> Any:
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None and stdout is not None
        try:
            pickle.dump(request, stdin, protocol=pickle.HIGHEST_PROTOCOL)
            stdin.flush()
            status, value = pickle.load(stdout)
        except (EOFError, OSError, ValueError, pickle.UnpicklingError) as exc:
            self.close()
            raise EmbeddingError("the indexing embedding process stopped") from exc
        if status != "ok":
            raise EmbeddingError(value)
        return value

    @property
    def stopped(self) -> bool:
        """The child is gone (killed, out of memory) or was closed."""
        return not self._finalizer.alive

    def close(self) -> None:
        """Kill the child (it keeps nothing: every vector came back over the pipe); does not wait."""
        self._finalizer()


def _kill(proc: subprocess.Popen) -> None:
    """Close the pipes to ``proc`` and kill it, without waiting."""
    for stream in (proc.stdin, proc.stdout):
        _close_quietly(stream)
    try:
        proc.kill()
    except OSError:  # already gone
        pass


def _close_quietly(stream: IO[bytes] | None) -> None:
    try:
        if stream is not None:
            stream.close()
    except OSError:
        pass
