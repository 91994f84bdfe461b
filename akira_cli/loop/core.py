"""The autonomous loop (docs/design.md): check stop conditions, run one attempt, save, repeat.

Stopping is done with `LoopStop` exceptions; `settle` turns each into its status, report and
exit code. An iteration costs one durable write: the save at the next boundary (the next step's
start, which `status` shows while the step runs, or the stop) holds the attempt's result, and
the step's box is ticked only after it. A crash in between loses that attempt and no more; any
other exception saves on its way out. The task file's side lives in `taskbook.TaskBook`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli import nofollow
from akira_cli.config import Config
from akira_cli.errors import (
    AkiraError,
    ForceStopped,
    LoopStop,
    NeedsPerson,
    TaskCompleted,
    TaskMovedToDone,
)
from akira_cli.event_payloads.run import LoopCompleted, LoopPaused, StopReached
from akira_cli.events import EventBus, EventType
from akira_cli.hooks import active_hook
from akira_cli.loop.conditions import Guard, TaskLocator
from akira_cli.loop.engine import StepEngine
from akira_cli.loop.metrics import update_metrics
from akira_cli.loop.partners import Follower, Reports
from akira_cli.loop.taskbook import TaskBook
from akira_cli.resume_requests import ResumeRequest, apply_resume, take_request
from akira_cli.state.models import LoopState
from akira_cli.state.records import Attempt
from akira_cli.state.store import StateStore
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.tasks.reading import TaskFileError
from akira_cli.tasks.source import TaskSource
from akira_cli.watcher import WorkspaceWatcher
from akira_cli.workspace import Workspace, command_line, in_quotes

if TYPE_CHECKING:
    from akira_cli.loop.waves import Waves


@dataclass
class AutonomousLoop:
    workspace: Workspace
    config: Config
    store: StateStore
    state: LoopState
    bus: EventBus
    engine: StepEngine
    watcher: WorkspaceWatcher
    locator: TaskLocator
    guard: Guard
    """The checks at a step's boundary (shared with the follower)."""
    reports: Reports
    wait: bool = True
    tasks: TaskSource | None = None
    """The start's parse of the task file, when it has one."""
    make_waves: Callable[[AutonomousLoop], Waves] | None = None
    """Parallel `[P]` waves (parallel steps), on a git-native run with `parallel` above 1:
    made with the loop, whose boundary and saves they work through."""
    follower: Follower | None = None
    """After the pull request: its checks and reviews followed (`follow:`)."""

    def __post_init__(self) -> None:
        self.book = TaskBook(
            self.workspace,
            self.state,
            self.bus,
            self.locator,
            self.engine.check_claim,
            tasks=self.tasks or TaskSource(),
            # the commits' own: a commit never carries a running mark
            marks=self.engine.commits.marks if self.engine.commits is not None else {},
        )
        self.forced = self.engine.control.forced
        self.waves: Waves | None = self.make_waves(self) if self.make_waves is not None else None

    def run(self) -> LoopStop:
        self.begin()
        while True:
            try:
                self.work()
            except LoopStop as stop:
                self.settle(stop)
                if self.wait_for_resume(stop) or (stop.report == "completion" and self.following()):
                    continue
                return stop

    def work(self) -> None:
        self.engine.limits.resume_wait()
        if self.follower is not None and self.follower.active():
            self.state.status = "following"  # the task is done: its pull request is what is left
            self.follower.follow(self.checkpoint)
        self.book.reconcile()
        while True:
            path = self.boundary()
            task = self.book.load(path)
            step = self.book.next_step(task)
            wave = self.waves.wave(task, step) if self.waves is not None else [step]
            if self.waves is None or len(wave) == 1:
                self.iterate(path, task, step)
                continue
            self.waves.run_wave(task, wave)
            if self.book.after_attempt(path, [s.id for s in wave]):
                self.checkpoint()

    def boundary(self) -> Path:
        """The checks before each step starts; the task file's path."""
        if (stop := self.engine.take_held()) is not None:
            raise stop
        path = self.guard.check_location(self.state)
        self.guard.check_hook(self.state)
        if self.forced.is_set():
            raise ForceStopped("stopped by a signal")
        self.guard.check_limits(self.state)
        return path

    def iterate(self, path: Path, task: TaskFile, step: Step) -> None:
        """One attempt. Its result is saved by the next boundary's one durable write (the next
        step's start, or the stop), and its box ticked only after that write."""
        self.begin_step(step)
        try:
            attempt = self.engine.attempt(step, task)
            self.engine.control.account()
        except AkiraError as exc:
            raise NeedsPerson(str(exc)) from None
        except BaseException as exc:
            if not isinstance(exc, LoopStop):
                self.checkpoint()  # settle() saves a stop; anything else is saved here
            raise
        if attempt.outcome == "success":
            self.completed(step, attempt)
        if self.book.after_attempt(path, [step.id]):
            self.checkpoint()
        if attempt.outcome == "success":
            self.report_completed(step, attempt)

    def completed(self, step: Step, attempt: Attempt) -> None:
        self.engine.iteration.complete(step, attempt)
        self.book.hold(step)

    def report_completed(self, step: Step, attempt: Attempt) -> None:
        """The run's figures (without the per-step map: no event grows with the run), then the
        step's completion."""
        runs = self.state.metrics.iterations_per_step.get(step.id, 0)
        self.bus.emit(EventType.METRICS, step.id, step_iterations=runs, **self.metrics_event())
        self.bus.emit(
            EventType.STEP_COMPLETED,
            step.id,
            attempts=attempt.number,
            duration_seconds=attempt.duration_seconds,
        )

    def metrics_event(self) -> dict[str, object]:
        update_metrics(self.state)
        return self.state.metrics.model_dump(exclude={"iterations_per_step"})

    def begin(self) -> None:
        self.refuse_stale()
        self.state.status = "running"
        if self.engine.commits is not None:
            self.engine.iteration.adopt(self.engine.commits.adopt())  # a kill -9 left them unrecorded
        if self.waves is not None:
            self.waves.prepare()  # stale slots removed, their folder made before any step runs
        self.checkpoint()
        self.bus.emit(
            EventType.LOOP_STARTED,
            task_path=self.state.task_path,
            pid=os.getpid(),
            iteration=self.state.iteration,
            max_iterations=self.state.max_iterations,
            steps_total=self.book.steps_total(),
        )

    def refuse_stale(self) -> None:
        """A run never starts from a copy older than the last save (two resumes at once, the
        second reading the state before the first ran and saved)."""
        resume = command_line(self.workspace, "loop", "resume", "--task-id", self.state.task_id)
        self.store.refuse_older(self.state, in_quotes(resume))

    def begin_step(self, step: Step) -> None:
        # The iteration's one durable write: the last result, and this step running. Its sync
        # waits for the attempt's first command to start (see `StepEngine.attempt`).
        self.engine.iteration.begin(step, lambda: self.checkpoint(defer_sync=True, running=step))

    def checkpoint(self, *, defer_sync: bool = False, running: Step | None = None) -> None:
        """Saves the state (see `StateStore.save`), then ticks the boxes that save completed
        and marks the step starting now (`running`) `[-]`."""
        self.engine.control.account()
        self.state.metrics.total_duration_seconds = round(self.state.elapsed_seconds, 3)
        update_metrics(self.state)
        self.store.save(self.state, defer_sync=defer_sync)
        self.book.flush(running)  # boxes are ticked once the state completing them is on disk
        settings = self.config.autonomous_loop
        if self.every(settings.backup_state_every_n_iterations):
            self.store.backup(self.state)
        if settings.create_progress_reports and self.every(settings.progress_report_every_n_iterations):
            self.reports.progress(self.state)
            self.engine.witness.forget()  # in Logs/, which git may show as the work's

    def every(self, n: int) -> bool:
        return bool(n) and self.state.iteration > 0 and self.state.iteration % n == 0

    def settle(self, stop: LoopStop) -> None:
        self.engine.witness.forget()  # what happens while the loop stands still is not the agent's
        self.state.moving_to_done = self.moves_to_done(stop)  # recorded before the move is made
        if self.state.moving_to_done:
            task = Path(self.state.task_path)
            self.state.moved_from = str(task.parent if task.name == "tasks.md" else task)
        self.checkpoint()  # the last attempt's result, before any file moves
        self.state.status = stop.status  # type: ignore[assignment]
        self.state.stop_reason = stop.message
        if stop.condition in type(self.state.stop_conditions).model_fields:
            setattr(self.state.stop_conditions, stop.condition, True)
        self.bus.send(
            StopReached(
                condition=stop.condition,
                status=stop.status,
                message=stop.message,
                exit_code=stop.exit_code,
                report=stop.report,
            )
        )
        try:
            if stop.report == "completion":
                self.complete(stop)
            elif stop.report == "intervention":
                self.reports.intervention(self.state, stop)
            elif stop.report == "escalation":
                kept = self.waves.kept() if self.waves is not None else []
                others = self.waves.failed_with(self.state.current_step) if self.waves is not None else []
                self.reports.escalation(self.state, stop, kept, others)
            self.reports.hand_off(self.state, stop)  # the pull request, if one is wanted
            if self.follower is not None and (watch := self.follower.after(stop)) is not None:
                self.state.pull_request, self.state.status = watch, "following"
        finally:
            self.checkpoint()
            self.book.unmark()  # no step runs now: no `[-]` left in the file
            if self.config.autonomous_loop.create_progress_reports:
                self.reports.progress(self.state)  # the last one tells how it ended
        if stop.status == "paused":
            self.bus.send(LoopPaused(reason=stop.message, waiting=self.wait))
        archive = self.config.autonomous_loop.archive_state_file and not self.following()
        if stop.report == "completion" and archive:
            self.store.archive(self.state)

    def following(self) -> bool:
        return self.follower is not None and self.follower.active()

    def moves_to_done(self, stop: LoopStop) -> bool:
        """Whether settling `stop` moves the task file to Done/ (akira's own completion): only a
        task that started under Specs/; a Kiro, spec-kit or OpenSpec spec ends where it started."""
        now, home = Path(self.state.task_path), self.workspace.home(self.state)
        in_specs = self.workspace.area_of(now) == self.workspace.area_of(home) == "Specs"
        return isinstance(stop, TaskCompleted) and self.config.autonomous_loop.auto_move_to_done and in_specs

    def complete(self, stop: LoopStop) -> None:
        self.engine.iteration.idle()
        if self.waves is not None:
            self.waves.clean()  # `git worktree list` shows only what the person had
        if self.state.moving_to_done:
            try:
                self.state.task_path = str(self.move_to_done(Path(self.state.task_path)))
            except OSError as exc:  # a link on the way (`Refused`): it stays, its ticks committed there
                self.state.moved_from = None
                self.bus.emit(EventType.WARNING, message=f"the task was not moved to Done/: {exc}")
            self.state.moving_to_done = False
        if self.engine.commits is not None and self.state.moved_from:
            moved_from = self.workspace.require_inside(Path(self.state.moved_from))
            moved_to = Path(self.state.task_path).parent
            self.engine.commits.commit_done(moved_from, moved_to, moved_to.name)
        elif self.engine.commits is not None:
            task = Path(self.state.task_path)
            self.engine.commits.commit_ticks(self.state.feature or self.workspace.feature_of(task))
        if self.config.autonomous_loop.create_completion_report:
            open_steps = self.book.open_steps() if isinstance(stop, TaskMovedToDone) else []
            self.reports.completion(self.state, open_steps, self.store.all_completed(self.state))
        self.bus.send(
            LoopCompleted(
                task_path=self.state.task_path, iterations=self.state.iteration, metrics=self.metrics_event()
            )
        )

    def move_to_done(self, path: Path) -> Path:
        """Moves the feature folder (or a loose task file) to Done/<feature>/; a link a step put
        on either way is refused (`nofollow.Refused`), never followed."""
        root, real = self.workspace.root, self.workspace.require_inside(path).resolve()
        feature = self.state.feature or self.workspace.feature_of(path)
        target = self.workspace.done / feature
        if os.path.lexists(target):
            target = self.workspace.done / f"{feature}_{self.state.task_id}"
        if path.name == "tasks.md" and path.parent.parent == self.workspace.specs:  # the feature folder
            nofollow.move(root, real.parent.relative_to(root), target.relative_to(root))
            return target / path.name
        nofollow.move(root, real.relative_to(root), target.relative_to(root) / "tasks.md")
        return target / "tasks.md"

    def wait_for_resume(self, stop: LoopStop) -> bool:
        if stop.status != "paused" or not self.wait or isinstance(stop, ForceStopped):
            return False
        request = ResumeRequest()
        while not self.forced.is_set():
            self.watcher.wait(1.0)
            request = take_request(self.store.dir, self.state.task_id) or request
            if self.moved_to_done() and not self.following():
                return True  # the next boundary completes it as the person's decision
            if self.resumable():
                apply_resume(self.state, request)
                self.engine.control.idle()
                self.checkpoint()
                self.bus.emit(EventType.LOOP_RESUMED, by="person")
                return True
        return False

    def moved_to_done(self) -> bool:
        path = self.locator.locate(Path(self.state.task_path))
        return path is not None and self.workspace.area_of(path) == "Done"

    def resumable(self) -> bool:
        path = self.locator.locate(Path(self.state.task_path))
        hook_free = active_hook(self.workspace, self.state.task_id) is None
        if not hook_free or path is None or self.workspace.area_of(path) == "Needs_Action":
            return False
        try:
            self.book.tasks.load(path)
        except TaskFileError:
            return False
        return True

    def force_stop(self) -> None:
        """Called from a signal handler: kill the running command's group, stop at once."""
        self.forced.set()
        self.engine.runner.kill()
        for lane in self.waves.lanes.values() if self.waves is not None else ():
            lane.runner.kill()
        self.watcher.changed.set()
