"""Scripted model servers on 127.0.0.1 for the real agent CLIs, for the tests of the presets.

A real agent CLI is pointed at one of these servers the way a user points it at a gateway.
Whatever wire format it speaks (a `Dialect`: Anthropic Messages, OpenAI Responses, OpenAI Chat
Completions, Gemini generateContent), the server plays the same script:

- a main request (one that offers tools) with no tool result in it is answered with a tool call
  that writes `Script.file` (the CLI's own write tool), and once the result of that call is in
  the conversation, with the final text `Script.answer`;
- a side request (no tools: titles, topic checks) is answered with a short text;
- with `Script.plan`, a main request is answered with the tool call the plan picks from the
  conversation so far (in the Anthropic dialect), or the final text when it picks none: how a
  model drives an agent's MCP tools;
- `Script.faults` come first, in order, one per main request: an HTTP error (429, 500, 529, 401),
  a plan limit or a usage limit in the provider's own shape, each `times` in a row;
- `Script.bad_key` answers every request with the provider's 401.

Every request is recorded (`ScriptedServer.requests`), so a test can see what the CLI sent.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol


@dataclass
class Fault:
    """One scripted failure, answered to `times` main requests in a row."""

    kind: str
    """`http` (an error status), `plan_limit` (a subscription plan's limit) or `usage_limit`."""
    status: int = 500
    times: int = 1
    reset_in: float = 3.0
    """Seconds until a plan or usage limit resets, as the reply says."""


def http(status: int, times: int = 1) -> Fault:
    return Fault("http", status, times)


def plan_limit(times: int = 1, reset_in: float = 3.0) -> Fault:
    return Fault("plan_limit", 429, times, reset_in)


def usage_limit(times: int = 1, reset_in: float = 3.0) -> Fault:
    return Fault("usage_limit", 429, times, reset_in)


@dataclass
class Script:
    workdir: Path
    """The folder the CLI runs in: its write tool's absolute paths start here."""
    file: str = "hello.txt"
    content: str = "hello from the scripted model\n"
    answer: str = "Done: wrote hello.txt."
    faults: list[Fault] = field(default_factory=list)
    bad_key: bool = False
    plan: Callable[[dict[str, Any]], ToolCall | None] | None = None
    """Picks the next tool call from a main request's body, or None for the final text."""
    call: ToolCall | None = None
    """The tool call to answer with now (the plan's pick); None: the write of `file`."""


ToolCall = tuple[str, dict[str, Any]]
"""A tool's name and its input."""


@dataclass
class Recorded:
    method: str
    path: str
    body: dict[str, Any]
    main: bool
    status: int
    headers: dict[str, str]


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    """A JSON body."""
    events: list[bytes] | None = None
    """A streamed body: server-sent event frames (or JSON lines), sent one by one."""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


class Dialect(Protocol):
    """One provider's wire format."""

    name: str

    def handles(self, method: str, path: str) -> bool: ...

    def is_main(self, body: dict[str, Any]) -> bool:
        """Whether the request offers tools (the agent's loop, not a side call)."""
        ...

    def has_tool_result(self, body: dict[str, Any]) -> bool: ...

    def tool_call(self, body: dict[str, Any], path: str, script: Script) -> Reply: ...

    def text(self, body: dict[str, Any], path: str, text: str) -> Reply: ...

    def fault(self, fault: Fault) -> Reply: ...

    def bad_key(self) -> Reply: ...

    def other(self, method: str, path: str) -> Reply:
        """Anything else the CLI asks (model lists, counts)."""
        ...


class ScriptedServer:
    """A started HTTP server on 127.0.0.1 that plays `script` in `dialect`."""

    def __init__(self, dialect: Dialect, script: Script) -> None:
        self.dialect = dialect
        self.script = script
        self.requests: list[Recorded] = []
        self._faults: list[Fault] = [Fault(f.kind, f.status, f.times, f.reset_in) for f in script.faults]
        self._lock = threading.Lock()
        self._httpd = _Quiet(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def main_requests(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.main]

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def answer(self, method: str, path: str, body: dict[str, Any]) -> tuple[Reply, bool]:
        dialect, script = self.dialect, self.script
        if not dialect.handles(method, path):
            return dialect.other(method, path), False
        if script.bad_key:
            return dialect.bad_key(), False
        main = dialect.is_main(body)
        if not main:
            return dialect.text(body, path, "ok"), False
        with self._lock:
            fault = self._faults[0] if self._faults else None
            if fault is not None:
                fault.times -= 1
                if fault.times <= 0:
                    self._faults.pop(0)
        if fault is not None:
            return dialect.fault(fault), True
        if script.plan is not None:
            call = script.plan(body)
            if call is None:
                return dialect.text(body, path, script.answer), True
            return dialect.tool_call(body, path, replace(script, call=call)), True
        if dialect.has_tool_result(body):
            return dialect.text(body, path, script.answer), True
        return dialect.tool_call(body, path, script), True

    def record(self, entry: Recorded) -> None:
        with self._lock:
            self.requests.append(entry)


class _Quiet(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A CLI that drops a connection (its own retry, its exit) is no server error."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _handler(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            self._serve({})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.headers.get("Content-Encoding") == "zstd" or not raw:
                body: Any = {}
            else:
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
            self._serve(body if isinstance(body, dict) else {})

        def _serve(self, body: dict[str, Any]) -> None:
            reply, main = server.answer(self.command, self.path, body)
            headers = {k.lower(): v for k, v in self.headers.items()}
            server.record(Recorded(self.command, self.path, body, main, reply.status, headers))
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if reply.events is None:
                data = json.dumps(reply.body if reply.body is not None else {}).encode()
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for frame in reply.events:
                self.wfile.write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler


def sse(kind: str | None, data: dict[str, Any]) -> bytes:
    """One server-sent event frame."""
    head = f"event: {kind}\n" if kind else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def pieces(text: str, size: int = 16) -> Iterator[str]:
    for start in range(0, max(len(text), 1), size):
        yield text[start : start + size]


def reset_epoch(fault: Fault) -> int:
    return int(time.time() + fault.reset_in)
