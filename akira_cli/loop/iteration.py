"""An iteration's part of the state, and its only writer: the counter, the step (or a wave's
steps) running now, the records of its start and of a completed step, and the iteration a usage
limit, a provider fault or a collision gives back.

The loop's core, its waves and the follower each start and complete their steps through here.
It is handed the save as a callable (the caller's, which may tick boxes after it) and never
calls back into the loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol

from akira_cli.events import EventBus, EventType
from akira_cli.state.models import CompletedStep, CurrentStep, LoopState
from akira_cli.state.records import Attempt
from akira_cli.tasks.model import Step


class Save(Protocol):
    def __call__(self) -> None: ...


class FoundCommit(Protocol):
    """A commit of akira's on the task branch, read back by its trailers (`git.step_message.Found`)."""

    @property
    def sha(self) -> str: ...

    @property
    def step_id(self) -> str: ...

    @property
    def verified(self) -> bool: ...

    @property
    def review(self) -> str | None: ...


class Iteration:
    def __init__(self, state: LoopState, bus: EventBus) -> None:
        self.state, self.bus = state, bus

    def begin(self, step: Step, save: Save, *, worktree: Path | None = None, guidance: bool = True) -> int:
        """The next iteration, at `step`'s next attempt (its number is returned), saved by
        `save` before its agent runs. `worktree`: a wave step's slot (the step joins the
        running ones); `guidance`: a person's pending guidance goes to this step."""
        state = self.state
        state.iteration += 1
        self.bus.iteration = state.iteration
        record = state.record(step.id, step.title)
        if guidance and state.pending_guidance:
            record.guidance, state.pending_guidance = state.pending_guidance, None
        number = record.window_count + 1
        if worktree is None:
            state.current_step = CurrentStep(step_id=step.id, description=step.title, attempt=number)
            self.bus.emit(EventType.ITERATION_STARTED, step.id, attempt=number)
        else:
            where = str(worktree)
            state.current_steps.append(
                CurrentStep(step_id=step.id, description=step.title, attempt=number, worktree=where)
            )
            self.bus.emit(EventType.ITERATION_STARTED, step.id, attempt=number, worktree=where)
        if number == 1:
            self.bus.emit(EventType.STEP_STARTED, step.id, title=step.title)
        save()
        return number

    def complete(self, step: Step, attempt: Attempt, *, tally: bool = True) -> None:
        """`step` completed by `attempt`: recorded, no longer running. `tally`: its review's
        verdict counts in the run's (a task's step; a pull request's fix does not)."""
        state = self.state
        tries = state.record(step.id, step.title).tries  # every attempt that counted, across resumes
        state.completed_steps.append(CompletedStep.of(step.id, step.title, attempt, tries))
        if tally and attempt.review is not None:
            state.reviews[attempt.review.verdict] = state.reviews.get(attempt.review.verdict, 0) + 1
        state.current_step = None
        state.record(step.id, step.title).collision = None

    def accept(self, step: Step, done_by: Literal["person", "claim"], *, verified: bool) -> None:
        """`step` completed by a tick akira did not make (see `loop.ledger`): no attempt ran."""
        self.state.completed_steps.append(
            CompletedStep(
                step_id=step.id, description=step.title, attempts=0, done_by=done_by, verified=verified
            )
        )

    def undone(self, undone: Sequence[CompletedStep]) -> None:
        """The latest completions, undone by a person (`akira loop undo`): no longer completed,
        their reviews gone with them, each step to be done again from scratch; none runs now."""
        state = self.state
        del state.completed_steps[len(state.completed_steps) - len(undone) :]
        for done in undone:
            if done.review is not None and state.reviews.get(done.review, 0) > 0:
                state.reviews[done.review] -= 1
            record = state.steps.get(done.step_id)
            if record is not None:  # its earlier attempts and approaches no longer count
                record.undone_by = "person"
                record.new_window()
                record.approaches.clear()
        state.current_step = None

    def adopt(self, found: Sequence[FoundCommit]) -> list[str]:
        """The steps of commits the state does not know of (a kill -9 between a commit and the
        save that records it), recorded complete with their commits; their ids."""
        state = self.state
        known = {done.step_id: done for done in state.completed_steps}
        adopted = []
        for commit in found:
            done = known.get(commit.step_id)
            if done is None and commit.step_id not in state.completed_ids():
                record = state.steps.get(commit.step_id)
                title = record.description if record is not None else commit.step_id
                state.completed_steps.append(
                    CompletedStep(
                        step_id=commit.step_id,
                        description=title,
                        verified=commit.verified,
                        commit=commit.sha,
                        review=commit.review,
                    )
                )
                if commit.review is not None:
                    state.reviews[commit.review] = state.reviews.get(commit.review, 0) + 1
                adopted.append(commit.step_id)
            elif done is not None and done.commit is None:
                done.commit = commit.sha
        if adopted:
            state.current_step = None
            self.bus.emit(EventType.LEDGER, action="commits_adopted", steps=adopted)
        return adopted

    def give_back(self) -> None:
        """The iteration spent nothing: a usage limit or a provider fault cut it short before
        its attempt counted."""
        self.state.iteration -= 1

    def collided(self, step: Step, why: str) -> None:
        """A wave step that collided runs again after its wave: its attempt is given back (the
        iteration stays spent) and the collision noted for its next prompt."""
        record = self.state.record(step.id, step.title)
        record.uncount()
        record.collision = f"Its parallel run collided: {why}"

    def stopped_at(self, step: Step) -> None:
        """The step a stop in a wave is about, shown as the one running."""
        self.state.current_step = CurrentStep(step_id=step.id, description=step.title)

    def finished(self, step_id: str) -> None:
        """A wave step's run ended: no longer among the running ones."""
        self.state.current_steps = [step for step in self.state.current_steps if step.step_id != step_id]

    def idle(self) -> None:
        """The run completed: no step runs now."""
        self.state.current_step = None

    def forget_running(self) -> list[str]:
        """The wave steps a crash left running, forgotten (their slots are removed); their ids."""
        stale = [step.step_id for step in self.state.current_steps]
        self.state.current_steps = []
        return stale
