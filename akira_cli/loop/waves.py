"""Parallel steps (docs/design.md, waves): a wave of consecutive sibling `[P]` steps runs up to N at a time,
each in a worktree slot, and lands on the task branch one at a time in file order.

The scheduler (`wave`) says what is ready. Step runners work on threads of their own, each in
its own lane (`lanes.Lane`). This class is the committer: on the loop's thread only, it starts
each step (a save lists it in `current_steps`), finishes it (the record, reflection), lands it
(`git.landing`), runs its checks again on the task branch, and commits it. A save, never a lock,
is what the loop's thread does while agents run.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from akira_cli.checks import evaluate, step_checks
from akira_cli.errors import AkiraError, LoopStop
from akira_cli.events import EventType
from akira_cli.fileio import atomic_write
from akira_cli.git import landing
from akira_cli.git.nested import left_out, nested_repositories, outside_nested
from akira_cli.git.run import GitRun, subject
from akira_cli.git.steps import StepCommits, safe
from akira_cli.git.worktrees import Slots, slot_view
from akira_cli.loop.lanes import InFlight, Lane, Pending, slot_lane
from akira_cli.runner import tail
from akira_cli.state.models import CurrentStep
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.tasks.source import is_done

if TYPE_CHECKING:
    from akira_cli.agents.base import Agent
    from akira_cli.agents.presets.base import UsageLimit
    from akira_cli.config import Config
    from akira_cli.events import EventBus
    from akira_cli.loop.engine import StepEngine
    from akira_cli.loop.taskbook import TaskBook
    from akira_cli.runner import CommandRunner
    from akira_cli.state.models import LoopState
    from akira_cli.state.records import Attempt
    from akira_cli.workspace import Workspace


class Host(Protocol):
    """What a wave needs of the loop that runs it (`loop.core.AutonomousLoop`)."""

    state: LoopState
    config: Config
    workspace: Workspace
    bus: EventBus
    engine: StepEngine
    book: TaskBook
    forced: threading.Event
    agents_for: Callable[[CommandRunner], Callable[[Step], Agent]] | None

    def boundary(self) -> Path: ...

    def checkpoint(self, *, defer_sync: bool = False) -> None: ...

    def completed(self, step: Step, attempt: Attempt) -> None: ...

    def report_completed(self, step: Step, attempt: Attempt) -> None: ...


class Waves:
    def __init__(self, loop: Host, run: GitRun, commits: StepCommits, size: int) -> None:
        self.loop, self.run, self.commits, self.size = loop, run, commits, size
        self.state = loop.state
        self.slots = Slots(run, self.state.task_id, list(loop.config.git.worktree_link), self.warn)
        self.lanes: dict[int, Lane] = {}
        self.base = ""
        """The task branch's tip when the running wave started: every step branch starts there."""
        self.failed: list[str] = []
        """The steps whose last attempt in the last wave failed (an escalation tells of each)."""

    # -- the scheduler ----------------------------------------------------------------------------

    def wave(self, task: TaskFile, step: Step) -> list[Step]:
        """`step` and the consecutive sibling `[P]` steps after it that can run now."""
        if not step.parallel or self.state.record(step.id, step.title).collision:
            return [step]
        optional, done = self.state.include_optional, self.state.completed_ids()
        wave, index = [step], task.steps.index(step) + 1
        for sibling in task.steps[index:]:
            if sibling.parent_id != step.parent_id and not self.below(task, sibling, step.parent_id):
                break
            if sibling.parent_id != step.parent_id or sibling.children:
                continue
            if sibling.ticked or sibling.id in done or (not optional and task.is_optional(sibling)):
                continue
            record = self.state.steps.get(sibling.id)
            deps = [task.get(dep) for dep in sibling.depends or []]
            ready = all(dep is not None and is_done(task, dep, optional, done) for dep in deps)
            if not sibling.parallel or not ready or (record is not None and record.collision):
                break
            wave.append(sibling)
        return wave

    @staticmethod
    def below(task: TaskFile, step: Step, parent_id: str | None) -> bool:
        """Whether `step` lies under a sibling of the wave (a child of a sibling is not one)."""
        while step.parent_id is not None:
            if step.parent_id == parent_id:
                return True
            parent = task.get(step.parent_id)
            if parent is None:
                return False
            step = parent
        return parent_id is None

    # -- the committer ----------------------------------------------------------------------------

    def run_wave(self, task: TaskFile, steps: list[Step]) -> None:
        """Runs `steps` up to N at a time and lands them in file order; a stop (a hook, a move,
        a failure that ends a step, a forced stop) lets the running steps finish first."""
        self.base, wave = self.run.plumb.head()[0], InFlight.of(steps, self.size)
        self.failed = []
        self.loop.bus.emit(EventType.WAVE_STARTED, steps=wave.order[:50], parallel=len(wave.free))
        self.slots.prune()
        with ThreadPoolExecutor(len(wave.free), thread_name_prefix="akira-step") as pool, self.killing():
            while wave.queue or wave.running:
                self.start_ready(wave, task, pool)
                if wave.running:
                    finished, _ = wait(wave.running, timeout=1.0, return_when=FIRST_COMPLETED)
                elif wave.limit is not None:
                    self.wait_out(wave)
                    continue
                else:
                    break
                for future in finished:
                    self.collect(wave, wave.running.pop(future))
                self.land_ready(wave)
                if finished:
                    self.loop.checkpoint()
        if wave.stop is not None:
            if wave.stopped_at is not None:
                self.loop.engine.iteration.stopped_at(wave.stopped_at)
            raise wave.stop
        self.failed = []  # a later stop is not about this wave

    def start_ready(self, wave: InFlight, task: TaskFile, pool: ThreadPoolExecutor) -> None:
        """Steps started while slots are free, each after the loop's boundary (a pause, a move)."""
        while wave.starting:
            try:
                self.loop.boundary()
            except LoopStop as exc:
                wave.stop = exc
                return
            pending = self.begin(wave.queue.pop(0), task, wave.free.pop(0))
            wave.running[pool.submit(self.work, pending)] = pending

    def wait_out(self, wave: InFlight) -> None:
        """Nothing runs and a step met a usage limit: the wave waits until it resets."""
        assert wave.limit is not None
        (step_id, reset), wave.limit = wave.limit, None
        try:
            self.loop.engine.limits.wait_out(step_id, reset)
        except LoopStop as exc:
            wave.stop = exc

    def collect(self, wave: InFlight, pending: Pending) -> None:
        """A step whose run ended: its slot freed, its attempt finished; a success waits to
        land, a step a usage limit cut short goes back in the queue."""
        assert pending.lane.slot is not None
        wave.free.append(pending.lane.slot)
        self.loop.engine.iteration.finished(pending.step.id)
        try:
            if pending.attempt is not None and pending.attempt.outcome == "failure":
                self.failed.append(pending.step.id)
            reached = self.end(pending)
            if reached is not None:
                wave.requeue(pending.step, reached)
            elif pending.attempt is not None and pending.attempt.outcome == "success":
                wave.done[pending.step.id] = pending
        except (LoopStop, AkiraError) as exc:
            wave.halt(exc, pending.step)

    def land_ready(self, wave: InFlight) -> None:
        for pending in wave.landable():
            try:
                self.land(pending, wave.landed)
            except LoopStop as exc:  # a hook refused its commit, and that ended the step
                wave.stop, wave.stopped_at = wave.stop or exc, wave.stopped_at or pending.step

    @contextlib.contextmanager
    def killing(self) -> Iterator[None]:
        """Whatever the loop's thread raises, the running steps' groups are killed (their
        threads end with them) before it is raised on."""
        try:
            yield
        except BaseException:
            for lane in self.lanes.values():
                lane.runner.kill()
            raise

    def begin(self, step: Step, task: TaskFile, slot: int) -> Pending:
        path = self.slots.path(slot)
        lane = self.lane(slot, path)
        lane.witness.forget()
        # the running steps, on disk before their agents start
        self.loop.engine.iteration.begin(step, self.loop.checkpoint, worktree=path)
        pending = self.loop.engine.start(step, task, lane)
        self.loop.book.running(Path(self.state.task_path), step)
        return pending

    def lane(self, slot: int, path: Path) -> Lane:
        lane = self.lanes.get(slot)
        if lane is None:
            engine = self.loop.engine
            assert self.loop.agents_for is not None
            workdir = path / os.path.relpath(engine.workdir, self.run.root)
            view = slot_view(self.run.git, path) if workdir == path else None
            workspace = Path(os.path.normpath(path / os.path.relpath(self.run.workspace, self.run.root)))
            lane = slot_lane(
                slot, path, workdir, engine.runner, engine.plane, self.loop.agents_for, view, workspace
            )
            self.lanes[slot] = lane
        lane.runner.killed = self.loop.forced.is_set()
        return lane

    def work(self, pending: Pending) -> Pending:
        """On a step runner's thread: the attempt, then its work as a commit on its branch."""
        try:
            assert pending.lane.slot is not None
            self.slots.take(pending.lane.slot, pending.step.id, self.base)
            self.loop.engine.run(pending)
            attempt, lane = pending.attempt, pending.lane
            if attempt is not None and attempt.outcome == "success" and lane.path is not None:
                names = self.committable(lane, attempt.files_changed)
                nested = nested_repositories(lane.path, self.names(lane, attempt.files_changed))
                if nested:
                    self.loop.bus.emit(
                        EventType.WARNING, pending.step.id, message=left_out(nested), nested=nested[:20]
                    )
                message = f"{subject(pending.step.id, pending.step.title)}\n\nAkira-Step: {pending.step.id}\n"
                pending.commit = self.slots.commit(lane.path, pending.step.id, names, message)
                self.slots.clean[lane.path] = len(names) == len(attempt.files_changed)
            elif attempt is not None and attempt.outcome == "failure" and lane.path is not None:
                self.keep_patch(pending, self.committable(lane, attempt.files_changed))
        except BaseException as exc:  # raised again on the loop's thread
            pending.error = exc
        return pending

    def keep_patch(self, pending: Pending, names: list[str]) -> None:
        """A failed attempt's work, as in the main work tree (never committed): saved as a patch, its
        `--stat` for the reflection and the next prompt. The slot is reset when it is reused."""
        attempt, lane = pending.attempt, pending.lane
        assert attempt is not None and lane.path is not None
        patch, stat = self.slots.patch(lane.path, names)
        if not patch:
            return
        store = self.loop.workspace.state_dir
        where = store / "attempts" / self.state.task_id / f"{safe(pending.step.id)}-{attempt.number}.patch"
        atomic_write(where, patch, durable=False)
        attempt.patch = str(where.relative_to(store.parent))
        summary = f"What this attempt changed in its worktree (its patch: {attempt.patch}):\n{stat}"
        attempt.output_tail = f"{attempt.output_tail}\n\n{summary}".strip()[-4000:]

    def committable(self, lane: Lane, changed: list[str]) -> list[str]:
        """The slot-relative names of what a step changed that its commit may hold: not the
        task file, nor the control plane, nor a repository the step made inside."""
        assert lane.path is not None
        task = self.run.relative(Path(self.state.task_path))
        names = [
            name
            for name in self.names(lane, changed)
            if name != task and not self.run.is_control(self.run.root / name)
        ]
        return outside_nested(lane.path, names)

    @staticmethod
    def names(lane: Lane, changed: list[str]) -> list[str]:
        assert lane.path is not None
        return [os.path.relpath(lane.workdir / name, lane.path) for name in changed]

    def end(self, pending: Pending) -> UsageLimit | None:
        """The attempt's bookkeeping (a success in its worktree lands next); the usage limit
        that cut it short, if one did."""
        if pending.error is not None:
            raise pending.error
        result = pending.result
        if pending.attempt is None and result is not None and result.limit is not None:
            self.loop.engine.iteration.give_back()  # a usage limit spends no iteration
            return result.limit
        self.loop.engine.finish(pending)
        return None

    def land(self, pending: Pending, landed: list[str]) -> None:
        """The step onto the task branch: merged, checked there again, committed."""
        step, record, attempt = pending.step, pending.record, pending.attempt
        assert attempt is not None
        task_file = self.run.relative(Path(self.state.task_path))
        done = (
            landing.land(self.run, self.base, pending.commit, task_file)
            if pending.commit
            else landing.Landing()
        )
        self.loop.engine.witness.forget()  # the main work tree changed under its last look
        self.slots.drop_branch(step.id)
        if done.collided:
            return self.collide(
                pending,
                f"these files collided with steps that landed first: {', '.join(done.collided)}",
                landed,
            )
        failed = self.recheck(step)
        if failed:
            landing.unland(self.run, done)
            return self.collide(pending, f"on the task branch, {failed}", landed)
        self.commits.commit(step, pending.task, record, attempt, None, paths=done.paths)
        if attempt.outcome != "success":  # a hook refused the commit
            landing.unland(self.run, done)
            self.loop.engine.outcomes.failed(step, record, attempt)
            return None
        landed.append(step.id)
        self.loop.engine.outcomes.succeeded(record, attempt)
        self.loop.completed(step, attempt)
        self.loop.checkpoint()  # its tick on disk before the next landing reads the file
        self.loop.report_completed(step, attempt)
        return None

    def recheck(self, step: Step) -> str:
        """The step's checks and the project checks in the main work tree; what failed, or ''."""
        engine = self.loop.engine
        timeout = step.timeout or engine.config.agent.command_timeout_seconds
        checks = step_checks(step, engine.config.checks, engine.runner, engine.workdir, timeout)
        if not checks:
            return ""
        evaluation = evaluate(checks, engine.config.evaluation.confidence_threshold)
        if evaluation.complete:
            return ""
        bad = [check for check in evaluation.checks if not check.passed]
        name = bad[0].name if bad else "a check"
        output = tail(bad[0].detail, 1500) if bad else ""
        return f"the check {name} failed after the merge:\n{output}".strip()

    def collide(self, pending: Pending, why: str, landed: list[str]) -> None:
        """The step runs again after the wave, one at a time, from the new tip: no failure of
        the agent, no reflection."""
        assert pending.attempt is not None
        pending.attempt.outcome = "collided"
        first = f" Steps that landed first in its wave: {', '.join(landed)}." if landed else ""
        self.loop.engine.iteration.collided(pending.step, f"{why}.{first}")
        self.loop.bus.emit(
            EventType.LEDGER, pending.step.id, action="collided", reason=why[:300], landed=landed[:20]
        )

    def failed_with(self, current: CurrentStep | None) -> list[str]:
        """The steps that failed in the last wave besides `current`, the one the stop is about."""
        return [step_id for step_id in self.failed if current is None or step_id != current.step_id]

    def prepare(self) -> None:
        """At a start or a resume: the slots a crash left, removed (their groups were killed at
        the session's start), and the slots' folder made before any step runs."""
        if self.state.current_steps or self.slots.listing():
            removed = self.clean()
            stale = self.loop.engine.iteration.forget_running()
            self.loop.bus.emit(
                EventType.LEDGER, action="stale_worktrees_removed", worktrees=removed, steps=stale
            )
        try:
            self.slots.prepare()
        except OSError as exc:  # a link where the slots go: the first wave refuses it and pauses
            self.warn(f"the worktree slots' folder was not made: {exc}")

    def clean(self) -> int:
        """The task's worktrees and step branches, removed (completion, or stale after a crash)."""
        self.lanes.clear()
        return self.slots.remove()

    def warn(self, message: str) -> None:
        self.loop.bus.emit(EventType.WARNING, message=message)
