"""What the morning's reader meets: the pull request's body written for the forge, the criteria
table telling a step's own check from the project's, the last line of a run with disputed
steps, a lesson never cut mid-word. Real git repositories, a fake `gh` (test_pull_requests)."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from akira_cli.cli import main
from tests.support.fake_forge import REQUIREMENTS, Forge
from tests.support.git import git, person_repository
from tests.support.review_night import Night
from tests.support.workspace import Akira

pytestmark = pytest.mark.slow

TASKS = """
# Implementation Plan

- [ ] 1. Write a
  - Run: `echo a > a.txt`
  - Exists: `a.txt`
  - _Requirements: 1.1_
- [ ] 2. Write b, c and the log
  - Run: `echo b > b.txt`
  - _Requirements: 1.2, 1.3_
"""
CONFIG = (
    "git:\n  push: origin\n  pr: ready\n  pr_tool: gh\nchecks:\n  - run: test -f a.txt\n    name: tests\n"
)


def nested_workspace(tmp_path: Path) -> tuple[Path, Akira]:
    """A repository whose akira workspace is its `tools/` folder, with a bare origin."""
    repo = tmp_path / "my repo"
    root = repo / "tools"
    assert main(["init", str(root)]) == 0
    person_repository(repo)
    akira = Akira(root, tmp_path)
    path = akira.write_task("feat", TASKS)
    (path.parent / "requirements.md").write_text(textwrap.dedent(REQUIREMENTS).lstrip())
    akira.write_config(CONFIG)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(tmp_path, "init", "-q", "--bare", str(tmp_path / "origin.git"))
    git(repo, "remote", "add", "origin", str(tmp_path / "origin.git"))
    return repo, akira


def test_the_pull_request_body_is_written_for_a_reader_of_the_forge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forge = Forge(tmp_path, monkeypatch, ("gh",))
    repo, akira = nested_workspace(tmp_path)
    done = akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "script", timeout=120)
    assert done.code == 0, done.err
    body = str(forge.calls()[1]["body"])
    assert not body.startswith("---") and "type: completion_report" not in body  # no front matter
    assert str(tmp_path) not in body and "/tmp/" not in body  # nothing of this machine's folders
    assert "git -C" not in body and "switch main" not in body and " && " not in body
    assert (
        "**Task**: tools/Done/feat/tasks.md" in body and "its task file is tools/Done/feat/tasks.md" in body
    )
    assert "From `tools/Done/feat/requirements.md`" in body and "| **1.1**" in body
    commits = git(repo, "log", "--reverse", "--format=%H", "main..akira/feat").splitlines()
    assert f"- 1: `git revert --no-edit {commits[0][:12]}^..akira/feat`" in body
    assert f"- 2: `git revert --no-edit {commits[1][:12]}^..akira/feat`" in body
    assert "**Pull request**" not in body  # it is the pull request
    # each undo line runs as written in a clone: it reverts the step and every later commit
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "-b", "akira/feat", str(tmp_path / "origin.git"), str(clone))
    undo = re.search(r"- 2: `(git revert [^`]+)`", body)
    assert undo is not None
    git(clone, "-c", "user.name=P", "-c", "user.email=p@e", *undo[1].split()[1:])
    assert not (clone / "tools" / "b.txt").exists() and (clone / "tools" / "a.txt").exists()
    # the report on this machine keeps its front matter and the commands to paste here
    report = (akira.root / "Logs" / "completion_reports" / f"{akira.task_id()}.md").read_text()
    assert report.startswith("---\ntype: completion_report\n") and "git -C" in report
    assert f"**Task**: {akira.root / 'Done' / 'feat' / 'tasks.md'}" in report


def test_a_criterion_whose_only_evidence_is_the_project_check_is_not_covered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forge = Forge(tmp_path, monkeypatch, ("gh",))
    _, akira = nested_workspace(tmp_path)
    done = akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "script", timeout=120)
    assert done.code == 0, done.err
    report = (akira.root / "Logs" / "completion_reports" / f"{akira.task_id()}.md").read_text()
    body = str(forge.calls()[1]["body"])
    for text in (report, body):
        rows = {line.split("**")[1]: line for line in text.splitlines() if line.startswith("| **")}
        assert "| 1: yes |" in rows["1.1"] and "Exists `a.txt`, project: check `tests`" in rows["1.1"]
        assert "| 2: project check only |" in rows["1.2"] and "| 2: project check only |" in rows["1.3"]
        missing = text[text.index("## Not covered by evidence") :]
        assert "**1.1**" not in missing
        for criterion in ("1.2", "1.3"):
            line = next(line for line in missing.splitlines() if line.startswith(f"- **{criterion}**"))
            assert "only the project's checks passed for step(s) 2" in line, line
    data = json.loads(akira.cli("loop", "progress", "--task-id", akira.task_id(), "--json").out)
    assert data["not_covered"] == ["1.2", "1.3"]
    rows = {row["id"]: row for row in data["criteria"]}
    first, second = rows["1.1"]["steps"][0], rows["1.2"]["steps"][0]
    assert (first["verified_by"], first["checks"], first["project_checks"]) == (
        "step check",
        ["Exists `a.txt`"],
        ["check `tests`"],
    )
    assert (second["verified"], second["verified_by"], second["checks"]) == (True, "project check only", [])
    # not reviewed: null, as `steps[].review` is, never a dash
    assert first["review"] is None and [s["review"] for s in data["steps"]] == [None, None]


@pytest.fixture
def night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Night:
    return Night(tmp_path, monkeypatch)


def test_the_last_line_says_which_steps_the_reviewer_disputes(night: Night) -> None:
    night.setup("  agent: claude\n  max_rounds: 1\n")
    night.verdicts("changes")
    code, err = night.start()
    assert code == 0, err
    last = err.strip().splitlines()[-1]
    assert "completed: all 2 steps are done, but 2 steps are DISPUTED (1, 2)" in last, last
    assert "Needs a person's look" in last


def test_one_step_is_one_step_in_the_last_line(night: Night) -> None:
    night.setup("  agent: claude\n", "- [ ] 1. Write the greeting\n  - Exists: `step_1.txt`\n")
    night.verdicts("changes", "approve")
    code, err = night.start()
    assert code == 0, err
    last = err.strip().splitlines()[-1]
    assert "completed: the one step is done" in last and "all 1 steps" not in last and "DISPUTED" not in last


def test_a_lesson_is_never_cut_mid_word(night: Night) -> None:
    night.setup("  agent: claude\n")
    night.verdicts("changes", "approve")
    assert night.start()[0] == 0
    error = night.akira.state().steps["1"].attempts[0].error
    prompt = next(p["prompt"] for p in night.prompts() if p["step"] == "2")
    line = next(line for line in prompt.splitlines() if line.startswith("- 1: worked:"))
    improve = line.split("improve: ", 1)[1].split("; lesson:", 1)[0]
    assert improve.endswith("…") and len(improve) <= 100, improve
    words = re.findall(r"[\w']+", error)
    assert all(word in words for word in re.findall(r"[\w']+", improve.split("first failed:", 1)[1]))
