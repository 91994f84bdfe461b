"""The SDK's server as akira serves it: only what it serves is advertised (tools, resources and
logging; no prompts), and arguments the schema refuses are one line naming the argument, not
the validator's dump."""

from __future__ import annotations

import json
import warnings
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import EmptyResult, SetLevelRequestParams
from pydantic import ValidationError

# akira's warnings for a call reach the client as log messages: the SDK marks that capability
# deprecated for a protocol version to come, and says so on every message.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)


class AkiraServer(MCPServer[Any]):
    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        low = self._lowlevel_server
        for method in ("prompts/list", "prompts/get"):  # none exist: not advertised, not served
            low._request_handlers.pop(method, None)
        low.add_request_handler("logging/setLevel", SetLevelRequestParams, self._set_level)

    async def _set_level(self, ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        return EmptyResult()  # akira sends warnings and notes only; every level takes them

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(f"akira: error: {name}: {one_line(exc.__cause__)}") from None
            raise


def one_line(error: ValidationError) -> str:
    """`parallel: must be >= 1 (got 0)`: each refused argument, by name, with what it got."""
    parts = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        got = item.get("input")
        shown = "" if item["type"] == "missing" else f" (got {json.dumps(got, default=str)[:40]})"
        parts.append(f"{where}: {item['msg'][0].lower()}{item['msg'][1:]}{shown}")
    return "; ".join(parts)
