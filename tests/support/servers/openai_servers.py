"""The OpenAI dialects of the scripted server: Responses (codex) and Chat Completions (aider).

Responses: `POST /v1/responses`, streamed as server-sent events (`response.created`,
`response.output_item.added`/`.done`, `response.output_text.delta`, `response.completed` with
`usage`: `input_tokens`, `input_tokens_details.cached_tokens`, `output_tokens`). The write is a
codex `apply_patch` call (a custom tool taking the patch text, or a function taking `input`),
else a `shell`/`exec_command` call that writes the file.

Chat Completions: `POST /v1/chat/completions`, streamed `chat.completion.chunk` events or one
JSON completion. aider offers no tools: it edits through its edit format, so the "tool call" is
a search/replace block that creates `Script.file` (aider's `diff` format), with the final text
after it in the same reply.

A usage limit is a 429 with `error.type: usage_limit_reached` (codex reads `plan_type` and
`resets_at`); other errors are `{"error": {"message", "type", "code"}}`.
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

from tests.support.servers.scripted import Fault, Reply, Script, pieces, reset_epoch, sse

_ids = itertools.count(1)
RESPONSES_USAGE = {
    "input_tokens": 1200,
    "input_tokens_details": {"cached_tokens": 800},
    "output_tokens": 40,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 1240,
}
CHAT_USAGE = {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940}


def _error_body(fault: Fault, usage_type: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    if fault.kind in ("plan_limit", "usage_limit"):
        error = {
            "type": usage_type,
            "message": "The usage limit has been reached",
            "plan_type": "plus",
            "resets_at": reset_epoch(fault),
            "resets_in_seconds": int(fault.reset_in),
        }
        return 429, {"error": error}, {}
    kinds = {401: "invalid_request_error", 429: "rate_limit_exceeded", 529: "overloaded"}
    message = {
        401: "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.",
        429: "Rate limit reached for requests",
        529: "The server is overloaded",
    }.get(fault.status, "The server had an error while processing your request.")
    code = "invalid_api_key" if fault.status == 401 else None
    error = {"message": message, "type": kinds.get(fault.status, "server_error"), "param": None, "code": code}
    return fault.status, {"error": error}, {"retry-after": "0"} if fault.status != 401 else {}


class Responses:
    name = "responses"

    def handles(self, method: str, path: str) -> bool:
        return method == "POST" and path.split("?")[0].endswith("/responses")

    def is_main(self, body: dict[str, Any]) -> bool:
        return bool(body.get("tools"))

    def has_tool_result(self, body: dict[str, Any]) -> bool:
        items = body.get("input") or []
        return any(
            isinstance(i, dict) and i.get("type") in ("function_call_output", "custom_tool_call_output")
            for i in items
        )

    def tool_call(self, body: dict[str, Any], path: str, script: Script) -> Reply:
        tools = {str(t.get("name")): t for t in body.get("tools") or [] if isinstance(t, dict)}
        patch = "".join(
            ["*** Begin Patch\n", f"*** Add File: {script.file}\n"]
            + [f"+{line}\n" for line in script.content.splitlines()]
            + ["*** End Patch\n"]
        )
        call_id = f"call_{next(_ids):04d}"
        item: dict[str, Any]
        if tools.get("apply_patch", {}).get("type") == "custom":
            item = {"type": "custom_tool_call", "call_id": call_id, "name": "apply_patch", "input": patch}
        elif "apply_patch" in tools:
            arguments = json.dumps({"input": patch})
            item = {
                "type": "function_call",
                "call_id": call_id,
                "name": "apply_patch",
                "arguments": arguments,
            }
        else:
            name = "exec_command" if "exec_command" in tools else "shell"
            write = f"printf %s {json.dumps(script.content)} > {script.file}"
            args: dict[str, Any] = (
                {"cmd": write} if name == "exec_command" else {"command": ["bash", "-lc", write]}
            )
            item = {"type": "function_call", "call_id": call_id, "name": name, "arguments": json.dumps(args)}
        item = {"id": f"fc_{next(_ids):04d}", "status": "completed", **item}
        return self._response(body, [item])

    def text(self, body: dict[str, Any], path: str, text: str) -> Reply:
        item = {
            "id": f"msg_{next(_ids):04d}",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        return self._response(body, [item], text)

    def _response(self, body: dict[str, Any], items: list[dict[str, Any]], text: str = "") -> Reply:
        rid = f"resp_{next(_ids):04d}"
        base = {"id": rid, "object": "response", "created_at": int(time.time()), "model": body.get("model")}
        whole = {**base, "status": "completed", "output": items, "usage": RESPONSES_USAGE}
        if not body.get("stream"):
            return Reply(body=whole)
        events = [
            sse(
                "response.created",
                {"type": "response.created", "response": {**base, "status": "in_progress"}},
            )
        ]
        for index, item in enumerate(items):
            added = {"type": "response.output_item.added", "output_index": index, "item": item}
            events.append(sse("response.output_item.added", added))
            if item["type"] == "message":
                for piece in pieces(text):
                    delta = {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": 0,
                        "delta": piece,
                    }
                    events.append(sse("response.output_text.delta", delta))
            done = {"type": "response.output_item.done", "output_index": index, "item": item}
            events.append(sse("response.output_item.done", done))
        events.append(sse("response.completed", {"type": "response.completed", "response": whole}))
        return Reply(events=events, content_type="text/event-stream")

    def fault(self, fault: Fault) -> Reply:
        status, body, headers = _error_body(fault, "usage_limit_reached")
        return Reply(status=status, body=body, headers=headers)

    def bad_key(self) -> Reply:
        return self.fault(Fault("http", 401))

    def other(self, method: str, path: str) -> Reply:
        if path.split("?")[0].endswith("/models"):
            return Reply(body={"object": "list", "data": [], "models": []})
        return Reply(status=404, body={"error": {"message": f"scripted server: no route {method} {path}"}})


class ChatCompletions:
    name = "chat"

    def handles(self, method: str, path: str) -> bool:
        return method == "POST" and path.split("?")[0].endswith("/chat/completions")

    def is_main(self, body: dict[str, Any]) -> bool:
        """aider's own side calls (the commit message, summaries) are not the edit."""
        first = (body.get("messages") or [{}])[0]
        system = str(first.get("content") or "") if isinstance(first, dict) else ""
        return "commit message" not in system.lower() and "summarize" not in system.lower()

    def has_tool_result(self, body: dict[str, Any]) -> bool:
        return False  # aider applies the edit in the reply itself: one reply does it all

    def tool_call(self, body: dict[str, Any], path: str, script: Script) -> Reply:
        fence = "```"
        replace = "".join(["<<<<<<< SEARCH\n", "=======\n", script.content, ">>>>>>> REPLACE\n"])
        block = f"{script.file}\n{fence}\n{replace}{fence}\n"
        return self._completion(body, f"I will create the file.\n\n{block}\n{script.answer}")

    def text(self, body: dict[str, Any], path: str, text: str) -> Reply:
        return self._completion(body, text)

    def _completion(self, body: dict[str, Any], content: str) -> Reply:
        cid = f"chatcmpl-{next(_ids):04d}"
        model = body.get("model") or "gpt-4o"
        base = {"id": cid, "created": int(time.time()), "model": model}
        if not body.get("stream"):
            message = {"role": "assistant", "content": content}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            return Reply(body={**base, "object": "chat.completion", "choices": [choice], "usage": CHAT_USAGE})

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            data = {**base, "object": "chat.completion.chunk", "choices": [choice]}
            return f"data: {json.dumps(data)}\n\n".encode()

        events = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"content": piece}) for piece in pieces(content)]
        events.append(chunk({}, "stop"))
        usage: dict[str, Any] = {
            **base,
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": CHAT_USAGE,
        }
        events += [f"data: {json.dumps(usage)}\n\n".encode(), b"data: [DONE]\n\n"]
        return Reply(events=events, content_type="text/event-stream")

    def fault(self, fault: Fault) -> Reply:
        status, body, headers = _error_body(fault, "insufficient_quota")
        if fault.kind in ("plan_limit", "usage_limit"):
            body["error"]["message"] = (
                "You exceeded your current quota, please check your plan and billing details."
            )
            body["error"]["code"] = "insufficient_quota"
        return Reply(status=status, body=body, headers=headers)

    def bad_key(self) -> Reply:
        return self.fault(Fault("http", 401))

    def other(self, method: str, path: str) -> Reply:
        if path.split("?")[0].endswith("/models"):
            return Reply(body={"object": "list", "data": [{"id": "gpt-4o", "object": "model"}]})
        return Reply(status=404, body={"error": {"message": f"scripted server: no route {method} {path}"}})
