"""The door of akira's HTTP servers (`akira mcp --http`; `akira web` takes the same one).

Whoever gets through drives the person's agent, credit and repository, so every request is
checked, in this order, on every address the server listens on:
- **Host** must name the address the connection came in on, in any spelling of it (`127.1`,
  `0x7f.1`, `[0:0:0:0:0:0:0:1]`), or `localhost`, with the listening port; else 421. A name an
  attacker's DNS points at this machine (DNS rebinding) is neither.
- **Origin**, when sent, must be `http://` plus such a host and port; else 403 (a page of
  another site, in the person's browser).
- **Authorization** must be `Bearer <token>`, compared in constant time; else 401.

The token comes from `--token-file` (read once, one trailing newline stripped), `--token`, or
on loopback a token akira makes and keeps, mode 0600, in the workspace's `.state/` (a later
start reads the same file, so a client's configuration keeps working)."""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import os
import re
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from akira_cli.errors import AkiraError

MIN_TOKEN = 16
"""A shorter token is guessable (and too short to be masked in what akira writes)."""
MAX_TOKEN_FILE = 4096
_IPV4_SPELLING = re.compile(r"[0-9a-fA-FxX.]+")
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def address_of(name: str) -> Address | None:
    """The IP address `name` spells (`127.1` and `0x7f.1` as the C library reads them, an IPv6
    address with or without brackets, an IPv4-mapped one as IPv4); None for a name."""
    name = name.strip("[]") if name.startswith("[") and name.endswith("]") else name
    found: Address | None = None
    if _IPV4_SPELLING.fullmatch(name):
        with contextlib.suppress(OSError):
            found = ipaddress.IPv4Address(socket.inet_aton(name))
    if found is None:
        try:
            found = ipaddress.ip_address(name.split("%", 1)[0])
        except ValueError:
            return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return found.ipv4_mapped
    return found


def loopback(host: str) -> bool:
    """`localhost`, or an address of 127.0.0.0/8 or ::1 in any spelling (`127.1` is one)."""
    if host == "localhost":
        return True
    found = address_of(host)
    return found is not None and found.is_loopback


def read_token_file(path: Path) -> str:
    """The token in `path`: read once, at start, one trailing newline stripped."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_TOKEN_FILE + 1)
    except OSError as exc:
        raise AkiraError(f"--token-file {path}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > MAX_TOKEN_FILE:
        raise AkiraError(f"--token-file {path}: more than {MAX_TOKEN_FILE} bytes; it should hold one token")
    text = data.decode("utf-8", errors="replace").removesuffix("\n").removesuffix("\r")
    return checked(text, f"--token-file {path}")


def checked(token: str, where: str) -> str:
    if not token or any(ch.isspace() or not ch.isprintable() for ch in token):
        raise AkiraError(f"{where}: the token is empty or holds spaces or control characters; use one line")
    if len(token) < MIN_TOKEN:
        raise AkiraError(
            f"{where}: the token has {len(token)} characters, fewer than {MIN_TOKEN} (guessable); "
            "use a longer one, or give none on loopback and akira makes one"
        )
    return token


def kept_token(path: Path) -> str:
    """The token kept in `path` (the workspace's `.state/`): read when it is a regular file of
    this user's, mode 0600, else a new one written there (mode 0600, never through a link)."""
    with contextlib.suppress(OSError, AkiraError):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if info.st_uid == os.geteuid() and info.st_mode & 0o777 == 0o600 and info.st_nlink == 1:
                return checked(handle.read(MAX_TOKEN_FILE).decode().strip(), str(path))
    token = secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    spare = path.with_name(f".{path.name}.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        spare.unlink()
    fd = os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    os.replace(spare, path)
    return token


@dataclass(frozen=True)
class Refusal:
    status: int
    text: str


class Door:
    """ASGI middleware: a request passes when its Host, Origin and token are right (module doc)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":  # none is served: refused before any check could be missed
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] == "http":
            refusal = self.refusal(scope)
            if refusal is not None:
                headers = [(b"content-type", b"text/plain; charset=utf-8")]
                if refusal.status == 401:
                    headers.append((b"www-authenticate", b"Bearer"))
                await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
                await send({"type": "http.response.body", "body": f"akira: {refusal.text}\n".encode()})
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: dict[str, Any]) -> Refusal | None:
        found = place(scope)
        if isinstance(found, Refusal):
            return found
        if not hmac.compare_digest(found.get(b"authorization", b""), self.expected):
            return Refusal(401, "send 'Authorization: Bearer <token>' (the token akira printed the path of)")
        return None


def place(scope: dict[str, Any]) -> Refusal | dict[bytes, bytes]:
    """The request's headers when its Host and Origin (when sent) name this server; else the
    refusal (421, 403). `akira web` checks its own token after this (its page reads with a
    cookie, and writes with a header)."""
    headers: dict[bytes, bytes] = {}
    for name, value in scope.get("headers") or []:
        if name in headers and name in (b"host", b"origin", b"authorization"):
            return Refusal(400, f"more than one {name.decode()} header")
        headers[name] = value
    server = scope.get("server") or ("", 0)
    here, port = address_of(str(server[0])), int(server[1] or 0)
    host = headers.get(b"host", b"").decode("latin-1")
    if not names_this_server(host, here, port):
        return Refusal(421, "the Host header does not name this server's address and port")
    origin = headers.get(b"origin")
    if origin is not None:
        text = origin.decode("latin-1")
        if not text.startswith("http://") or not names_this_server(text[7:], here, port):
            return Refusal(403, "requests from another origin are refused")
    return headers


def names_this_server(authority: str, here: Address | None, port: int) -> bool:
    """`authority` (`host[:port]`, an IPv6 host in brackets) is `localhost` or spells `here`,
    with `port` (none written: 80)."""
    if authority.startswith("["):
        name, close, rest = authority[1:].partition("]")
        if not close or (rest and not rest.startswith(":")):
            return False
        given = rest[1:] if rest else ""
    else:
        name, _, given = authority.partition(":")
    if (given and not given.isdigit()) or int(given or 80) != port:
        return False
    if name.lower() == "localhost":
        return True
    found = address_of(name) if name else None
    return found is not None and here is not None and found == here


def bound_socket(host: str, port: int) -> socket.socket:
    """A socket listening on `host:port`, or the one line that says why it cannot."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, port))
        listening.listen(128)
    except OSError as exc:
        listening.close()
        why = exc.strerror or str(exc)
        raise AkiraError(
            f"--http {host}:{port}: cannot listen there ({why}); name another port, or 0 for a free one"
        ) from None
    return listening
