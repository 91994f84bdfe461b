"""`akira config show`: the effective configuration, secrets masked."""

from __future__ import annotations

import typer

from akira_cli.api.lookup import workspace_and_config
from akira_cli.cli.common import ExtraConfigOption, RootOption, exits

app = typer.Typer(help="Inspect the configuration.", no_args_is_help=True)


@app.command("show")
@exits
def show(config: ExtraConfigOption = None, root: RootOption = None) -> int:
    """Print the effective configuration (defaults < file < --config < env)."""
    import yaml

    _, effective = workspace_and_config(root, config)
    typer.echo(yaml.safe_dump(effective.public_dict(), sort_keys=False).rstrip())
    return 0
