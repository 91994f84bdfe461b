"""A person moves a spec into Needs_Action/ while a step runs, then back, in each
layout akira works: Specs/, Kiro's `.kiro/specs/`, spec-kit's `specs/` and OpenSpec's
`openspec/changes/`. Real repositories, a real `akira loop start` process, and a command agent
whose first step waits at a gate in the test's folder while the test moves the folder from
outside (as a person does, with no sandbox in the way)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import shared_section
from test_git_runs import git

from akira_cli.state.models import LoopState

pytestmark = pytest.mark.timeout(900)
"""Each test runs several real akira processes: on a loaded machine they take minutes."""

TASKS = """\
# Implementation Plan

- [ ] 1. Add
  - Exists: `add.py`
- [ ] 2. Mul
  - Exists: `mul.py`
- [ ] 3. Sub
  - Exists: `sub.py`
"""
AGENT = """\
case "$AKIRA_STEP_ID" in
  1) touch {gate}/started; while [ ! -e {gate}/go ]; do sleep 0.05; done; echo a > add.py ;;
  2) echo m > mul.py ;;
  3) echo s > sub.py ;;
esac
"""
LAYOUTS = {
    "Specs": ("Specs/calc", None, ("requirements.md", "design.md")),
    "kiro": (".kiro/specs/calc", None, ("requirements.md", "design.md")),
    "spec-kit": ("specs/001-calc", ".specify", ("spec.md", "plan.md")),
    "openspec": ("openspec/changes/calc", None, ("proposal.md", "design.md")),
}
WORK = ["add.py", "mul.py", "sub.py"]


def repository(tmp_path: Path, layout: str) -> tuple[Path, Path, Path]:
    """The repository, the spec's folder, and the gate folder the first step waits at."""
    home, marker, context = LAYOUTS[layout]
    repo, gate = tmp_path / "repo", tmp_path / "gate"
    spec = repo / home
    spec.mkdir(parents=True)
    gate.mkdir()
    if marker:
        (repo / marker).mkdir()
        (repo / marker / "memory.md").write_text("x\n")
    for name in context:
        (spec / name).write_text(f"# {name}\n")
    (spec / "tasks.md").write_text(TASKS)
    (tmp_path / "agent.sh").write_text(AGENT.format(gate=gate))
    (repo / "config").mkdir()
    (repo / "config" / "autonomous_loop.yaml").write_text(
        f"agent:\n  command: bash {tmp_path / 'agent.sh'}\n" + shared_section(tmp_path)
    )
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Person")
    git(repo, "config", "user.email", "person@example.com")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return repo, spec, gate


@contextlib.contextmanager
def running(repo: Path, *args: str) -> Iterator[subprocess.Popen[str]]:
    """akira as a person runs it, from the repository; killed if the test fails before it ends."""
    env = {k: v for k, v in os.environ.items() if k != "AKIRA_ROOT"}
    process = subprocess.Popen(
        [sys.executable, "-m", "akira_cli", *args],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def ended(process: subprocess.Popen[str]) -> tuple[int, str]:
    _, err = process.communicate(timeout=300)
    return process.returncode, err


def wait_for(what: str, predicate: Callable[[], bool], process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        exited = process.poll() is not None
        if predicate():
            return
        if exited:
            raise AssertionError(f"akira exited {process.returncode} before {what}: {process.communicate()}")
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def state_of(repo: Path) -> LoopState:
    [path] = [
        *(repo / ".state").glob("autonomous_loop_*.json"),
        *(repo / ".state" / "archive").glob("*.json"),
    ]
    return LoopState.model_validate_json(path.read_bytes())


def paused(repo: Path) -> bool:
    try:
        return state_of(repo).status == "paused"
    except (ValueError, OSError):
        return False


def park_during_step_one(repo: Path, spec: Path, gate: Path, process: subprocess.Popen[str]) -> Path:
    """Moves the spec's folder into Needs_Action/ while step 1 runs; returns where it went."""
    wait_for("step 1 to start", lambda: (gate / "started").exists(), process)
    parked = repo / "Needs_Action" / spec.name
    parked.parent.mkdir(exist_ok=True)
    os.rename(spec, parked)
    (gate / "go").touch()
    wait_for("the pause", lambda: paused(repo), process)
    return parked


def check_the_branch(repo: Path, spec: Path, layout: str) -> None:
    """One commit per step holding the step's work and its tick where the branch keeps the spec,
    the spec ends where it started (a Specs/ task in Done/), and the tracked files are clean."""
    home = str(spec.relative_to(repo))
    subjects = git(repo, "log", "--reverse", "--format=%s", "main..HEAD").splitlines()
    assert subjects[:3] == ["1 Add", "2 Mul", "3 Sub"], subjects
    for number, work in enumerate(WORK, start=1):
        changed = git(repo, "show", "--name-status", "--format=", f"HEAD~{len(subjects) - number}")
        assert sorted(changed.splitlines()) == [f"A\t{work}", f"M\t{home}/tasks.md"], (number, changed)
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""
    end = repo / "Done" / "calc" if layout == "Specs" else spec
    assert (end / "tasks.md").read_text() == TASKS.replace("[ ]", "[x]")
    assert sorted(p.name for p in end.iterdir()) == sorted([*LAYOUTS[layout][2], "tasks.md"])
    if layout == "Specs":
        assert subjects[3:] == ["calc: done"] and not spec.exists()
        assert git(repo, "ls-files", "Specs") == "" and git(repo, "ls-files", "Done/calc")
    else:
        assert subjects[3:] == [] and not (repo / "Done" / "calc").exists()
        assert state_of(repo).task_path == str(spec / "tasks.md")
    assert not (repo / "Needs_Action" / spec.name).exists()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_spec_parked_during_a_step_and_moved_back_by_hand_resumes_and_ends_where_it_started(
    tmp_path: Path, layout: str
) -> None:
    repo, spec, gate = repository(tmp_path, layout)
    with running(repo, "loop", "start", "--task", str(spec / "tasks.md")) as process:
        parked = park_during_step_one(repo, spec, gate, process)
        # the step's commit is the step's work and its tick, never the person's move
        changed = git(repo, "show", "--name-status", "--format=", "HEAD")
        assert sorted(changed.splitlines()) == ["A\tadd.py", f"M\t{spec.relative_to(repo)}/tasks.md"], changed
        reason = state_of(repo).stop_reason
        assert f"move it back to {spec.relative_to(repo)} to continue" in reason, reason
        os.rename(parked, spec)  # back where it was
        code, err = ended(process)
    assert code == 0, err
    check_the_branch(repo, spec, layout)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_loop_resume_brings_a_parked_spec_back_home_with_its_folder(tmp_path: Path, layout: str) -> None:
    repo, spec, gate = repository(tmp_path, layout)
    with running(repo, "loop", "start", "--task", str(spec / "tasks.md"), "--no-wait") as process:
        park_during_step_one(repo, spec, gate, process)
        code, err = ended(process)
    assert code == 3, err
    with running(repo, "loop", "resume", "--task-id", spec.name) as resumed:
        code, err = ended(resumed)
    assert code == 0, err
    check_the_branch(repo, spec, layout)
