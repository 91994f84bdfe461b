"""A missing agent executable is refused at `loop start` and `loop resume` before
anything starts: exit 1, one line naming the executable, PATH and agent.command, no branch, no
state, nothing on disk changed. Real git repositories, akira as a real subprocess."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from akira_cli.cli import main
from tests.support.git import git, person_repository
from tests.support.workspace import Akira

pytestmark = pytest.mark.slow

TOOLS = ("sh", "bash", "cat", "git", "mkdir", "echo", "true")
FAILING_CLAUDE = """#!/bin/sh
cat > /dev/null
echo '{"type":"result","subtype":"success","is_error":true,"result":"Refusing: tests are red","session_id":"s1","num_turns":1,"total_cost_usd":0.01,"usage":{"input_tokens":10,"output_tokens":5}}'
exit 1
"""


@pytest.fixture
def path_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """PATH: a folder for fake agent CLIs, and one with only the tools a run needs (no claude)."""
    fakes, tools = tmp_path / "fakes", tmp_path / "tools"
    fakes.mkdir()
    tools.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        if found:
            (tools / tool).symlink_to(found)
    monkeypatch.setenv("PATH", f"{fakes}:{tools}")
    return fakes, tools


@pytest.fixture
def repo(tmp_path: Path, path_dirs: tuple[Path, Path]) -> Akira:
    root = tmp_path / "repo"
    assert main(["init", str(root)]) == 0
    person_repository(root)
    akira = Akira(root)
    akira.write_task(
        "feat", "- [ ] 1. Write the parser\n  - Exists: `parser.py`\n- [ ] 2. Done\n  - Run: `true`\n"
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return akira


def disk(root: Path) -> dict[str, bytes]:
    """Every file of the work tree and git's refs, HEAD and excludes (not its index, whose stat
    cache any `git status` refreshes)."""
    files = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.is_file() and not relative.startswith(".git/"):
            files[relative] = path.read_bytes()
    for name in ("HEAD", "info/exclude"):
        found = root / ".git" / name
        files[f".git/{name}"] = found.read_bytes() if found.exists() else b""
    files["refs"] = git(root, "for-each-ref", "--format=%(refname) %(objectname)").encode()
    return files


def refused_in_one_line(err: str, executable: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert f"agent executable {executable!r} not found on PATH (" in line, line
    assert "agent.command" in line and "Traceback" not in err
    return line


def test_start_with_agent_claude_and_no_claude_is_refused_before_the_branch(repo: Akira) -> None:
    before = disk(repo.root)
    result = repo.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "claude")
    assert result.code == 1, result
    line = refused_in_one_line(result.err, "claude")
    assert "the claude preset runs 'claude -p --output-format json" in line
    assert "npm install -g @anthropic-ai/claude-code@2.1.197" in line
    assert git(repo.root, "branch", "--list", "akira/*") == ""
    assert git(repo.root, "symbolic-ref", "--short", "HEAD") == "main"
    assert not list((repo.root / ".state").glob("autonomous_loop_*"))
    assert disk(repo.root) == before


def test_agent_preset_in_config_and_agent_command_are_checked_too(repo: Akira) -> None:
    repo.write_config("agent:\n  preset: claude\n")
    git(repo.root, "commit", "-q", "-am", "config")
    before = disk(repo.root)
    result = repo.cli("loop", "start", "--task", "Specs/feat/tasks.md")
    assert result.code == 1 and refused_in_one_line(result.err, "claude")
    assert disk(repo.root) == before
    repo.write_config('agent:\n  command: "my-agent --headless"\n')
    git(repo.root, "commit", "-q", "-am", "config")
    before = disk(repo.root)
    result = repo.cli("loop", "start", "--task", "Specs/feat/tasks.md")
    line = refused_in_one_line(result.err, "my-agent")
    assert result.code == 1 and "agent.command is 'my-agent --headless'" in line
    assert disk(repo.root) == before


def test_a_task_whose_steps_all_have_run_lines_needs_no_agent_cli(repo: Akira) -> None:
    repo.write_config("agent:\n  preset: claude\n")
    repo.write_task("feat", "- [ ] 1. Make it\n  - Run: `echo x > made.txt`\n  - Exists: `made.txt`\n")
    git(repo.root, "commit", "-q", "-am", "runbook")
    result = repo.cli("loop", "start", "--task", "Specs/feat/tasks.md")
    assert result.code == 0, result.err


def test_resume_without_the_agent_cli_is_refused_before_anything_moves(
    repo: Akira, path_dirs: tuple[Path, Path]
) -> None:
    fakes, _ = path_dirs
    claude = fakes / "claude"
    claude.write_text(FAILING_CLAUDE)
    claude.chmod(0o755)
    started = repo.cli(
        "loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "claude", "--max-iterations", "1"
    )
    assert started.code == 4, started.err
    task_id = repo.task_id()
    assert git(repo.root, "symbolic-ref", "--short", "HEAD") == "akira/feat"
    claude.unlink()
    before = disk(repo.root)
    assert any(name.startswith("Needs_Action/") for name in before), "an intervention file to be kept"
    result = repo.cli("loop", "resume", "--task-id", task_id, "--max-iterations", "5")
    assert result.code == 1, result
    refused_in_one_line(result.err, "claude")
    assert disk(repo.root) == before
    assert repo.state(task_id).status == "needs_action"


def test_shell_code_in_agent_command_is_run_not_refused(repo: Akira) -> None:
    """`cd sub && agent ...` starts a program that only the shell can tell: no false refusal."""
    repo.write_config('agent:\n  command: "cd . && echo made > made.txt"\n')
    repo.write_task("feat", "- [ ] 1. Make it\n  - Exists: `made.txt`\n")
    git(repo.root, "commit", "-q", "-am", "shell agent")
    result = repo.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "command")
    assert result.code == 0, result.err
    assert (repo.root / "made.txt").read_text() == "made\n"
