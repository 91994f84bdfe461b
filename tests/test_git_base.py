"""Where a task branch starts: a run leaves HEAD on its task branch, so the next
night's run would start from it. `git.base` names where every task branch starts and where its
pull request points; without it, starting on an earlier run's branch is a warning that names it.
Real repositories with two Kiro specs, a bare `origin` and the suite's fake `gh`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_forge import Forge
from tests.support.git import first_commit, git
from tests.support.workspace import shared_section

pytestmark = pytest.mark.timeout(900)
"""Each test runs several real akira processes: on a loaded machine they take minutes."""


def spec(feature: str) -> str:
    return f"# Plan\n\n- [ ] 1. Write {feature}\n  - Run: `echo {feature} > {feature}.py`\n  - Exists: `{feature}.py`\n"


def repository(tmp_path: Path, config: str = "") -> Path:
    """`main` with two specs, tools and net, and a bare origin."""
    repo = tmp_path / "repo"
    for feature in ("tools", "net"):
        folder = repo / ".kiro" / "specs" / feature
        folder.mkdir(parents=True)
        (folder / "tasks.md").write_text(spec(feature))
    (repo / "notes.txt").write_text("the person's notes\n")
    (repo / "config").mkdir()
    (repo / "config" / "autonomous_loop.yaml").write_text(
        f"agent:\n  kind: script\n{config}" + shared_section(tmp_path)
    )
    first_commit(repo)
    git(tmp_path, "init", "-q", "--bare", str(tmp_path / "origin.git"))
    git(repo, "remote", "add", "origin", str(tmp_path / "origin.git"))
    return repo


def start(repo: Path, feature: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "AKIRA_ROOT"}
    return subprocess.run(
        [sys.executable, "-m", "akira_cli", "loop", "start", "--task", f".kiro/specs/{feature}/tasks.md"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_run_started_on_an_earlier_runs_branch_warns_and_names_git_base(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    assert start(repo, "tools").returncode == 0
    assert git(repo, "branch", "--show-current") == "akira/tools"  # a run leaves HEAD on its branch
    night = start(repo, "net")
    assert night.returncode == 0, night.stderr
    [warning] = [line for line in night.stderr.splitlines() if "warning" in line]
    assert warning == (
        "akira: warning: HEAD is on akira/tools, an earlier run's task branch: the new task branch "
        "starts from it and carries its commits; to start every run from main, set git.base: main "
        "in config/autonomous_loop.yaml"
    )
    assert git(repo, "log", "--format=%s", "main..akira/net").splitlines() == ["1 Write net", "1 Write tools"]
    (repo / ".kiro" / "specs" / "db").mkdir()
    (repo / ".kiro" / "specs" / "db" / "tasks.md").write_text(spec("db"))
    third = start(repo, "db")  # on akira/net, which started on akira/tools: the advice is still main
    assert third.returncode == 0, third.stderr
    [warning] = [line for line in third.stderr.splitlines() if "warning" in line]
    assert "HEAD is on akira/net" in warning and "set git.base: main in" in warning, warning


def test_git_base_starts_every_task_branch_there_and_points_its_pull_request_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forge = Forge(tmp_path, monkeypatch, ("gh",))
    repo = repository(tmp_path, "git:\n  base: main\n  push: origin\n  pr: draft\n  pr_tool: gh\n")
    first = start(repo, "tools")
    assert first.returncode == 0, first.stderr
    night = start(repo, "net")
    assert night.returncode == 0, night.stderr
    assert "warning" not in night.stderr
    assert git(repo, "branch", "--show-current") == "akira/net"
    assert git(repo, "log", "--format=%s", "main..akira/net").splitlines() == ["1 Write net"]
    assert not (repo / "tools.py").exists() and (repo / "net.py").read_text() == "net\n"
    creates = [call["argv"] for call in forge.calls() if call["argv"][:2] == ["pr", "create"]]  # type: ignore[index]
    assert [argv[2:6] for argv in creates] == [  # type: ignore[index]
        ["--base", "main", "--head", "akira/tools"],
        ["--base", "main", "--head", "akira/net"],
    ]
    [report] = [
        p for p in (repo / "Logs" / "completion_reports").glob("*.md") if "akira/net" in p.read_text()
    ]
    assert f"git -C {repo} switch main && git -C {repo} merge --no-ff akira/net" in report.read_text()


def test_git_base_never_loses_a_change_the_switch_would_overwrite(tmp_path: Path) -> None:
    repo = repository(tmp_path, "git:\n  base: main\n")
    assert start(repo, "tools").returncode == 0
    (repo / "notes.txt").write_text("changed on akira/tools\n")
    git(repo, "commit", "-qam", "notes changed on the task branch")
    (repo / "notes.txt").write_text("the person's work in progress\n")  # uncommitted
    head = git(repo, "rev-parse", "HEAD")
    night = start(repo, "net")
    assert night.returncode == 1
    [line] = night.stderr.splitlines()
    assert line.startswith("akira: error: uncommitted changes in notes.txt: ")
    assert f"'git -C {repo} stash'" in line
    assert (repo / "notes.txt").read_text() == "the person's work in progress\n"
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "branch", "--show-current") == "akira/tools"
    assert git(repo, "branch", "--list", "akira/net") == ""


def test_a_git_base_that_names_no_branch_is_one_line_before_anything_is_written(tmp_path: Path) -> None:
    repo = repository(tmp_path, "git:\n  base: develop\n")
    night = start(repo, "net")
    assert night.returncode == 1
    assert night.stderr.splitlines() == [
        f"akira: error: git.base names develop, which is not a branch of {repo} (nor of origin); its "
        "branches: main; fix git.base in config/autonomous_loop.yaml"
    ]
    assert not (repo / ".state").exists() and git(repo, "branch", "--show-current") == "main"


def test_a_spec_committed_only_on_the_current_branch_is_refused_before_the_switch_would_take_it(
    tmp_path: Path,
) -> None:
    repo = repository(tmp_path, "git:\n  base: main\n")
    assert start(repo, "tools").returncode == 0
    folder = repo / ".kiro" / "specs" / "calc"
    folder.mkdir()
    (folder / "tasks.md").write_text(spec("calc"))
    git(repo, "add", ".kiro/specs/calc")
    git(repo, "commit", "-qm", "the calc spec, on akira/tools only")
    head = git(repo, "rev-parse", "HEAD")
    night = start(repo, "calc")
    assert night.returncode == 1
    assert night.stderr.splitlines() == [
        "akira: error: .kiro/specs/calc/tasks.md is committed on akira/tools, and git.base main does "
        "not have it: a task branch from main would start without it; merge akira/tools into main "
        'first, or set git.base: "" in config/autonomous_loop.yaml to start from akira/tools'
    ]
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "branch", "--show-current") == "akira/tools"
    assert (folder / "tasks.md").read_text() == spec("calc")
    assert git(repo, "branch", "--list", "akira/calc") == ""
    assert len(list((repo / ".state").glob("autonomous_loop_*.json"))) == 0  # the tools run is archived
    # a spec not committed yet goes along to the new branch
    git(repo, "rm", "-q", "--cached", "-r", ".kiro/specs/calc")
    git(repo, "commit", "-qm", "calc not committed after all")
    night = start(repo, "calc")
    assert night.returncode == 0, night.stderr
    assert git(repo, "log", "--format=%s", "main..akira/calc").splitlines() == ["1 Write calc"]
