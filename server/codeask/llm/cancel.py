"""Cancelling an LLM call: :class:`CancelToken`, the :func:`cancel_scope` seam of the language server,
and the :class:`Cancelled` error a cancelled call raises.

``cancel=`` accepts a :class:`CancelToken`, a ``threading.Event`` or a ``() -> bool``
(:data:`CancelLike`); the call's watchdog (:mod:`codeask.llm.watchdog`) checks it.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from contextlib import contextmanager

__all__ = ["Cancelled", "CancelToken", "CancelLike", "cancel_scope", "is_cancelled", "scoped_token"]


class Cancelled(Exception):
    """The caller cancelled (LSP ``$/cancelRequest``, a closed editor, Ctrl-C); the LLM request, if one
    was running, was aborted and its connection closed."""


class CancelToken:
    """A cancellation handle for LLM calls (and anything else that wants to be told).

    ``cancel()`` sets the flag and runs every callback registered with :meth:`on_cancel` (once; a
    callback registered after cancellation runs at once). Thread-safe.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._event.is_set()

    def __call__(self) -> bool:
        """Same as :attr:`cancelled` (so a token is also a ``cancelled()`` callable)."""
        return self._event.is_set()

    def cancel(self) -> None:
        """Cancel: set the flag, then run the callbacks (errors in them are ignored)."""
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # pragma: no cover - a callback must not stop the others
                pass

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` on cancellation; returns a function that unregisters it."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return lambda: self._remove(callback)
        callback()
        return lambda: None

    def _remove(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` seconds passed; returns :attr:`cancelled`."""
        return self._event.wait(timeout)


#: The language server's seam: LLM calls made inside ``with cancel_scope(token):`` (this thread or
#: task) are cancelled by ``token`` too, without passing ``cancel=`` through every layer.
_scope: contextvars.ContextVar[CancelToken | None] = contextvars.ContextVar("codeask_llm_cancel", default=None)


@contextmanager
def cancel_scope(token: CancelToken | None):
    """Make ``token`` cancel the LLM calls made in this context (this thread, or this task)."""
    reset = _scope.set(token)
    try:
        yield token
    finally:
        _scope.reset(reset)


def scoped_token() -> CancelToken | None:
    """The token of the innermost :func:`cancel_scope` around this thread or task, or ``None``."""
    return _scope.get()


#: What ``cancel=`` accepts: a :class:`CancelToken`, a ``threading.Event``, or ``() -> bool``.
CancelLike = CancelToken | threading.Event | Callable[[], bool] | None


def is_cancelled(cancel: CancelLike) -> bool:
    """Whether ``cancel`` (any :data:`CancelLike`) says cancelled."""
    if cancel is None:
        return False
    if isinstance(cancel, CancelToken):
        return cancel.cancelled
    if isinstance(cancel, threading.Event):
        return cancel.is_set()
    return bool(cancel())
