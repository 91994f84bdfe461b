"""`akira web`: the night at a glance, in a browser."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from akira_cli.cli.common import RootOption


def web(
    root: RootOption = None,
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="[HOST:]PORT",
            help="Serve the page on PORT (default 8770; on 127.0.0.1 unless HOST names another address).",
        ),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            metavar="FILE",
            help="Read the page's token from FILE, once. Without it, on loopback akira makes one, "
            "keeps it in .state/web_token (mode 0600) and prints the page's URL with it.",
        ),
    ] = None,
) -> int:
    """Watch and steer the workspace's runs in a browser: runs, timelines, live events, controls."""
    from akira_cli.cli.fleet_cmd import fleet_lister
    from akira_cli.config import load_config
    from akira_cli.web.serve import serve
    from akira_cli.workspace import Workspace

    workspace = Workspace.resolve(root)
    config = load_config(workspace.root)
    lister = fleet_lister(workspace.root, config.fleet.database_url)
    return serve(workspace, http, token_file, config.mcp.max_running, lister)
