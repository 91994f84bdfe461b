"""`akira mcp`: serve the run API to other agents over the Model Context Protocol."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from akira_cli.cli.common import RootOption


def mcp(
    root: RootOption = None,
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="[HOST:]PORT",
            help="Serve streamable HTTP on PORT (on 127.0.0.1 unless HOST names another address) "
            "instead of stdio. Every request needs 'Authorization: Bearer TOKEN'.",
        ),
    ] = None,
    host: Annotated[
        str | None, typer.Option("--host", help="The address --http listens on (default 127.0.0.1).")
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            metavar="FILE",
            help="Read the bearer token from FILE, once. Without a token, on loopback akira makes "
            "one and keeps it in .state/mcp_token (mode 0600).",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="AKIRA_MCP_TOKEN",
            help="The bearer token itself, for scripts ($AKIRA_MCP_TOKEN); on the command line "
            "every user sees it in ps, so prefer --token-file.",
        ),
    ] = None,
) -> int:
    """Serve akira to your agent over MCP: start, watch, steer and undo runs in the workspace."""
    from akira_cli.mcp_server.transport import serve
    from akira_cli.workspace import Workspace

    return serve(Workspace.resolve(root), http, host, token, token_file)
