"""Done means done (evidence, not claims): an agent's exit 0 is a claim. Real loops, real command
agents (bash scripts) that do or do not change files."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from akira_cli.cli import main
from akira_cli.config import load_config
from tests.support.workspace import Akira

pytestmark = pytest.mark.slow


def agent(akira: Akira, script: str, extra: str = "") -> None:
    path = akira.root / "agent.sh"
    path.write_text(textwrap.dedent(script).lstrip())
    akira.write_config(f"agent:\n  command: bash {path}\n{extra}")


def test_an_agent_that_changes_nothing_makes_no_progress(akira: Akira) -> None:
    agent(akira, "echo 'All done! I implemented everything.'\n")
    task = akira.write_task("lazy", "- [ ] 1. Add a health check endpoint\n  - Return 200 on /health\n")
    result = akira.cli("loop", "start", "--task", str(task))
    assert result.code == 4, result.err
    state = akira.state()
    assert state.status == "needs_action" and not state.completed_steps
    attempt = state.steps["1"].attempts[0]
    assert attempt.outcome == "failure" and "no progress" in attempt.error
    assert "- [x] 1." not in task.read_text()


def test_a_change_completes_a_step_without_checks_as_unverified(akira: Akira) -> None:
    agent(akira, "echo ok > health.py\n")
    task = akira.write_task("work", "- [ ] 1. Add a health check endpoint\n")
    assert akira.cli("loop", "start", "--task", str(task)).code == 0
    [done] = akira.state().completed_steps
    assert (done.step_id, done.done_by, done.verified) == ("1", "akira", False)
    report = next((akira.root / "Logs" / "completion_reports").glob("*.md")).read_text()
    assert "unverified" in report.lower()


def test_a_checkpoint_runs_the_project_checks_not_the_agent(akira: Akira) -> None:
    agent(akira, "touch agent_ran\n", "checks:\n  - run: test -f tests_pass\n    name: tests\n")
    task = akira.write_task(
        "cp",
        "- [ ] 1. Build\n  - Run: `touch tests_pass`\n"
        "- [ ] 2. Checkpoint - Ensure all tests pass, ask the user if questions arise.\n",
    )
    assert akira.cli("loop", "start", "--task", str(task)).code == 0
    assert not (akira.root / "agent_ran").exists()
    done = {s.step_id: s.verified for s in akira.state().completed_steps}
    assert done == {"1": True, "2": True}


def test_a_checkpoint_without_project_checks_asks_for_them(akira: Akira) -> None:
    agent(akira, "touch agent_ran\n")
    task = akira.write_task(
        "cp", "- [ ] 1. Checkpoint\n  - Ensure all tests pass, ask the user if questions arise.\n"
    )
    result = akira.cli("loop", "start", "--task", str(task))
    assert result.code == 4 and "checks:" in result.err and "checkpoint" in result.err
    assert akira.state().status == "needs_action" and not (akira.root / "agent_ran").exists()


def test_require_checks_fails_a_step_without_one(akira: Akira) -> None:
    agent(akira, "echo ok > out.txt\n", "evaluation:\n  require_checks: true\n")
    task = akira.write_task("strict", "- [ ] 1. Write out.txt\n")
    assert akira.cli("loop", "start", "--task", str(task)).code == 4
    attempt = akira.state().steps["1"].attempts[0]
    assert attempt.outcome == "failure" and "no check" in attempt.error


def test_a_script_step_without_checks_completes_unverified(akira: Akira) -> None:
    task = akira.write_task("ops", "- [ ] 1. Announce\n  - Run: `echo deploying`\n")
    assert akira.cli("loop", "start", "--task", str(task)).code == 0
    [done] = akira.state().completed_steps
    assert not done.verified
    progress = akira.cli("loop", "progress", "--task-id", akira.task_id(), "--json").out
    assert '"unverified": 1' in progress


def test_a_red_baseline_makes_the_project_checks_advisory(akira: Akira) -> None:
    akira.write_config("checks:\n  - run: test -f green\n    name: suite\n")
    task = akira.write_task("red", "- [ ] 1. Make a\n  - Run: `touch a`\n  - Exists: `a`\n")
    result = akira.cli("loop", "start", "--task", str(task))
    assert result.code == 0, result.err
    assert "project check `suite` (exited 1) already fails before the first step" in result.err
    state = akira.state()
    assert state.advisory_checks
    evaluation = state.steps["1"].attempts[0].evaluation
    assert evaluation is not None
    assert [(c.name, c.passed, c.advisory) for c in evaluation.checks][-1] == ("check `suite`", False, True)


def test_a_green_baseline_keeps_the_project_checks_gating(akira: Akira) -> None:
    akira.write_config("checks:\n  - run: test ! -f broken\n    name: suite\n")
    task = akira.write_task("green", "- [ ] 1. Break it\n  - Run: `touch broken`\n")
    assert akira.cli("loop", "start", "--task", str(task)).code == 4
    assert not akira.state().advisory_checks


@pytest.mark.parametrize(
    ("files", "proposed"),
    [
        ({"pyproject.toml": "[project]\nname='x'\n", "tests/test_x.py": ""}, "python -m pytest -q"),
        ({"package.json": '{"scripts": {"test": "vitest"}}'}, "npm test --silent"),
        ({"Cargo.toml": "[package]\n"}, "cargo test -q"),
        ({"go.mod": "module x\n"}, "go test ./..."),
    ],
)
def test_init_proposes_the_project_checks_commented(
    tmp_path: Path, files: dict[str, str], proposed: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert main(["init", str(tmp_path)]) == 0
    config = (tmp_path / "config" / "autonomous_loop.yaml").read_text()
    assert f"#   - run: {proposed}\n" in config
    assert load_config(tmp_path, environ={}).checks.commands == []  # proposed, not in force until confirmed
