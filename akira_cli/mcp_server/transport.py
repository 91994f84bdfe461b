"""How `akira mcp` is reached: stdio (the default; the SDK keeps stdout for the protocol and
points the process's own fd 1 at stderr while it serves), or streamable HTTP on `HOST:PORT`.
HTTP listens on 127.0.0.1 unless told otherwise; any other address needs a token, and a request
without `Authorization: Bearer <token>` gets 401."""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import sys
from typing import Any

from akira_cli.errors import AkiraError, UsageError
from akira_cli.workspace import Workspace

LOCAL = "127.0.0.1"


def serve(workspace: Workspace, http: str | None, host: str | None, token: str | None) -> int:
    from akira_cli.mcp_server.tools import server

    mcp = server(workspace)
    if http is None:
        if host is not None or token is not None:
            raise UsageError("--host and --token are for --http [HOST:]PORT; stdio needs neither")
        mcp.run("stdio")
        return 0
    bind, port = address(http, host)
    if not loopback(bind) and not token:
        raise AkiraError(
            f"--http {bind}:{port} listens beyond this machine, so it needs --token TOKEN (clients send "
            f"'Authorization: Bearer TOKEN'); or listen on {LOCAL}"
        )
    app = mcp.streamable_http_app(host=bind)
    asyncio.run(listen(BearerToken(app, token) if token else app, bind, port))
    return 0


def address(http: str, host: str | None) -> tuple[str, int]:
    """`[HOST:]PORT` (an IPv6 host in brackets), and `--host` when HTTP gives none."""
    named, _, port = http.rpartition(":")
    named = named.strip("[]") or host or LOCAL
    if not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--http {http}: expected [HOST:]PORT, such as 8765 or 127.0.0.1:8765")
    return named, int(port)


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def listen(app: Any, host: str, port: int) -> None:
    """uvicorn on `host:port` (0: a free port); the address goes to stderr once it listens."""
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    running = asyncio.create_task(server.serve())
    while not server.started and not running.done():
        await asyncio.sleep(0.05)
    if server.started:
        bound = server.servers[0].sockets[0].getsockname()
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        print(f"akira: MCP server on http://{shown}:{bound[1]}/mcp", file=sys.stderr, flush=True)
    await running


class BearerToken:
    """ASGI middleware: an HTTP request without `Authorization: Bearer <token>` gets 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send(
                    {"type": "http.response.body", "body": b"akira: send Authorization: Bearer <token>\n"}
                )
                return
        await self.app(scope, receive, send)
