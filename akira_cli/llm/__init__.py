"""The LLM client: every model call goes through `LLMClient`."""

from akira_cli.llm.client import (
    ChatResult,
    LLMClient,
    LLMError,
    LLMSchemaError,
    LLMTransientError,
    ToolCall,
    Usage,
    configured,
)

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
