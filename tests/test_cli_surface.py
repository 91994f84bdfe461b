"""The command line a person meets: --version, completion, and a help text for every option."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from typer.core import TyperGroup, TyperOption
from typer.main import get_command

from akira_cli.cli import app


def test_version_prints_the_package_version() -> None:
    result = subprocess.run([sys.executable, "-m", "akira_cli", "--version"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("akira 0.")


def test_every_option_of_every_command_says_what_it_does() -> None:
    missing = []

    def walk(command: Any, path: str) -> None:
        for param in command.params:
            if isinstance(param, TyperOption) and not (param.help or "").strip():
                missing.append(f"{path} {param.opts[0]}")
            ours = param.opts[0] != "--help" and "completion" not in param.opts[0]
            if isinstance(param, TyperOption) and param.is_flag and ours and param.metavar != "":
                missing.append(f"{path} {param.opts[0]} shows a bare <bool>")
        if isinstance(command, TyperGroup):
            for name, sub in command.commands.items():
                walk(sub, f"{path} {name}")

    walk(get_command(app), "akira")
    assert missing == []


def test_shell_completion_is_offered() -> None:
    options = {opt for param in get_command(app).params for opt in getattr(param, "opts", [])}
    assert {"--install-completion", "--show-completion"} <= options
