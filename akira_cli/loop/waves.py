"""Parallel steps (docs/design.md, waves): a wave of consecutive sibling `[P]` steps runs up to N at a time,
each in a worktree slot, and lands on the task branch one at a time in file order.

The scheduler (`wave`) says what is ready. Step runners work on threads of their own, each in
its own lane (`lanes.Lane`). This class is the committer: on the loop's thread only, it starts
each step (`Iteration.begin`: a save lists it in `current_steps`), finishes it (the record,
reflection), lands it, runs its checks again on the task branch, and commits it. What git does
(the slots, the step branches, the landing, the commits) is its `Worktrees` partner's
(`loop.partners`). A save, never a lock, is what the loop's thread does while agents run.

It is handed what it works with (the engine, the iteration's writer, the control, the task
book, the loop's save and its boundary): it never calls back into the loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.checks import evaluate, step_checks
from akira_cli.errors import AkiraError, LoopStop
from akira_cli.events import EventType
from akira_cli.loop.lanes import InFlight, Lane, Pending, slot_lane
from akira_cli.runner import tail
from akira_cli.state.models import CurrentStep
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.tasks.source import is_done

if TYPE_CHECKING:
    from akira_cli.agents.base import Agent, UsageLimit
    from akira_cli.loop.control import Control
    from akira_cli.loop.engine import StepEngine
    from akira_cli.loop.iteration import Iteration, Save
    from akira_cli.loop.partners import Worktrees
    from akira_cli.loop.taskbook import TaskBook
    from akira_cli.runner import CommandRunner
    from akira_cli.state.records import Attempt


@dataclass
class Waves:
    git: Worktrees
    engine: StepEngine
    iteration: Iteration
    """The only writer of an iteration's part of the state: a wave step's start, completion, collision."""
    control: Control
    book: TaskBook
    save: Save
    """The loop's save (its checkpoint): the state on disk, then the boxes it completed ticked."""
    boundary: Callable[[], Path]
    """The loop's checks before a step starts (a hook, a move, a limit, a forced stop): raises the stop."""
    report: Callable[[Step, Attempt], None]
    """A landed step's completion told (its events), after the save that records it."""
    size: int
    agents_for: Callable[[CommandRunner], Callable[[Step], Agent]]
    """Agents that run their commands through a given runner (a slot's lane)."""
    lanes: dict[int, Lane] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    """The steps whose last attempt in the last wave failed (an escalation tells of each)."""

    def __post_init__(self) -> None:
        self.state, self.bus = self.iteration.state, self.iteration.bus

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
        wave = InFlight.of(steps, self.size)
        self.failed = []
        self.bus.emit(EventType.WAVE_STARTED, steps=wave.order[:50], parallel=len(wave.free))
        self.git.start()
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
                    self.save()
        if wave.stop is not None:
            if wave.stopped_at is not None:
                self.iteration.stopped_at(wave.stopped_at)
            raise wave.stop
        self.failed = []  # a later stop is not about this wave

    def start_ready(self, wave: InFlight, task: TaskFile, pool: ThreadPoolExecutor) -> None:
        """Steps started while slots are free, each after the loop's boundary (a pause, a move)."""
        while wave.starting:
            try:
                self.boundary()
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
            self.engine.limits.wait_out(step_id, reset)
        except LoopStop as exc:
            wave.stop = exc

    def collect(self, wave: InFlight, pending: Pending) -> None:
        """A step whose run ended: its slot freed, its attempt finished; a success waits to
        land, a step a usage limit cut short goes back in the queue."""
        assert pending.lane.slot is not None
        wave.free.append(pending.lane.slot)
        self.iteration.finished(pending.step.id)
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
        path = self.git.slot(slot)
        lane = self.lane(slot, path)
        lane.witness.forget()
        # the running steps, on disk before their agents start
        self.iteration.begin(step, self.save, worktree=path)
        pending = self.engine.start(step, task, lane)
        self.book.running(Path(self.state.task_path), step)
        return pending

    def lane(self, slot: int, path: Path) -> Lane:
        lane = self.lanes.get(slot)
        if lane is None:
            engine = self.engine
            workdir, view, workspace = self.git.place(path, engine.workdir)
            lane = slot_lane(
                slot, path, workdir, engine.runner, engine.plane, self.agents_for, view, workspace
            )
            self.lanes[slot] = lane
        lane.runner.killed = self.control.forced.is_set()
        return lane

    def work(self, pending: Pending) -> Pending:
        """On a step runner's thread: the attempt, then its work as a commit on its branch."""
        try:
            assert pending.lane.slot is not None
            self.git.take(pending.lane.slot, pending.step.id)
            self.engine.run(pending)
            attempt, lane = pending.attempt, pending.lane
            if attempt is not None and attempt.outcome == "success" and lane.path is not None:
                pending.commit = self.git.commit_work(pending.step, attempt, lane.path, lane.workdir)
            elif attempt is not None and attempt.outcome == "failure" and lane.path is not None:
                self.keep_patch(pending)
        except BaseException as exc:  # raised again on the loop's thread
            pending.error = exc
        return pending

    def keep_patch(self, pending: Pending) -> None:
        """A failed attempt's work, as in the main work tree (never committed): saved as a patch, its
        `--stat` for the reflection and the next prompt."""
        attempt, lane = pending.attempt, pending.lane
        assert attempt is not None and lane.path is not None
        kept = self.git.keep_failed(pending.step, attempt, lane.path, lane.workdir)
        if kept is None:
            return
        attempt.patch, stat = kept
        summary = f"What this attempt changed in its worktree (its patch: {attempt.patch}):\n{stat}"
        attempt.output_tail = f"{attempt.output_tail}\n\n{summary}".strip()[-4000:]

    def end(self, pending: Pending) -> UsageLimit | None:
        """The attempt's bookkeeping (a success in its worktree lands next); the usage limit
        that cut it short, if one did."""
        if pending.error is not None:
            raise pending.error
        result = pending.result
        if pending.attempt is None and result is not None and result.limit is not None:
            self.iteration.give_back()  # a usage limit spends no iteration
            return result.limit
        self.engine.finish(pending)
        return None

    def land(self, pending: Pending, landed: list[str]) -> None:
        """The step onto the task branch: merged, checked there again, committed."""
        step, record, attempt = pending.step, pending.record, pending.attempt
        assert attempt is not None
        collided = self.git.land(step, pending.commit)
        self.engine.witness.forget()  # the main work tree changed under its last look
        if collided:
            why = f"these files collided with steps that landed first: {', '.join(collided)}"
            return self.collide(pending, why, landed)
        failed = self.recheck(step)
        if failed:
            self.git.unland(step)
            return self.collide(pending, f"on the task branch, {failed}", landed)
        self.git.commit(step, pending.task, record, attempt)
        if attempt.outcome != "success":  # a hook refused the commit
            self.git.unland(step)
            self.engine.outcomes.failed(step, record, attempt)
            return None
        landed.append(step.id)
        self.engine.outcomes.succeeded(record, attempt)
        self.iteration.complete(step, attempt)
        self.book.hold(step)
        self.save()  # its tick on disk before the next landing reads the file
        self.report(step, attempt)
        return None

    def recheck(self, step: Step) -> str:
        """The step's checks and the project checks in the main work tree; what failed, or ''."""
        engine = self.engine
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
        self.iteration.collided(pending.step, f"{why}.{first}")
        self.bus.emit(
            EventType.LEDGER, pending.step.id, action="collided", reason=why[:300], landed=landed[:20]
        )

    def failed_with(self, current: CurrentStep | None) -> list[str]:
        """The steps that failed in the last wave besides `current`, the one the stop is about."""
        return [step_id for step_id in self.failed if current is None or step_id != current.step_id]

    def prepare(self) -> None:
        """At a start or a resume: the slots a crash left, removed (their groups were killed at
        the session's start), and the slots' folder made before any step runs."""
        if self.state.current_steps or self.git.listing():
            removed = self.clean()
            stale = self.iteration.forget_running()
            self.bus.emit(EventType.LEDGER, action="stale_worktrees_removed", worktrees=removed, steps=stale)
        self.git.prepare()  # a link where the slots go: warned, and the first wave refuses it and pauses

    def kept(self) -> list[str]:
        """The task's worktrees and step branches left now (an escalation names them)."""
        return self.git.listing()

    def clean(self) -> int:
        """The task's worktrees and step branches, removed (completion, or stale after a crash)."""
        self.lanes.clear()
        return self.git.remove()
