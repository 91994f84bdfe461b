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

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from akira_cli.state.models import LoopState

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="uses /proc and POSIX signals")

FEATURE = "crash"
TASK_REL = f"Specs/{FEATURE}/tasks.md"
DONE_REL = f"Done/{FEATURE}/tasks.md"
KILLED = 137  # the exit code the crash-point driver dies with, as a kill -9 would
BOX_RE = re.compile(r"^(?P<pad>[ \t]*)- \[(?P<box>.)\]\*? (?P<id>\d+(?:\.\d+)*)\.?[ \t]", re.M)


# --- the task file ---------------------------------------------------------------------------


def step_command(step_id: str) -> str:
    return f"echo {step_id} >> ledger.txt && sleep 0.05 && echo {step_id} > done_{step_id}.txt"


@dataclass
class Plan:
    """A task file: top-level ids, some of them parents of dotted children."""

    layout: list[tuple[str, list[str]]]
    commands: dict[str, str] = field(default_factory=dict)

    @property
    def leaves(self) -> list[str]:
        out: list[str] = []
        for top, children in self.layout:
            out += children or [top]
        return out

    @property
    def parents(self) -> dict[str, list[str]]:
        return {top: children for top, children in self.layout if children}

    def text(self) -> str:
        lines = ["# Implementation Plan", ""]
        for top, children in self.layout:
            if children:
                lines += [f"- [ ] {top}. Parent {top}", f"  - Groups {', '.join(children)}"]
                for child in children:
                    lines += self._leaf(child, "  ")
            else:
                lines += self._leaf(top, "")
        return "\n".join(lines) + "\n"

    def _leaf(self, step_id: str, pad: str) -> list[str]:
        number = step_id if "." in step_id else f"{step_id}."
        command = self.commands.get(step_id, step_command(step_id))
        return [
            f"{pad}- [ ] {number} Step {step_id}",
            f"{pad}  - Run: `{command}`",
            f"{pad}  - Exists: `done_{step_id}.txt`",
        ]


BIG = Plan(
    [
        ("1", []),
        ("2", []),
        ("3", []),
        ("4", ["4.1", "4.2", "4.3"]),
        ("5", []),
        ("6", []),
        ("7", []),
        ("8", []),
        ("9", ["9.1", "9.2"]),
    ]
)
SMALL = Plan([("1", []), ("2", ["2.1", "2.2"]), ("3", [])])


# --- processes -------------------------------------------------------------------------------


def clean_env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("AKIRA_ROOT", "AKIRA_MODEL", "OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_API_KEY"):
        env.pop(name, None)
    return env


def init_workspace(tmp_path: Path, plan: Plan) -> Path:
    """`akira init` a workspace and write the plan into Specs/crash/tasks.md."""
    ws = tmp_path / "ws"
    done = subprocess.run(
        [sys.executable, "-m", "akira_cli", "init", str(ws)],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    task = ws / TASK_REL
    task.parent.mkdir(parents=True, exist_ok=True)
    task.write_text(plan.text())
    return ws


def task_id_of(ws: Path) -> str | None:
    files = list((ws / ".state").glob("autonomous_loop_*.json"))
    files += list((ws / ".state" / "archive").glob("autonomous_loop_*.json"))
    ids = {path.stem.removeprefix("autonomous_loop_") for path in files}
    assert len(ids) <= 1, f"expected one task, found state files {files}"
    return ids.pop() if ids else None


def loop_args(ws: Path) -> list[str]:
    """`loop resume` when a state file exists (the kill may land before it is written), else start."""
    task_id = task_id_of(ws)
    if task_id is None:
        return ["loop", "start", "--root", str(ws), "--task", TASK_REL, "--no-wait"]
    return ["loop", "resume", "--task-id", task_id, "--root", str(ws), "--no-wait"]


def spawn(ws: Path, prefix: list[str], output: Path) -> subprocess.Popen[bytes]:
    args = loop_args(ws)
    with output.open("ab") as out:
        out.write(f"\n$ {' '.join(args)}\n".encode())
        out.flush()
        return subprocess.Popen(
            [*prefix, *args],
            cwd=ws,
            env=clean_env(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def proc_table() -> dict[int, tuple[int, int, str]]:
    """pid -> (ppid, process group, state letter), from /proc."""
    table: dict[int, tuple[int, int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        table[int(entry)] = (int(fields[1]), int(fields[2]), fields[0])
    return table


def descendants(pid: int, table: dict[int, tuple[int, int, str]]) -> set[int]:
    found, frontier = set(), [pid]
    while frontier:
        parent = frontier.pop()
        kids = [child for child, (ppid, _, _) in table.items() if ppid == parent]
        found.update(kids)
        frontier += kids
    return found


def command_groups(pid: int) -> set[int]:
    """Process groups of the commands `pid` started (the runner gives each its own session)."""
    table = proc_table()
    return {table[child][1] for child in descendants(pid, table) if table[child][1] == child}


def commands_of(pid: int) -> set[str]:
    """The names (`comm`) of the processes under `pid`."""
    names = set()
    for child in descendants(pid, proc_table()):
        with contextlib.suppress(OSError):
            names.add(Path(f"/proc/{child}/comm").read_text().strip())
    return names


def alive_in(groups: set[int]) -> list[int]:
    return [pid for pid, (_, pgid, st) in proc_table().items() if pgid in groups and st not in "ZX"]


def settle_orphans(groups: set[int], *, kill: bool, wait: float = 10.0) -> None:
    """Lets the commands a crash left behind finish (or kills them), so the ledger is final."""
    deadline = time.monotonic() + (0 if kill else wait)
    while alive_in(groups) and time.monotonic() < deadline:
        time.sleep(0.01)
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while alive_in(groups) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not alive_in(groups), f"orphaned commands survived SIGKILL: {alive_in(groups)}"


def kill9(proc: subprocess.Popen[bytes]) -> set[int]:
    """SIGKILL the loop process. It is frozen first (SIGSTOP, which runs none of its code) only so
    the commands it started can be listed; returns their process groups."""
    os.kill(proc.pid, signal.SIGSTOP)
    deadline = time.monotonic() + 2
    while proc_table().get(proc.pid, (0, 0, "T"))[2] not in "TtZX" and time.monotonic() < deadline:
        time.sleep(0.001)
    groups = command_groups(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    return groups


# --- reading the workspace -------------------------------------------------------------------


def load_states(ws: Path) -> list[tuple[Path, LoopState]]:
    """Every state file, active and archived: each must be valid JSON and a valid LoopState."""
    out = []
    for folder in (ws / ".state", ws / ".state" / "archive"):
        for path in sorted(folder.glob("autonomous_loop_*.json")):
            raw = path.read_bytes()
            try:
                json.loads(raw)
            except ValueError as exc:
                raise AssertionError(
                    f"{path} is not valid JSON after a crash: {exc}\n{raw[-500:]!r}"
                ) from exc
            out.append((path, LoopState.model_validate_json(raw)))
    assert len(out) <= 1, f"more than one state file for one task: {[str(p) for p, _ in out]}"
    return out


def read_ledger(ws: Path) -> Counter[str]:
    path = ws / "ledger.txt"
    return Counter(path.read_text().split()) if path.exists() else Counter()


def read_boxes(ws: Path, plan: Plan) -> tuple[Path, dict[str, str]]:
    """The task file, wherever it is (Specs/ or Done/), and each step's checkbox character."""
    found = [ws / rel for rel in (TASK_REL, DONE_REL) if (ws / rel).exists()]
    assert len(found) == 1, f"task file should be in exactly one place, found {found}"
    text = found[0].read_text()
    blank = re.sub(r"^([ \t]*- \[).(\])", r"\1 \2", text, flags=re.M)
    assert blank == plan.text(), f"{found[0]} changed beyond its checkboxes:\n{text}"
    boxes = {m["id"]: m["box"] for m in BOX_RE.finditer(text)}
    assert set(boxes) == set(plan.leaves) | set(plan.parents), boxes
    return found[0], boxes


# --- the invariants --------------------------------------------------------------------------


@dataclass
class Tracker:
    """Checks the workspace after every crash and at the end, against what it saw before."""

    ws: Path
    plan: Plan
    kills: int = 0
    completed: list[str] = field(default_factory=list)
    ledger: Counter[str] = field(default_factory=Counter)
    lost_runs: int = 0
    """Crashes that left a step started (in the ledger) but not recorded complete."""
    in_flight: list[str | None] = field(default_factory=list)
    adopts: bool = False
    """A git-native run: a step whose commit landed just before a kill is recorded on resume
    from its commit (git-native runs), without running again."""

    def after_crash(self) -> None:
        self.kills += 1
        self.observe(f"after crash {self.kills}")

    def observe(self, when: str) -> None:
        ws, plan = self.ws, self.plan
        states = load_states(ws)
        assert not (ws / ".state" / "corrupt").exists(), f"{when}: a state file was quarantined"
        ledger = read_ledger(ws)
        _, boxes = read_boxes(ws, plan)
        completed = [step.step_id for step in states[0][1].completed_steps] if states else []
        done = set(completed)

        assert set(ledger) <= set(plan.leaves), f"{when}: unknown ledger lines {ledger}"
        assert len(completed) == len(done), f"{when}: a step completed twice: {completed}"
        assert done <= set(plan.leaves), f"{when}: non-leaf recorded complete: {completed}"
        assert set(self.completed) <= done, f"{when}: completed steps lost: {self.completed} -> {completed}"
        for step in completed:
            assert (ws / f"done_{step}.txt").exists() and ledger[step] >= 1, (
                f"{when}: step {step} is recorded complete but never passed its check"
            )
        for step in plan.leaves:
            if boxes[step] in "xX":
                assert (ws / f"done_{step}.txt").exists(), f"{when}: {step} ticked, check not passed"
                assert step in done, f"{when}: {step} ticked in tasks.md but not complete in the state"
        for parent, children in plan.parents.items():
            if boxes[parent] in "xX":
                assert all(boxes[c] in "xX" for c in children), f"{when}: parent {parent} ticked early"
        assert list(boxes.values()).count("-") <= 1, f"{when}: several steps in progress: {boxes}"

        for step, count in self.ledger.items():
            assert ledger[step] >= count, f"{when}: ledger shrank"
        delta = ledger - self.ledger
        new = done - set(self.completed)
        started_not_done = {step for step in ledger if step not in done}
        for step, count in delta.items():
            assert step not in self.completed, f"{when}: completed step {step} was run again"
            assert count == 1, f"{when}: step {step} ran {count} times since the last crash"
        pending = self.in_flight[-1] if self.in_flight else None
        for step in new:
            adopted = (
                self.adopts and delta[step] == 0 and step == pending and (ws / f"done_{step}.txt").exists()
            )
            assert delta[step] == 1 or adopted, f"{when}: step {step} completed without running"
            self.lost_runs -= adopted  # that run was not lost: its commit recorded it
        assert len(started_not_done) <= 1, f"{when}: several steps started, not done: {started_not_done}"
        extra = set(delta) - new
        assert extra <= started_not_done, f"{when}: steps re-run beyond the in-flight one: {extra}"
        self.lost_runs += bool(extra)
        self.in_flight.append(next(iter(started_not_done), None))
        self.completed, self.ledger = completed, ledger

    def finish(self) -> LoopState:
        """The end: completed, archived, moved to Done/, every step exactly once in the state."""
        ws, plan = self.ws, self.plan
        self.observe("at the end")
        states = load_states(ws)
        assert states, "no state file at the end"
        path, state = states[0]
        assert state.status == "completed", f"final status {state.status}: {state.stop_reason}"
        assert [s.step_id for s in state.completed_steps] == plan.leaves
        assert state.current_step is None
        task_path, boxes = read_boxes(ws, plan)
        assert task_path == ws / DONE_REL, f"task file not moved to Done/: {task_path}"
        assert not (ws / "Specs" / FEATURE).exists()
        assert Path(state.task_path).resolve() == (ws / DONE_REL).resolve(), state.task_path
        report = (ws / "Logs" / "completion_reports" / f"{state.task_id}.md").read_text()
        # No person acts in these runs: akira's own move to Done/, cut short, is still akira's.
        assert "by a person" not in state.stop_reason, state.stop_reason
        assert "declared done by a person" not in report
        unticked = [step for step, box in boxes.items() if box not in "xX"]
        # A leaf in this list is a lost tick; a parent in it means its last child's tick (or the
        # parent's own tick) was cut off by a crash and nothing re-derived it on resume.
        assert not unticked, f"steps not ticked in the final {task_path}: {unticked}\n{task_path.read_text()}"
        # The loop archives the state file at completion.
        assert path.parent == ws / ".state" / "archive", f"state not archived: {path}"

        ledger = read_ledger(ws)
        assert all(ledger[step] >= 1 for step in plan.leaves), ledger
        extra = sum(ledger.values()) - len(plan.leaves)
        assert extra == self.lost_runs <= self.kills, (ledger, self.lost_runs, self.kills)
        assert max(ledger.values()) <= 1 + self.kills
        for step in plan.leaves:  # each extra run of a step is one crash with it in flight
            assert ledger[step] - 1 <= self.in_flight.count(step), (step, ledger, self.in_flight)
        return state


def output_of(path: Path) -> str:
    return path.read_text(errors="replace")[-4000:] if path.exists() else ""


def run_to_end(ws: Path, out: Path, prefix: list[str]) -> None:
    proc = spawn(ws, prefix, out)
    code = proc.wait(timeout=90)
    assert code == 0, f"the last resume exited {code}:\n{output_of(out)}"


AKIRA = [sys.executable, "-m", "akira_cli"]


# --- kill -9 at random moments ---------------------------------------------------------------


def loops_started(ws: Path) -> int:
    """How many runs have logged `loop_started` (emitted once start-up and begin() are done)."""
    logs = (ws / ".state" / "logs").glob("*.jsonl")
    return sum(path.read_bytes().count(b'"loop_started"') for path in logs)


def wait_until_started(ws: Path, proc: subprocess.Popen[bytes], before: int) -> None:
    deadline = time.monotonic() + 60
    while loops_started(ws) <= before and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)


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
elif point == "before_tick":
    around(AutonomousLoop, "tick", before=lambda path, step: step.id == arg)
elif point == "before_mark_done":
    around(TaskSource, "mark", before=lambda path, step_id, box: step_id == arg and box == "x")
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
