"""The LLM client: every model call goes through `LLMClient`."""

from akira_cli.llm.client import LLMClient
from akira_cli.llm.types import (
    ChatResult,
    LLMError,
    LLMSchemaError,
    LLMTransientError,
    ToolCall,
    configured,
)
from akira_cli.usage import Usage

__all__ = [
    "ChatResult",
    "LLMClient",
    "LLMError",
    "LLMSchemaError",
    "LLMTransientError",
    "ToolCall",
    "Usage",
    "configured",
]
