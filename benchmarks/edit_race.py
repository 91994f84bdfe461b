"""A person edits tasks.md while the loop runs, with pauses and resumes in between: a completed
step is never run again, whatever the person does to the file meanwhile.

    .venv/bin/python benchmarks/edit_race.py [--seed 1] [--rounds 10] [--first 1] [--seconds 12] [--steps 80]
                                             [--keep DIR] [--no-sandbox]

Each round builds a workspace whose task has `--steps` steps, each running
`echo <id> $(date +%s.%N) >> ledger.txt; sleep 0.1-0.3` and verifying its ledger line, starts
`akira loop start`, and for `--seconds` runs beside it:
- the person (`_person.py`): every 5-30 ms one edit of tasks.md (a step appended, a pending step
  deleted, two pending steps swapped, a step ticked by hand, a prose line changed), written in
  place as `cat >` does (truncate, then 512-byte chunks) or by an atomic replace;
- the operator: every 0.3-1.2 s a pause (a hook written by hand, or `akira loop stop`), resumed a
  moment later (the hook deleted, or `akira loop resume`). A process started with `--no-wait`
  exits at a pause and a new one resumes it. akira's own pauses (steps a person added during an
  attempt) are resumed the same way.
Then the loop runs to its end, and the round counts (each must be 0):
- re-runs: steps whose command ran more than once; the events around each run are printed;
- corrupt files: a task file that does not parse or holds a NUL byte;
- lost edits: the task file, boxes aside, is not what the person last wrote;
- deleted steps run: an attempt of a step started after a parse that followed its deletion;
- ticked, never ran: a step recorded done by akira, or ticked, that never ran and that the person
  did not tick; and steps left undone at the end.
Every round's workspace, akira's output and its timeline (events, edits, the operator's actions,
ledger lines) are kept under --keep. The verdict is PASS when every count is 0 in every round.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

from _common import akira_command, init_workspace
from _person import Person, boxes_aside, task_text

from akira_cli.events import EventType, read_events
from akira_cli.state.store import StateStore
from akira_cli.tasks.parser import parse_task_text
from akira_cli.tasks.reading import TaskFileError

TASK = "Specs/race/tasks.md"
STATUS = re.compile(rb'"status":"(\w+)"')
ROUND_SECONDS = 300.0
KINDS = ("re-runs", "corrupt", "lost edits", "deleted run", "ticked never ran", "unfinished")
Timeline = list[tuple[float, str, str]]


class Operator:
    """Pauses and resumes the loop as a person at a terminal would: a process that exits at a
    pause (`--no-wait`) is resumed by a new one, a waiting one by deleting its hook or by
    `akira loop resume` (which then only wakes it)."""

    def __init__(self, root: Path, rng: random.Random, log: Timeline) -> None:
        self.root, self.rng, self.log = root, rng, log
        self.processes: list[subprocess.Popen[bytes]] = []
        self.task_id = ""
        self.counts: Counter[str] = Counter()

    def note(self, text: str) -> None:
        self.log.append((time.time(), "operator", text))

    def spawn(self, *args: str) -> None:
        wait = self.rng.random() < 0.5
        command = [*akira_command(), "loop", *args, "--root", str(self.root)]
        command += [] if wait else ["--no-wait"]
        out = (self.root.parent / f"akira_{len(self.processes)}.out").open("wb")
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        self.processes.append(process)
        self.note(f"process {process.pid}: akira loop {' '.join(args)}{'' if wait else ' --no-wait'}")

    def alive(self) -> bool:
        return any(process.poll() is None for process in self.processes)

    def status(self) -> str:
        """The state file's status, read as `loop status` would show it (its first `status`
        key is the loop's: the model writes it before any nested one)."""
        for folder in (self.root / ".state", self.root / ".state" / "archive"):
            try:
                found = STATUS.search((folder / f"autonomous_loop_{self.task_id}.json").read_bytes())
            except OSError:
                continue
            if found:
                return found[1].decode()
        return "unknown"

    def find_task_id(self) -> None:
        while not self.task_id:
            found = sorted((self.root / ".state").glob("autonomous_loop_*.json"))
            if found:
                self.task_id = found[0].stem.removeprefix("autonomous_loop_")
            time.sleep(0.005)

    def pause(self) -> None:
        if self.rng.random() < 0.5:
            hook = self.root / ".hooks" / f"stop_autonomous_loop_{self.task_id}.md"
            hook.write_text("stopped by hand for a look\n")
            self.note("hook written by hand")
            self.counts["hook by hand"] += 1
            return
        stop = [*akira_command(), "loop", "stop", "--task-id", self.task_id, "--root", str(self.root)]
        try:  # a loaded machine can take many seconds to start a CLI: a slow stop is no defect
            done = subprocess.run(stop, capture_output=True, text=True, timeout=ROUND_SECONDS)
        except subprocess.TimeoutExpired:
            self.note(f"akira loop stop still running after {ROUND_SECONDS:.0f} s: killed")
            return
        self.note(f"akira loop stop -> {done.returncode} {done.stderr.strip()[:160]}")
        self.counts["akira loop stop"] += 1

    def resume(self) -> None:
        if self.alive() and self.rng.random() < 0.5:
            for hook in (self.root / ".hooks").glob("stop_autonomous_loop*.md"):
                hook.unlink(missing_ok=True)
            self.note("hooks deleted by hand")
            self.counts["hooks deleted"] += 1
            return
        self.spawn("resume", "--task-id", self.task_id, "--max-iterations", "2000")
        self.counts["akira loop resume"] += 1

    def run(self) -> bool:
        """Until the loop completes; False when it did not within the round's time."""
        self.spawn("start", "--task", TASK, "--max-iterations", "2000")
        self.find_task_id()
        deadline = time.time() + ROUND_SECONDS
        next_pause, idle_since = time.time() + self.rng.uniform(0.3, 1.2), time.time()
        while time.time() < deadline:
            status, alive = self.status(), self.alive()
            idle_since = time.time() if alive or status != "running" else idle_since
            if status == "completed" and not alive:
                return True
            if status in ("paused", "needs_action") or time.time() - idle_since > 2.0:
                time.sleep(self.rng.uniform(0.02, 0.3))  # a person notices
                self.counts["pauses"] += 1
                self.resume()
                end = time.time() + 5.0
                while time.time() < end and self.status() in ("paused", "needs_action"):
                    time.sleep(0.02)
                next_pause, idle_since = time.time() + self.rng.uniform(0.3, 1.2), time.time()
            elif status == "running" and time.time() >= next_pause:
                self.pause()
                next_pause = float("inf")
            time.sleep(0.02)
        return False

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait()


def epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def ledger(root: Path) -> list[tuple[float, str]]:
    path = root / "ledger.txt"
    runs = []
    for line in path.read_text().splitlines() if path.exists() else []:
        step_id, when = line.split()
        runs.append((float(when), step_id))
    return runs


def verify(root: Path, task_id: str, person: Person, timeline: Timeline) -> dict[str, list[str]]:
    runs = ledger(root)
    ran = Counter(step_id for _, step_id in runs)
    events = list(read_events(root / ".state" / "logs" / f"{task_id}.jsonl"))
    for event in events:
        what = " ".join(f"{k}={v}" for k, v in event.data.items() if k != "metrics")
        timeline.append((epoch(event.ts), "akira", f"{event.type} step={event.step_id} {what}"[:300]))
    timeline += [(when, "ledger", f"step {step_id} ran") for when, step_id in runs]
    timeline.sort()
    found: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for step_id, count in sorted(ran.items()):
        if count > 1:
            found["re-runs"].append(f"step {step_id} ran {count} times")
    task = root / TASK
    final = task if task.exists() else next(iter((root / "Done").glob("*/tasks.md")), task)
    data = final.read_bytes() if final.exists() else b""
    try:
        parsed = parse_task_text(data, final)
    except TaskFileError as exc:
        found["corrupt"].append(str(exc))
        parsed = None
    if b"\0" in data:
        found["corrupt"].append(f"{final} holds NUL bytes")
    found["lost edits"] += person.lost
    if data and boxes_aside(data) != boxes_aside(person.written):
        found["lost edits"].append("the final file, boxes aside, is not what the person last wrote")
    checkpoints = [epoch(e.ts) for e in events if e.type in (EventType.EVALUATION, EventType.LOOP_RESUMED)]
    checkpoints += [epoch(e.ts) for e in events if e.type == EventType.LOOP_STARTED]
    for event in events:
        if event.type != EventType.ATTEMPT_STARTED or event.step_id is None:
            continue
        deleted = person.deleted.get(event.step_id)
        started = epoch(event.ts)
        if deleted is not None and any(deleted < at < started for at in checkpoints):
            found["deleted run"].append(
                f"step {event.step_id} started at {started:.3f}, deleted at {deleted:.3f}"
            )
    store = StateStore(root / ".state")
    state = store.load(task_id)
    done = {step.step_id: step.done_by for step in store.all_completed(state)}
    for step_id, by in done.items():
        if by == "akira" and step_id not in ran:
            found["ticked never ran"].append(f"step {step_id} recorded done by akira, never ran")
        if by != "akira" and step_id not in person.ticked:
            found["ticked never ran"].append(f"step {step_id} done by {by}, not ticked by the person")
    undone = []
    for step in parsed.leaves() if parsed is not None else []:
        if step.ticked and step.id not in ran and step.id not in person.ticked:
            found["ticked never ran"].append(f"step {step.id} ticked, never ran, not ticked by the person")
        if not step.ticked or step.id not in done:
            undone.append(f"{step.id}{step.box!r}")
    if undone:
        found["unfinished"].append(f"{len(undone)} steps undone at the end: {' '.join(undone)}")
    return found


def around(timeline: Timeline, at: float, step_id: str) -> list[str]:
    """The loop's events and the operator's actions from 3 s before a run to 1 s after, and the
    person's edits of the last half second before it."""
    lines = []
    for when, who, text in timeline:
        near = at - 3.0 <= when <= at + 1.0
        edit = who == "person" and at - 0.5 <= when <= at + 0.2
        if (near and who != "person") or edit:
            mark = " <-" if f"step={step_id} " in text or text.startswith(f"step {step_id} ") else ""
            lines.append(f"    {when - at:+8.3f}s {who:8} {text}{mark}")
    return lines


def one_round(
    base: Path, seed: int, number: int, steps: int, seconds: float, sandboxed: bool
) -> Counter[str]:
    """One round; its defect counts, and its edits and pauses."""
    rng = random.Random(f"{seed}:{number}")
    folder = base / f"round_{number:03d}"
    root = folder / "ws"
    root.mkdir(parents=True)
    init_workspace(root, sandboxed=sandboxed)
    task = root / TASK
    task.parent.mkdir(parents=True)
    task.write_text(task_text(rng, steps))
    timeline: Timeline = []
    operator = Operator(root, random.Random(rng.random()), timeline)
    until = time.time() + seconds
    person = Person(task, random.Random(rng.random()), until, steps + 1, timeline)
    person.thread.start()
    try:
        completed = operator.run()
    finally:
        person.until = 0.0
        person.thread.join()
        operator.stop()
    found = verify(root, operator.task_id, person, timeline)
    if not completed:
        found["unfinished"].append("the loop did not complete within the round's time")
    runs = ledger(root)
    edits = person.counts["in place"] + person.counts["replaced"]
    report = [f"round {number}: {edits} edits, {len(person.deleted)} steps deleted"]
    for problem, items in found.items():
        report += [f"  {problem}: {item}" for item in items]
    for step_id in sorted({item.split()[1] for item in found["re-runs"]}):
        for when, ran in runs:
            if ran == step_id:
                report += [
                    f"  events around step {step_id}'s run at {when:.3f}:",
                    *around(timeline, when, step_id),
                ]
    (folder / "timeline.txt").write_text("".join(f"{w:.6f} {who:8} {t}\n" for w, who, t in sorted(timeline)))
    (folder / "report.txt").write_text("\n".join(report) + "\n")
    figures = {problem: len(items) for problem, items in found.items()}
    print(
        f"round {number:3d}: {sum(figures.values())} defects {figures}; edits {dict(person.counts)}; "
        f"operator {dict(operator.counts)}; processes {len(operator.processes)}",
        flush=True,
    )
    if sum(figures.values()):
        print("\n".join(report[1:]), flush=True)
    return Counter(figures) + Counter({"edits": edits, "pauses": operator.counts["pauses"]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--first", type=int, default=1, help="the first round's number (shards of a seed)")
    parser.add_argument("--seconds", type=float, default=12.0, help="how long the person edits")
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--keep", type=Path, default=None, help="where the rounds are kept")
    parser.add_argument("--no-sandbox", action="store_true", help="run the steps unconfined")
    args = parser.parse_args()
    base = args.keep or Path(f"/tmp/akira_edit_race/seed_{args.seed}_{time.strftime('%Y%m%d_%H%M%S')}")
    base.mkdir(parents=True, exist_ok=True)
    # akira's processes run with their bytecode cached, as an installed tool does (pip compiles
    # it): where PYTHONDONTWRITEBYTECODE is set, each would compile akira from source again.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(base / "pycache")
    last = args.first + args.rounds - 1
    print(
        f"edit race: seed {args.seed}, rounds {args.first}-{last} of {args.steps} steps, kept in {base}",
        flush=True,
    )
    totals: Counter[str] = Counter()
    for number in range(args.first, last + 1):
        totals.update(one_round(base, args.seed, number, args.steps, args.seconds, not args.no_sandbox))
    defects = {kind: totals[kind] for kind in KINDS}
    print(f"\n{args.rounds} rounds, {totals['edits']} edits, {totals['pauses']} pauses and resumes")
    print("defects: " + ", ".join(f"{kind} {count}" for kind, count in defects.items()))
    print(f"verdict: {'PASS' if not sum(defects.values()) else 'FAIL'} (every count must be 0)")


if __name__ == "__main__":
    main()
