"""The Anthropic Messages API dialect of the scripted server (Claude Code, `ANTHROPIC_BASE_URL`).

`POST /v1/messages` streamed as server-sent events (`message_start`, `content_block_start`,
`content_block_delta` with `text_delta` or `input_json_delta`, `content_block_stop`,
`message_delta`, `message_stop`), or as one JSON message when `stream` is false. The write tool
is Claude Code's `Write` (`file_path`, absolute, and `content`). Errors are
`{"type": "error", "error": {"type": ..., "message": ...}}`; a subscription plan's limit is a 429
with the `anthropic-ratelimit-unified-*` headers Claude Code reads (`representative-claim`
`five_hour` is the session limit, `reset` an epoch).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from akira_cli.testing.scripted import Fault, Reply, Script, pieces, reset_epoch, sse

_ids = itertools.count(1)
USAGE = {
    "input_tokens": 120,
    "output_tokens": 30,
    "cache_read_input_tokens": 400,
    "cache_creation_input_tokens": 50,
}
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class Anthropic:
    name = "anthropic"

    def handles(self, method: str, path: str) -> bool:
        return method == "POST" and path.split("?")[0] == "/v1/messages"

    def is_main(self, body: dict[str, Any]) -> bool:
        return bool(body.get("tools"))

    def has_tool_result(self, body: dict[str, Any]) -> bool:
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        content = last.get("content") if isinstance(last, dict) else None
        return isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        )

    def tool_call(self, body: dict[str, Any], path: str, script: Script) -> Reply:
        name, given = script.call or (
            "Write",
            {"file_path": str(script.workdir / script.file), "content": script.content},
        )
        block = {"type": "tool_use", "id": f"toolu_{next(_ids):04d}", "name": name, "input": given}
        return self._message(body, block, "tool_use")

    def text(self, body: dict[str, Any], path: str, text: str) -> Reply:
        return self._message(body, {"type": "text", "text": text}, "end_turn")

    def _message(self, body: dict[str, Any], block: dict[str, Any], stop: str) -> Reply:
        model = str(body.get("model") or "claude-sonnet-4-5")
        message = {
            "id": f"msg_{next(_ids):04d}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": USAGE,
        }
        if not body.get("stream"):
            return Reply(body=message)
        start = {**message, "content": [], "stop_reason": None, "usage": {**USAGE, "output_tokens": 1}}
        events = [sse("message_start", {"type": "message_start", "message": start})]
        if block["type"] == "text":
            events.append(_block_start({"type": "text", "text": ""}))
            delta_kind, key, whole = "text_delta", "text", block["text"]
        else:
            events.append(_block_start({**block, "input": {}}))
            delta_kind, key, whole = "input_json_delta", "partial_json", json.dumps(block["input"])
        for piece in pieces(whole):
            delta = {"type": "content_block_delta", "index": 0, "delta": {"type": delta_kind, key: piece}}
            events.append(sse("content_block_delta", delta))
        events.append(sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
        end = {"stop_reason": stop, "stop_sequence": None}
        events.append(
            sse("message_delta", {"type": "message_delta", "delta": end, "usage": {"output_tokens": 30}})
        )
        events.append(sse("message_stop", {"type": "message_stop"}))
        return Reply(events=events, content_type="text/event-stream")

    def fault(self, fault: Fault) -> Reply:
        if fault.kind in ("plan_limit", "usage_limit"):
            headers = {
                "anthropic-ratelimit-unified-status": "rejected",
                "anthropic-ratelimit-unified-representative-claim": "five_hour",
                "anthropic-ratelimit-unified-reset": str(reset_epoch(fault)),
            }
            return _error(429, "Number of requests has exceeded your rate limit", headers)
        message = {529: "Overloaded", 429: "Rate limited", 401: "invalid x-api-key"}.get(
            fault.status, "Internal error"
        )
        return _error(fault.status, message, {"retry-after": "0"} if fault.status != 401 else {})

    def bad_key(self) -> Reply:
        return _error(401, "invalid x-api-key", {})

    def other(self, method: str, path: str) -> Reply:
        if path.split("?")[0] == "/v1/messages/count_tokens":
            return Reply(body={"input_tokens": 100})
        return _error(404, f"scripted server: no route {method} {path}", {})


def _block_start(block: dict[str, Any]) -> bytes:
    return sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block})


def _error(status: int, message: str, headers: dict[str, str]) -> Reply:
    kind = ERROR_TYPES.get(status, "not_found_error" if status == 404 else "api_error")
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return Reply(status=status, body=body, headers={"request-id": f"req_{next(_ids):04d}", **headers})
