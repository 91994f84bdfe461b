"""The crash harness: a task file of ledger-keeping steps, akira run as a subprocess and killed
with -9, and the `Tracker` that checks the workspace after every crash and at the end (no state
file corrupt, no completed step lost or run again, at most the step in flight run twice)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from akira_cli.state.models import LoopState

FEATURE = "crash"


TASK_REL = f"Specs/{FEATURE}/tasks.md"


DONE_REL = f"Done/{FEATURE}/tasks.md"


KILLED = 137  # the exit code the crash-point driver dies with, as a kill -9 would


BOX_RE = re.compile(r"^(?P<pad>[ \t]*)- \[(?P<box>.)\]\*? (?P<id>\d+(?:\.\d+)*)\.?[ \t]", re.M)


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


def loops_started(ws: Path) -> int:
    """How many runs have logged `loop_started` (emitted once start-up and begin() are done)."""
    logs = (ws / ".state" / "logs").glob("*.jsonl")
    return sum(path.read_bytes().count(b'"loop_started"') for path in logs)


def wait_until_started(ws: Path, proc: subprocess.Popen[bytes], before: int) -> None:
    deadline = time.monotonic() + 60
    while loops_started(ws) <= before and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
