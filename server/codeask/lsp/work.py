"""Running work off the event loop, and work-done progress reported from worker threads."""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any

from lsprotocol import types as lsp

from codeask.imports import wait_preloaded

__all__ = ["in_thread", "Reporter"]

log = logging.getLogger(__name__)
_ids = itertools.count(1)


def _settle(fut: asyncio.Future, value: Any, exc: BaseException | None) -> None:
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(value)


async def in_thread(
    fn: Callable[..., Any], *args: Any, name: str = "codeask-worker", imports: bool = True, **kwargs: Any
) -> Any:
    """Run ``fn`` in a new daemon thread and await its result.

    Daemon threads (not an executor) so that a long LLM call or embedding batch never holds the
    process open after ``exit``; the event loop stays free meanwhile. With ``imports`` (the default)
    the thread first waits for the heavy-module preload (:mod:`codeask.imports`); work that imports
    nothing heavy (shutdown) passes ``imports=False``.
    """
    loop = asyncio.get_running_loop()
    fut = loop.create_future()

    def work() -> None:
        try:
            if imports:
                wait_preloaded()  # never the first import of a heavy module in a worker (codeask.imports)
            value = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the awaiting coroutine
            loop.call_soon_threadsafe(_settle, fut, None, exc)
        else:
            loop.call_soon_threadsafe(_settle, fut, value, None)

    threading.Thread(target=work, name=name, daemon=True).start()
    return await fut


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
        self.ls.loop.call_soon_threadsafe(fn, *args)

    def begin(self, message: str = "", percentage: int | None = 0) -> None:
        """Create the token (waits up to 10 s for the client) and send ``begin``, once; a client that
        refuses disables this reporter (logged, not raised). ``percentage``: 0-100 or ``None``."""
        if not self.enabled or self.begun:
            return
        try:
            fut = asyncio.run_coroutine_threadsafe(self.ls.work_done_progress.create_async(self.token), self.ls.loop)
            fut.result(timeout=10)
        except Exception as exc:  # a client that refuses: no progress, the work goes on
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
