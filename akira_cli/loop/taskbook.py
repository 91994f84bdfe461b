"""The task file as the loop sees it: parsed on change, the next step to run, the checkboxes
akira writes, and the ledger applied to what others wrote (the task file is the person's; docs/guarantees.md).

A step's box is ticked only after the state that completes it is on disk (`hold`, then
`flush` from the loop's save), so a tick on disk always has its completion on disk.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from akira_cli.errors import AkiraError, LoopFailed, StopRequested, TaskCompleted, TaskFileInvalid
from akira_cli.events import EventBus, EventType
from akira_cli.hooks import write_hook
from akira_cli.loop.conditions import TaskLocator, replaced_stop
from akira_cli.loop.iteration import Iteration
from akira_cli.loop.ledger import Ledger
from akira_cli.state.models import LoopState
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.tasks.reading import TaskFileError
from akira_cli.tasks.source import TaskSource, earns_tick, is_done
from akira_cli.workspace import Workspace, command_line, in_quotes


@dataclass
class TaskBook:
    workspace: Workspace
    state: LoopState
    bus: EventBus
    locator: TaskLocator
    check_claim: Callable[[Step], bool]
    """Runs a step's own checks (never the agent); True when they all pass."""
    held: list[Step] = field(default_factory=list)
    """Steps completed in memory, ticked in the file after the next save."""
    tasks: TaskSource = field(default_factory=TaskSource)
    """The task file as parsed: parsed again only when it changed."""
    marks: dict[str, str] = field(default_factory=dict)
    """Steps akira marked `[-]` (running) and has not ticked: the box each had before (`[-]`
    itself counts as `[ ]`). A commit carries them as they were, and a stop puts them back."""

    def __post_init__(self) -> None:
        self.ledger = Ledger(self.state, self.bus, self.check_claim, Iteration(self.state, self.bus))
        self._cursor: tuple[TaskFile | None, int] = (None, 0)
        self._fresh: tuple[Path, TaskFile] | None = None
        """The file as `after_attempt` just read it: the next boundary's look, a moment later."""

    def hold(self, step: Step) -> None:
        self.held.append(step)

    def flush(self, running: Step | None = None) -> None:
        """After a save: the boxes of the steps it completed, and the `[-]` of the step starting
        now (`running`), in one write; then their parents' whose children are all done."""
        held, self.held = self.held, []
        boxes = {}
        for step in held:
            self.marks.pop(step.id, None)
            boxes[step.id] = "x"
        if running is not None:
            self.marks.setdefault(running.id, " " if running.box == "-" else running.box)
            boxes[running.id] = "-"
        if not boxes:
            return
        path = Path(self.state.task_path)
        task = self.mark(path, boxes)
        parents = self.earned(task, held) if task is not None else {}
        if parents:
            self.mark(path, parents)

    def load(self, path: Path) -> TaskFile:
        fresh, self._fresh = self._fresh, None
        if fresh is not None and fresh[0] == path:
            return fresh[1]  # one read of the file per iteration
        try:
            return self.tasks.load(path)
        except TaskFileError as exc:
            raise TaskFileInvalid(f"{exc} (the loop continues once the file parses again)") from None

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
            total = len(task.leaves(optional))
            done = "the one step is done" if total == 1 else f"all {total} steps are done"
            raise TaskCompleted(done + disputed_note(self.state))
        raise LoopFailed(
            f"{task.path}: no pending step can start, their 'Depends:' wait on each other; "
            "fix the Depends: lines"
        )

    def steps_total(self) -> int:
        path = Path(self.state.task_path)
        try:
            return len(self.tasks.load(path).leaves(self.state.include_optional))
        except (AkiraError, OSError):
            return 0

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

    def after_attempt(self, path: Path, running: list[str]) -> bool:
        """Ticks the agent made are claims; directives it changed wait for a person. True when
        the state changed (a claim or a person's tick was taken). `running`: the step (or the
        wave's steps) that ran."""
        current = self.locator.locate(path)
        if self.locator.replaced is not None:  # its ticks are never taken
            during = f"while step(s) {', '.join(running[:10])} ran"
            raise replaced_stop(self.workspace, self.state, self.locator.replaced, during)
        if current is None:
            return False  # deleted or moved: the next boundary says so
        task = self.load(current)
        settled = self.settle_ticks(current, task, during_attempt=True, running=running)
        if settled:  # boxes were written: the parse after them
            task = self.load(current)
        changed = self.ledger.changed_directives(task)
        if changed:
            resume = command_line(self.workspace, "loop", "resume", "--task-id", self.state.task_id)
            reason = (
                f"directives of step(s) {', '.join(changed[:10])} changed in "
                f"{self.workspace.shown(current)} during an attempt; read them, then delete "
                f"this hook or run {in_quotes(resume)} to let them run"
            )
            hook = write_hook(self.workspace, self.state, reason)
            self.bus.emit(EventType.LEDGER, running[0], action="directives_held", steps=changed[:20])
            raise StopRequested(f"{reason} ({self.workspace.shown(hook)})")
        self._fresh = (current, task)
        return settled

    def settle_ticks(
        self, path: Path, task: TaskFile, *, during_attempt: bool, running: list[str] | None = None
    ) -> bool:
        """Applies the ledger to the file; True when the state changed (claims or person ticks)."""
        before = self.state.completed_total
        held = frozenset(step.id for step in self.held)
        writes = self.ledger.reconcile(task, during_attempt=during_attempt, running=running or [], held=held)
        if writes:
            self.mark(path, writes)
        return bool(writes) or self.state.completed_total != before

    def running(self, path: Path, step: Step) -> None:
        """The step's box becomes `[-]` while it runs (a wave's steps; the loop's one step is
        marked by `flush`)."""
        self.marks.setdefault(step.id, " " if step.box == "-" else step.box)
        self.mark(path, {step.id: "-"})

    def unmark(self) -> None:
        """At a stop: the boxes of steps that ran and did not complete, as they were before."""
        marks = dict(self.marks)
        self.marks.clear()  # the same dict as the commits' (`StepCommits.marks`)
        path = self.locator.locate(Path(self.state.task_path))
        if path is None or not marks:
            return
        try:
            task = self.tasks.load(path)
        except (TaskFileError, OSError):
            return
        for step_id, box in marks.items():
            step = task.get(step_id)
            if step is not None and step.box == "-" and step_id not in self.state.completed_ids():
                task = self.mark(path, {step_id: box}) or task

    def earned(self, task: TaskFile, ticked: list[Step]) -> dict[str, str]:
        """The parents of `ticked` that earn a tick now (see `earns_tick`), nearest first."""
        boxes: dict[str, str] = {}
        optional = self.state.include_optional
        for step in ticked:
            parent = task.get(step.parent_id) if step.parent_id else None
            while parent is not None and parent.id not in boxes and earns_tick(task, parent, optional):
                boxes[parent.id] = "x"
                parent = task.get(parent.parent_id) if parent.parent_id else None
        return boxes

    def mark(self, path: Path, boxes: dict[str, str]) -> TaskFile | None:
        """Writes checkboxes (step id to box) in one write; a file a person just moved is found
        again, a deleted one skipped, and another file put at its path never written (see
        `TaskLocator`). A box that cannot be written leaves the others to be written alone."""
        self._fresh = None
        current = self.locator.locate(path)
        for _ in range(3):
            if current is None:
                return None
            try:
                task = self.tasks.mark(current, boxes)
            except (TaskFileError, FileNotFoundError) as exc:
                if current.exists():  # a person's edit broke the file: the next boundary pauses
                    if len(boxes) > 1:  # perhaps one step's line only: the others are written
                        written = [self.mark(path, {step_id: box}) for step_id, box in boxes.items()]
                        return next((task for task in reversed(written) if task is not None), None)
                    step_id = next(iter(boxes))
                    self.bus.emit(EventType.WARNING, step_id, message=f"checkbox not written: {exc}")
                    return None
                current = self.locator.locate(path)  # moved: look for it
                continue
            identity = self.locator.identity  # a file saved anew in its place is the task file now
            if identity is not None and self.state.task_file_identity != identity:
                self.state.task_file_identity = identity
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
            if (
                parent.children
                and not parent.ticked
                and earns_tick(task, parent, self.state.include_optional)
            ):
                task = self.mark(path, {parent.id: "x"})


def disputed_note(state: LoopState) -> str:
    """What a completed run's last line adds when the reviewer still disputes steps ('' when none)."""
    count = state.reviews.get("disputed", 0)
    if not count:
        return ""
    ids = [step.step_id for step in state.completed_steps if step.review == "disputed"]
    which = f"step {ids[0]} is" if count == 1 and ids else f"{count} steps are"
    named = f" ({', '.join(ids)})" if count > 1 and ids else ""
    return (
        f", but {which} DISPUTED{named}: the reviewer still asks for changes "
        '(see "Needs a person\'s look" in the report)'
    )
