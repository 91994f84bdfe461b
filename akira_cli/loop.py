"""The autonomous loop (SPEC 5): check stop conditions, run one attempt, save, repeat.

Stopping is done with `LoopStop` exceptions; `settle` turns each into its status, report and
exit code. The state is saved in `finally:` after every iteration, before any other work.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from akira_cli.conditions import Guard, TaskLocator
from akira_cli.config import Config
from akira_cli.control import ResumeRequest, apply_resume, take_request
from akira_cli.engine import StepEngine
from akira_cli.errors import (
    AkiraError,
    ForceStopped,
    LoopFailed,
    LoopStop,
    NeedsPerson,
    StopRequested,
    TaskCompleted,
    TaskFileInvalid,
    TaskMovedToDone,
)
from akira_cli.events import EventBus, EventType
from akira_cli.hooks import active_hook, write_hook
from akira_cli.ledger import Ledger
from akira_cli.metrics import update_metrics
from akira_cli.reports import completion_report, escalation, intervention_request, progress_report
from akira_cli.state.models import CompletedStep, CurrentStep, LoopState
from akira_cli.state.store import StateStore
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.tasks.parser import TaskFileError
from akira_cli.tasks.source import TaskSource, is_done
from akira_cli.watcher import WorkspaceWatcher
from akira_cli.workspace import Workspace, command_line


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
    wait: bool = True

    def __post_init__(self) -> None:
        self.guard = Guard(self.workspace, self.config, self.locator)
        self.tasks = TaskSource()
        self.ledger = Ledger(self.state, self.bus, self.engine.check_claim)
        self.forced = threading.Event()
        self._mark = time.monotonic()
        self.held: list[Step] = []
        """Steps completed in memory, ticked in the file after the next save."""
        self._cursor: tuple[TaskFile | None, int] = (None, 0)

    def run(self) -> LoopStop:
        self.begin()
        while True:
            try:
                self.work()
            except LoopStop as stop:
                self.settle(stop)
                if self.wait_for_resume(stop):
                    continue
                return stop

    def work(self) -> None:
        self.engine.limits.resume_wait()
        self.reconcile()
        while True:
            path = self.guard.check_location(self.state)
            self.guard.check_hook(self.state)
            if self.forced.is_set():
                raise ForceStopped("stopped by a signal")
            task = self.load(path)
            step = self.next_step(task)
            self.guard.check_limits(self.state)
            self.iterate(path, task, step)

    def load(self, path: Path) -> TaskFile:
        try:
            return self.tasks.load(path)
        except TaskFileError as exc:
            raise TaskFileInvalid(f"{exc} (the loop continues once the file parses again)") from None

    def iterate(self, path: Path, task: TaskFile, step: Step) -> None:
        """One attempt. Its result is saved by the next boundary's one durable write (the next
        step's start, or the stop), and its box ticked only after that write."""
        self.state.iteration += 1
        self.bus.iteration = self.state.iteration
        self.begin_step(path, step)
        try:
            attempt = self.engine.attempt(step, task)
            self.account()
        except AkiraError as exc:
            raise NeedsPerson(str(exc)) from None
        except BaseException as exc:
            if not isinstance(exc, LoopStop):
                self.checkpoint()  # settle() saves a stop; anything else is saved here
            raise
        if attempt.outcome == "success":
            self.state.completed_steps.append(
                CompletedStep(
                    step_id=step.id,
                    description=step.title,
                    duration_seconds=attempt.duration_seconds,
                    attempts=attempt.number,
                    verified=attempt.verified,
                )
            )
            self.state.current_step = None
            self.held.append(step)
        self.after_attempt(path, step)
        if attempt.outcome == "success":
            step_iterations = self.state.metrics.iterations_per_step.get(step.id, 0)
            self.bus.emit(EventType.METRICS, step.id, step_iterations=step_iterations, **self.metrics_event())
            self.bus.emit(
                EventType.STEP_COMPLETED,
                step.id,
                attempts=attempt.number,
                duration_seconds=attempt.duration_seconds,
            )

    def metrics_event(self) -> dict[str, object]:
        """The run's figures, without the per-step map: an event never grows with the run."""
        update_metrics(self.state)
        return self.state.metrics.model_dump(exclude={"iterations_per_step"})

    def after_attempt(self, path: Path, step: Step) -> None:
        """Ticks the agent made are claims; directives it changed wait for a person."""
        current = self.locator.locate(path)
        if current is None:
            return  # deleted or moved: the next boundary says so
        task = self.load(current)
        settled = self.settle_ticks(current, task, during_attempt=True, running=step.id)
        changed = self.ledger.changed_directives(self.tasks.load(current))
        if changed:
            resume = command_line(self.workspace, "loop", "resume", "--task-id", self.state.task_id)
            reason = (
                f"directives of step(s) {', '.join(changed[:10])} changed in "
                f"{self.workspace.relative(current)} during an attempt; read them, then delete "
                f"this hook or run '{resume}' to let them run"
            )
            hook = write_hook(self.workspace, self.state, reason)
            self.bus.emit(EventType.LEDGER, step.id, action="directives_held", steps=changed[:20])
            raise StopRequested(f"{reason} ({self.workspace.relative(hook)})")
        if settled:
            self.checkpoint()

    def settle_ticks(
        self, path: Path, task: TaskFile, *, during_attempt: bool, running: str | None = None
    ) -> bool:
        """Applies the ledger to the file; True when the state changed (claims or person ticks)."""
        before = self.state.completed_total
        held = frozenset(step.id for step in self.held)
        writes = self.ledger.reconcile(task, during_attempt=during_attempt, current=running, held=held)
        for step_id, box in writes.items():
            self.mark(path, step_id, box)
        return bool(writes) or self.state.completed_total != before

    def next_step(self, task: TaskFile) -> Step:
        """The first step, in document order, that can run. Steps before the remembered place
        were all done or skipped in this same parse, so the search starts there."""
        optional = self.state.include_optional
        completed = self.state.completed_ids()
        start = self._cursor[1] if self._cursor[0] is task else 0
        waiting = False
        for index in range(start, len(task.steps)):
            step = task.steps[index]
            if step.children or step.ticked or step.id in completed:
                continue
            if (not optional and task.is_optional(step)) or task.under_ticked_parent(step):
                continue
            if not waiting:
                self._cursor, waiting = (task, index), True
            deps = [task.get(dep) for dep in step.depends or []]
            if all(dep is not None and is_done(task, dep, optional, completed) for dep in deps):
                return step
        if not waiting:
            raise TaskCompleted(f"all {len(task.leaves(optional))} steps are done")
        raise LoopFailed(
            f"{task.path}: no pending step can start, their 'Depends:' wait on each other; "
            "fix the Depends: lines"
        )

    def begin(self) -> None:
        self.state.status = "running"
        self.checkpoint()
        self.bus.emit(
            EventType.LOOP_STARTED,
            task_path=self.state.task_path,
            pid=os.getpid(),
            iteration=self.state.iteration,
            max_iterations=self.state.max_iterations,
            steps_total=self.steps_total(),
        )

    def steps_total(self) -> int:
        path = Path(self.state.task_path)
        try:
            return len(self.tasks.load(path).leaves(self.state.include_optional))
        except (AkiraError, OSError):
            return 0

    def begin_step(self, path: Path, step: Step) -> None:
        record = self.state.record(step.id, step.title)
        if self.state.pending_guidance:
            record.guidance, self.state.pending_guidance = self.state.pending_guidance, None
        number = record.window_count + 1
        self.state.current_step = CurrentStep(step_id=step.id, description=step.title, attempt=number)
        self.bus.emit(EventType.ITERATION_STARTED, step.id, attempt=number)
        if number == 1:
            self.bus.emit(EventType.STEP_STARTED, step.id, title=step.title)
        self.checkpoint()  # the iteration's one durable write: the last result, this step running
        self.mark(path, step.id, "-")

    def tick(self, path: Path, step: Step) -> None:
        task = self.mark(path, step.id, "x")
        parent = task.get(step.parent_id) if task and step.parent_id else None
        while task is not None and parent is not None and is_done(task, parent, self.state.include_optional):
            task = self.mark(path, parent.id, "x")
            parent = task.get(parent.parent_id) if task and parent.parent_id else None

    def mark(self, path: Path, step_id: str, box: str) -> TaskFile | None:
        """Writes one checkbox; a file a person just moved is found again, a deleted one skipped."""
        for _ in range(3):
            current = self.locator.locate(path)
            if current is None:
                return None
            try:
                task = self.tasks.mark(current, step_id, box)
            except (TaskFileError, FileNotFoundError) as exc:
                if current.exists():  # a person's edit broke the file: the next boundary pauses
                    self.bus.emit(EventType.WARNING, step_id, message=f"checkbox not written: {exc}")
                    return None
                continue  # moved between finding it and writing it: look again
            self.state.task_file_identity = self.locator.remember(current)
            return task
        return None

    def reconcile(self) -> None:
        """At a start, a resume or the end of a pause: the file as it is now is what a person
        left. Ticks new since akira last looked are theirs; completed steps are ticked back
        (a crash can fall between save and tick, a person can revert a box)."""
        path = self.locator.locate(Path(self.state.task_path))
        if path is None:
            return
        self.state.task_file_identity = self.locator.remember(path)
        task: TaskFile | None = self.load(path)
        assert task is not None
        self.ledger.trust(task)
        self.settle_ticks(path, task, during_attempt=False)
        task = self.tasks.load(path)
        for parent in reversed(task.steps if task else []):  # deepest parents first
            if task is None:
                break
            if parent.children and not parent.ticked and is_done(task, parent, self.state.include_optional):
                task = self.mark(path, parent.id, "x")

    def account(self) -> None:
        now = time.monotonic()
        self.state.elapsed_seconds += now - self._mark
        self._mark = now

    def checkpoint(self) -> None:
        self.account()
        self.state.metrics.total_duration_seconds = round(self.state.elapsed_seconds, 3)
        update_metrics(self.state)
        self.store.save(self.state)
        held, self.held = self.held, []
        for step in held:  # a box is ticked only once the state that completes it is on disk
            self.tick(Path(self.state.task_path), step)
        settings = self.config.autonomous_loop
        if self.every(settings.backup_state_every_n_iterations):
            self.store.backup(self.state)
        if settings.create_progress_reports and self.every(settings.progress_report_every_n_iterations):
            progress_report(self.workspace, self.state)

    def every(self, n: int) -> bool:
        return bool(n) and self.state.iteration > 0 and self.state.iteration % n == 0

    def settle(self, stop: LoopStop) -> None:
        self.checkpoint()  # the last attempt's result, before any file moves
        self.state.status = stop.status  # type: ignore[assignment]
        self.state.stop_reason = stop.message
        if stop.condition in type(self.state.stop_conditions).model_fields:
            setattr(self.state.stop_conditions, stop.condition, True)
        self.bus.emit(
            EventType.STOP_CONDITION,
            condition=stop.condition,
            status=stop.status,
            message=stop.message,
            exit_code=stop.exit_code,
            report=stop.report,
        )
        try:
            if stop.report == "completion":
                self.complete(stop)
            elif stop.report == "intervention":
                intervention_request(self.workspace, self.state, stop)
            elif stop.report == "escalation":
                escalation(self.workspace, self.state, stop)
        finally:
            self.checkpoint()
            if self.config.autonomous_loop.create_progress_reports:
                progress_report(self.workspace, self.state)  # the last one tells how it ended
        if stop.status == "paused":
            self.bus.emit(EventType.LOOP_PAUSED, reason=stop.message, waiting=self.wait)
        if stop.report == "completion" and self.config.autonomous_loop.archive_state_file:
            self.store.archive(self.state)

    def complete(self, stop: LoopStop) -> None:
        self.state.current_step = None
        in_specs = self.workspace.area_of(Path(self.state.task_path)) == "Specs"
        if isinstance(stop, TaskCompleted) and self.config.autonomous_loop.auto_move_to_done and in_specs:
            self.state.task_path = str(self.move_to_done(Path(self.state.task_path)))
        if self.config.autonomous_loop.create_completion_report:
            open_steps = self.open_steps() if isinstance(stop, TaskMovedToDone) else []
            completion_report(self.workspace, self.state, open_steps, self.store.all_completed(self.state))
        self.bus.emit(
            EventType.LOOP_COMPLETED,
            task_path=self.state.task_path,
            iterations=self.state.iteration,
            metrics=self.metrics_event(),
        )

    def open_steps(self) -> list[str]:
        """The steps still open when a person declared the task done by moving it to Done/."""
        try:
            task = self.tasks.load(Path(self.state.task_path))
        except (AkiraError, OSError):
            return ["(the task file could not be read)"]
        done = self.state.completed_ids()
        optional = self.state.include_optional
        return [
            f"{step.id}. {step.title}"
            for step in task.leaves(optional)
            if not step.ticked and step.id not in done and not task.under_ticked_parent(step)
        ]

    def move_to_done(self, path: Path) -> Path:
        """Moves the feature folder (or a loose task file) to Done/<feature>/."""
        self.workspace.require_inside(path)
        feature = self.state.feature or self.workspace.feature_of(path)
        target = self.workspace.done / feature
        if target.exists():
            target = self.workspace.done / f"{feature}_{self.state.task_id}"
        target.parent.mkdir(parents=True, exist_ok=True)
        is_feature_dir = path.name == "tasks.md" and path.parent.parent == self.workspace.specs
        if is_feature_dir:
            shutil.move(str(path.parent), str(target))
            return target / path.name
        target.mkdir(parents=True)
        shutil.move(str(path), str(target / "tasks.md"))
        return target / "tasks.md"

    def wait_for_resume(self, stop: LoopStop) -> bool:
        if stop.status != "paused" or not self.wait or isinstance(stop, ForceStopped):
            return False
        request = ResumeRequest()
        while not self.forced.is_set():
            self.watcher.wait(1.0)
            request = take_request(self.store.dir, self.state.task_id) or request
            if self.moved_to_done():
                return True  # the next boundary completes it as the person's decision
            if self.resumable():
                apply_resume(self.state, request)
                self._mark = time.monotonic()
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
            self.tasks.load(path)
        except TaskFileError:
            return False
        return True

    def pause(self, seconds: float) -> bool:
        """Waits out a backoff; True as soon as a stop is wanted. File events only wake it to
        check, so an unrelated change in the workspace never cuts the wait short."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if self.stop_wanted():
                return True
            self.watcher.wait(left)
        return self.stop_wanted()

    def stop_wanted(self) -> bool:
        """Checked at safe boundaries inside a step: a forced stop, or a hook a person dropped."""
        return self.forced.is_set() or active_hook(self.workspace, self.state.task_id) is not None

    def force_stop(self) -> None:
        """Called from a signal handler: kill the running command's group, stop at once."""
        self.forced.set()
        self.engine.runner.kill()
        self.watcher.changed.set()
