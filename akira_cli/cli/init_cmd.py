"""`akira init [DIR]`: the workspace layout, a commented config and an example spec."""

from __future__ import annotations

import json
import shlex
from importlib.resources import files
from pathlib import Path
from typing import Annotated

import typer

from akira_cli.errors import AkiraError
from akira_cli.workspace import Workspace, command_line

EXAMPLE_FILES = ("tasks.md", "requirements.md", "design.md")
SPEC_TOOLS = {
    ".kiro": ".kiro/specs/*/tasks.md",
    ".specify": "specs/*/tasks.md",
    "openspec": "openspec/changes/*/tasks.md",
}
"""A spec tool's folder, and where it keeps task files."""


def project_checks(folder: Path) -> list[str]:
    """The test command of a recognisable project, for a person to confirm."""
    found = []
    has_tests = any((folder / name).exists() for name in ("tests", "test")) or any(folder.glob("test_*.py"))
    if ((folder / "pyproject.toml").is_file() or (folder / "setup.cfg").is_file()) and has_tests:
        # the project's own interpreter, with its dependencies, not the one akira runs on
        python = ".venv/bin/python" if (folder / ".venv" / "bin" / "python").exists() else "python"
        found.append(f"{python} -m pytest -q")
    try:
        package = json.loads((folder / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        package = None
    if (
        isinstance(package, dict)
        and isinstance(package.get("scripts"), dict)
        and "test" in package["scripts"]
    ):
        found.append("npm test --silent")
    if (folder / "Cargo.toml").is_file():
        found.append("cargo test -q")
    if (folder / "go.mod").is_file():
        found.append("go test ./...")
    return found


def kept_specs(folder: Path) -> str | None:
    """Where a spec tool (Kiro, spec-kit, OpenSpec) keeps this project's specs: its first task
    file, else the pattern of one; None for a project without one."""
    for marker, pattern in SPEC_TOOLS.items():
        if (folder / marker).is_dir():
            found = sorted(folder.glob(pattern))
            return found[0].relative_to(folder).as_posix() if found else pattern.replace("*", "<feature>")
    return None


def init(
    directory: Annotated[
        Path | None,
        typer.Argument(
            metavar="DIR", help="Folder to set up, created if missing (default: --root, else the cwd)."
        ),
    ] = None,
    root: Annotated[
        str | None, typer.Option("--root", help="Folder to set up when DIR is not given (default: the cwd).")
    ] = None,
) -> int:
    """Create the workspace layout, config/autonomous_loop.yaml and Specs/example/ (a project
    that keeps its specs with Kiro, spec-kit or OpenSpec gets only the config)."""
    target = (directory or Path(root or ".")).expanduser().resolve()
    if target.exists() and not target.is_dir():
        raise AkiraError(f"{target} is a file; give a folder to initialise")
    target.mkdir(parents=True, exist_ok=True)
    workspace = Workspace(target)
    specs = kept_specs(target)  # a project that has its specs gets no example, Done/ or Needs_Action/
    workspace.ensure_layout(own_specs=specs is None)
    templates = files("akira_cli.templates")
    written = []
    config = target / "config" / "autonomous_loop.yaml"
    if not config.exists():
        text = templates.joinpath("autonomous_loop.yaml").read_text()
        proposed = project_checks(target)
        if proposed:  # in place of `commands: []`, so that uncommenting them gives one `commands`
            line = next(line for line in text.splitlines(keepends=True) if line.startswith("  commands:"))
            text = text.replace(
                line,
                "  # Project checks proposed for this project; uncomment them to confirm:\n"
                "  # commands:\n" + "".join(f"  #   - run: {command}\n" for command in proposed),
                1,
            )
        config.write_text(text, encoding="utf-8")
        written.append(config)
        for command in proposed:
            typer.echo(f"  proposed project check (commented in the config): {command}")
    example = workspace.specs / "example"
    if specs is None and not example.exists():
        example.mkdir(parents=True)
        for name in EXAMPLE_FILES:
            (example / name).write_text(templates.joinpath("example", name).read_text(), "utf-8")
        written.append(example)
    for folder in ("Done", "Needs_Action") if specs is None else ():
        (target / folder / ".gitkeep").touch()
    typer.echo(f"workspace ready at {shlex.quote(str(target))}")
    for path in written:
        typer.echo(f"  wrote {workspace.shown(path)}")
    task = specs or "Specs/example/tasks.md"
    typer.echo(f"next: {command_line(workspace, 'loop', 'start', '--task', task)}")
    return 0
