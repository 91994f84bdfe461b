"""Parallel `[P]` steps, in real repositories with real worktrees: a wave runs its steps
at once, lands them one at a time in file order, re-runs a step that collides after the wave,
brings the environment a worktree lacks, survives a kill -9 mid-wave, and leaves no worktree
behind.

Steps prove they ran at once without timing: each waits at a rendezvous (a folder outside the
repository) until the others have arrived, and fails if they never do."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from akira_cli.config import Config
from akira_cli.state.models import LoopState
from akira_cli.step_prompts import StepPrompts
from akira_cli.tasks.parser import parse_task_text
from tests.support.git import commits, git, trailers
from tests.support.parallel import start, tasks
from tests.support.workspace import Akira

RENDEZVOUS = """\
gate="$1"; me="$2"; want="$3"
echo $$ > "$gate/$me"
for _ in $(seq 1200); do
  [ "$(ls "$gate" | wc -l)" -ge "$want" ] && exit 0
  sleep 0.05
done
exit 1
"""


def sleepers(mark: str) -> list[int]:
    """Live `sleep MARK` processes, by their command line: in the sandbox a step's `$$` is a pid of
    its own PID namespace, not one this test can look up."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    if handle.read() == f"sleep\0{mark}\0".encode() and alive(int(name)):
                        found.append(int(name))
            except OSError:
                continue
    return found


@pytest.fixture
def meet(tmp_path: Path) -> tuple[Path, Path]:
    """The rendezvous script and its folder."""
    script, gate = tmp_path / "rendezvous.sh", tmp_path / "gate"
    script.write_text(RENDEZVOUS)
    gate.mkdir()
    return script, gate


def at_once(meet: tuple[Path, Path], step: str, count: int) -> str:
    return f"bash {meet[0]} {meet[1]} {step} {count}"


def assert_no_worktree_left(root: Path) -> None:
    assert len(git(root, "worktree", "list").splitlines()) == 1
    assert git(root, "for-each-ref", "refs/heads/akira-step") == ""
    assert not any((root / ".akira" / "worktrees").glob("*"))


def test_a_wave_runs_its_steps_at_once_and_lands_them_in_file_order(
    repo: Akira, meet: tuple[Path, Path]
) -> None:
    waves = "".join(
        f"- [ ] {n}. [P] Write {n}\n  - Run: `{at_once(meet, str(n), 4)} && echo {n} > f{n}.txt`\n"
        f"  - Exists: `f{n}.txt`\n"
        for n in range(2, 6)
    )
    tasks(
        repo,
        "- [ ] 1. Setup\n  - Run: `echo s > setup.txt`\n  - Exists: `setup.txt`\n"
        + waves
        + "- [ ] 6. Final\n  - Run: `cat f2.txt f3.txt f4.txt f5.txt > all.txt`\n"
        "  - Contains: `all.txt` `5`\n",
    )
    code, err = start(repo, "--parallel", "4")
    assert code == 0, err
    root = repo.root
    assert commits(root, "main..HEAD") == [
        "1 Setup", "2 Write 2", "3 Write 3", "4 Write 4", "5 Write 5", "6 Final", "feat: done"
    ]  # fmt: skip
    for back, step in enumerate(["5", "4", "3", "2"], start=2):
        assert trailers(root, f"HEAD~{back}")["Akira-Step"] == step
        assert git(root, "show", "--name-only", "--format=", f"HEAD~{back}").splitlines() == [
            "Specs/feat/tasks.md",
            f"f{step}.txt",
        ]
    assert (root / "all.txt").read_text() == "2\n3\n4\n5\n"
    state = repo.state()
    assert state.current_steps == [] and [c.step_id for c in state.completed_steps] == list("123456")
    waves_seen = [e.data["steps"] for e in repo.events() if e.type == "wave_started"]
    assert waves_seen == [["2", "3", "4", "5"]]
    assert_no_worktree_left(root)
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""
    assert git(root, "diff", "--cached") == ""


@pytest.mark.slow
def test_a_collision_runs_the_step_again_after_the_wave_without_costing_an_attempt(
    repo: Akira, meet: tuple[Path, Path]
) -> None:
    tasks(
        repo,
        f"- [ ] 1. [P] One\n  - Run: `{at_once(meet, '1', 2)} && echo one > shared.txt`\n"
        "  - Exists: `shared.txt`\n"
        f"- [ ] 2. [P] Two\n  - Run: `{at_once(meet, '2', 2)}; echo two > shared.txt`\n"
        "  - Exists: `shared.txt`\n",
    )
    code, err = start(repo, "--parallel", "2")
    assert code == 0, err
    root = repo.root
    assert commits(root, "main..HEAD") == ["1 One", "2 Two", "feat: done"]
    assert (root / "shared.txt").read_text() == "two\n"
    collided = [e for e in repo.events() if e.type == "ledger" and e.data.get("action") == "collided"]
    assert [e.step_id for e in collided] == ["2"]
    assert "shared.txt" in collided[0].data["reason"] and collided[0].data["landed"] == ["1"]
    runs = [e for e in repo.events() if e.type == "iteration_started" and e.step_id == "2"]
    assert "worktree" in runs[0].data and "worktree" not in runs[-1].data  # the re-run: main tree
    state = repo.state()
    done = {c.step_id: c for c in state.completed_steps}
    assert done["2"].attempts == 1 and state.steps["2"].collision is None  # no attempt spent
    assert not any(e.type == "step_failed" for e in repo.events())  # no failure, no reflection
    assert_no_worktree_left(root)


def test_a_collided_steps_prompt_names_the_collision() -> None:
    state = LoopState(task_id="task_20260101_000000", task_path="/x/tasks.md")
    record = state.record("2", "Two")
    record.collision = (
        "Its parallel run collided: these files collided: shared.txt. Steps that landed first: 1."
    )
    task = parse_task_text(b"- [ ] 2. Two\n", Path("/x/tasks.md"))
    prompt = StepPrompts(workspace=None, config=Config()).build(state, task, task.steps[0], record)  # type: ignore[arg-type]
    assert "ran again after its parallel wave" in prompt and "shared.txt" in prompt


@pytest.mark.slow
def test_a_check_that_fails_on_the_task_branch_after_the_merge_reruns_the_step(
    repo: Akira, meet: tuple[Path, Path]
) -> None:
    tasks(
        repo,
        f"- [ ] 1. [P] A\n  - Run: `{at_once(meet, '1', 2)} && echo a > a.txt`\n  - Exists: `a.txt`\n"
        f"- [ ] 2. [P] B\n  - Run: `{at_once(meet, '2', 2)}; echo b > b.txt; if [ -f a.txt ]; then touch b2.txt; fi`\n"
        "  - Verify: `test ! -f a.txt || test -f b2.txt`\n",
    )
    code, err = start(repo, "--parallel", "2")
    assert code == 0, err
    root = repo.root
    collided = [e for e in repo.events() if e.data.get("action") == "collided"]
    assert [e.step_id for e in collided] == ["2"] and "test ! -f a.txt" in collided[0].data["reason"]
    assert commits(root, "main..HEAD") == ["1 A", "2 B", "feat: done"]
    assert sorted(git(root, "show", "--name-only", "--format=", "HEAD~1").splitlines()) == [
        "Specs/feat/tasks.md", "b.txt", "b2.txt"
    ]  # fmt: skip


@pytest.mark.slow
def test_parallel_steps_outside_git_are_refused_with_one_line(akira: Akira, repo: Akira) -> None:
    refused = akira.cli("loop", "start", "--task", "Specs/example/tasks.md", "--parallel", "2")
    assert refused.code == 1 and len(refused.err.strip().splitlines()) == 1
    assert "git worktrees" in refused.err and "--parallel 1" in refused.err
    assert akira.state_files() == []
    tasks(repo, "- [ ] 1. [P] A\n  - Run: `true`\n")
    no_git = repo.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--parallel", "2", "--no-git")
    assert no_git.code == 1 and "(--no-git)" in no_git.err and repo.state_files() == []


@pytest.mark.slow
def test_a_worktree_brings_worktreeinclude_files_and_links_environment_folders(
    repo: Akira, meet: tuple[Path, Path]
) -> None:
    root = repo.root
    (root / ".gitignore").write_text(".env\n.venv/\nbig.cache\n")
    (root / ".worktreeinclude").write_text(".env\n")
    (root / ".env").write_text("TOKEN=1\n")
    (root / "big.cache").write_text("not named, not copied\n")
    tool = root / ".venv" / "bin" / "tool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\necho tool-ran\n")
    tool.chmod(0o755)
    steps = "".join(
        f"- [ ] {n}. [P] Use the env {n}\n"
        f"  - Run: `{at_once(meet, str(n), 2)} && test -f .env && test ! -e big.cache && .venv/bin/tool > t{n}.txt`\n"
        f"  - Contains: `t{n}.txt` `tool-ran`\n"
        for n in (1, 2)
    )
    tasks(repo, steps)
    code, err = start(repo, "--parallel", "2")
    assert code == 0, err
    committed = git(root, "log", "--name-only", "--format=", "main..HEAD").splitlines()
    assert ".env" not in committed and not any(name.startswith(".venv") for name in committed)
    assert "t1.txt" in committed and "t2.txt" in committed
    assert_no_worktree_left(root)


@pytest.mark.slow
def test_a_missing_command_in_a_worktree_names_the_fix_and_keeps_the_worktrees(
    repo: Akira, meet: tuple[Path, Path]
) -> None:
    repo.write_config("reflection:\n  max_iterations: 1\n")
    helper = repo.root / "tools" / "helper"  # ignored, so a worktree lacks it
    helper.parent.mkdir()
    helper.write_text("#!/bin/sh\necho helped\n")
    helper.chmod(0o755)
    (repo.root / ".gitignore").write_text("tools/\n")
    tasks(
        repo,
        f"- [ ] 1. [P] A\n  - Run: `{at_once(meet, '1', 2)} && echo a > a.txt`\n  - Exists: `a.txt`\n"
        f"- [ ] 2. [P] B\n  - Run: `{at_once(meet, '2', 2)} && tools/helper`\n",
    )
    code, err = start(repo, "--parallel", "2")
    assert code == 4, err
    root = repo.root
    escalation = (root / "Needs_Action" / f"escalation_{repo.task_id()}.md").read_text()
    assert ".worktreeinclude" in escalation and "git.worktree_link" in escalation
    assert "## Worktrees kept for inspection" in escalation and ".akira/worktrees/" in escalation
    assert len(git(root, "worktree", "list").splitlines()) == 3  # kept for inspection
    assert commits(root, "main..HEAD") == ["1 A"]  # what passed landed


@pytest.mark.slow
def test_a_kill_9_mid_wave_then_resume_commits_each_step_once_and_leaves_no_worktree(
    repo: Akira, tmp_path: Path
) -> None:
    gate, hold = tmp_path / "gate", tmp_path / "hold"
    gate.mkdir()
    hold.write_text("")
    mark = f"120.{os.getpid()}1"
    ledger = tmp_path / "runs.log"
    steps = "".join(
        f"- [ ] {n}. [P] Step {n}\n"
        f"  - Run: `echo {n} >> {ledger}; if [ -f {hold} ]; then echo $$ > {gate}/{n}; sleep {mark}; fi; echo {n} > s{n}.txt`\n"
        f"  - Exists: `s{n}.txt`\n"
        for n in range(1, 5)
    )
    tasks(repo, steps + "- [ ] 5. Last\n  - Run: `echo z > z.txt`\n  - Exists: `z.txt`\n")
    process = repo.spawn("loop", "start", "--task", "Specs/feat/tasks.md", "--parallel", "3", "--no-wait")
    try:
        repo.wait_for(lambda: len(list(gate.iterdir())) == 3, timeout=60, what="three steps running")
        repo.wait_for(lambda: len(repo.state().current_steps) == 3, timeout=30, what="current_steps saved")
        running = repo.state().current_steps
        assert sorted(step.step_id for step in running) == ["1", "2", "3"]
        assert all(step.worktree and Path(step.worktree).is_dir() for step in running)
        status = repo.cli("loop", "status", "--task-id", repo.task_id(), "--json")
        assert '"worktree"' in status.out and '"current_steps"' in status.out
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.kill()
        process.communicate(timeout=30)
    # By their command line: in the sandbox, $$ is a pid of the step's own PID namespace.
    repo.wait_for(lambda: sleepers(mark) == [], timeout=30, what="the reaper killing every group")
    hold.unlink()
    resumed = repo.cli("loop", "resume", "--task-id", repo.task_id(), timeout=120)
    assert resumed.code == 0, resumed.err
    root = repo.root
    assert commits(root, "main..HEAD") == [
        "1 Step 1",
        "2 Step 2",
        "3 Step 3",
        "4 Step 4",
        "5 Last",
        "feat: done",
    ]
    assert repo.state().current_steps == []
    assert_no_worktree_left(root)
    removed = [e for e in repo.events() if e.data.get("action") == "stale_worktrees_removed"]
    assert removed and sorted(removed[0].data["steps"]) == ["1", "2", "3"]
    runs = ledger.read_text().split()
    assert sorted(runs) == sorted(["1", "2", "3", "1", "2", "3", "4"])  # killed ones once more, no more


def alive(pid: int) -> bool:
    """A process that runs (a zombie waiting for its parent to reap it does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def while_two_run(repo: Akira, gate: Path, release: Path, act: Callable[[], None]) -> tuple[int, str]:
    """`loop start --parallel 2` on held steps: `act` once two of them run, then they are
    released; the loop's exit code and stderr."""
    process = repo.spawn("loop", "start", "--task", "Specs/feat/tasks.md", "--parallel", "2", "--no-wait")
    try:
        repo.wait_for(lambda: len(list(gate.iterdir())) == 2, timeout=60, what="two steps running")
        act()
        release.write_text("")
        _out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    return process.returncode, err


def wave_held(tmp_path: Path, count: int) -> tuple[str, Path, Path]:
    """`count` [P] steps that wait for a release file; where they check in, and the release."""
    gate, release = tmp_path / "gate", tmp_path / "release"
    gate.mkdir()
    steps = "".join(
        f"- [ ] {n}. [P] Held {n}\n"
        f"  - Run: `touch {gate}/{n}; while [ ! -f {release} ]; do sleep 0.05; done; echo {n} > h{n}.txt`\n"
        f"  - Exists: `h{n}.txt`\n"
        for n in range(1, count + 1)
    )
    return steps, gate, release


@pytest.mark.slow
def test_a_stop_hook_during_a_wave_lets_the_running_steps_finish_then_pauses(
    repo: Akira, tmp_path: Path
) -> None:
    steps, gate, release = wave_held(tmp_path, 3)
    tasks(repo, steps)

    def act() -> None:
        assert repo.cli("loop", "stop", "--task-id", repo.task_id()).code == 0

    code, err = while_two_run(repo, gate, release, act)
    assert code == 3, err
    state = repo.state()
    assert state.status == "paused" and sorted(c.step_id for c in state.completed_steps) == ["1", "2"]
    assert commits(repo.root, "main..HEAD") == ["1 Held 1", "2 Held 2"]  # the running ones landed
    assert not (gate / "3").exists()  # the third never started
    hooks = list((repo.root / ".hooks").glob("*"))
    for hook in hooks:
        hook.unlink()
    resumed = repo.cli("loop", "resume", "--task-id", repo.task_id(), timeout=120)
    assert resumed.code == 0, resumed.err
    assert commits(repo.root, "main..HEAD")[-2:] == ["3 Held 3", "feat: done"]
    assert_no_worktree_left(repo.root)


@pytest.mark.slow
def test_a_directive_a_person_changes_during_a_wave_pauses_after_it(repo: Akira, tmp_path: Path) -> None:
    steps, gate, release = wave_held(tmp_path, 2)
    tasks(repo, steps + "- [ ] 3. Later\n  - Run: `echo l > l.txt`\n")

    def act() -> None:
        path = repo.root / "Specs" / "feat" / "tasks.md"
        path.write_text(path.read_text().replace("echo l > l.txt", "rm -rf /tmp/not-this"))

    code, err = while_two_run(repo, gate, release, act)
    assert code == 3, err
    state = repo.state()
    assert state.status == "paused" and "directives of step(s) 3 changed" in state.stop_reason
    assert sorted(c.step_id for c in state.completed_steps) == ["1", "2"]
    assert not (repo.root / "l.txt").exists()


@pytest.mark.slow
def test_the_step_branch_name_replaces_what_git_refuses() -> None:
    from akira_cli.git.worktrees import step_branch

    assert step_branch("task_1", "3~2") == "akira-step/task_1/3_2"
    assert step_branch("t", "a b:c") == "akira-step/t/a_b_c"
    name = step_branch("t", "x.lock")
    assert subprocess.run(["git", "check-ref-format", f"refs/heads/{name}"]).returncode == 0


@pytest.mark.slow
def test_stop_force_during_a_wave_kills_every_running_group(repo: Akira, tmp_path: Path) -> None:
    mark = f"120.{os.getpid()}2"
    gate = tmp_path / "gate"
    gate.mkdir()
    steps = "".join(
        f"- [ ] {n}. [P] Long {n}\n  - Run: `echo $$ > {gate}/{n}; sleep {mark}; echo {n} > l{n}.txt`\n"
        f"  - Exists: `l{n}.txt`\n"
        for n in (1, 2)
    )
    tasks(repo, steps)
    process = repo.spawn("loop", "start", "--task", "Specs/feat/tasks.md", "--parallel", "2", "--no-wait")
    try:
        repo.wait_for(lambda: len(list(gate.iterdir())) == 2, timeout=60, what="two steps running")
        assert len(sleepers(mark)) == 2
        assert repo.cli("loop", "stop", "--task-id", repo.task_id(), "--force").code == 0
        process.communicate(timeout=60)
    finally:
        process.kill()
    repo.wait_for(lambda: sleepers(mark) == [], timeout=30, what="groups gone")
    assert repo.state().status != "running" and repo.state().completed_steps == []


@pytest.mark.slow
def test_a_tick_during_a_wave_is_a_claim_and_a_move_to_done_completes_after_it(
    repo: Akira, tmp_path: Path
) -> None:
    steps, gate, release = wave_held(tmp_path, 2)
    tasks(repo, steps + "- [ ] 3. Claimed\n  - Run: `echo c > c.txt`\n  - Exists: `c.txt`\n")

    def act() -> None:
        path = repo.root / "Specs" / "feat" / "tasks.md"
        path.write_text(path.read_text().replace("- [ ] 3. Claimed", "- [x] 3. Claimed"))

    code, err = while_two_run(repo, gate, release, act)
    assert code == 0, err
    refuted = [e for e in repo.events() if e.data.get("action") == "claim_refuted"]
    assert [e.step_id for e in refuted] == ["3"]  # its check failed: the tick was a claim, refused
    assert (repo.root / "c.txt").read_text() == "c\n"  # so the step ran
    assert commits(repo.root, "main..HEAD") == ["1 Held 1", "2 Held 2", "3 Claimed", "feat: done"]


@pytest.mark.slow
def test_a_move_to_needs_action_during_a_wave_pauses_once_the_running_steps_land(
    repo: Akira, tmp_path: Path
) -> None:
    steps, gate, release = wave_held(tmp_path, 3)
    tasks(repo, steps)

    def act() -> None:
        (repo.root / "Needs_Action").mkdir(exist_ok=True)
        os.rename(repo.root / "Specs" / "feat", repo.root / "Needs_Action" / "feat")

    code, err = while_two_run(repo, gate, release, act)
    assert code == 3, err
    state = repo.state()
    assert state.status == "paused" and sorted(c.step_id for c in state.completed_steps) == ["1", "2"]
    assert not (gate / "3").exists()


@pytest.mark.slow
def test_a_failed_attempt_in_a_worktree_keeps_its_patch(repo: Akira, meet: tuple[Path, Path]) -> None:
    repo.write_config("reflection:\n  max_iterations: 1\n")
    tasks(
        repo,
        f"- [ ] 1. [P] A\n  - Run: `{at_once(meet, '1', 2)} && echo a > a.txt`\n  - Exists: `a.txt`\n"
        f"- [ ] 2. [P] B\n  - Run: `{at_once(meet, '2', 2)} && echo half > half.txt`\n  - Exists: `never.txt`\n",
    )
    code, err = start(repo, "--parallel", "2")
    assert code == 4, err
    attempt = repo.state().steps["2"].attempts[-1]
    assert attempt.outcome == "failure" and attempt.patch is not None
    patch = (repo.root / attempt.patch).read_text()
    assert "+++ b/half.txt" in patch and "+half" in patch
    assert "half.txt" in attempt.output_tail and attempt.patch in attempt.output_tail
    assert not (repo.root / "half.txt").exists()  # the main work tree never saw it


@pytest.mark.slow
def test_a_short_kill_9_storm_mid_wave_leaves_one_commit_per_step(repo: Akira, tmp_path: Path) -> None:
    """The suite's short version of `benchmarks/git_kill_storm.py --parallel`."""
    ledger = tmp_path / "runs.log"
    steps = "".join(
        f"- [ ] {n}. [P] Step {n}\n  - Run: `echo {n} >> {ledger}; sleep 0.4; echo {n} > s{n}.txt`\n"
        f"  - Exists: `s{n}.txt`\n"
        for n in range(1, 10)
    )
    tasks(repo, steps)
    args = ["loop", "start", "--task", "Specs/feat/tasks.md", "--parallel", "3", "--no-wait"]
    kills = wanted = 0
    for round in range(3):
        process = repo.spawn(*args)
        wanted += 3 + round  # the first kill mid-wave, the later ones after some steps landed

        def started(count: int = wanted) -> bool:
            return ledger.exists() and len(ledger.read_text().split()) >= count

        repo.wait_for(started, timeout=60, what=f"{wanted} runs")
        os.kill(process.pid, signal.SIGKILL)
        process.communicate(timeout=30)
        kills += 1
        args = ["loop", "resume", "--task-id", repo.task_id(), "--no-wait"]
    resumed = repo.cli(*args, timeout=180)
    assert resumed.code == 0, resumed.err
    root = repo.root
    assert kills == 3 and commits(root, "main..HEAD") == [f"{n} Step {n}" for n in range(1, 10)] + [
        "feat: done"
    ]
    assert_no_worktree_left(root)
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""


@pytest.mark.slow
def test_an_environment_folder_git_does_not_ignore_is_neither_linked_nor_an_error(
    repo: Akira, meet: tuple[Path, Path]
) -> None:
    (repo.root / "venv").mkdir()  # tracked, so a worktree has it already: `check-ignore` says none
    (repo.root / "venv" / "README").write_text("tracked\n")
    steps = "".join(
        f"- [ ] {n}. [P] Step {n}\n  - Run: `{at_once(meet, str(n), 2)} && test ! -L venv && echo {n} > v{n}.txt`\n"
        f"  - Exists: `v{n}.txt`\n"
        for n in (1, 2)
    )
    tasks(repo, steps)
    code, err = start(repo, "--parallel", "2")
    assert code == 0, err
    assert commits(repo.root, "main..HEAD") == ["1 Step 1", "2 Step 2", "feat: done"]
