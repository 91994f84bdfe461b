"""Crash safety (docs/guarantees.md): kill -9 a running loop at many moments, resume each time, and prove

- every state file is valid JSON and a valid `LoopState` after every crash;
- every step ends up in `completed_steps` exactly once, and nothing completed is ever lost;
- no step is ticked in tasks.md without having passed its checks (its `done_N.txt` exists and the
  state records it complete), and a parent is ticked only when all its children are;
- a crash re-runs at most the step that was in flight, and a completed step is never run again.

Every step's command appends its id to `ledger.txt` before it does its work, so the ledger counts
how many times each step really ran. The random test kills a real `akira loop` process with
SIGKILL; the crash-point tests end the process with `os._exit` at exact places in the code (the
same thing, on disk, as a kill -9 landing there), so the narrow windows are covered every run.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from akira_cli.state.models import LoopState
from tests.support.crash import (
    AKIRA,
    BIG,
    KILLED,
    SMALL,
    Plan,
    Tracker,
    clean_env,
    commands_of,
    init_workspace,
    kill9,
    loops_started,
    output_of,
    read_boxes,
    read_ledger,
    run_to_end,
    settle_orphans,
    spawn,
    wait_until_started,
)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="uses /proc and POSIX signals")


# --- kill -9 at random moments ---------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize(("seed", "in_git"), [(11, False), (23, False), (37, False), (41, True)])
def test_kill9_at_random_moments_then_resume(tmp_path: Path, seed: int, in_git: bool) -> None:
    ws = init_workspace(tmp_path, BIG)
    if in_git:
        make_repository(ws)
    out = tmp_path / "akira.out"
    rng = random.Random(seed)
    tracker = Tracker(ws, BIG, adopts=in_git)
    finished = False
    for _ in range(25):
        before = loops_started(ws)
        proc = spawn(ws, AKIRA, out)
        if rng.random() < 0.3:
            # anywhere in start-up (about 0.2 s here): before the state file exists, while
            # `begin` re-ticks completed steps, or just after
            delay = rng.uniform(0, 0.3)
        else:
            # while steps run (about 0.06 s each): mid-command, mid-save, mid-tick, at the end
            wait_until_started(ws, proc, before)
            delay = rng.uniform(0, 0.12)
        try:
            code = proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            settle_orphans(kill9(proc), kill=False)
            tracker.after_crash()
            continue
        assert code == 0, f"a run exited {code} before its kill:\n{output_of(out)}"
        finished = True
        break
    if not finished:
        run_to_end(ws, out, AKIRA)
    state = tracker.finish()
    print(f"seed {seed}: {tracker.kills} kills, {tracker.lost_runs} in-flight runs lost and redone")
    assert tracker.kills >= 8, f"only {tracker.kills} kills landed before the task finished"

    status = subprocess.run(
        [*AKIRA, "loop", "status", "--task-id", state.task_id, "--json", "--root", str(ws)],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=60,
    )
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["status"] == "completed"
    if in_git:
        assert_one_commit_per_step(ws, BIG, state)


def git_out(ws: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, capture_output=True, text=True, check=True).stdout


def make_repository(ws: Path) -> None:
    for args in (
        ["init", "-q", "-b", "main"],
        ["config", "user.name", "P"],
        ["config", "user.email", "p@e.x"],
    ):
        git_out(ws, *args)
    git_out(ws, "add", "-A")
    git_out(ws, "commit", "-q", "-m", "base")


def assert_one_commit_per_step(ws: Path, plan: Plan, state: LoopState) -> None:
    """Every leaf has exactly one commit on the task branch, recorded in the state, and the
    branch ends with the move to Done/ and nothing else."""
    log = git_out(
        ws, "log", "--reverse", "--format=%H %(trailers:key=Akira-Step,valueonly,separator=)", "main..HEAD"
    )
    entries = [(line[:40], line[40:].strip()) for line in log.splitlines()]
    by_step = Counter(step for _, step in entries if step)
    assert all(by_step[leaf] == 1 for leaf in plan.leaves), by_step
    assert sum(by_step.values()) == len(plan.leaves) and len(entries) == len(plan.leaves) + 1, log
    recorded = {done.step_id: done.commit for done in state.completed_steps}
    for sha, step in entries[:-1]:
        assert recorded[step] == sha, (step, sha, recorded)
    assert git_out(ws, "status", "--porcelain", "--untracked-files=no") == ""


# --- kill -9 while a long command runs -------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_kill9_during_long_command_reruns_only_that_step(tmp_path: Path) -> None:
    slow = (
        "echo 2 >> ledger.txt && if [ ! -e slow_2.flag ]; then touch slow_2.flag && sleep 5; fi "
        "&& echo 2 > done_2.txt"
    )
    plan = Plan([("1", []), ("2", []), ("3", [])], {"2": slow})
    ws = init_workspace(tmp_path, plan)
    out = tmp_path / "akira.out"
    tracker = Tracker(ws, plan)

    proc = spawn(ws, AKIRA, out)
    deadline = time.monotonic() + 90
    while not (ws / "slow_2.flag").exists():
        assert proc.poll() is None, f"loop ended early:\n{output_of(out)}"
        assert time.monotonic() < deadline, f"step 2 never started:\n{output_of(out)}"
        time.sleep(0.01)
    while "sleep" not in commands_of(proc.pid):  # step 2's `sleep 5` is running now
        assert proc.poll() is None, f"loop ended early:\n{output_of(out)}"
        assert time.monotonic() < deadline, f"step 2's sleep never started:\n{output_of(out)}"
        time.sleep(0.01)
    groups = kill9(proc)
    assert groups, "expected step 2's command to be running at the kill"
    settle_orphans(groups, kill=True)  # the machine went down: the command died too
    tracker.after_crash()
    _, boxes = read_boxes(ws, plan)
    assert tracker.completed == ["1"]
    assert boxes == {"1": "x", "2": "-", "3": " "}
    assert read_ledger(ws) == Counter({"1": 1, "2": 1})

    run_to_end(ws, out, AKIRA)
    state = tracker.finish()
    assert read_ledger(ws) == Counter({"1": 1, "2": 2, "3": 1})
    assert tracker.in_flight == ["2", None]
    for step in plan.leaves:
        outcomes = [attempt.outcome for attempt in state.steps[step].attempts]
        assert outcomes.count("success") == 1, (step, outcomes)


# --- kill -9 at exact points in the code -----------------------------------------------------

# Runs the CLI with one function wrapped so the process dies (os._exit: no finally, no atexit,
# no flush; on disk the same as a kill -9) at that exact point. argv: POINT ARG akira-args...
DRIVER = r"""
import os, sys
from pathlib import Path

point, arg, argv = sys.argv[1], sys.argv[2], sys.argv[3:]


def die():
    os._exit(137)


from akira_cli.cli import main
from akira_cli.loop.engine import StepEngine
from akira_cli.loop.core import AutonomousLoop
from akira_cli.loop.taskbook import TaskBook
from akira_cli.tasks.source import TaskSource
from akira_cli.state.store import StateStore


def around(cls, name, before=None, after=None):
    original = getattr(cls, name)

    def wrapper(self, *args, **kwargs):
        if before is not None and before(*args):
            die()
        result = original(self, *args, **kwargs)
        if after is not None and after(*args):
            die()
        return result

    setattr(cls, name, wrapper)


if point == "before_begin":
    around(AutonomousLoop, "begin", before=lambda: True)
elif point == "before_first_step":
    around(AutonomousLoop, "work", before=lambda: True)
elif point == "after_attempt":
    around(StepEngine, "attempt", after=lambda step, task: step.id == arg)
elif point == "before_tick":  # the save completing the step is on disk, its box not written
    real_flush = TaskBook.flush

    def flush(self, *args, **kwargs):
        if any(step.id == arg for step in self.held):
            die()
        return real_flush(self, *args, **kwargs)

    TaskBook.flush = flush
elif point == "before_mark_done":
    around(TaskSource, "mark", before=lambda path, boxes: boxes.get(arg) == "x")
elif point == "after_move_to_done":
    around(AutonomousLoop, "move_to_done", after=lambda path: True)
elif point == "before_archive":
    around(StateStore, "archive", before=lambda state: True)
elif point == "state_replace":  # the N-th save: temp file written and synced, not renamed
    calls = []
    real_replace = os.replace

    def replace(src, dst, *args, **kwargs):
        if Path(dst).name.startswith("autonomous_loop_"):
            calls.append(dst)
            if len(calls) == int(arg):
                die()
        return real_replace(src, dst, *args, **kwargs)

    os.replace = replace
elif point == "tasks_written":  # right after the N-th checkbox write to tasks.md lands
    calls = []
    real_replace, real_pwrite = os.replace, os.pwrite

    def landed():
        calls.append(1)
        if len(calls) == int(arg):
            die()

    def replace(src, dst, *args, **kwargs):
        result = real_replace(src, dst, *args, **kwargs)
        if Path(dst).name == "tasks.md":
            landed()
        return result

    def pwrite(fd, data, offset):
        result = real_pwrite(fd, data, offset)
        if os.readlink(f"/proc/self/fd/{fd}").endswith("/tasks.md"):
            landed()
        return result

    os.replace, os.pwrite = replace, pwrite
else:
    raise SystemExit(f"unknown crash point {point}")

sys.exit(main(argv))
"""

CRASH_POINTS = [
    pytest.param("before_begin", "-", id="state-created-nothing-run"),
    pytest.param("before_first_step", "-", id="after-begin-checkpoint"),
    pytest.param("after_attempt", "2.1", id="step-passed-state-not-saved"),
    pytest.param("before_tick", "1", id="state-saved-leaf-not-ticked"),
    pytest.param("state_replace", "3", id="state-temp-written-not-renamed"),
    # checkbox writes: -1 x1 -2.1 x2.1 -2.2 ...; the 3rd leaves 2.1 `[-]`, the 4th 2.1 ticked
    pytest.param("tasks_written", "3", id="in-progress-box-written"),
    pytest.param("tasks_written", "4", id="tick-written-next-not-started"),
    # BUG (akira_cli/loop.py, AutonomousLoop.reconcile, run from begin on every start/resume): it
    # re-ticks the completed leaves the state knows of but never re-derives their parents, so a
    # crash between saving a parent's last child and ticking that parent leaves the parent `[ ]`
    # for good (the final Done/ file shows "- [ ] 2. Parent 2" over two ticked children). Both
    # points below hit it; the random test hits it too, in roughly one run in three.
    pytest.param("before_tick", "2.2", id="last-child-saved-not-ticked"),
    pytest.param("before_mark_done", "2", id="last-child-ticked-parent-not"),
    # The folder is in Done/ and the state's task_path still names Specs/: the resume finds the
    # file by its identity and, since the state recorded the move before it was made
    # (`moving_to_done`), completes it as akira's own completion, not as a person's.
    pytest.param("after_move_to_done", "-", id="moved-to-done-state-not-saved"),
    # BUG (akira_cli/loop.py, settle; cli/loop_cmd.py, resume): the completed state is saved in
    # .state/ and then archived; a crash in between leaves it in .state/, and `loop resume` only
    # says "already completed; nothing to resume", so it is never archived.
    pytest.param("before_archive", "-", id="completed-not-archived"),
]


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize(("point", "arg"), CRASH_POINTS)
def test_kill9_at_exact_point_then_resume(tmp_path: Path, point: str, arg: str) -> None:
    ws = init_workspace(tmp_path, SMALL)
    out = tmp_path / "akira.out"
    tracker = Tracker(ws, SMALL)
    proc = spawn(ws, [sys.executable, "-c", DRIVER, point, arg], out)
    code = proc.wait(timeout=90)
    assert code == KILLED, f"the crash point was not reached (exit {code}):\n{output_of(out)}"
    tracker.after_crash()
    run_to_end(ws, out, AKIRA)
    tracker.finish()
    if point == "after_attempt":
        assert read_ledger(ws)[arg] == 2  # the step that passed but was not saved runs again
    elif point in ("before_begin", "before_first_step"):
        assert not read_ledger(ws) - Counter(SMALL.leaves)  # nothing had run: nothing re-runs
