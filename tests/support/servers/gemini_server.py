"""The Gemini API dialect of the scripted server (Gemini CLI, `GOOGLE_GEMINI_BASE_URL`).

`POST /v1beta/models/<model>:streamGenerateContent?alt=sse` (server-sent events, each a whole
`GenerateContentResponse`) and `:generateContent` (one JSON response); `:countTokens` answers a
count. The write tool is Gemini CLI's `write_file` (`file_path`, `content`). Usage is
`usageMetadata` (`promptTokenCount`, `candidatesTokenCount`, `totalTokenCount`,
`cachedContentTokenCount`). Errors are `{"error": {"code", "message", "status", "details"}}`; a
usage limit is a 429 `RESOURCE_EXHAUSTED` whose `QuotaFailure` names a per-day quota.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from tests.support.servers.scripted import Fault, Reply, Script, sse

_ids = itertools.count(1)
USAGE = {
    "promptTokenCount": 1500,
    "candidatesTokenCount": 40,
    "totalTokenCount": 1540,
    "cachedContentTokenCount": 600,
}
FREE_TIER_METRIC = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    529: "UNAVAILABLE",
}


class Gemini:
    name = "gemini"

    def handles(self, method: str, path: str) -> bool:
        route = path.split("?")[0]
        return method == "POST" and (
            route.endswith(":generateContent") or route.endswith(":streamGenerateContent")
        )

    def is_main(self, body: dict[str, Any]) -> bool:
        return any(isinstance(t, dict) and t.get("functionDeclarations") for t in body.get("tools") or [])

    def has_tool_result(self, body: dict[str, Any]) -> bool:
        contents = body.get("contents") or []
        last = contents[-1] if contents else {}
        parts = last.get("parts") if isinstance(last, dict) else None
        return isinstance(parts, list) and any(isinstance(p, dict) and "functionResponse" in p for p in parts)

    def tool_call(self, body: dict[str, Any], path: str, script: Script) -> Reply:
        args = {"file_path": str(script.workdir / script.file), "content": script.content}
        return self._reply(path, [{"functionCall": {"name": "write_file", "args": args}}])

    def text(self, body: dict[str, Any], path: str, text: str) -> Reply:
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if isinstance(schema, dict):  # a side call that wants JSON (routing, next speaker)
            text = json.dumps(_fill(schema))
        return self._reply(path, [{"text": text}])

    def _reply(self, path: str, parts: list[dict[str, Any]]) -> Reply:
        model = path.split("/models/")[-1].split(":")[0] if "/models/" in path else "gemini-2.5-pro"
        response = {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": USAGE,
            "modelVersion": model,
            "responseId": f"resp-{next(_ids):04d}",
        }
        if ":streamGenerateContent" not in path:
            return Reply(body=response)
        return Reply(events=[sse(None, response)], content_type="text/event-stream")

    def fault(self, fault: Fault) -> Reply:
        if fault.kind in ("plan_limit", "usage_limit"):
            details: list[dict[str, Any]] = [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [
                        {
                            "quotaMetric": FREE_TIER_METRIC,
                            "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                            "quotaDimensions": {"location": "global", "model": "gemini-2.5-pro"},
                            "quotaValue": "100",
                        }
                    ],
                },
                {"@type": "type.googleapis.com/google.rpc.Help", "links": []},
            ]
            message = (
                "You exceeded your current quota, please check your plan and billing details. "
                f"Quota exceeded for metric: {FREE_TIER_METRIC}, limit: 100"
            )
            return _error(429, message, details)
        if fault.status == 429:
            details = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0s"}]
            return _error(429, "Resource has been exhausted (e.g. check quota).", details)
        messages = {401: "API key not valid. Please pass a valid API key.", 503: "The model is overloaded."}
        return _error(fault.status, messages.get(fault.status, "Internal error encountered."), [])

    def bad_key(self) -> Reply:
        details: list[dict[str, Any]] = [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}
        ]
        return _error(400, "API key not valid. Please pass a valid API key.", details)

    def other(self, method: str, path: str) -> Reply:
        if path.split("?")[0].endswith(":countTokens"):
            return Reply(body={"totalTokens": 100})
        return _error(404, f"scripted server: no route {method} {path}", [])


def _fill(schema: dict[str, Any]) -> Any:
    """A value that fits a JSON schema: the first enum value, 1, true, "x", filled objects."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type") or "object").lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: _fill(sub) for name, sub in properties.items() if isinstance(sub, dict)}
    if kind == "array":
        items = schema.get("items")
        return [_fill(items)] if isinstance(items, dict) else []
    return {"integer": 1, "number": 1, "boolean": True}.get(kind, "x")


def _error(status: int, message: str, details: list[dict[str, Any]]) -> Reply:
    error = {
        "code": status,
        "message": message,
        "status": STATUSES.get(status, "UNKNOWN"),
        "details": details,
    }
    return Reply(status=status, body=json.loads(json.dumps({"error": error})))
