"""The retry prompt keeps the whole of a failure: a check's output tail and the worktree hint on
lines of their own reach the next attempt, not only the failure's telling line. A real parallel
run in a git repository, with a command agent that logs its prompts."""

from __future__ import annotations

from pathlib import Path

from conftest import Akira
from test_git_runs import repo
from test_parallel import start, tasks

_ = repo  # the fixture
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
