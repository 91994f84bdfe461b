"""The state is the ledger: a completed step never runs again (docs/guarantees.md).

A step the state records as completed is never run again, whatever the task file says later: a
reverted box is ticked back and logged. A box akira did not tick is a claim, and the state says
who made it: while no attempt ran (at a start, a resume, after a pause) it is a person's
decision, honoured as `done_by: person`; while an attempt ran (an agent that edits tasks.md, or a
person at that moment) it is `done_by: claim`, decided by the step's own checks without running
the agent (a refuted claim is set back to `[ ]`), or accepted unverified when it has none.

The task file's directives are taken from akira's own view: the view trusted at the start, at
a resume and after a pause a person saw. Directives that change during an attempt stop the loop
with a hook for a person to read them before anything runs them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from akira_cli.events import EventBus, EventType
from akira_cli.loop.iteration import Iteration
from akira_cli.state.models import LoopState
from akira_cli.tasks.model import Step, TaskFile

Directives = tuple[object, ...]
NO_DIRECTIVES: Directives = ([], [], [], [], [], None, None)


def directives(step: Step) -> Directives:
    return (step.run, step.fallback, step.verify, step.exists, step.contains, step.timeout, step.depends)


@dataclass
class Ledger:
    state: LoopState
    bus: EventBus
    check_claim: Callable[[Step], bool]
    """Runs a step's own checks (never the agent); True when they all pass."""
    iteration: Iteration
    known_ticks: set[str] = field(default_factory=set)
    """The leaves ticked in the file as akira last saw it."""
    trusted: dict[str, Directives] = field(default_factory=dict)
    _seen: tuple[TaskFile | None, int] = (None, -1)
    """(the parse, `completed_total`) last reconciled: the same parse object means the file
    changed only by akira's own box writes, so only the steps completed since need a look. The
    object is held, not its id, so a later parse can never be taken for it."""
    _checked: TaskFile | None = None

    def trust(self, task: TaskFile) -> None:
        """A person has seen the file as it is now (a start, a resume, the end of a pause)."""
        self.trusted = {step.id: directives(step) for step in task.steps}
        self._seen, self._checked = (None, -1), task

    def reconcile(
        self,
        task: TaskFile,
        *,
        during_attempt: bool,
        running: list[str] | tuple[str, ...] = (),
        held: frozenset[str] = frozenset(),
    ) -> dict[str, str]:
        """Brings the ledger and the file together; returns the boxes to write (id -> char).
        `held`: steps akira completed and will tick once the state holding them is saved."""
        writes: dict[str, str] = {}
        if self._unchanged(task, held):
            return writes
        completed = self.state.completed_ids()
        for step in task.leaves(include_optional=True):
            if step.id in completed:
                if not step.ticked and step.id not in held:
                    writes[step.id] = "x"
                    self.bus.emit(EventType.LEDGER, step.id, action="reticked", reason="box reverted")
            elif step.ticked and step.id not in self.known_ticks:
                if step.id in running:
                    writes[step.id] = "-"  # the attempt's own evaluation decides this step
                    self.bus.emit(EventType.LEDGER, step.id, action="claim_deferred", reason="step running")
                else:
                    self.tick_by_someone(step, during_attempt, writes)
        self.known_ticks = {
            step.id for step in task.leaves(include_optional=True) if step.ticked and step.id not in writes
        } | {step_id for step_id, box in writes.items() if box == "x"}
        self._seen = (task, self.state.completed_total) if not writes else (None, -1)
        return writes

    def _unchanged(self, task: TaskFile, held: frozenset[str]) -> bool:
        """Only akira wrote the file since the last look, and the steps completed since then
        are ticked or held: nothing to reconcile (the cost stays flat however long the file)."""
        seen, count = self._seen
        total = self.state.completed_total
        steps = self.state.completed_steps
        if seen is not task or not 0 <= total - count <= len(steps):
            return False
        for done in steps[len(steps) - (total - count) :]:
            step = task.get(done.step_id)
            if step is not None and not step.ticked and done.step_id not in held:
                return False
        self._seen = (task, total)
        return True

    def tick_by_someone(self, step: Step, during_attempt: bool, writes: dict[str, str]) -> None:
        if not during_attempt:
            self.complete(step, "person", verified=False)
            return
        if not step.has_checks:
            self.complete(step, "claim", verified=False)
            return
        if self.check_claim(step):
            self.complete(step, "claim", verified=True)
            return
        writes[step.id] = " "
        self.bus.emit(EventType.LEDGER, step.id, action="claim_refuted", reason="its checks failed")

    def complete(self, step: Step, done_by: Literal["person", "claim"], *, verified: bool) -> None:
        self.iteration.accept(step, done_by, verified=verified)
        self.bus.emit(EventType.LEDGER, step.id, action="accepted", done_by=done_by, verified=verified)

    def changed_directives(self, task: TaskFile) -> list[str]:
        """Steps whose directives differ from akira's trusted view (new steps with directives too)."""
        if task is self._checked:
            return []
        self._checked = task
        changed = []
        for step in task.steps:
            if self.trusted.get(step.id, NO_DIRECTIVES) != directives(step):
                changed.append(step.id)
        return changed
