"""Decorators around the language server's handlers: errors said once (:func:`guard`,
:func:`command_guard`), passive features that never pop up an error (:func:`quiet`), and
:func:`debounce` (the newest call wins, in the style of python-lsp-server's ``@debounce``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable

from pygls.exceptions import JsonRpcException, JsonRpcInternalError

from codeask.llm import CancelToken
from codeask.service import Cancelled

__all__ = ["guard", "command_guard", "quiet", "debounce"]

log = logging.getLogger("codeask.lsp")


def guard(fn, *, command: bool = False):
    """Log an unexpected error of a handler with its traceback and say it once (the server lives): a
    ``command``'s request fails with an internal error carrying the exception's text (every client
    shows a failed command: VS Code's extension, Neovim's plugin), any other handler's is shown with
    ``window/showMessage`` (a notification has no response to carry it).

    A ``command`` handler cancelled as a task (only the event loop's teardown at the end of input does
    that: ``$/cancelRequest`` stops a command's work through ``CodeaskServer.cancel_request``)
    returns ``None``: pygls runs commands inside its ``workspace/executeCommand`` generator, which
    would log a cancelled task's ``CancelledError`` as an error with a traceback.
    """
    if asyncio.iscoroutinefunction(fn):
        return _guard_async(fn, command)
    name = fn.__name__

    @functools.wraps(fn)
    def guarded(ls, *args, **kwargs):
        try:
            return fn(ls, *args, **kwargs)
        except Exception as exc:
            log.exception("%s failed", name)
            ls.show(f"codeask: {name} failed: {exc}")
            raise

    return guarded


def _guard_async(fn, command: bool):
    name = fn.__name__

    @functools.wraps(fn)
    async def guarded(ls, *args, **kwargs):
        try:
            return await fn(ls, *args, **kwargs)
        except asyncio.CancelledError:
            if command:
                log.info("%s cancelled: the server is stopping", name)
                return None
            raise
        except (Cancelled, JsonRpcException):  # a deliberate error response, reported by the handler
            raise
        except Exception as exc:
            log.exception("%s failed", name)
            if command:  # the clients prefix it ("codeask: ask failed: ...")
                raise JsonRpcInternalError(str(exc) or type(exc).__name__) from None
            ls.show(f"codeask: {name} failed: {exc}")
            raise

    return guarded


def command_guard(fn):
    """:func:`guard` for a ``workspace/executeCommand`` handler."""
    return guard(fn, command=True)


def quiet(fn):
    """For passive features (hover): an error is logged and the answer is ``None``, never a popup;
    a cancelled call (:class:`~codeask.query.pipeline.Cancelled`) answers ``None`` too."""

    @functools.wraps(fn)
    async def quieted(ls, *args, **kwargs):
        try:
            return await fn(ls, *args, **kwargs)
        except asyncio.CancelledError:
            raise
        except Cancelled:
            return None
        except Exception:
            log.exception("%s failed", fn.__name__)
            return None

    return quieted


def debounce(delay: Callable[..., float]):
    """The newest call wins: ``fn(ls, params, token)`` runs only when no newer call came within
    ``delay(ls)`` seconds, else the call answers ``None``; a newer call also cancels the ``token``
    (a :class:`~codeask.llm.CancelToken`) of the one running, which closes its LLM stream.

    The state is the decorated function's own (one sequence number, one token), so each debounced
    feature has its own; an async handler, run on the event loop (no lock needed).
    """

    def wrap(fn):
        latest = {"seq": 0, "token": CancelToken()}

        @functools.wraps(fn)
        async def debounced(ls, params):
            latest["seq"] = seq = latest["seq"] + 1
            latest["token"].cancel()
            await asyncio.sleep(delay(ls))
            if seq != latest["seq"]:
                return None
            latest["token"] = token = CancelToken()
            return await fn(ls, params, token)

        return debounced

    return wrap
