"""The edges of git-native runs a new user meets: a step that changes no file
still gets its commit, akira's reports never show in `git status`, and `loop undo` leaves the
folders an earlier step made. Real repositories, a Kiro spec worked in place, and a command
agent (a shell script that acts by step id)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.support.git import git, kiro_repo, trailers
from tests.support.workspace import akira

KIRO_TASKS = """\
# Implementation Plan

- [ ] 1. Write the module
  - Exists: `mod.py`
- [ ] 2. Run the tests
  - Verify: `test -f mod.py`
"""


def subjects(root: Path, rev: str) -> list[str]:
    return git(root, "log", "--reverse", "--format=%s", rev).splitlines()


def archived_state(root: Path) -> dict[str, object]:
    import json

    [path] = (root / ".state" / "archive").glob("autonomous_loop_*.json")
    return dict(json.loads(path.read_text()))


@pytest.mark.slow
def test_a_step_that_changes_no_file_gets_its_tick_committed_and_the_merge_works(tmp_path: Path) -> None:
    root = kiro_repo(tmp_path, KIRO_TASKS)
    started = akira(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md")
    assert started.returncode == 0, started.stderr
    assert subjects(root, "main..akira/feat") == ["1 Write the module", "2 Run the tests"]
    state = archived_state(root)
    assert trailers(root, "HEAD") == {
        "Akira-Task": str(state["task_id"]),
        "Akira-Step": "2",
        "Akira-Verified": "yes",
        "Akira-Checks": "Verify `test -f mod.py`",
    }
    assert git(root, "show", "--name-only", "--format=", "HEAD") == ".kiro/specs/feat/tasks.md"
    assert "- [x] 2. Run the tests" in git(root, "show", "HEAD:.kiro/specs/feat/tasks.md")
    completed = state["completed_steps"]
    assert isinstance(completed, list) and all(step["commit"] for step in completed)
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""  # the tick is committed
    # the review commands the report prints paste as they are
    [report] = (root / "Logs" / "completion_reports").glob("*.md")
    [merge] = [line for line in report.read_text().splitlines() if "merge --no-ff" in line]
    merged = subprocess.run(["bash", "-c", merge], capture_output=True, text=True, timeout=60)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert git(root, "branch", "--show-current") == "main"
    assert "- [x] 2. Run the tests" in (root / ".kiro" / "specs" / "feat" / "tasks.md").read_text()


@pytest.mark.slow
def test_undo_of_a_tick_only_step_reverts_its_commit_and_resume_commits_it_again(tmp_path: Path) -> None:
    root = kiro_repo(tmp_path, KIRO_TASKS, "autonomous_loop:\n  archive_state_file: false\n")
    assert akira(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md").returncode == 0
    task_id = re.sub(r"\.json$", "", next((root / ".state").glob("autonomous_loop_*.json")).name)
    task_id = task_id.removeprefix("autonomous_loop_")
    undone = akira(root, "loop", "undo", "--task-id", task_id, "--step", "2")
    assert undone.returncode == 0, undone.stderr
    assert subjects(root, "main..HEAD")[-1] == 'Revert "2 Run the tests"'
    assert "- [ ] 2. Run the tests" in (root / ".kiro" / "specs" / "feat" / "tasks.md").read_text()
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""
    resumed = akira(root, "loop", "resume", "--task-id", task_id)
    assert resumed.returncode == 0, resumed.stderr
    assert subjects(root, "main..HEAD")[-1] == "2 Run the tests"
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""


FAILING_LAST = """\
- [ ] 1. Write the module
  - Exists: `mod.py`
- [ ] 2. Fail
  - Verify: `test -f never.txt`
"""


@pytest.mark.slow
def test_a_persons_tick_that_no_step_commit_carries_gets_a_last_ticks_commit(tmp_path: Path) -> None:
    root = kiro_repo(tmp_path, FAILING_LAST, "reflection:\n  max_iterations: 1\n")
    escalated = akira(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md")
    assert escalated.returncode == 4, escalated.stderr
    task = root / ".kiro" / "specs" / "feat" / "tasks.md"
    task.write_text(re.sub(r"- \[.\] 2\. Fail", "- [x] 2. Fail", task.read_text()))  # the person's call
    task_id = next((root / ".state").glob("autonomous_loop_*.json")).stem.removeprefix("autonomous_loop_")
    resumed = akira(root, "loop", "resume", "--task-id", task_id)
    assert resumed.returncode == 0, resumed.stderr
    assert subjects(root, "main..HEAD") == ["1 Write the module", "feat: ticks"]
    assert trailers(root, "HEAD") == {"Akira-Task": task_id}
    assert "- [x] 2. Fail" in git(root, "show", "HEAD:.kiro/specs/feat/tasks.md")
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""


@pytest.mark.slow
def test_git_status_stays_quiet_after_a_completed_and_an_escalated_run(tmp_path: Path) -> None:
    completed = kiro_repo(tmp_path / "a", KIRO_TASKS)
    done = akira(completed, "loop", "start", "--task", ".kiro/specs/feat/tasks.md")
    assert done.returncode == 0, done.stderr
    assert list((completed / "Logs").rglob("*.md"))  # the reports are there, git does not show them
    assert git(completed, "status", "--porcelain") == ""
    escalated = kiro_repo(tmp_path / "b", FAILING_LAST, "reflection:\n  max_iterations: 1\n")
    failed = akira(escalated, "loop", "start", "--task", ".kiro/specs/feat/tasks.md")
    assert failed.returncode == 4, failed.stderr
    assert list((escalated / "Needs_Action").glob("escalation_*.md"))
    assert git(escalated, "status", "--porcelain") == ""  # no report, no `[-]` left behind
    assert "- [ ] 2. Fail" in (escalated / ".kiro" / "specs" / "feat" / "tasks.md").read_text()
    exclude = (escalated / ".git" / "info" / "exclude").read_text().splitlines()
    assert "/Logs/completion_reports/" in exclude and "/Needs_Action/escalation_*.md" in exclude


@pytest.mark.slow
def test_a_repositorys_own_logs_folder_still_shows(tmp_path: Path) -> None:
    root = kiro_repo(tmp_path, KIRO_TASKS)
    assert akira(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md").returncode == 0
    (root / "Logs" / "server.log").write_text("the project's own log\n")
    (root / "Needs_Action" / "todo.md").parent.mkdir(exist_ok=True)
    (root / "Needs_Action" / "todo.md").write_text("the person's note\n")
    assert git(root, "status", "--porcelain", "--untracked-files=all").splitlines() == [
        "?? Logs/server.log",
        "?? Needs_Action/todo.md",
    ]


FOLDER_STEPS = """\
- [ ] 1. Make the tests folder
  - Run: `mkdir -p tests`
- [ ] 2. Write a
  - Run: `echo a > tests/a.txt`
  - Exists: `tests/a.txt`
- [ ] 3. Write b
  - Run: `echo b > tests/b.txt`
  - Exists: `tests/b.txt`
"""


@pytest.mark.slow
def test_undo_keeps_a_folder_an_earlier_step_made(tmp_path: Path) -> None:
    root = kiro_repo(tmp_path, FOLDER_STEPS, "autonomous_loop:\n  archive_state_file: false\n")
    assert akira(root, "loop", "start", "--task", ".kiro/specs/feat/tasks.md").returncode == 0
    task_id = next((root / ".state").glob("autonomous_loop_*.json")).stem.removeprefix("autonomous_loop_")
    undone = akira(root, "loop", "undo", "--task-id", task_id, "--step", "2")
    assert undone.returncode == 0, undone.stderr
    assert not (root / "tests" / "a.txt").exists() and not (root / "tests" / "b.txt").exists()
    assert (root / "tests").is_dir()  # step 1 made it, and step 1 is kept
    resumed = akira(root, "loop", "resume", "--task-id", task_id)
    assert resumed.returncode == 0, resumed.stderr
    assert subjects(root, "main..HEAD")[-2:] == ["2 Write a", "3 Write b"]
    assert (root / "tests" / "a.txt").read_text() == "a\n"
