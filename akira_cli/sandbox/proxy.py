"""The run's HTTP(S) proxy (SPEC 15, `sandbox.network: allow`): one per run, on a unix socket
that each step's sandbox has bound in. CONNECT and plain HTTP to an allowed host:port pass;
anything else gets 403 and a `sandbox_denied` event naming the host only.

Hand-written on asyncio rather than a library: what it needs is an allowlist check before a
byte is forwarded, a unix socket to listen on and a callback per refusal, about a hundred
lines; the maintained proxies (proxy.py, mitmproxy) bring a plugin framework or TLS
interception and their own process and logging, none of which this wants.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import os
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import urlsplit

from akira_cli.sandbox.policy import HostRule, allowed

HEAD_LIMIT = 64 * 1024
HEAD_SECONDS = 30.0
CONNECT_SECONDS = 30.0
HOP_HEADERS = (b"proxy-connection", b"connection", b"keep-alive", b"proxy-authorization")


class Proxy:
    """Started once per run (`start`), closed at its end (`close`); its loop runs on a thread."""

    def __init__(self, rules: Iterable[HostRule], on_denied: Callable[[str, str, int], None]) -> None:
        """`on_denied(lane, host, port)`: `lane` is the work tree the request names (`lane()`)."""
        self.rules = tuple(rules)
        self.on_denied = on_denied
        self.folder = Path(tempfile.mkdtemp(prefix="akira-proxy-"))
        self.socket = self.folder / "proxy.sock"
        self.port = 0
        """The port the forwarder listens on inside each sandbox (free there: it has its own net)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None

    def start(self) -> Proxy:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_unix_server(self._handle, str(self.socket))
                )
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._thread = threading.Thread(target=run, name="akira-proxy", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]
        os.chmod(self.socket, 0o600)
        self.port = 40000 + os.getpid() % 20000
        return self

    def close(self) -> None:
        loop = self._loop
        if loop is not None and self._thread is not None:
            if self._server is not None:
                loop.call_soon_threadsafe(self._server.close)
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(timeout=10)
        with contextlib.suppress(OSError):
            self.socket.unlink()
        with contextlib.suppress(OSError):
            self.folder.rmdir()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._serve(reader, writer)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_SECONDS)
        if len(head) > HEAD_LIMIT:
            return await _reply(writer, 431, "Request Header Fields Too Large")
        first, _, rest = head.partition(b"\r\n")
        method, target, version = ([*first.decode("latin-1").split(" "), "", "", ""])[:3]
        if method == "CONNECT":
            host, _, port_text = target.rpartition(":")
            path = ""
        else:
            parts = urlsplit(target)
            if parts.scheme != "http" or not parts.hostname:
                return await _reply(writer, 400, "Bad Request: only absolute http:// URLs and CONNECT")
            host, port_text = parts.hostname, str(parts.port or 80)
            path = parts.path or "/"
            path += f"?{parts.query}" if parts.query else ""
        host = host.strip("[]").lower()
        if not host or not port_text.isdigit():
            return await _reply(writer, 400, "Bad Request")
        port = int(port_text)
        if not allowed(self.rules, host, port):
            self.on_denied(lane(rest), host, port)
            return await _reply(writer, 403, f"Forbidden: {host}:{port} is not in sandbox.allow_hosts")
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(host, port), CONNECT_SECONDS
            )
        except (TimeoutError, OSError) as exc:
            return await _reply(writer, 502, f"Bad Gateway: {host}:{port}: {exc}")
        try:
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                up_writer.write(_origin_form(method, path, version, rest))
            await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
        finally:
            up_writer.close()


def lane(headers: bytes) -> str:
    """The work tree a request comes from: the password of its `Proxy-Authorization` (the
    sandbox sets the proxy's URL to `http://akira:<lane>@...`); "" when it sends none."""
    for line in headers.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"proxy-authorization":
            scheme, _, token = value.strip().partition(b" ")
            if scheme.lower() != b"basic":
                return ""
            try:
                return base64.b64decode(token, validate=True).decode("latin-1").partition(":")[2][:64]
            except (binascii.Error, ValueError):
                return ""
    return ""


def _origin_form(method: str, path: str, version: str, rest: bytes) -> bytes:
    """The request as the server wants it: its path, no hop-by-hop headers, one request per
    connection (a second request on it could name another host)."""
    lines = [
        line
        for line in rest.split(b"\r\n")
        if line and line.split(b":")[0].strip().lower() not in HOP_HEADERS
    ]
    return b"\r\n".join(
        [f"{method} {path} {version}".encode("latin-1"), *lines, b"Connection: close", b"", b""]
    )


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        with contextlib.suppress(OSError):
            if writer.can_write_eof():
                writer.write_eof()


async def _reply(writer: asyncio.StreamWriter, code: int, text: str) -> None:
    body = (text + "\n").encode()
    writer.write(
        f"HTTP/1.1 {code} {text.split(':')[0]}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    await writer.drain()
