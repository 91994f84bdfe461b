"""A real OpenAI-compatible HTTP server on 127.0.0.1 that scripts replies and injects faults.

Tests talk to it through the real `openai` SDK. Replies are consumed from a queue in order; when
the queue is empty a responder function (for parallel callers) answers, and without one the
server answers 500 "fake server: no scripted reply" so an under-scripted test fails loudly.

    with FakeOpenAI() as server:
        server.enqueue(text("hello"), error(429, headers={"Retry-After": "1"}))
        client = openai.OpenAI(base_url=server.base_url, api_key="x")
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from tests.support.servers import sse

_call_ids = itertools.count(1)
_completion_ids = itertools.count(1)


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build it with `text`, `tool_call`, `error`, `slow`, `malformed`."""

    status: int = 200
    message: dict[str, Any] | None = None
    """The assistant message of a successful chat completion."""
    finish_reason: str = "stop"
    prompt_tokens: int = 10
    completion_tokens: int = 5
    body: dict[str, Any] | None = None
    """A whole response body, sent as is (errors)."""
    raw: str | None = None
    """A raw HTTP body, sent as is (malformed JSON)."""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    trickle: float = 0.0
    """Streamed: a pause before every chunk (a slow model generating)."""
    stall: float = 0.0
    """Streamed: a silence after `stall_after` chunks (a server that stopped sending)."""
    stall_after: int = 1
    usage: bool = True
    """Streamed: whether the usage chunk is sent when the client asks for it."""


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    """Header names in lower case, e.g. `headers["authorization"]`."""
    body: Any
    """The parsed JSON body, or None when there was none or it was not JSON."""


def text(content: str, *, prompt_tokens: int = 10, completion_tokens: int = 5) -> Reply:
    message = {"role": "assistant", "content": content}
    return Reply(message=message, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def json_reply(obj: object, *, prompt_tokens: int = 10, completion_tokens: int = 5) -> Reply:
    return text(json.dumps(obj), prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def tool_calls(
    calls: list[tuple[str, dict[str, Any]]], *, prompt_tokens: int = 10, completion_tokens: int = 5
) -> Reply:
    return _tool_reply([(name, args, None) for name, args in calls], prompt_tokens, completion_tokens)


def tool_call(
    name: str,
    arguments: dict[str, Any],
    *,
    call_id: str | None = None,
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
) -> Reply:
    return _tool_reply([(name, arguments, call_id)], prompt_tokens, completion_tokens)


def _tool_reply(
    calls: list[tuple[str, dict[str, Any], str | None]], prompt_tokens: int, completion_tokens: int
) -> Reply:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id or f"call_{next(_call_ids)}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for name, args, call_id in calls
        ],
    }
    return Reply(
        message=message,
        finish_reason="tool_calls",
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )


def error(status: int, *, body: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> Reply:
    """An HTTP error in OpenAI's shape, e.g. `error(429, headers={"Retry-After": "1"})`."""
    if body is None:
        body = _error_body(f"fake server: HTTP {status}", _ERROR_TYPES.get(status, "api_error"))
    return Reply(status=status, body=body, headers=dict(headers or {}))


def slow(seconds: float, then: Reply) -> Reply:
    """Waits `seconds` before answering `then` (a client with a shorter timeout gives up)."""
    return replace(then, delay=seconds)


def trickling(seconds: float, then: Reply) -> Reply:
    """Streams `then` with a pause of `seconds` before every chunk."""
    return replace(then, trickle=seconds)


def stalling(seconds: float, then: Reply, *, after: int = 1) -> Reply:
    """Streams `after` chunks of `then`, then sends nothing for `seconds`."""
    return replace(then, stall=seconds, stall_after=after)


def malformed(raw: str = "{not json") -> Reply:
    """A 200 whose HTTP body is not valid JSON."""
    return Reply(raw=raw)


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_denied",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
}


def _error_body(message: str, type_: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


Responder = Callable[[dict[str, Any]], Reply]


class FakeOpenAI:
    """The server. Start it with `with FakeOpenAI() as server:` (or construct and `close()`)."""

    def __init__(
        self, models: list[str] | None = None, api_key: str | None = None, *, streams: str = "yes"
    ) -> None:
        """`streams`: "yes" (server-sent events when asked), "ignore" (answers a streamed
        request with a whole JSON completion) or "refuse" (HTTP 400 naming `stream`)."""
        self.models = list(models) if models is not None else ["fake-model"]
        self.api_key = api_key
        self.streams = streams
        self.abandoned: list[float] = []
        """When a streamed reply found its client gone (time.monotonic()), one entry a reply."""
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Reply] = deque()
        self._responder: Responder | None = None
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        self._httpd.daemon_threads = True
        self.port = int(self._httpd.server_address[1])
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def __enter__(self) -> FakeOpenAI:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FakeOpenAI({self.base_url!r}, models={self.models!r})"

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """The bodies of every POST /chat/completions, in arrival order."""
        with self._lock:
            return [
                r.body for r in self.requests if r.method == "POST" and r.path.endswith("/chat/completions")
            ]

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def set_responder(self, fn: Responder | None) -> None:
        with self._lock:
            self._responder = fn

    def close(self) -> None:
        """Stops serving; wakes up any reply still sleeping in `slow`."""
        if self._closing.is_set():
            return
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # -- used by the handler ------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            responder = self._responder
        if responder is not None:
            return responder(body)
        return error(500, body=_error_body("fake server: no scripted reply", "server_error"))

    def _abandon(self) -> None:
        with self._lock:
            self.abandoned.append(time.monotonic())

    def _wait(self, seconds: float) -> None:
        self._closing.wait(seconds)


def _handler_class(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        fake = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the recorded requests are the log."""

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        body = self._read_body()
        path = self.path.split("?", 1)[0]
        self.fake._record(RecordedRequest(method, path, _lower_keys(self.headers.items()), body))
        # A client that timed out has gone away: there is nobody to answer.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._route(method, path, body)

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        if not length:
            return None
        raw = self.rfile.read(length)
        try:
            return json.loads(raw)
        except ValueError:
            return None

    def _route(self, method: str, path: str, body: Any) -> None:
        if not self._authorized():
            key = self.headers.get("Authorization", "").removeprefix("Bearer ")
            # Like OpenAI, the message echoes the key: clients must redact it.
            message = f"Incorrect API key provided: {key}."
            self._send_json(401, _error_body(message, "invalid_request_error", "invalid_api_key"))
        elif method == "GET" and path == "/v1/models":
            self._send_json(200, self._models_body())
        elif method == "POST" and path == "/v1/chat/completions":
            self._chat(body if isinstance(body, dict) else {})
        else:
            self._send_json(404, _error_body(f"fake server: no route {method} {path}", "not_found"))

    def _authorized(self) -> bool:
        expected = self.fake.api_key
        return expected is None or self.headers.get("Authorization") == f"Bearer {expected}"

    def _models_body(self) -> dict[str, Any]:
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.fake.models]
        return {"object": "list", "data": data}

    def _chat(self, body: dict[str, Any]) -> None:
        model = body.get("model")
        if model not in self.fake.models:
            message = f"The model '{model}' does not exist or you do not have access to it."
            payload = _error_body(message, "invalid_request_error", "model_not_found")
            self._send_json(404, payload)
            return
        streamed = body.get("stream") is True
        if streamed and self.fake.streams == "refuse":
            message = "'stream' is not supported by this server"
            self._send_json(400, _error_body(message, "invalid_request_error"))
            return
        reply = self.fake._next_reply(body)
        if reply.delay:
            self.fake._wait(reply.delay)
        if streamed and self.fake.streams == "yes" and reply.message is not None and reply.status == 200:
            self._stream(str(model), reply, bool((body.get("stream_options") or {}).get("include_usage")))
        elif reply.raw is not None:
            self._send(reply.status, reply.raw.encode(), reply.headers)
        elif reply.body is not None:
            self._send_json(reply.status, reply.body, reply.headers)
        else:
            self._send_json(reply.status, _completion(str(model), reply), reply.headers)

    def _stream(self, model: str, reply: Reply, include_usage: bool) -> None:
        """Server-sent events (see `testing.sse`); the connection closes at the end."""
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        completion = _completion(model, reply)
        events = [
            sse.event(c)
            for c in sse.chunks(model, completion["id"], reply.message or {}, reply.finish_reason)
        ]
        if include_usage and reply.usage:
            events.append(sse.event(sse.usage_chunk(model, completion["id"], completion["usage"])))
        events.append(sse.event("[DONE]"))
        for number, data in enumerate(events):
            pause = reply.trickle + (reply.stall if number == reply.stall_after else 0.0)
            if pause and not sse.wait_watching(self.connection, pause, self.fake._closing):
                self.fake._abandon()
                return
            try:
                self.wfile.write(data)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                self.fake._abandon()
                return

    def _send_json(self, status: int, obj: object, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode(), headers or {})

    def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def _lower_keys(items: Any) -> dict[str, str]:
    return {str(name).lower(): str(value) for name, value in items}


def _completion(model: str, reply: Reply) -> dict[str, Any]:
    usage = {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }
    choice = {"index": 0, "message": reply.message, "finish_reason": reply.finish_reason}
    return {
        "id": f"chatcmpl-fake{next(_completion_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": usage,
    }
