"""Serving the page: the address (`[HOST:]PORT`, 127.0.0.1 unless told), the token (from
`--token-file`, or on loopback one akira makes and keeps in `.state/web_token`, mode 0600), and
uvicorn behind the door. The page's URL goes to stderr once, with the token when akira made it."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path
from typing import Any

from akira_cli.api.watching import FleetLister
from akira_cli.door import bound_socket, kept_token, loopback, read_token_file
from akira_cli.errors import AkiraError, UsageError
from akira_cli.workspace import Workspace

LOCAL = "127.0.0.1"
DEFAULT_PORT = 8770
KEPT = ".state/web_token"


def serve(
    workspace: Workspace,
    http: str | None,
    token_file: Path | None,
    max_running: int,
    fleet: FleetLister | None = None,
) -> int:
    """`max_running`: the runs the page resumed that may run at once (`mcp.max_running`, the
    MCP server's bound); `fleet`: the fleet's runs, when the workspace has a fleet."""
    from akira_cli.api.running import Running
    from akira_cli.web.app import build
    from akira_cli.web.door import WebDoor

    bind, port = address(http or str(DEFAULT_PORT))
    if token_file is not None:
        token, made = read_token_file(token_file), False
    elif loopback(bind):
        token, made = kept_token(workspace.root / KEPT), True
    else:
        raise AkiraError(
            f"--http {bind}:{port} listens beyond this machine, so it needs --token-file FILE; "
            f"or listen on {LOCAL}"
        )
    listening = bound_socket(bind, port)
    running = Running(workspace.root, max_running, "stop one from its page")
    app = WebDoor(build(workspace.root, token, running, fleet), token)
    asyncio.run(listen(app, listening, token if made else None))
    return 0


def address(http: str) -> tuple[str, int]:
    named, _, port = http.rpartition(":")
    named = named.strip("[]") or LOCAL
    if not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--http {http}: expected [HOST:]PORT, such as 8770 or 127.0.0.1:8770")
    return named, int(port)


async def listen(app: Any, listening: socket.socket, token: str | None) -> None:
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    running = asyncio.create_task(server.serve(sockets=[listening]))
    while not server.started and not running.done():
        await asyncio.sleep(0.05)
    if server.started:
        bound = server.servers[0].sockets[0].getsockname()
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        url = f"http://{shown}:{bound[1]}/"
        said = (
            f"{url}?token={token} (the token is kept in {KEPT})"
            if token
            else f"{url} (the token is the one in --token-file)"
        )
        print(f"akira: web page on {said}", file=sys.stderr, flush=True)
    await running
