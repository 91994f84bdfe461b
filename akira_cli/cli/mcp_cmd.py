"""`akira mcp`: serve the run API to other agents over the Model Context Protocol."""

from __future__ import annotations

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
            "instead of stdio.",
        ),
    ] = None,
    host: Annotated[
        str | None, typer.Option("--host", help="The address --http listens on (default 127.0.0.1).")
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="AKIRA_MCP_TOKEN",
            help="A bearer token every HTTP request must carry; needed off 127.0.0.1. Also $AKIRA_MCP_TOKEN.",
        ),
    ] = None,
) -> int:
    """Serve akira to your agent over MCP: start, watch, steer and undo runs in the workspace."""
    from akira_cli.mcp_server.transport import serve
    from akira_cli.workspace import Workspace

    return serve(Workspace.resolve(root), http, host, token)
