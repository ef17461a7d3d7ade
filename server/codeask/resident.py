"""A resident index: ``codeask watch PATH`` answers ``codeask ask PATH ...`` over a local socket.

A new ``codeask ask`` process pays seconds of imports (LanceDB alone ~1.9 s of CPU, the embedding
model ~0.6 s) before it can search. While ``codeask watch`` runs for a folder, it already holds
the index (kept up to date by its watcher) and the loaded model, so ``ask`` hands it the question
and prints the answer it gets back; when no watch runs (or it runs with other LLM settings), ``ask``
answers in-process as before.

Transport: :mod:`multiprocessing.connection` on a Unix socket
``<temp dir>/codeask-<uid>/<sha256(folder)[:16]>.sock`` (the folder is private to the user,
``0700``), authenticated with a random key in a ``0600`` file beside it (HMAC challenge, so no other
user's process can connect). One request per connection: ``{"question", "top_k", "max_files",
"no_llm", "llm"}`` -> ``{"ok": true, "answer": Answer.to_json()}`` or ``{"ok": false, "kind":
"question" | "llm" | "error" | "mismatch", "error"}``; ``{"kind": "status"}`` -> ``{"ok": true,
"status": ServiceStatus.to_json()}`` (what ``codeask status --json`` prints, with the readiness).
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import tempfile
import threading
from multiprocessing.connection import Client, Listener
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeask.service import Service

__all__ = ["socket_path", "AskServer", "ask_resident"]

log = logging.getLogger(__name__)


def _folder() -> Path:
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"codeask-{uid}"


def socket_path(root: Path | str) -> Path:
    """The socket of the resident index of workspace folder ``root`` (resolved)."""
    digest = hashlib.sha256(str(Path(root).resolve()).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return _folder() / f"{digest}.sock"


class AskServer:
    """Answers asks for the single root of ``service`` (a :class:`~codeask.service.Service`) on its
    :func:`socket_path`, from threads.

    Raises (from :meth:`start`):
        OSError: the socket cannot be created (the caller goes on without it).
    """

    def __init__(self, service: Service) -> None:
        self.service = service
        (root,) = service.roots
        self.path = socket_path(root)
        self.key_path = self.path.with_suffix(".key")
        self._listener: Listener | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> AskServer:
        """Create the socket and key file and accept connections in a daemon thread."""
        folder = self.path.parent
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if folder.stat().st_uid != os.getuid() or folder.stat().st_mode & 0o077:
            raise OSError(f"{folder} is not private to this user")
        key = secrets.token_bytes(32)
        self.path.unlink(missing_ok=True)
        self._listener = Listener(str(self.path), family="AF_UNIX", authkey=key)
        fd = os.open(self.key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(key)
        self._thread = threading.Thread(target=self._serve, name="codeask-asks", daemon=True)
        self._thread.start()
        return self

    def _serve(self) -> None:
        while self._listener is not None:
            try:
                conn = self._listener.accept()
            except Exception:  # closed by stop(), or a client that failed the key check
                if self._listener is None:
                    return
                continue
            threading.Thread(target=self._handle, args=(conn,), name="codeask-ask", daemon=True).start()

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """The reply to one request (see the module docstring); never raises."""
        from codeask.llm import LLMError
        from codeask.service import QuestionError

        service = self.service
        no_llm = bool(request.get("no_llm"))
        try:
            if request.get("kind") == "status":
                return {"ok": True, "status": service.status().to_json()}
            resolved = None if no_llm else service.settings.resolved_llm()
            have = resolved.describe() if resolved is not None else None
            if have != request.get("llm"):
                return {"ok": False, "kind": "mismatch", "error": f"this watch answers with {have}"}
            asked = service.ask_request(
                str(request.get("question") or ""),
                top_k=request.get("top_k"),
                max_files=request.get("max_files"),
                no_llm=no_llm,
            )
            return {"ok": True, "answer": service.ask(asked).to_json()}
        except QuestionError as exc:
            return {"ok": False, "kind": "question", "error": str(exc)}
        except LLMError as exc:
            return {"ok": False, "kind": "llm", "error": str(exc)}
        except Exception as exc:
            log.exception("ask failed")
            return {"ok": False, "kind": "error", "error": f"{type(exc).__name__}: {exc}"}

    def _handle(self, conn) -> None:
        try:
            with conn:
                request = conn.recv()
                conn.send(self.answer(request if isinstance(request, dict) else {}))
        except (EOFError, OSError):
            pass

    def stop(self) -> None:
        """Close the socket and remove it and its key file."""
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        for path in (self.path, self.key_path):
            path.unlink(missing_ok=True)


def ask_resident(root: Path | str, request: dict[str, Any], timeout: float = 600.0) -> dict[str, Any] | None:
    """Send ``request`` to the resident index of ``root``; its reply, or ``None`` when no watch answers
    (no socket, a stale one, a key that does not match). ``timeout``: seconds to wait for the answer."""
    path = socket_path(root)
    if not path.exists():
        return None
    try:
        key = path.with_suffix(".key").read_bytes()
        with Client(str(path), family="AF_UNIX", authkey=key) as conn:
            conn.send(request)
            if not conn.poll(timeout):
                return None
            reply = conn.recv()
    except Exception:  # no watch (refused, stale socket), a foreign key, a watch that went away
        return None
    return reply if isinstance(reply, dict) else None
