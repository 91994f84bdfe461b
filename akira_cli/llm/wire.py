"""The wire format: reading chat completions and HTTP errors, and asking for structured output."""

from __future__ import annotations

import email.utils
import json
import re
from datetime import UTC, datetime
from typing import Any

import openai
from pydantic import BaseModel, ValidationError

from akira_cli.llm.types import ChatResult, ToolCall
from akira_cli.usage import Usage


class Garbage(Exception):
    """The answer parsed as JSON but is not a chat completion."""


def parse_completion(completion: Any) -> ChatResult:
    choices = getattr(completion, "choices", None)
    if not choices:
        raise Garbage
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        raise Garbage
    usage = getattr(completion, "usage", None)
    return ChatResult(
        content=message.content,
        tool_calls=[
            ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments or "")
            for call in message.tool_calls or []
            if getattr(call, "function", None) is not None
        ],
        usage=Usage(
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            calls=1,
        ),
        finish_reason=getattr(choice, "finish_reason", None),
    )


def model_ids(page: Any) -> list[str]:
    return [str(m.id) for m in getattr(page, "data", None) or []]


def is_chat(exc: openai.APIStatusError) -> bool:
    """Whether the failed request was a chat completion (a 404 elsewhere is a wrong URL)."""
    return str(exc.response.request.url.path).endswith("/chat/completions")


def server_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    message = body.get("message") if isinstance(body, dict) else None
    return message if isinstance(message, str) else exc.message


def connection_reason(exc: openai.APIConnectionError) -> str:
    cause = exc.__cause__ or exc.__context__
    text = str(cause) if cause else str(exc)
    lowered = text.lower()
    if "refused" in lowered:
        return "connection refused"
    if "name or service" in lowered or "nodename" in lowered or "getaddrinfo" in lowered:
        return "unknown host"
    return text or "connection failed"


def retry_after(headers: Any) -> float | None:
    """Seconds from `retry-after-ms`, or `Retry-After` as seconds or as an HTTP date."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def response_format(mode: str, schema: type[BaseModel]) -> dict[str, Any]:
    if mode == "json_schema":
        name = re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64] or "reply"
        spec = {"name": name, "schema": schema.model_json_schema(), "strict": False}
        return {"response_format": {"type": "json_schema", "json_schema": spec}}
    if mode == "json_object":
        return {"response_format": {"type": "json_object"}}
    return {}


def with_schema_prompt(messages: list[dict[str, Any]], schema: type[BaseModel]) -> list[dict[str, Any]]:
    """A copy of `messages` whose system message asks for JSON matching `schema`.

    Servers that ignore `response_format` still see the schema this way."""
    instruction = "Reply with only a JSON object that matches this JSON schema, no prose:\n" + json.dumps(
        schema.model_json_schema()
    )
    if messages and messages[0].get("role") == "system":
        first = dict(messages[0])
        first["content"] = f"{first.get('content') or ''}\n\n{instruction}".strip()
        return [first, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]


_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.DOTALL)


def strip_fences(content: str) -> str:
    match = _FENCE.search(content)
    return match.group(1).strip() if match else content.strip()


def describe(exc: ValidationError) -> str:
    """The validation errors, one per clause, as pydantic words them."""
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)
