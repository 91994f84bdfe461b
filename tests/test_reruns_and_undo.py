"""A spec started again once it is done, and `loop undo` on what a run did not commit or had
pushed: real repositories, a real `akira` process, a bare `origin` and the suite's
fake `gh` (tests/support/fake_forge.py)."""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
from pathlib import Path

import pytest

from akira_cli import api
from akira_cli.mcp_server.calls import answer
from tests.support.fake_forge import GH, Forge, start, workspace
from tests.support.git import git
from tests.support.mcp import call, over_stdio
from tests.support.spec_moves import TASKS, ended, repository, running

pytestmark = pytest.mark.timeout(900)
"""Each test runs several real akira processes: on a loaded machine they take minutes."""


def run_akira(repo: Path, *args: str) -> tuple[int, str, str]:
    with running(repo, *args) as process:
        out, err = process.communicate(timeout=300)
    return process.returncode, out, err


def state_files(repo: Path) -> list[Path]:
    return sorted((repo / ".state").glob("**/autonomous_loop_*.json"))


def completed_kiro_run(tmp_path: Path) -> tuple[Path, Path]:
    repo, spec, gate = repository(tmp_path, "kiro")
    (gate / "go").touch()  # step 1 does not wait
    with running(repo, "loop", "start", "--task", str(spec / "tasks.md")) as process:
        code, err = ended(process)
    assert code == 0, err
    assert (spec / "tasks.md").read_text() == TASKS.replace("[ ]", "[x]")
    return repo, spec


def test_starting_a_completed_spec_again_says_nothing_to_do_and_makes_no_branch(tmp_path: Path) -> None:
    repo, _ = completed_kiro_run(tmp_path)
    branches, head, states = git(repo, "branch", "--list"), git(repo, "rev-parse", "HEAD"), state_files(repo)
    code, out, err = run_akira(repo, "loop", "start", "--task", ".kiro/specs/calc/tasks.md")
    assert code == 0, err
    assert out == "" and err.splitlines() == [
        "akira: nothing to do: every step of .kiro/specs/calc/tasks.md is ticked"
    ]
    assert git(repo, "branch", "--list") == branches and git(repo, "rev-parse", "HEAD") == head
    assert state_files(repo) == states  # no new loop, no report of no work
    assert len(list((repo / "Logs" / "completion_reports").glob("*.md"))) == 1
    # the run API (and the MCP tool on it) says the same, and starts nothing either
    said = api.start(repo, ".kiro/specs/calc/tasks.md")
    assert said.line().startswith("nothing to do: every step of ")  # the path as shown from here
    assert said.line().endswith("/.kiro/specs/calc/tasks.md is ticked")

    async def start_loop() -> tuple[bool, str, object]:
        async with over_stdio(repo) as client:
            return await call(client, "start_loop", task=".kiro/specs/calc/tasks.md")

    error, text, _ = asyncio.run(start_loop())  # refused: there is no run to poll
    assert error and text == "akira: error: nothing to do: every step of .kiro/specs/calc/tasks.md is ticked"
    assert git(repo, "branch", "--list") == branches and state_files(repo) == states


def test_undo_of_a_step_an_earlier_run_did_is_refused_and_names_the_run_that_has_its_commit(
    tmp_path: Path,
) -> None:
    repo, spec = completed_kiro_run(tmp_path)
    [first] = state_files(repo)
    first_id = first.stem.removeprefix("autonomous_loop_")
    tasks = spec / "tasks.md"
    tasks.write_text(tasks.read_text() + "- [ ] 4. Div\n  - Run: `echo d > div.py`\n  - Exists: `div.py`\n")
    git(repo, "commit", "-qam", "a fourth step")
    code, _, err = run_akira(repo, "loop", "start", "--task", ".kiro/specs/calc/tasks.md")
    assert code == 0, err
    assert git(repo, "branch", "--show-current") == "akira/calc-2"
    before = (git(repo, "rev-parse", "HEAD"), tasks.read_text(), git(repo, "status", "--porcelain"))
    code, out, err = run_akira(repo, "loop", "undo", "--task-id", "calc", "--step", "2")
    assert code == 1 and out == ""
    [line] = err.splitlines()
    assert f"step 2 has no commit on akira/calc-2 to revert (done by the earlier run {first_id}" in line, line
    assert (
        f"its commit is in {first_id} on akira/calc: run 'akira loop undo --task-id {first_id} --step 2'"
        in line
    )
    assert (git(repo, "rev-parse", "HEAD"), tasks.read_text(), git(repo, "status", "--porcelain")) == before
    # the MCP tool undo_step: a tool error of the same line, naming the tool to call instead

    async def undo_step() -> tuple[bool, str, object]:
        async with over_stdio(repo) as client:
            return await call(client, "undo_step", task_id="calc", step="2")

    error, said, _ = asyncio.run(undo_step())
    assert error and "\n" not in said
    assert said.startswith(line.split(": run 'akira loop undo")[0])
    assert said.endswith(
        f"its commit is in {first_id} on akira/calc: call undo_step with task_id {first_id}, step 2"
    )
    assert (git(repo, "rev-parse", "HEAD"), tasks.read_text(), git(repo, "status", "--porcelain")) == before
    first.unlink()  # no run remembers the step's commit: this run's own first commit is named
    [second] = [path.stem.removeprefix("autonomous_loop_") for path in state_files(repo)]
    code, _, err = run_akira(repo, "loop", "undo", "--task-id", "calc", "--step", "2")
    assert code == 1 and err.splitlines()[-1].endswith(
        f"; this run's commits start at step 4: run 'akira loop undo --task-id {second} --step 4'"
    )


def test_undo_of_a_pushed_run_pushes_the_reverts_and_updates_the_pull_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forge = Forge(tmp_path, monkeypatch, ("gh",))
    akira = workspace(tmp_path, GH + "autonomous_loop:\n  archive_state_file: false\n")
    code, _, err = start(akira)
    assert code == 0, err
    origin = tmp_path / "origin.git"
    task_id = akira.task_id()
    undone = akira.cli("loop", "undo", "--task-id", task_id, "--step", "2", timeout=300)
    assert undone.code == 0, undone.err
    url = "https://github.com/acme/app/pull/1"
    assert undone.err.splitlines()[-1].startswith(
        f"akira: reverted step(s) 2 on akira/feat; pushed to origin; pull request updated: {url}; "
    )
    # the remote has the reverts: the pull request shows what the branch now holds
    assert git(origin, "rev-parse", "akira/feat") == git(akira.root, "rev-parse", "HEAD")
    reverts = git(akira.root, "log", "-2", "--format=%s").splitlines()
    assert reverts == ['Revert "2 Write b"', 'Revert "feat: done"']
    edit = forge.calls()[-2]
    assert edit["argv"][:3] == ["pr", "edit", "akira/feat"] and "feat: 1/2 steps" in edit["argv"]
    body = str(edit["body"])
    assert "step(s) 2 undone by a person" in body.split("\n", 1)[0]  # why it stopped, at the top
    assert forge.verbs()[-1] == "gh pr ready" and forge.calls()[-1]["argv"] == [
        "pr",
        "ready",
        "akira/feat",
        "--undo",
    ]
    prs = json.loads((tmp_path / "prs.json").read_text())
    assert prs["akira/feat"]["draft"] is True  # the run is paused: its pull request is a draft again
    state = akira.state()
    assert state.git is not None and state.git.pr_draft and state.status == "paused"
    # resume does the step again, pushes, and marks the same pull request ready
    resumed = akira.cli("loop", "resume", "--task-id", task_id, timeout=300)
    assert resumed.code == 0, resumed.err
    assert git(origin, "rev-parse", "akira/feat") == git(akira.root, "rev-parse", "HEAD")
    assert json.loads((tmp_path / "prs.json").read_text())["akira/feat"]["draft"] is False


def test_a_rejected_push_of_the_reverts_comes_back_in_the_answer_not_on_a_servers_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Under `akira mcp` nobody reads the server's stderr: the warning is in `undo`'s answer
    (the tool's structured result), and the CLI prints it, with the push to paste."""
    Forge(tmp_path, monkeypatch, ("gh",))
    akira = workspace(tmp_path, GH + "autonomous_loop:\n  archive_state_file: false\n")
    code, _, err = start(akira)
    assert code == 0, err
    origin = tmp_path / "origin.git"
    hook = origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nprintf 'the remote says no\\033]0;pwned\\007\\n' >&2\nexit 1\n")
    hook.chmod(0o755)
    pushed = git(origin, "rev-parse", "akira/feat")
    task_id = akira.task_id()
    undone = akira.cli("loop", "undo", "--task-id", task_id, "--step", "2", timeout=300)
    assert undone.code == 0, undone.err
    warning, last = undone.err.splitlines()[-2:]
    assert warning.startswith("akira: warning: the reverts were not pushed to origin: ")
    again = f"push them with 'git -C {akira.root} push origin akira/feat:akira/feat'"
    assert warning.endswith(again) and "the remote says no" in warning, warning
    assert "\x1b" not in undone.err and "\\x1b]0;pwned\\x07" in warning  # escaped, never sent raw
    assert last.startswith("akira: reverted step(s) 2 on akira/feat; to do them again, run: ")
    capfd.readouterr()
    said = api.undo(akira.root, task_id, "1")  # as the MCP tool undo_step calls it
    assert said.steps == ["1"] and len(said.warnings) == 1 and said.warnings[0].endswith(again)
    assert capfd.readouterr().err == ""  # nothing on the server's stderr
    logged = [e for e in akira.events() if e.type == "warning" and "not pushed" in e.data["message"]]
    assert len(logged) == 2 and logged[-1].data["message"] == said.warnings[0]
    tool = answer(lambda: said)
    assert not tool.is_error and tool.structured_content == said.data()
    assert tool.structured_content is not None and tool.structured_content["warnings"] == said.warnings
    assert git(origin, "rev-parse", "akira/feat") == pushed  # the remote kept what it had
    hook.unlink()  # the command the warning gives, pasted, pushes the reverts
    pasted = again.removeprefix("push them with '").removesuffix("'")
    subprocess.run(shlex.split(pasted), check=True, capture_output=True)
    assert git(origin, "rev-parse", "akira/feat") == git(akira.root, "rev-parse", "HEAD")
