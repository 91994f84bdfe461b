"""The pull request (the morning review's hand-off), in real git repositories with a bare `origin`, and a fake `gh`
and `glab` first on PATH (`tests/support/fake_forge.py`) that log their argv and body and answer as the real
ones do: `gh pr create` prints the URL, `gh pr view --json url` answers for an open pull request
and exits 1 with "no pull requests found" otherwise; glab likewise with merge requests."""

from __future__ import annotations

import json
import os
import shlex
import textwrap
from pathlib import Path

import pytest

from akira_cli.cli import main
from tests.support.fake_forge import GH, TASKS, Forge, start, workspace
from tests.support.git import git, person_repository
from tests.support.workspace import Akira


def test_completion_opens_one_pull_request_with_the_report_as_its_body(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forge = Forge(tmp_path, monkeypatch, ("gh",))
    akira = workspace(tmp_path, GH)
    code, _out, err = start(akira)
    assert code == 0, err
    url = "https://github.com/acme/app/pull/1"
    assert forge.verbs() == ["gh pr view", "gh pr create"]
    create = forge.calls()[1]
    argv = create["argv"]
    assert isinstance(argv, list)
    assert argv[:8] == [
        "pr",
        "create",
        "--base",
        "main",
        "--head",
        "akira/feat",
        "--title",
        "feat: 2/2 steps",
    ]
    assert "--draft" not in argv
    body = str(create["body"])
    assert "**Status**: ✅ COMPLETED" in body and "## Acceptance criteria" in body
    assert "- **1.3** THE system SHALL log every write: no step names it" in body
    assert "akira loop undo --task-id" in body and "**Cost (USD)**" in body
    state = akira.state()
    assert state.git is not None and state.git.pr_url == url and not state.git.pr_draft
    assert git(tmp_path / "origin.git", "rev-parse", "akira/feat") == git(akira.root, "rev-parse", "HEAD")
    assert err.strip().splitlines()[-1].endswith(f"; pull request: {url}")
    report = (akira.root / "Logs" / "completion_reports" / f"{state.task_id}.md").read_text()
    assert f"**Pull request**: {url}" in report
    status = json.loads(akira.cli("loop", "status", "--task-id", state.task_id, "--json").out)
    assert status["pull_request"] == {  # nobody follows it: only its URL is known
        "url": url,
        "checks": None,
        "round": None,
        "max_rounds": None,
        "waiting_for": None,
    }
    progress = json.loads(akira.cli("loop", "progress", "--task-id", state.task_id, "--json").out)
    assert progress["pull_request"] == url and progress["not_covered"] == ["1.3"]


@pytest.mark.slow
def test_undo_and_resume_update_the_same_pull_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forge = Forge(tmp_path, monkeypatch, ("gh",))
    akira = workspace(tmp_path, GH)
    assert start(akira)[0] == 0
    task_id = akira.task_id()
    undone = akira.cli("loop", "undo", "--task-id", task_id, "--step", "2")
    assert undone.code == 0, undone.err
    resumed = akira.cli("loop", "resume", "--task-id", task_id, timeout=120)
    assert resumed.code == 0, resumed.err
    opened = ["gh pr view", "gh pr create"]
    undo = ["gh pr view", "gh pr edit", "gh pr ready"]  # `ready --undo`: a paused run's is a draft
    resume = ["gh pr view", "gh pr edit", "gh pr ready"]  # completed again: ready again
    assert forge.verbs() == [*opened, *undo, *resume]
    edit = forge.calls()[6]
    assert edit["argv"][:5] == ["pr", "edit", "akira/feat", "--title", "feat: 2/2 steps"]  # type: ignore[index]
    assert "## Acceptance criteria" in str(edit["body"])
    assert akira.state().git.pr_url == "https://github.com/acme/app/pull/1"  # type: ignore[union-attr]
    assert resumed.err.strip().splitlines()[-1].endswith("; pull request: https://github.com/acme/app/pull/1")


@pytest.mark.slow
def test_a_run_that_needs_a_person_opens_a_draft_that_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forge = Forge(tmp_path, monkeypatch, ("gh",))
    tasks = TASKS.replace("Contains: `b.txt` `b`", "Verify: `test -f never.txt`")
    akira = workspace(tmp_path, GH + "autonomous_loop:\n  failure_threshold: 1\n", tasks)
    code, _out, err = start(akira)
    assert code == 4, err
    assert forge.verbs() == ["gh pr view", "gh pr create"]
    create = forge.calls()[1]
    assert "--draft" in create["argv"] and "feat: 1/2 steps" in create["argv"]  # type: ignore[operator]
    body = str(create["body"])
    state = akira.state()
    assert state.status == "needs_action"
    assert body.startswith(f"> **Stopped (needs_action)**: {state.stop_reason}")
    assert "STOPPED" in body and "✅ COMPLETED" not in body and "## Acceptance criteria" in body
    assert (
        state.git is not None
        and state.git.pr_draft
        and state.git.pr_url == "https://github.com/acme/app/pull/1"
    )
    assert err.strip().splitlines()[-1].endswith("; pull request: https://github.com/acme/app/pull/1")
    # a person fixes the check and resumes: the same pull request, now ready for review
    path = akira.root / "Specs" / "feat" / "tasks.md"
    path.write_text(path.read_text().replace("Verify: `test -f never.txt`", "Verify: `test -f b.txt`"))
    resumed = akira.cli("loop", "resume", "--task-id", state.task_id, "--reset-failures", timeout=120)
    assert resumed.code == 0, resumed.err
    assert forge.verbs()[2:] == ["gh pr view", "gh pr edit", "gh pr ready"]
    assert forge.calls()[4]["argv"] == ["pr", "ready", "akira/feat"]
    edited = forge.calls()[3]
    assert "feat: 2/2 steps" in edited["argv"] and not str(edited["body"]).startswith("> **Stopped")  # type: ignore[operator]
    assert akira.state().git.pr_draft is False  # type: ignore[union-attr]


@pytest.mark.slow
def test_no_gh_on_path_is_one_warning_with_the_command_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = [d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "gh").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    akira = workspace(tmp_path, GH)
    code, out, err = start(akira)
    assert code == 0, err
    said = [line for line in (out + err).splitlines() if "pull request" in line and "gh" in line]
    assert said[0].startswith("akira: warning: git.pr is ready, but gh is not on PATH")  # before the night
    lines = said[1:]
    assert len(lines) == 1, said
    assert "gh is not on PATH" in lines[0]
    command = shlex.split(lines[0].split("run: ", 1)[1])
    body_file = akira.root / ".state" / "pull_requests" / f"{akira.task_id()}.md"
    assert command == [
        "cd", str(akira.root), "&&", "gh", "pr", "create", "--base", "main", "--head", "akira/feat",
        "--title", "feat: 2/2 steps", "--body-file", str(body_file),
    ]  # fmt: skip
    assert "## Acceptance criteria" in body_file.read_text()
    assert git(tmp_path / "origin.git", "rev-parse", "akira/feat") == git(akira.root, "rev-parse", "HEAD")
    assert akira.state().git.pr_url is None  # type: ignore[union-attr]
    capsys.readouterr()
    follow = akira.run("pr", "follow", "--task-id", akira.task_id(), capsys=capsys)
    [line] = follow.err.strip().splitlines()
    assert follow.code == 1 and "has no pull request to follow" in line
    assert "gh is not on PATH" in line and "git.pr: draft and git.push set" not in line  # the cause


@pytest.mark.slow
def test_a_gitlab_remote_goes_through_glab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    forge = Forge(tmp_path, monkeypatch, ("gh", "glab"))
    akira = workspace(tmp_path, "git:\n  push: origin\n  pr: draft\n")
    remote = tmp_path / "origin.git"
    gitlab = "https://gitlab.example.com/acme/app.git"
    git(akira.root, "remote", "set-url", "origin", gitlab)
    git(akira.root, "config", f"url.{remote}.insteadOf", gitlab)  # pushes reach the bare repository
    code, _out, err = start(akira)
    assert code == 0, err
    assert forge.verbs() == ["glab mr view", "glab mr create"]
    argv = forge.calls()[1]["argv"]
    assert isinstance(argv, list)
    assert argv[:6] == ["mr", "create", "--source-branch", "akira/feat", "--target-branch", "main"]
    assert argv[-1] == "--draft" and "--yes" in argv
    assert "## Acceptance criteria" in str(forge.calls()[1]["body"])
    url = "https://gitlab.example.com/acme/app/-/merge_requests/1"
    assert akira.state().git.pr_url == url  # type: ignore[union-attr]
    assert git(remote, "rev-parse", "akira/feat") == git(akira.root, "rev-parse", "HEAD")


@pytest.mark.slow
def test_a_pull_request_without_push_is_refused_with_one_line(tmp_path: Path) -> None:
    akira = workspace(tmp_path, "git:\n  pr: draft\n")
    code, _out, err = start(akira)
    assert code == 1
    assert err.strip().splitlines() == [
        f"akira: error: {akira.root / 'config' / 'autonomous_loop.yaml'}: git.pr: draft needs git.push (the "
        "remote the pull request's branch is pushed to, such as origin); set git.push, or git.pr: off"
    ]


@pytest.mark.slow
def test_a_fleet_run_opens_its_pull_request_the_same_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's loop pushes to origin (the fleet sets git.push) and opens the pull request
    from the run's branch to the ref it cloned; `fleet status` shows its URL."""
    from tests.support.fleet import Fleet, commit_task

    forge = Forge(tmp_path, monkeypatch, ("gh",))
    origin = tmp_path / "origin"
    assert main(["init", str(origin)]) == 0
    person_repository(origin)
    Akira(origin).write_config("git:\n  pr: draft\n  pr_tool: gh\n")
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "base")
    task = commit_task(origin, "feat", textwrap.dedent(TASKS).lstrip())
    fleet = Fleet(f"sqlite:///{tmp_path / 'fleet.sqlite'}", tmp_path)
    try:
        fleet.add(task)
        fleet.worker("w1")
        rows = fleet.wait(lambda rows: rows[0]["status"] in ("completed", "failed", "needs_action"))
    finally:
        fleet.stop()
    assert rows[0]["status"] == "completed", rows[0]["message"]
    assert rows[0]["message"] == "pull request: https://github.com/acme/app/pull/1"
    assert forge.verbs() == ["gh pr view", "gh pr create"]
    argv = forge.calls()[1]["argv"]
    assert isinstance(argv, list)
    assert rows[0]["branch"] == "akira/feat"  # a fleet run's branch is a local run's, from `git.branch`
    assert argv[:6] == ["pr", "create", "--base", "main", "--head", "akira/feat"] and "--draft" in argv


@pytest.mark.slow
def test_secrets_never_reach_the_pull_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    forge = Forge(tmp_path, monkeypatch, ("gh",))
    secret = "sk-pull-request-secret-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    akira = workspace(tmp_path, GH, TASKS.replace("Write b", f"Write b with the key {secret}"))
    code, _out, err = start(akira)
    assert code == 0, err
    create = forge.calls()[1]
    assert secret not in json.dumps(create) and "Write b with the key ***" in str(create["body"])


@pytest.mark.slow
def test_a_body_longer_than_github_takes_is_cut_with_where_the_report_is(tmp_path: Path) -> None:
    from akira_cli.handoff.pull_request import MAX_BODY, fit
    from akira_cli.state.models import LoopState
    from akira_cli.workspace import Workspace

    assert main(["init", str(tmp_path / "ws")]) == 0
    ws = Workspace.resolve(tmp_path / "ws")
    state = LoopState(task_id="task_20261125_000000", task_path=str(tmp_path / "ws" / "tasks.md"))
    assert fit("short", ws, state) == "short"
    cut = fit("x" * 200_000, ws, state)
    assert len(cut) <= MAX_BODY < 65_536
    assert cut.endswith(
        "(cut: the whole report is `Logs/completion_reports/task_20261125_000000.md` in the workspace)\n"
    )


@pytest.mark.slow
def test_a_failing_gh_is_one_warning_and_never_fatal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    forge = Forge(tmp_path, monkeypatch, ("gh",))
    monkeypatch.setenv("FAKE_FAIL", "pr create")
    akira = workspace(tmp_path, GH)
    code, out, err = start(akira)
    assert code == 0, err
    assert forge.verbs() == ["gh pr view", "gh pr create"]
    lines = [line for line in (out + err).splitlines() if "pull request" in line and "gh" in line]
    assert len(lines) == 1, lines
    assert lines[0].startswith("akira: warning: no pull request: gh exited 1: HTTP 401: Bad credentials")
    command = shlex.split(lines[0].split("; run: ", 1)[1])
    assert command[:4] == ["cd", str(akira.root), "&&", "gh"] and "--body-file" in command
    assert akira.state().status == "completed" and akira.state().git.pr_url is None  # type: ignore[union-attr]
    assert git(tmp_path / "origin.git", "rev-parse", "akira/feat") == git(akira.root, "rev-parse", "HEAD")


@pytest.mark.slow
def test_a_body_that_cannot_be_saved_is_one_warning_never_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forge = Forge(tmp_path, monkeypatch, ("gh",))
    akira = workspace(tmp_path, GH)
    (akira.root / ".state").mkdir(exist_ok=True)
    (akira.root / ".state" / "pull_requests").write_text("a file where the folder goes")
    code, out, err = start(akira)
    assert code == 0, err
    lines = [line for line in (out + err).splitlines() if "no pull request" in line]
    assert len(lines) == 1 and "pull_requests" in lines[0], lines
    assert forge.calls() == [] and akira.state().status == "completed"
