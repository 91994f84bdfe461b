"""`akira doctor`: checks what a run needs (agent CLI, its version, auth and flags, git, the
sandbox, the LLM endpoint, the push remote, the pull request's tool, the reviewer's CLI, and
every refusal of `loop start` that needs no task file) without a model call. Exit 1 when
something would stop a run; a config that does not load is a row of the table too."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from akira_cli import redaction
from akira_cli.cli.common import ExtraConfigOption, JsonOption, RootOption
from akira_cli.cli.loop_cmd import AgentKind
from akira_cli.errors import AkiraError
from akira_cli.words import counted
from akira_cli.workspace import Workspace, command_line, in_quotes

if TYPE_CHECKING:
    from akira_cli.doctor.base import Finding

STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red"}


def doctor(
    agent: Annotated[
        AgentKind | None,
        typer.Option("--agent", help="The agent to check (default: agent.kind in config, else auto)."),
    ] = None,
    config: ExtraConfigOption = None,
    as_json: JsonOption = False,
    root: RootOption = None,
) -> int:
    """Check that a run can start here: the agent CLI, its auth and flags, git, the sandbox, the
    LLM endpoint, the push remote and the pull request's tool, the reviewer's CLI."""
    from akira_cli.config import load_config
    from akira_cli.doctor import context_for, run_checks
    from akira_cli.doctor.base import Finding

    workspace = Workspace.resolve(root)
    try:
        cfg = load_config(workspace.root, config, {"agent.kind": agent})
    except AkiraError as exc:  # what would stop a run first: said as a check, and nothing else runs
        fix = "fix it as the detail says; 'akira config show' loads it as a run does"
        findings, name = [Finding("config", "fail", str(exc), fix)], None
    else:
        context = context_for(workspace.root, cfg, cfg.agent.kind)
        key = cfg.llm.api_key.get_secret_value() if cfg.llm.api_key else None
        redaction.register_environment([key])
        findings = [finding.redacted() for finding in run_checks(context)]
        name = context.agent.name if context.agent is not None else None
    failed = any(finding.status == "fail" for finding in findings)
    if as_json:
        report = {
            "ok": not failed,
            "workspace": str(workspace.root),
            "agent": name,
            "checks": [finding.as_dict() for finding in findings],
        }
        typer.echo(json.dumps(report, indent=2))
    else:
        again = [*(["--agent", agent] if agent else []), *(["--config", str(config)] if config else [])]
        print_table(findings, command_line(workspace, "doctor", *again))
    return 1 if failed else 0


def print_table(findings: list[Finding], again: str) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(show_lines=False)  # the title apart: Rich pads a table's title to its width
    for column in ("check", "status", "detail", "fix"):
        table.add_column(column, overflow="fold")
    for finding in findings:
        status = Text(finding.status, style=STYLE[finding.status])
        table.add_row(finding.check, status, Text(finding.detail), Text(finding.fix))
    console = Console(width=None if sys.stdout.isatty() else 120)  # a pipe or a log: wide enough
    console.print("akira doctor", style="italic", highlight=False)
    console.print(table)
    problems = sum(f.status == "fail" for f in findings)
    warnings = sum(f.status == "warn" for f in findings)
    if problems:
        line = (
            f"{counted(problems, 'problem')} would stop a run; fix {'it' if problems == 1 else 'them'} "
            f"and run {in_quotes(again)} again"
        )
    else:
        line = f"ready to run ({counted(warnings, 'warning')})" if warnings else "ready to run"
    console.print(line, highlight=False, soft_wrap=True)  # a command in it must paste whole
