"""What akira prints: paths and commands that paste as they are, help
texts that say what each command takes, commit trailers and a panel a reader understands, and a
config file whose key is given twice refused. Real workspaces, real git, real subprocesses."""

from __future__ import annotations

import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from akira_cli.cli import main
from tests.support.git import first_commit, git
from tests.support.workspace import Akira

pytestmark = pytest.mark.slow


def akira_in(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "TERM": "dumb"}
    env.pop("AKIRA_ROOT", None)
    return subprocess.run(
        [sys.executable, "-m", "akira_cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=env,
    )


def test_paths_in_a_workspace_with_a_space_are_printed_shell_quoted(tmp_path: Path) -> None:
    made = akira_in(tmp_path, "init", "my ws")
    assert made.returncode == 0, made.stderr
    assert f"workspace ready at {shlex.quote(str(tmp_path / 'my ws'))}" in made.stdout
    root = tmp_path / "my ws"
    (root / "Specs" / "feat").mkdir(parents=True)
    (root / "Specs" / "feat" / "tasks.md").write_text(
        "- [ ] 1. Never\n  - Run: `true`\n  - Exists: `absent.txt`\n"
    )
    done = akira_in(tmp_path, "loop", "start", "--task", "my ws/Specs/feat/tasks.md", "--root", "my ws")
    assert done.returncode == 4, done.stderr
    assert "akira: started task_" in done.stderr and " on 'my ws/Specs/feat/tasks.md'" in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "; read 'my ws/Needs_Action/escalation_" in last, last
    words = shlex.split(last.split("; read ", 1)[1])
    assert len(words) == 1 and (tmp_path / words[0]).is_file()  # it pastes: one word, the file
    task_id = words[0].split("escalation_")[1].removesuffix(".md")
    stopped = akira_in(tmp_path, "loop", "cancel", "--task-id", task_id, "--root", "my ws")
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stderr.strip().endswith("the task file stays at 'my ws/Specs/feat/tasks.md'")


def help_text(cwd: Path, *command: str) -> str:
    done = akira_in(cwd, *command, "--help")
    assert done.returncode == 0, done.stderr
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", done.stdout).split())


def option_help(text: str, option: str) -> str:
    """The help of `option`, up to the next option."""
    after = text.split(" Options", 1)[1].split(f" {option} ", 1)[1]
    return re.split(r" --[a-z-]+ <", after, maxsplit=1)[0]


def test_help_texts_say_what_each_command_takes(tmp_path: Path) -> None:
    for command in (
        ("loop", "status"),
        ("loop", "cancel"),
        ("loop", "stop"),
        ("loop", "resume"),
        ("config", "show"),
        ("fleet", "status"),
        ("fleet", "cancel"),
        ("fleet", "worker"),
        ("reason",),
    ):
        root = option_help(help_text(tmp_path, *command), "--root")
        assert "Workspace folder" in root and "--task" not in root, (command, root)
    for command in (("loop", "start"), ("fleet", "add")):  # where --task is, its help says how it counts
        assert "--task" in option_help(help_text(tmp_path, *command), "--root"), command
    for command in (("reason",), ("config", "show")):
        config = option_help(help_text(tmp_path, *command), "--config")
        assert "config/autonomous_loop.yaml" in config and "resume" not in config, (command, config)
    cancel = help_text(tmp_path, "fleet", "cancel")
    assert "Usage: akira fleet cancel [OPTIONS] RUN_ID" in cancel and "{" not in cancel, cancel
    assert "Usage: akira reason [OPTIONS] TEXT" in help_text(tmp_path, "reason")
    assert "Usage: akira init [OPTIONS] [DIR]" in help_text(tmp_path, "init")  # as the README writes them
    timeout = option_help(help_text(tmp_path, "fleet", "worker"), "--worker-timeout")
    assert "(default: fleet.worker_timeout_seconds, 60)" in timeout, timeout


def test_an_unverified_steps_commit_says_what_its_evidence_was(akira: Akira) -> None:
    root = akira.root
    agent = root / "agent.sh"
    agent.write_text("echo made > made.txt\necho more > more.txt\n")
    akira.write_config(f"agent:\n  command: bash {shlex.quote(str(agent))}\n")
    akira.write_task("feat", "- [ ] 1. Make two files\n")
    first_commit(root)
    done = akira.cli("loop", "start", "--task", "Specs/feat/tasks.md")
    assert done.code == 0, done.err
    step = git(root, "log", "--format=%H", "--grep=^1 Make two files", "akira/feat")
    body = git(root, "log", "-1", "--format=%B", step)
    trailers = dict(line.split(": ", 1) for line in body.splitlines() if line.startswith("Akira-"))
    assert trailers["Akira-Verified"] == "no"
    assert trailers["Akira-Checks"] == "evidence: 2 files changed"


def test_the_panel_and_progress_say_the_rate_counts_attempts(akira: Akira) -> None:
    from akira_cli.display import LiveDisplay

    akira.write_task("feat", "- [ ] 1. One\n  - Run: `echo 1 > one.txt`\n  - Exists: `one.txt`\n")
    assert akira.run("loop", "start", "--task", "Specs/feat/tasks.md").code == 0
    state = akira.state()
    out = io.StringIO()
    panel = LiveDisplay(state, console=Console(file=out, width=120, force_terminal=False))
    panel.close()
    assert re.search(r"attempt success rate +100%", out.getvalue()), out.getvalue()
    progress = akira.cli("loop", "progress", "--task-id", state.task_id)
    assert progress.code == 0 and "attempt success rate 100%" in progress.out, progress.out


@pytest.mark.parametrize("where", ["top", "nested"])
def test_a_key_given_twice_in_the_config_is_refused_with_both_lines(akira: Akira, where: str) -> None:
    text = (
        "autonomous_loop:\n  max_iterations: 5\nllm:\n  model: a\nautonomous_loop:\n  max_iterations: 9\n"
        if where == "top"
        else "llm:\n  model: a\n  timeout: 30\n  model: b\n"
    )
    akira.write_config(text)
    shown = akira.cli("config", "show")
    key, lines = ("autonomous_loop", "1 and 5") if where == "top" else ("model", "2 and 4")
    assert shown.code == 1 and shown.out == "", shown
    assert shown.err.strip().splitlines() == [
        f"akira: error: {akira.root / 'config' / 'autonomous_loop.yaml'}: key '{key}' is given twice, "
        f"on lines {lines}; keep one of them (YAML would silently use the last)"
    ]
    started = akira.cli("loop", "start", "--task", "Specs/example/tasks.md")
    assert started.code == 1 and "given twice" in started.err and "Traceback" not in started.err
    assert akira.state_files() == []  # nothing started, nothing written
    assert main(["config", "show", "--root", str(akira.root)]) == 1
