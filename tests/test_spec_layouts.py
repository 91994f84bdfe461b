"""The spec tools' own layouts, worked in place in a real git repository, from any subfolder
(the task-file format), with a command agent that really edits files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from akira_cli.state.models import LoopState
from tests.support.workspace import akira, shared_section

pytestmark = pytest.mark.slow

REQUIREMENTS = """\
# Requirements Document

### Requirement 1: Health

**User Story:** As an operator, I want a health endpoint, so that I can monitor the service.

#### Acceptance Criteria

1. WHEN the service runs THEN the health module SHALL report ok
"""
DESIGN = """\
# Design

## Storage layer

Tables and migrations.

## Health endpoint

The health module exposes `status()` returning "ok"; the endpoint wraps it.
"""
TASKS = """\
# Implementation Plan

## Phase 1: Service

- [ ] 1. Health service
  - [ ] 1.1 Add the health endpoint module
    - Create health.py with a status function
    - _Requirements: 1.1_
  - [ ] 1.2 Write the health test
    - Verify: the test passes on a clean checkout
    - Exists: `test_health.py`
- [ ] 2. Checkpoint - Ensure all tests pass, ask the user if questions arise.
"""
AGENT = """\
cat > "{prompts}/$AKIRA_STEP_ID.md"
case "$AKIRA_STEP_ID" in
  1.1) printf 'def status():\\n    return "ok"\\n' > health.py ;;
  1.2) printf 'import health\\nassert health.status() == "ok"\\n' > test_health.py ;;
esac
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def repository(tmp_path: Path, spec_dir: str, marker: str | None = None) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    (repo / "README.md").write_text("# repo\n")
    if marker:
        (repo / marker).mkdir()
        (repo / marker / "memory.md").write_text("x\n")
    spec = repo / spec_dir
    spec.mkdir(parents=True)
    (spec / "requirements.md").write_text(REQUIREMENTS)
    (spec / "design.md").write_text(DESIGN)
    (spec / "tasks.md").write_text(TASKS)
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (tmp_path / "agent.sh").write_text(AGENT.format(prompts=prompts))
    (repo / "config").mkdir()
    (repo / "config" / "autonomous_loop.yaml").write_text(
        f"agent:\n  command: bash {tmp_path / 'agent.sh'}\nchecks:\n  - run: python3 test_health.py\n    name: tests\n"
        + shared_section(tmp_path)  # the agent and the prompts it keeps lie in the test's folder
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "spec")
    return repo, spec / "tasks.md"


def test_a_kiro_spec_completes_in_place_from_a_subfolder(tmp_path: Path) -> None:
    repo, task = repository(tmp_path, ".kiro/specs/health")
    result = akira(repo / "src", "loop", "start", "--task", "../.kiro/specs/health/tasks.md")
    assert result.returncode == 0, result.stderr
    assert "project check `tests`" in result.stderr  # red before the first step: advisory
    assert not (repo / "src" / ".state").exists() and (repo / ".state").is_dir()
    assert task.read_text() == TASKS.replace("[ ]", "[x]")  # still in place, all ticked
    assert not any((repo / "Done").iterdir())  # made before the first step, so that it is read-only there
    [state_file] = (repo / ".state" / "archive").glob("autonomous_loop_*.json")
    state = LoopState.model_validate_json(state_file.read_bytes())
    done = {s.step_id: (s.done_by, s.verified) for s in state.completed_steps}
    assert done == {"1.1": ("akira", False), "1.2": ("akira", True), "2": ("akira", True)}
    prompt = (tmp_path / "prompts" / "1.1.md").read_text()
    assert "Section: Phase 1: Service" in prompt and "Part of: 1. Health service" in prompt
    assert "1.1: WHEN the service runs THEN the health module SHALL report ok" in prompt
    assert "## Health endpoint" in prompt and "Storage layer" not in prompt
    assert "`.kiro/specs/health/design.md`" in prompt
    assert not (tmp_path / "prompts" / "2.md").exists()  # a checkpoint runs the checks, not the agent
    [report] = (repo / "Logs" / "completion_reports").glob("*.md")
    text = report.read_text()
    assert "verified by checks: 2; unverified: 1" in text
    assert "1.1: Add the health endpoint module (unverified" in text
    status = akira(repo / "src", "loop", "status", "--task-id", "health", "--json")
    assert json.loads(status.stdout)["verified"] == 2


def test_a_spec_kit_spec_is_worked_in_place(tmp_path: Path) -> None:
    repo, task = repository(tmp_path, "specs/001-health", marker=".specify")
    result = akira(repo, "loop", "start", "--task", "specs/001-health/tasks.md")
    assert result.returncode == 0, result.stderr
    assert task.read_text() == TASKS.replace("[ ]", "[x]") and (repo / ".state").is_dir()


def test_commands_find_the_workspace_upward_and_never_nest_one(tmp_path: Path) -> None:
    repo, _ = repository(tmp_path, ".kiro/specs/health")
    deep = repo / "src" / "pkg"
    deep.mkdir()
    status = akira(deep, "loop", "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["loops"] == []
    assert not (deep / ".state").exists() and not (repo / "src" / ".state").exists()
