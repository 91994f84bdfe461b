"""What a parallel step is told: the retry prompt keeps the whole of a failure (a check's output
tail and the worktree hint on lines of their own, not only the failure's telling line), and
AKIRA_WORKSPACE names the folder it may write, in its worktree. Real parallel runs in a git
repository; a real process found by the reaper's mark."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from akira_cli.children.ledger import marked
from tests.support.parallel import start, tasks
from tests.support.workspace import Akira

pytestmark = pytest.mark.slow

AGENT = """#!/bin/sh
cat > "{logs}/prompt_${{AKIRA_STEP_ID}}_${{AKIRA_ATTEMPT}}.md"
if [ "$AKIRA_STEP_ID" = 2 ]; then cat .env > copy.txt || exit 1; else echo one > one.txt; fi
"""


def test_the_retry_prompt_keeps_the_worktree_hint_and_the_error_output(repo: Akira, tmp_path: Path) -> None:
    root = repo.root
    (root / ".gitignore").write_text(".env\n")
    (root / ".env").write_text("TOKEN=1\n")  # the person's, ignored: a worktree lacks it
    agent = tmp_path / "agent.sh"
    agent.write_text(AGENT.format(logs=tmp_path))
    agent.chmod(0o755)
    repo.write_config(f"agent:\n  kind: command\n  command: {agent}\n")
    tasks(
        repo,
        "- [ ] 1. [P] Write one\n  - Exists: `one.txt`\n- [ ] 2. [P] Read the env\n  - Exists: `copy.txt`\n",
    )
    code, err = start(repo, "--parallel", "2")
    assert code == 0, err
    first = repo.state().steps["2"].attempts[0]
    hint = next(line for line in first.error.splitlines() if "this step ran in a worktree" in line)
    retried = (tmp_path / "prompt_2_2.md").read_text()
    failures = retried.split("### Failure messages", 1)[1].split("### Attempted actions", 1)[0]
    assert hint in failures, failures
    assert "cat: .env: No such file or directory" in failures


def test_a_parallel_steps_akira_workspace_is_its_folder_in_its_worktree(repo: Akira, tmp_path: Path) -> None:
    said = tmp_path / "said"
    said.mkdir()
    tell = f'echo "$AKIRA_WORKSPACE|$AKIRA_WORKTREE" > {said}/$AKIRA_STEP_ID; touch "$AKIRA_WORKSPACE/by_$AKIRA_STEP_ID"'
    tasks(
        repo,
        f"- [ ] 1. [P] One\n  - Run: `{tell}`\n  - Exists: `by_1`\n"
        f"- [ ] 2. [P] Two\n  - Run: `{tell}`\n  - Exists: `by_2`\n"
        f"- [ ] 3. Three\n  - Run: `{tell}`\n  - Exists: `by_3`\n",
    )
    code, err = start(repo, "--parallel", "2")
    assert code == 0, err
    slots = repo.root / ".akira" / "worktrees" / repo.task_id()
    for step in ("1", "2"):
        workspace, worktree = (said / step).read_text().strip().split("|")
        assert Path(workspace).parent == slots and workspace == worktree  # the workspace is the repository
    assert (said / "3").read_text().strip() == f"{repo.root}|"  # the main work tree's step
    assert all((repo.root / f"by_{n}").exists() for n in "123")  # what each wrote there landed


def test_the_reaper_knows_a_parallel_steps_command_by_its_workspace_in_a_worktree(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    slot = workspace / ".akira" / "worktrees" / "task_1" / "0"
    env = {**os.environ, "AKIRA_TASK_ID": "task_1", "AKIRA_WORKSPACE": str(slot)}
    command = [sys.executable, "-c", "import time; time.sleep(60)"]
    child = subprocess.Popen(command, env=env, start_new_session=True)
    other = subprocess.Popen(
        command, env={**env, "AKIRA_WORKSPACE": str(tmp_path / "elsewhere")}, start_new_session=True
    )
    try:
        found = marked("task_1", workspace)
        assert os.getpgid(child.pid) in found and os.getpgid(other.pid) not in found
    finally:
        for process in (child, other):
            process.kill()
            process.wait()
