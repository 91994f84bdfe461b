"""Streamed chat completions (a slow server is waited for, a silent one is not).

Every call streams (`stream: true` with `stream_options.include_usage`). A local server on a
laptop makes a few tokens a second and keeps generating for a client that has gone away; a
streamed reply shows that it is alive with every token, and closing the connection stops it.
So `llm.timeout` is the longest wait for the next chunk (the first included, as httpx's read
timeout is per read), a reply that keeps coming is never cut by it, and when akira gives up on a
reply the connection is closed (`Stream.close`), never left to the pool.

Content and tool calls are put together from the deltas. Usage comes from the usage chunk; a
server that sends none gets an estimate from the text (four characters a token), marked as one.
A server that answers a streamed request with a plain JSON completion is read as it is.
"""

from __future__ import annotations

import json
from typing import Any

from akira_cli.llm import wire
from akira_cli.llm.types import ChatResult, ToolCall
from akira_cli.usage import Usage

CHARS_PER_TOKEN = 4


class NotStreamed(Exception):
    """The server answered a streamed request with a whole completion (read it from `completion`)."""

    def __init__(self, completion: ChatResult) -> None:
        super().__init__("the server does not stream")
        self.completion = completion


def gather(stream: Any, messages: list[dict[str, Any]]) -> ChatResult:
    """The chat result of a `Stream[ChatCompletionChunk]`, read to its end; the caller closes it."""
    kind = stream.response.headers.get("content-type", "")
    if "text/event-stream" not in kind:
        from openai.types.chat import ChatCompletion

        body = stream.response.read()
        try:
            completion = ChatCompletion.model_validate_json(body)
        except ValueError:
            raise wire.Garbage from None
        raise NotStreamed(wire.parse_completion(completion))
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: Any = None
    seen = False
    for chunk in stream:
        if getattr(chunk, "usage", None) is not None:
            usage = chunk.usage
        for choice in getattr(chunk, "choices", None) or []:
            seen = True
            delta = choice.delta
            if delta is not None and delta.content:
                content.append(delta.content)
            for call in (delta.tool_calls if delta is not None else None) or []:
                _add_call_delta(calls, call)
            if choice.finish_reason:
                finish = choice.finish_reason
    if not seen:
        raise wire.Garbage
    text = "".join(content) if content else None
    tool_calls = [
        ToolCall(id=slot["id"] or f"call_{index}", name=slot["name"], arguments="".join(slot["arguments"]))
        for index, slot in sorted(calls.items())
        if slot["name"]
    ]
    return ChatResult(
        content=text,
        tool_calls=tool_calls,
        usage=_usage(usage, messages, text, tool_calls),
        finish_reason=finish,
    )


def _add_call_delta(calls: dict[int, dict[str, Any]], delta: Any) -> None:
    index = getattr(delta, "index", None)
    slot = calls.setdefault(
        index if isinstance(index, int) else len(calls), {"id": "", "name": "", "arguments": []}
    )
    if delta.id:
        slot["id"] = delta.id
    function = delta.function
    if function is not None:
        if function.name:
            slot["name"] += function.name
        if function.arguments:
            slot["arguments"].append(function.arguments)


def _usage(usage: Any, messages: list[dict[str, Any]], text: str | None, calls: list[ToolCall]) -> Usage:
    if usage is not None:
        return Usage(
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            calls=1,
        )
    sent = len(json.dumps(messages, default=str))
    made = len(text or "") + sum(len(call.name) + len(call.arguments) for call in calls)
    return Usage(
        prompt_tokens=-(-sent // CHARS_PER_TOKEN),
        completion_tokens=-(-made // CHARS_PER_TOKEN),
        calls=1,
        estimated_calls=1,
    )


def transport_error(exc: BaseException) -> str | None:
    """'timeout' or 'broken' for an error of the SDK's HTTP library raised while a stream is
    read (no chunk within the read timeout, a connection that broke), None for anything else.
    Named by class, not imported: the SDK moved from httpx to httpx2."""
    if not type(exc).__module__.startswith("httpx"):
        return None
    names = {cls.__name__ for cls in type(exc).__mro__}
    if "TimeoutException" in names:
        return "timeout"
    return "broken" if "HTTPError" in names else None
