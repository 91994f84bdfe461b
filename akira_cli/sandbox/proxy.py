"""The run's HTTP(S) proxy (`sandbox.network: allow`, docs/sandbox.md): one per run. It listens on
127.0.0.1:PORT inside each step's private network namespace (`netns.py`), or, where those cannot
be made, on a unix socket that a forwarder inside each sandbox reaches. CONNECT and plain HTTP
to an allowed host:port pass; anything else gets 403, and the host (only the host, cut and with
its control characters escaped) is reported once per attempt of a step.

A step is hostile to it: it takes a bounded number of connections at once (past it, one is
answered 503 and closed, and akira is told once), a connection idle for long is closed, and what
it reports is bounded (the first hosts of a step, each once).

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
import resource
import socket
import tempfile
import threading
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from akira_cli.events import printable
from akira_cli.sandbox.policy import HostRule, allowed

HEAD_LIMIT = 64 * 1024
HEAD_SECONDS = 30.0
CONNECT_SECONDS = 30.0
IDLE_SECONDS = 600.0
"""A tunnel with no byte either way for this long is closed."""
CONNECTIONS = 256
"""At most this many connections at once (fewer where the open-file limit is low): each takes
two descriptors of akira's."""
HOST_CHARS = 253
"""The longest DNS name: a refused host is cut to it."""
HOP_HEADERS = (b"proxy-connection", b"connection", b"keep-alive", b"proxy-authorization")


class Proxy:
    """Started once per run (`start`), closed at its end (`close`); its loop runs on a thread."""

    def __init__(
        self,
        rules: Iterable[HostRule],
        on_denied: Callable[[str, str, int], None],
        on_warning: Callable[[str], None] = lambda _: None,
        idle: float = IDLE_SECONDS,
    ) -> None:
        """`on_denied(lane, host, port)`: `lane` is the work tree the request names (`lane()`)."""
        self.rules = tuple(rules)
        self.on_denied = on_denied
        self.on_warning = on_warning
        self.idle = idle
        """A connection that sends no request for this long (at most HEAD_SECONDS), or a tunnel
        that moves no byte for this long, is closed."""
        self.folder = Path(tempfile.mkdtemp(prefix="akira-proxy-"))
        self.socket = self.folder / "proxy.sock"
        self.port = 0
        """The port the proxy has inside each sandbox (free there: each room has its own net)."""
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        self.limit = (
            CONNECTIONS if soft == resource.RLIM_INFINITY else max(8, min(CONNECTIONS, (soft - 128) // 3))
        )
        self._open = 0
        self._warned: set[str] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        """The accept loops and the connections (asyncio holds its tasks weakly)."""

    def start(self) -> Proxy:
        ready = threading.Event()
        failure: list[BaseException] = []
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)

        def run() -> None:
            loop = asyncio.new_event_loop()
            loop.set_exception_handler(self._trouble)
            self._loop = loop
            try:
                server.bind(str(self.socket))
                server.listen(128)
                self._serve_on(server)
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            server.close()

        self._thread = threading.Thread(target=run, name="akira-proxy", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            server.close()
            raise failure[0]
        os.chmod(self.socket, 0o600)
        self.port = 40000 + os.getpid() % 20000
        return self

    def listen(self, server: socket.socket) -> None:
        """Serves a listening socket too (a room's 127.0.0.1:PORT), from any thread; the caller
        closes it after `close`."""
        assert self._loop is not None, "the proxy is not started"
        self._loop.call_soon_threadsafe(self._serve_on, server)

    def close(self) -> None:
        loop = self._loop
        if loop is not None and self._thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(timeout=10)
        with contextlib.suppress(OSError):
            self.socket.unlink()
        with contextlib.suppress(OSError):
            self.folder.rmdir()

    def _serve_on(self, server: socket.socket) -> None:
        server.setblocking(False)
        self._spawn(self._accept(server))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        assert self._loop is not None
        task = self._loop.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _accept(self, server: socket.socket) -> None:
        """One connection at a time: past `limit` open, each new one is answered 503 and closed
        (asyncio's own servers take a whole backlog at once, and past the open-file limit print
        a traceback each second)."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                client, _ = await loop.sock_accept(server)
            except OSError as exc:  # out of descriptors, or of memory: the backlog waits
                self._warn("accept", f"the sandbox's proxy cannot take a connection now: {exc}")
                await asyncio.sleep(0.5)
                continue
            if self._open < self.limit:
                self._open += 1
                self._spawn(self._connection(client))
                continue
            self._warn(
                "limit",
                f"the sandbox's proxy refuses connections past {self.limit} open at once "
                "(a step opened that many; each one over it is answered 503)",
            )
            with contextlib.suppress(OSError):
                client.send(b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n")
            client.close()

    async def _connection(self, client: socket.socket) -> None:
        try:
            reader, writer = await asyncio.open_connection(sock=client)
        except OSError:
            self._open -= 1
            client.close()
            return
        try:
            await self._serve(reader, writer)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            self._open -= 1
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _trouble(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """What asyncio would print with a traceback (an accept past the open-file limit, again
        each second): one warning per kind instead."""
        said = context.get("message", "trouble")
        self._warn(said, f"the sandbox's proxy: {said}: {context.get('exception', '')}")

    def _warn(self, kind: str, message: str) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            self.on_warning(message)

    def _refused(self, lane: str, host: str, port: int) -> str:
        """Reports a refused host, cut and escaped (the run's `Refusals` keep each once per
        attempt, at most `blame.HOSTS_PER_STEP`); the host as reported."""
        host = printable(host[:HOST_CHARS])
        self.on_denied(lane, host, port)
        return host

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), min(HEAD_SECONDS, self.idle))
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
            shown = self._refused(lane(rest), host, port)
            return await _reply(writer, 403, f"Forbidden: {shown}:{port} is not in sandbox.allow_hosts")
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
            await self._tunnel(reader, writer, up_reader, up_writer)
        finally:
            up_writer.close()

    async def _tunnel(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
    ) -> None:
        """Both directions until both end, or until neither has moved a byte for `idle` seconds."""
        loop = asyncio.get_running_loop()
        moved = [loop.time()]
        pumps = asyncio.gather(_pump(reader, up_writer, moved), _pump(up_reader, writer, moved))
        while not pumps.done():
            await asyncio.wait([pumps], timeout=max(0.0, moved[0] + self.idle - loop.time()))
            if not pumps.done() and loop.time() - moved[0] >= self.idle:
                pumps.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pumps


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


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, moved: list[float]) -> None:
    """One direction; `moved[0]`: when a byte last went either way."""
    loop = asyncio.get_running_loop()
    try:
        while data := await reader.read(65536):
            moved[0] = loop.time()
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
