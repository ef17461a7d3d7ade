"""Running work off the event loop: bounded worker lanes, and work-done progress from worker threads.

Every request handler hands its blocking work (retrieval, LLM calls, index reads) to a
:class:`Lane`: a fixed number of slots, each running one call in a daemon thread. A request
waiting for a slot is cancelled like any other (``$/cancelRequest``); a cancelled request's
``on_cancel`` stops its thread (the pipeline's ``cancelled()`` flag, and the LLM stream is
closed through :class:`codeask.llm.CancelToken`); the slot is free when the thread has ended.
Daemon threads: a stuck call never holds the process after ``exit`` (see :func:`codeask.lsp.server.run`).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from lsprotocol import types as lsp

from codeask.imports import wait_preloaded

__all__ = ["AnswerDeltas", "Lane", "Reporter", "post"]

log = logging.getLogger(__name__)
_ids = itertools.count(1)


def post(loop: asyncio.AbstractEventLoop | None, fn: Callable[..., Any], *args: Any) -> bool:
    """``loop.call_soon_threadsafe(fn, *args)``; False (nothing done) once the loop is closed, as it
    is while the process exits: worker threads finishing late never log ``Event loop is closed``."""
    if loop is None or loop.is_closed():
        return False
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:  # closed between the check and the call
        return False
    return True


def _settle(fut: asyncio.Future, value: Any, exc: BaseException | None) -> None:
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(value)


class Lane:
    """At most ``size`` calls at once, each in its own daemon thread; the others wait for a slot.

    Args:
        name: thread name prefix (``codeask-<name>``), shown in logs.
        size: slots (>= 1).
        imports: wait for the heavy-module preload (:mod:`codeask.imports`) before each call
            (``False`` for work that imports nothing heavy, e.g. shutdown).
    """

    def __init__(self, name: str, size: int, *, imports: bool = True):
        self.name = name
        self.size = max(1, size)
        self.imports = imports
        self._slots: asyncio.Semaphore | None = None
        self._threads: set[threading.Thread] = set()
        self._lock = threading.Lock()

    @property
    def busy(self) -> int:
        """Threads of this lane still running (a cancelled call counts until its thread ends)."""
        with self._lock:
            return len(self._threads)

    async def run(self, fn: Callable[[], Any], *, on_cancel: Callable[[], None] | None = None) -> Any:
        """Run ``fn()`` in a slot and return its result (its exception is raised here).

        Raises:
            asyncio.CancelledError: the request was cancelled (``on_cancel()`` was called first
                when ``fn`` had started).
        """
        loop = asyncio.get_running_loop()
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.size)
        slots = self._slots
        await slots.acquire()
        fut = loop.create_future()

        def work() -> None:
            try:
                if self.imports:
                    wait_preloaded()  # never the first import of a heavy module in a worker (codeask.imports)
                value = fn()
            except BaseException as exc:  # handed to the awaiting coroutine
                post(loop, _settle, fut, None, exc)
            else:
                post(loop, _settle, fut, value, None)
            finally:
                with self._lock:
                    self._threads.discard(threading.current_thread())
                post(loop, slots.release)

        thread = threading.Thread(target=work, name=f"codeask-{self.name}", daemon=True)
        with self._lock:
            self._threads.add(thread)
        try:
            thread.start()
        except BaseException:
            with self._lock:
                self._threads.discard(thread)
            slots.release()
            raise
        try:
            return await fut
        except asyncio.CancelledError:
            if on_cancel is not None:
                on_cancel()
            raise

    def join(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the running threads; True when none is left."""
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)
        return self.busy == 0


class Reporter:
    """Server-initiated work-done progress, driven from a worker thread.

    ``begin`` asks the client to create a token (``window/workDoneProgress/create``) and waits
    for its answer, then every notification is posted to the event loop in order.
    Without ``enabled`` (the client lacks ``window.workDoneProgress``) every method does nothing.
    """

    def __init__(self, ls, title: str, *, enabled: bool):
        self.ls = ls
        self.title = title
        self.enabled = enabled
        self.token = f"codeask-{next(_ids)}"
        self.begun = False
        self._last: tuple[str, int | None] | None = None

    def _post(self, fn: Callable[..., Any], *args: Any) -> None:
        post(self.ls.loop, fn, *args)

    def begin(self, message: str = "", percentage: int | None = 0) -> None:
        """Create the token (waits up to 10 s for the client) and send ``begin``, once; a client that
        refuses disables this reporter (logged, not raised). ``percentage``: 0-100 or ``None``."""
        loop = self.ls.loop
        if not self.enabled or self.begun or loop is None or loop.is_closed():
            return
        stopping = getattr(self.ls, "stopping", None)
        try:
            fut = asyncio.run_coroutine_threadsafe(self.ls.work_done_progress.create_async(self.token), loop)
            for _ in range(100):  # 10 s at most; given up at once when the server stops
                if stopping is not None and stopping.is_set():
                    fut.cancel()
                    raise RuntimeError("the server is stopping")
                try:
                    fut.result(timeout=0.1)
                    break
                except TimeoutError:
                    continue
            else:
                fut.cancel()
                raise TimeoutError("no answer in 10 s")
        except Exception as exc:  # a client that refuses, or the server exiting: no progress
            if not loop.is_closed() and not (stopping is not None and stopping.is_set()):
                log.warning("work done progress %r not created: %s", self.title, exc)
            self.enabled = False
            return
        self.begun = True
        value = lsp.WorkDoneProgressBegin(title=self.title, message=message or None, percentage=percentage)
        self._post(self.ls.work_done_progress.begin, self.token, value)

    def report(self, message: str, percentage: int | None = None) -> None:
        """Send a ``report`` after :meth:`begin` (``percentage`` 0-100 or ``None``); a repeat of the
        last one is dropped."""
        if not self.begun or self._last == (message, percentage):
            return
        self._last = (message, percentage)
        value = lsp.WorkDoneProgressReport(message=message, percentage=percentage)
        self._post(self.ls.work_done_progress.report, self.token, value)

    def end(self, message: str = "") -> None:
        """Send ``end`` if :meth:`begin` was sent; later reports are then dropped."""
        if not self.begun:
            return
        self.begun = False
        self._post(self.ls.work_done_progress.end, self.token, lsp.WorkDoneProgressEnd(message=message or None))


#: The notification carrying a piece of an answer's text: params ``{"askId": str, "delta": str}``.
ANSWER_DELTA = "codeask/answerDelta"
#: Deltas arriving within this many seconds of the last notification are sent together (an LLM
#: streams a token at a time; the editor needs no more than ~20 updates a second).
_DELTA_SECONDS = 0.05


class AnswerDeltas:
    """The ``stream`` callback of an ask (called in its worker thread): each text delta goes to the
    client as a :data:`ANSWER_DELTA` notification tagged with the client's ``ask_id``, in order.

    Deltas closer together than :data:`_DELTA_SECONDS` are joined into one notification;
    :meth:`flush` sends what is held back (call it once the answer is done). The concatenation of the
    notifications' deltas is exactly the concatenation of the deltas received. Nothing is sent once
    the server's event loop is closed (:func:`post`).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop | None, notify: Callable[[str, Any], None], ask_id: str):
        self.loop = loop
        self.notify = notify
        self.ask_id = ask_id
        self._held: list[str] = []
        self._sent_at = 0.0

    def __call__(self, delta: str) -> None:
        if not delta:
            return
        self._held.append(delta)
        if time.monotonic() - self._sent_at >= _DELTA_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Send the held deltas as one notification (nothing when none is held)."""
        if not self._held:
            return
        text, self._held = "".join(self._held), []
        self._sent_at = time.monotonic()
        post(self.loop, self.notify, ANSWER_DELTA, {"askId": self.ask_id, "delta": text})
