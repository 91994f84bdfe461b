"""The command line a person meets: --version, completion, and a help text for every option."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.core import TyperGroup, TyperOption
from typer.main import get_command

from akira_cli.cli import app


@pytest.mark.slow
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


def option_help(command: list[str], option: str) -> str:
    found: Any = get_command(app)
    for name in command:
        found = found.commands[name]
    return " ".join(next(p.help for p in found.params if option in p.opts).split())


@pytest.mark.slow
def test_the_root_option_says_how_the_workspace_is_found_and_it_is_found_so(tmp_path: Path) -> None:
    """--root's help names $AKIRA_ROOT and the upward search, and the commands search so."""
    text = option_help(["loop", "status"], "--root")
    assert "$AKIRA_ROOT" in text and "nearest folder from here upward" in text and ".state/" in text
    workspace, other = tmp_path / "ws", tmp_path / "other"
    for folder in (workspace, other):
        assert (
            subprocess.run(
                [sys.executable, "-m", "akira_cli", "init", str(folder)], capture_output=True
            ).returncode
            == 0
        )
    deep = workspace / "src" / "pkg"
    deep.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "AKIRA_ROOT"}

    def start(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "akira_cli", "loop", "start", "--task", "Specs/example/tasks.md"],
            cwd=deep,
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert "relative to the current folder or to the workspace" in option_help(["loop", "start"], "--task")
    assert start().returncode == 0  # the workspace two folders up, and its Specs/
    assert (workspace / "Done" / "example" / "tasks.md").is_file() and not (deep / ".state").exists()
    assert start(AKIRA_ROOT=str(other)).returncode == 0  # $AKIRA_ROOT comes first
    assert (other / "Done" / "example" / "tasks.md").is_file() and not (deep / ".state").exists()


@pytest.mark.slow
@pytest.mark.parametrize("where", ["elsewhere", "root", "inside"])
def test_the_exit_line_names_files_that_open_from_where_the_command_ran(tmp_path: Path, where: str) -> None:
    workspace = tmp_path / "ws"
    assert (
        subprocess.run(
            [sys.executable, "-m", "akira_cli", "init", str(workspace)], capture_output=True
        ).returncode
        == 0
    )
    (workspace / "Specs" / "fail").mkdir()
    (workspace / "Specs" / "fail" / "tasks.md").write_text(
        "- [ ] 1. Fail\n  - Run: `echo broken >&2; exit 1`\n"
    )
    cwd = {"elsewhere": tmp_path / "elsewhere", "root": workspace, "inside": workspace / "Specs"}[where]
    cwd.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "AKIRA_ROOT"}
    task = str(workspace / "Specs/fail/tasks.md")
    ran = subprocess.run(
        [sys.executable, "-m", "akira_cli", "loop", "start", "--task", task, "--root", str(workspace)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 4, ran.stderr
    last = ran.stderr.strip().splitlines()[-1]
    named = last.rsplit("; read ", 1)[1]
    assert (cwd / named).is_file(), (where, last)
    assert Path(named).name.startswith("escalation_task_")
    if where == "root":
        assert named.startswith("Needs_Action/")  # the short name, where it opens


def test_the_stop_options_say_what_they_do() -> None:
    assert "records the attempt as interrupted and exits 3" in option_help(["loop", "stop"], "--force")
    assert "whatever its status" in option_help(["loop", "stop"], "--save-state")
    assert "exit 3 instead of waiting" in option_help(["loop", "resume"], "--no-wait")


def test_shell_completion_is_offered() -> None:
    options = {opt for param in get_command(app).params for opt in getattr(param, "opts", [])}
    assert {"--install-completion", "--show-completion"} <= options


HEAVY = (
    "akira_cli.loop.session",
    "akira_cli.loop.engine",
    "akira_cli.reasoning",
    "openai",
    "watchdog",
    "rich.live",
)
PROBE = """
import sys
from akira_cli.cli import main
code = main(sys.argv[1:])
heavy = sorted(m for m in sys.modules if m.startswith({heavy!r}))
print("HEAVY", heavy, file=sys.stderr)
"""


def loaded_by(*args: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    probe = PROBE.format(heavy=heavy)
    done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=60)
    line = next(line for line in done.stderr.splitlines() if line.startswith("HEAVY"))
    return list(ast.literal_eval(line.removeprefix("HEAVY ")))


@pytest.mark.slow
def test_help_and_status_import_only_what_they_use(tmp_path: Any) -> None:
    """`akira --help` and `loop status` start fast because the loop, the LLM client, watchdog
    and Rich's live display are imported only by the commands that run them."""
    assert loaded_by("--help", heavy=(*HEAVY, "pydantic", "akira_cli.sections")) == []
    assert loaded_by("loop", "status", "--root", str(tmp_path), heavy=(*HEAVY, "akira_cli.sections")) == []
    assert "akira_cli.loop.session" in loaded_by("loop", "start", "--root", str(tmp_path), "--task", "x")


def test_loop_tasks_lists_every_layout_as_the_api_and_mcp_list_them(tmp_path: Path) -> None:
    import json

    from akira_cli import api

    (tmp_path / "Specs" / "calc").mkdir(parents=True)
    (tmp_path / "Specs" / "calc" / "tasks.md").write_text("- [x] 1. one\n- [ ] 2. two\n")
    (tmp_path / ".kiro" / "specs" / "auth").mkdir(parents=True)
    (tmp_path / ".kiro" / "specs" / "auth" / "tasks.md").write_text("- [ ] 1. login\n")
    argv = [sys.executable, "-m", "akira_cli", "loop", "tasks", "--root", str(tmp_path)]
    shown = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    listed = json.loads(shown.stdout)["tasks"]
    assert {(t["path"], t["layout"], t["steps_done"], t["steps_total"]) for t in listed} == {
        ("Specs/calc/tasks.md", "akira", 1, 2),
        (".kiro/specs/auth/tasks.md", "kiro", 0, 1),
    }
    assert listed == api.tasks(tmp_path).data()["tasks"]
    plain = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert plain.returncode == 0 and "Specs/calc/tasks.md  1/2 (akira)" in plain.stdout.splitlines()
    (tmp_path / "src").mkdir()  # from a subfolder, each path opens from there
    below = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path / "src")
    assert f"{tmp_path}/Specs/calc/tasks.md  1/2 (akira)" in below.stdout.splitlines(), below.stdout
    # the one line a text-only MCP client reads: its nouns agree with the count
    assert api.tasks(tmp_path).line().startswith("2 task files: ")
    (tmp_path / ".kiro" / "specs" / "auth" / "tasks.md").unlink()
    assert api.tasks(tmp_path).line() == "1 task file: Specs/calc/tasks.md 1/2"
