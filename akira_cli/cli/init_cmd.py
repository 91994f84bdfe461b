"""`akira init [DIR]`: the workspace layout, a commented config and an example spec."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Annotated

import typer

from akira_cli.errors import AkiraError
from akira_cli.workspace import Workspace

EXAMPLE_FILES = ("tasks.md", "requirements.md", "design.md")


def init(
    directory: Annotated[
        Path | None, typer.Argument(help="Folder to set up (default: --root or cwd).")
    ] = None,
    root: Annotated[str | None, typer.Option("--root", help="Workspace folder.")] = None,
) -> int:
    """Create the workspace layout, config/autonomous_loop.yaml and Specs/example/."""
    target = (directory or Path(root or ".")).expanduser().resolve()
    if target.exists() and not target.is_dir():
        raise AkiraError(f"{target} is a file; give a folder to initialise")
    target.mkdir(parents=True, exist_ok=True)
    workspace = Workspace(target)
    workspace.ensure_layout()
    templates = files("akira_cli.templates")
    written = []
    config = target / "config" / "autonomous_loop.yaml"
    if not config.exists():
        config.write_text(templates.joinpath("autonomous_loop.yaml").read_text(), encoding="utf-8")
        written.append(config)
    example = workspace.specs / "example"
    if not example.exists():
        example.mkdir(parents=True)
        for name in EXAMPLE_FILES:
            (example / name).write_text(templates.joinpath("example", name).read_text(), "utf-8")
        written.append(example)
    for folder in ("Done", "Needs_Action"):
        (target / folder / ".gitkeep").touch()
    typer.echo(f"workspace ready at {target}")
    for path in written:
        typer.echo(f"  wrote {workspace.relative(path)}")
    typer.echo(f"next: akira loop start --root {target} --task Specs/example/tasks.md")
    return 0
