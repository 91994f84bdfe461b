"""The fake server's streamed replies: server-sent events as OpenAI-compatible servers send them.

A streamed chat completion is a `text/event-stream` of `chat.completion.chunk` events: a first
delta with the role, content deltas (or tool-call deltas: the id and name first, then the
arguments in pieces), a last choice delta with the `finish_reason`, a usage chunk with no
choices when the request asked for it (`stream_options.include_usage`), then `data: [DONE]`.

A reply can trickle (a pause before every chunk) and stall (a long silence after some chunks).
While it waits, the server watches the connection as llama.cpp's server does between tokens: a
client that has gone away ends the reply at once, and the server records it as abandoned.
"""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Iterator
from typing import Any

PIECE = 8
"""Characters of content or arguments per chunk."""


def chunks(model: str, completion_id: str, message: dict[str, Any], finish: str) -> Iterator[dict[str, Any]]:
    """The chunks of one reply, without the usage chunk."""
    base = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    yield chunk({"role": "assistant", "content": ""})
    content = message.get("content") or ""
    for start in range(0, len(content), PIECE):
        yield chunk({"content": content[start : start + PIECE]})
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        head = {"index": index, "id": call["id"], "type": "function"}
        yield chunk({"tool_calls": [{**head, "function": {"name": function["name"], "arguments": ""}}]})
        arguments = function["arguments"]
        for start in range(0, len(arguments), PIECE):
            piece = {"index": index, "function": {"arguments": arguments[start : start + PIECE]}}
            yield chunk({"tool_calls": [piece]})
    yield chunk({}, finish)


def usage_chunk(model: str, completion_id: str, usage: dict[str, int]) -> dict[str, Any]:
    created = int(time.time())
    return {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [],
        "usage": usage,
    }


def event(data: dict[str, Any] | str) -> bytes:
    return f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()


def gone(connection: socket.socket) -> bool:
    """Whether the client closed its end (readable, and nothing to read)."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def wait_watching(connection: socket.socket, seconds: float, closing: Any) -> bool:
    """Waits `seconds`, looking at the connection every 20 ms; False once the client is gone."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if gone(connection) or closing.is_set():
            return False
        time.sleep(min(0.02, left))
    return not gone(connection)
