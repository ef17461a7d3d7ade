"""What every network listener of codeask shares (``codeask mcp --http``, ``codeask serve --tcp``):
the address check, the bearer token and the log of refused peers.

* The address: ``HOST:PORT``; a host that is not loopback (``127.0.0.0/8``, ``::1``, ``localhost``)
  needs ``--allow-remote`` (else :class:`~codeask.console.UsageError`, exit code 2) and is warned
  about once on stderr.
* The token: 43 URL-safe characters (:func:`secrets.token_urlsafe` of 32 bytes) in the file
  ``token`` next to the user config file (:func:`token_path`: ``$CODEASK_CONFIG_DIR/token``, else
  ``platformdirs.user_config_dir("codeask")/token``, e.g. ``~/.config/codeask/token``), written on
  first use with mode 0600 in a dir created with mode 0700. A token file another user could read
  (any group/other bit, or another owner) is refused, never used. Clients send it as
  ``Authorization: Bearer TOKEN`` (HTTP) or ``initializationOptions: {"token": TOKEN}`` (LSP);
  :func:`token_matches` compares in constant time.
* :class:`Refusals`: a refused peer is logged once (by host), not once per request.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import re
import secrets
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from codeask.console import CLIError, UsageError
from codeask.settings.layers import user_config_path

__all__ = [
    "Listener",
    "Refusals",
    "is_loopback",
    "open_listener",
    "parse_address",
    "read_token",
    "rotate_token",
    "token_matches",
    "token_path",
]

log = logging.getLogger("codeask.listen")

#: The token file's name, in the dir of the user config file.
TOKEN_FILE = "token"
_TOKEN = re.compile(r"[A-Za-z0-9_-]{32,256}")
#: Peers remembered by :class:`Refusals` (each logged once); more are summed up in one line.
MAX_PEERS = 1024


def token_path(env: dict[str, str] | None = None) -> Path:
    """``token`` in the dir of the user config file (:func:`~codeask.settings.layers.user_config_path`)."""
    return user_config_path(env).parent / TOKEN_FILE


def read_token(path: Path | None = None) -> str:
    """The listeners' token from ``path`` (default :func:`token_path`), written first if absent.

    Raises:
        CLIError: the file is readable by another user, owned by another user, not a regular file,
            holds no token (32-256 URL-safe characters), or cannot be read or written.
    """
    path = path or token_path()
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    try:
        return _write(path, exclusive=True)
    except FileExistsError:  # another listener wrote it meanwhile
        return _read(path)


def rotate_token(path: Path | None = None) -> str:
    """Replace the token with a new one (mode 0600, atomically); returns it. Running listeners keep
    the token they started with until restarted.

    Raises:
        CLIError: the file cannot be written.
    """
    return _write(path or token_path(), exclusive=False)


def token_matches(given: object, expected: str) -> bool:
    """Whether ``given`` (any JSON value a client sent) is the token, compared in constant time."""
    return isinstance(given, str) and hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def _read(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise CLIError(f"cannot read the token file {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise CLIError(f"the token file {path} is not a regular file")
        if os.name == "posix" and (info.st_mode & 0o077 or info.st_uid != os.getuid()):
            raise CLIError(
                f"the token file {path} can be read by others (mode {stat.S_IMODE(info.st_mode):04o}): "
                f"`codeask token --rotate` writes a new one readable by you only"
            )
        text = fh.read(1024).decode("ascii", errors="replace").strip()
    if not _TOKEN.fullmatch(text):
        raise CLIError(f"the token file {path} holds no valid token: `codeask token --rotate` writes a new one")
    return text


def _write(path: Path, *, exclusive: bool) -> str:
    token = secrets.token_urlsafe(32)
    target = path if exclusive else path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if not path.parent.is_dir():
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            path.parent.chmod(0o700)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(target, flags, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(token + "\n")
        if not exclusive:
            os.replace(target, path)
    except FileExistsError:
        if exclusive:
            raise
        raise CLIError(f"cannot write the token file {path}: {target} exists") from None
    except OSError as exc:
        raise CLIError(f"cannot write the token file {path}: {exc.strerror}") from None
    return token


def parse_address(text: str, flag: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6; an empty host is ``127.0.0.1``) -> ``(host, port)``.

    Raises:
        ValueError: not ``HOST:PORT`` with a port in 0-65535 (one line naming ``flag``).
    """
    host, _, port = text.rpartition(":")
    if not port.isdigit() or int(port) > 65535:
        raise ValueError(f"{flag} wants HOST:PORT, got {text!r}")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    return host or "127.0.0.1", int(port)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``127.0.0.0/8``, ``::1``) or ``localhost``."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


@dataclass
class Refusals:
    """Refused peers, each logged once (WARNING on ``codeask.listen``) however often it retries."""

    seen: set[str] = field(default_factory=set)
    full: bool = False

    def refuse(self, peer: str, reason: str) -> None:
        """Note that ``peer`` (a host) was refused for ``reason``; logged the first time only."""
        if peer in self.seen or self.full:
            return
        if len(self.seen) >= MAX_PEERS:
            self.full = True
            log.warning("refused %d peers; refusals of further peers are not logged", MAX_PEERS)
            return
        self.seen.add(peer)
        log.warning("refused %s: %s; further refusals of this peer are not logged", peer, reason)


@dataclass(frozen=True)
class Listener:
    """Where a listener binds and what it accepts (see :func:`open_listener`)."""

    host: str
    port: int
    token: str
    #: Host names the HTTP Host/Origin checks accept: loopback names, the bound host, ``--allow-host``.
    allowed_hosts: tuple[str, ...]
    refusals: Refusals


def open_listener(
    command: str, flag: str, address: str, *, allow_remote: bool, allow_hosts: tuple[str, ...] = ()
) -> Listener:
    """Check ``address`` (given with ``flag`` to ``codeask command``) and read the token.

    A non-loopback host without ``allow_remote`` is refused; with it, one warning is printed on
    stderr naming the risk.

    Raises:
        ValueError: ``address`` is not ``HOST:PORT`` (exit code 1, as before listeners had tokens).
        UsageError: a non-loopback host without ``--allow-remote`` (exit code 2).
        CLIError: the token file is unusable (:func:`read_token`).
    """
    host, port = parse_address(address, flag)
    if not is_loopback(host):
        if not allow_remote:
            raise UsageError(
                command,
                f"{host} is not a loopback address: anyone who can reach it could connect; "
                f"use 127.0.0.1, or add --allow-remote to listen on {host}",
            )
        print(
            f"codeask {command}: warning: listening on {host}:{port}, reachable from the network: anyone who "
            "reaches it with the token reads the indexed code and spends your LLM key, and the token travels "
            "unencrypted (prefer 127.0.0.1 and an SSH tunnel)",
            file=sys.stderr,
        )
    names = ("127.0.0.1", "localhost", "::1", host, *allow_hosts)
    return Listener(
        host=host,
        port=port,
        token=read_token(),
        allowed_hosts=tuple(dict.fromkeys(names)),
        refusals=Refusals(),
    )
