"""How `akira mcp` is reached: stdio (the default; the SDK keeps stdout for the protocol and
points the process's own fd 1 at stderr while it serves), or streamable HTTP on `HOST:PORT`
behind akira's door (`akira_cli/door.py`: Host, Origin and a bearer token on every request).
HTTP listens on 127.0.0.1 unless told otherwise; with no token given, on loopback akira makes
one and keeps it in `.state/mcp_token`; beyond loopback the person gives one."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path
from typing import Any

from akira_cli.door import Door, bound_socket, kept_token, loopback, read_token_file
from akira_cli.errors import AkiraError, UsageError
from akira_cli.workspace import Workspace

LOCAL = "127.0.0.1"
TOKEN_VARIABLE = "AKIRA_MCP_TOKEN"
KEPT = ".state/mcp_token"


def serve(
    workspace: Workspace, http: str | None, host: str | None, token: str | None, token_file: Path | None
) -> int:
    # The server's token is no step's business: no process it starts inherits it.
    exported = os.environ.pop(TOKEN_VARIABLE, None)
    if http is None and token is not None and token == exported:
        token = None  # exported for an HTTP server's scripts; a stdio client needs none
    if http is None:
        if host is not None or token is not None or token_file is not None:
            raise UsageError("--host, --token and --token-file are for --http [HOST:]PORT; stdio needs none")
        from akira_cli.mcp_server.tools import server

        server(workspace).run("stdio")
        return 0
    bind, port = address(http, host)
    secret, kept = door_token(workspace, bind, port, token, token_file)
    from mcp.server.transport_security import TransportSecuritySettings

    from akira_cli.mcp_server.tools import server

    # The door checks Host and Origin for every spelling of the address; the SDK's own check
    # knows three exact strings only, so it is off.
    app = server(workspace).streamable_http_app(
        host=bind, transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )
    listening = bound_socket(bind, port)  # a port already taken is one line, not uvicorn's traceback
    asyncio.run(listen(Door(app, secret), listening, kept))
    return 0


def door_token(
    workspace: Workspace, bind: str, port: int, token: str | None, token_file: Path | None
) -> tuple[str, str | None]:
    """The token every request must carry, and the path akira kept it at when it made it."""
    from akira_cli.door import checked

    if token is not None and token_file is not None:
        raise UsageError("give --token or --token-file, not both")
    if token_file is not None:
        return read_token_file(token_file), None
    if token is not None:
        return checked(token, "--token"), None
    if not loopback(bind):
        raise AkiraError(
            f"--http {bind}:{port} listens beyond this machine, so it needs --token-file FILE "
            f"(clients send 'Authorization: Bearer TOKEN'); or listen on {LOCAL}"
        )
    return kept_token(workspace.root / KEPT), KEPT


def address(http: str, host: str | None) -> tuple[str, int]:
    """`[HOST:]PORT` (an IPv6 host in brackets), and `--host` when HTTP gives none."""
    named, _, port = http.rpartition(":")
    named = named.strip("[]") or host or LOCAL
    if not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--http {http}: expected [HOST:]PORT, such as 8765 or 127.0.0.1:8765")
    return named, int(port)


async def listen(app: Any, listening: socket.socket, kept: str | None) -> None:
    """uvicorn on the `listening` socket; the address (and where the token akira made is kept)
    goes to stderr, in one line, once it listens."""
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    running = asyncio.create_task(server.serve(sockets=[listening]))
    while not server.started and not running.done():
        await asyncio.sleep(0.05)
    if server.started:
        bound = listening.getsockname()
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        where = f"; its token is in {kept} (clients send 'Authorization: Bearer TOKEN')" if kept else ""
        print(f"akira: MCP server on http://{shown}:{bound[1]}/mcp{where}", file=sys.stderr, flush=True)
    await running
