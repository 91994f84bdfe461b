"""The `akira` command: one module per command group."""

from __future__ import annotations

import os
import shlex
import sys
from typing import Annotated

import typer

from akira_cli import redaction
from akira_cli.cli import (
    config_cmd,
    doctor_cmd,
    fleet_cmd,
    init_cmd,
    loop_cmd,
    loop_control_cmd,
    loop_view_cmd,
    mcp_cmd,
    pr_cmd,
    reason_cmd,
    web_cmd,
)
from akira_cli.cli.common import PlainUsage, exits
from akira_cli.errors import AkiraError
from akira_cli.fileio import describe_os_error

app = typer.Typer(
    name="akira",
    help="Works through a spec's task list unattended: runs, checks, reflects, re-plans.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"akira {version('akira-cli')}")
        except PackageNotFoundError:
            typer.echo("akira (not installed)")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", metavar="", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Works through a spec's task list unattended: runs, checks, reflects, re-plans."""


app.command("init")(exits(init_cmd.init))
app.add_typer(loop_cmd.app, name="loop")  # loop_view_cmd adds the reading commands to it
_ = loop_view_cmd, loop_control_cmd  # imported for their commands
app.add_typer(config_cmd.app, name="config")
app.command("reason", cls=PlainUsage)(exits(reason_cmd.reason))
app.add_typer(fleet_cmd.app, name="fleet")
app.command("doctor")(exits(doctor_cmd.doctor))
app.command("mcp")(exits(mcp_cmd.mcp))
app.add_typer(pr_cmd.app, name="pr")
app.command("web")(exits(web_cmd.web))


def main(argv: list[str] | None = None) -> int:
    """Runs the CLI; bad input ends as one line on stderr and exit 1, never a traceback."""
    redaction.register_environment()
    # Rich's help boxes cut long option names in a narrow terminal's width; in a pipe or a log,
    # click's plain help wraps the text and never cuts a name
    app.rich_markup_mode = "rich" if sys.stdout.isatty() else None
    try:
        app(args=argv, prog_name="akira")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except AkiraError as exc:
        said = redaction.redact(str(exc))
        print(f"akira: error: {said}", file=sys.stderr)
        if "--json" in (sys.argv[1:] if argv is None else argv):  # a reader of stdout gets it too
            import json

            print(json.dumps({"error": said, "exit_code": exc.exit_code}))
        return exc.exit_code
    except KeyboardInterrupt:
        print("akira: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # a full disk, a read-only folder, a file where a folder should be
        print(f"akira: error: {redaction.redact(describe_os_error(exc))}", file=sys.stderr)
        return 1
    except Exception as exc:  # our bug: one line here, the traceback in a file for the report
        where = shlex.quote(str(save_traceback()))
        print(
            f"akira: internal error: {type(exc).__name__}: {redaction.redact(str(exc))[:300]}; "
            f"the state on disk is intact, 'akira loop resume' continues; details in {where}",
            file=sys.stderr,
        )
        return 1
    return 0


def save_traceback() -> str:
    import tempfile
    import traceback

    try:
        fd, path = tempfile.mkstemp(prefix="akira-crash-", suffix=".log")
        with os.fdopen(fd, "w") as handle:
            handle.write(redaction.redact(traceback.format_exc()))
        return path
    except OSError:
        return "no file (the disk refused it)"
