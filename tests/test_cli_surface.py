"""The command line a person meets: --version, completion, and a help text for every option."""

from __future__ import annotations

import ast
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


HEAVY = ("akira_cli.session", "akira_cli.engine", "akira_cli.reasoning", "openai", "watchdog", "rich.live")
PROBE = """
import sys
from akira_cli.cli import main
code = main(sys.argv[1:])
heavy = sorted(m for m in sys.modules if m.startswith({heavy!r}))
print("HEAVY", heavy, file=sys.stderr)
"""


def loaded_by(*args: str) -> list[str]:
    probe = PROBE.format(heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=60)
    line = next(line for line in done.stderr.splitlines() if line.startswith("HEAVY"))
    return list(ast.literal_eval(line.removeprefix("HEAVY ")))


def test_help_and_status_import_only_what_they_use(tmp_path: Any) -> None:
    """`akira --help` and `loop status` start fast because the loop, the LLM client, watchdog
    and Rich's live display are imported only by the commands that run them (issue 11)."""
    assert loaded_by("--help") == []
    assert loaded_by("loop", "status", "--root", str(tmp_path)) == []
    assert "akira_cli.session" in loaded_by("loop", "start", "--root", str(tmp_path), "--task", "x")
