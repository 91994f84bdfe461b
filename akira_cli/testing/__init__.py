"""Test fixtures shipped with the package: a fake OpenAI-compatible server."""

from akira_cli.testing.fake_openai import (
    FakeOpenAI,
    RecordedRequest,
    Reply,
    error,
    json_reply,
    malformed,
    slow,
    text,
    tool_call,
    tool_calls,
)

__all__ = [
    "FakeOpenAI",
    "RecordedRequest",
    "Reply",
    "error",
    "json_reply",
    "malformed",
    "slow",
    "text",
    "tool_call",
    "tool_calls",
]
