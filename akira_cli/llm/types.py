"""What the LLM client hands back and raises: one family of errors, each described on one line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from akira_cli import redaction
from akira_cli.errors import AkiraError
from akira_cli.sections import LLMSettings
from akira_cli.usage import Usage

NO_KEY = "sk-no-key-required"
"""Sent when no key is configured: local servers want some bearer token."""


class ToolCall(BaseModel):
    id: str
    name: str
    arguments: str
    """The raw JSON string the model produced; the caller parses (and reports) it."""


class ChatResult(BaseModel):
    content: str | None
    tool_calls: list[ToolCall]
    usage: Usage
    finish_reason: str | None

    def as_message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.tool_calls
            ]
        return message


class LLMError(AkiraError):
    """A permanent LLM failure, described on one line with the fix."""


class LLMTransientError(LLMError):
    """A transient failure that survived every retry."""


class LLMSchemaError(LLMError):
    """Structured output still broke its schema after the repair retries."""


class LLMTruncated(LLMError):
    """The reply was cut at `max_tokens`: a strategic failure, never retried as it was."""


class FormatRejected(LLMError):
    """The server refused `response_format`; `structured` falls back to a simpler mode."""


def configured(settings: LLMSettings) -> bool:
    """True when an endpoint is set, i.e. the `llm` agent can be used."""
    return bool(settings.base_url)


@dataclass
class Failure:
    """A transient failure, kept until we know whether a retry will fix it."""

    message: str
    status: int | None = None
    retry_after: float | None = None
    garbage: bool = False
    refused: bool = False
    timeout: bool = False


class Redactor:
    def __init__(self, secret: str | None) -> None:
        if secret and secret != NO_KEY:
            redaction.register([secret])

    def __call__(self, text: str, limit: int = 300) -> str:
        """One line, every known secret masked, bounded in length."""
        text = " ".join(redaction.redact(text).split())
        return text if len(text) <= limit else text[: limit - 1] + "…"
