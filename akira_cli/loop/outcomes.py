"""What an attempt's outcome does (docs/design.md, the engine): a success resets the streaks, a failure is
recorded and reflected on, and ends the step when it repeats or the step is exhausted; no file
changed and no check passed, several times in a row, stops the loop."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Protocol

from akira_cli.config import Config
from akira_cli.errors import NoProgress, PersistentFailure, StepExhausted
from akira_cli.events import EventBus, EventType
from akira_cli.failures import signature
from akira_cli.runner import CommandWrapper
from akira_cli.state.models import FailedStep, LoopState
from akira_cli.state.records import (
    CHANGED_EXAM,
    KEEP_ENTRIES,
    NOT_EVIDENCE,
    Attempt,
    PostActionReflection,
    StepRecord,
)
from akira_cli.tasks.model import Step
from akira_cli.words import counted
from akira_cli.workspace import Workspace, command_line


class Reflected(Protocol):
    """A reflection on a failed attempt (`reflection.service.Reflected`)."""

    @property
    def id(self) -> str: ...

    @property
    def tokens(self) -> int: ...

    @property
    def systemic(self) -> str | None:
        """A systemic issue's error signature, new to this run."""
        ...


class Reflection(Protocol):
    """Where the reflection engine plugs in (seeds 000, 002, 003): it reads the state and
    says what it found; the loop records it."""

    def after_failure(self, state: LoopState, record: StepRecord, attempt: Attempt) -> Reflected | None: ...

    def after_success(
        self, state: LoopState, record: StepRecord, attempt: Attempt
    ) -> PostActionReflection: ...


@dataclass
class Outcomes:
    """What an attempt's outcome does to the run: the engine holds one and hands each finished
    attempt to it (a wave step's success once it landed)."""

    state: LoopState
    config: Config
    workspace: Workspace
    bus: EventBus
    reflection: Reflection
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Wave steps are reviewed on their own threads."""

    def note_replan(self, record: StepRecord, attempt: Attempt) -> None:
        """After a failure the next attempt is a re-plan; log how it differs from the last one."""
        previous = record.window()[-1] if record.window() else None
        if previous is None or previous.outcome != "failure":
            return
        differences = [f"approach: {previous.approach} -> {attempt.approach}"]
        differences += [f"new action: {a}" for a in attempt.actions if a not in previous.actions][:5]
        differences += [f"dropped action: {a}" for a in previous.actions if a not in attempt.actions][:5]
        self.bus.emit(
            EventType.REPLANNED,
            record.step_id,
            attempt=attempt.number,
            differences=differences,
            reflections=record.reflections[-3:],
            guidance=bool(record.guidance),
        )

    def blame_sandbox(self, wrapper: CommandWrapper | None, attempt: Attempt) -> None:
        """What the sandbox refused a failed attempt comes first in its failure text, with the
        line that allows it: the agent, the reflection and the person read that the sandbox, not
        the code, stopped it. On the attempt's own thread: the state takes it in `failed`."""
        if wrapper is None or attempt.outcome != "failure":
            return
        stopped, also = wrapper.blame(f"{attempt.error}\n{attempt.output_tail}")
        attempt.refused = [*stopped, *also]
        if attempt.refused:
            attempt.error = "\n".join([*stopped, attempt.error, *also])

    def count_progress(self, attempt: Attempt) -> None:
        """The circuit breaker of the Ralph loop runners: no file changed and no check passed."""
        checks = attempt.evaluation.checks if attempt.evaluation else []
        passed = any(c.passed and c.name not in NOT_EVIDENCE for c in checks)
        if attempt.files_changed or passed:
            self.state.no_progress_streak = 0
            return
        self.state.no_progress_streak += 1
        threshold = self.config.autonomous_loop.no_progress_threshold
        if self.state.no_progress_streak >= threshold:
            logs = command_line(self.workspace, "loop", "logs", "--task-id", self.state.task_id)
            streak = counted(self.state.no_progress_streak, "attempt")
            raise NoProgress(
                f"no progress: {streak} in a row changed no file and passed no check; look at what "
                f"the agent did with '{logs}', then resume"
            )

    def reviewed(self, attempt: Attempt) -> None:
        """The reviewer's verdict decides the attempt: `changes` fails it with the reasons (the
        reflection and the next prompt see them); approved, disputed or none leave it a success.
        Its usage is the run's, and the review's apart."""
        review = attempt.review
        if review is not None:
            with self._lock:  # the reviewer's usage counts toward the budgets, and apart
                self.state.usage.add(review.usage)
                self.state.review_usage.add(review.usage)
        if review is None or review.verdict != "changes":
            return
        reasons = review.reasons or "(the reviewer gave no reasons)"
        first = reasons.strip().splitlines()[0].lstrip("- ").strip()
        attempt.outcome = "failure"
        attempt.error = (
            f"the reviewer asked for changes (round {review.round} of {self.config.review.max_rounds}; "
            f"the checks passed): {first}\n{reasons}"
        )[:4000]
        attempt.error_signature = f"{signature(attempt.error)} [review {review.round}]"
        attempt.output_tail = f"The reviewer ({review.reviewer}) asked for changes:\n{reasons}"[-4000:]

    def succeeded(self, record: StepRecord, attempt: Attempt) -> None:
        self.state.no_progress_streak = 0
        self.state.total_successes += 1
        self.state.consecutive_failures = 0
        for failed in self.state.failed_steps:
            failed.recovered = failed.recovered or failed.step_id == record.step_id
        record.post_action = self.reflection.after_success(self.state, record, attempt)
        self.loop_completed(record, "success")

    def exam_stands(self, step: Step, record: StepRecord, attempt: Attempt) -> None:
        """Two attempts in a row passed only by changing the exam: the step may be impossible as
        its checks stand, which only a person can decide."""
        self.bus.emit(EventType.PERSISTENT_FAILURE, step.id, signature=CHANGED_EXAM)
        self.loop_completed(record, "persistent_failure")
        files = ", ".join(attempt.exam.changed) if attempt.exam is not None else "its exam files"
        accept = command_line(
            self.workspace, "loop", "resume", "--task-id", self.state.task_id, "--accept-exam", step.id
        )
        raise PersistentFailure(
            f"step {step.id} passed twice in a row only by changing its exam ({files}): it may be "
            "impossible as its checks stand (the spec and its tests disagree); read the exam diff in "
            f"the escalation, then fix the spec or the tests and resume, or let the step change its "
            f"exam: '{accept}'"
        )

    def reflected(self, record: StepRecord, reflected: Reflected) -> None:
        self.state.reflections.append(reflected.id)
        record.reflections.append(reflected.id)
        self.state.metrics.reflection_tokens += reflected.tokens
        if reflected.systemic is not None:
            self.state.systemic_issues.append(reflected.systemic)

    def loop_completed(self, record: StepRecord, outcome: str) -> None:
        self.bus.emit(
            EventType.REFLECTION_LOOP_COMPLETED,
            record.step_id,
            iterations=record.window_count,
            outcome=outcome,
        )

    def failed(self, step: Step, record: StepRecord, attempt: Attempt) -> None:
        """A failed attempt: recorded and reflected on, then the step goes on, or ends when the
        failure repeats, the step is exhausted or nothing progresses."""
        self.record_failure(step, attempt)
        if (reflected := self.reflection.after_failure(self.state, record, attempt)) is not None:
            self.reflected(record, reflected)
        window = record.window()
        idle = "no progress: " if not attempt.files_changed else ""
        if len(window) >= 2 and window[-2].error_signature == CHANGED_EXAM == attempt.error_signature:
            self.exam_stands(step, record, attempt)
        if len(window) >= 2 and window[-2].error_signature == attempt.error_signature:
            self.bus.emit(EventType.PERSISTENT_FAILURE, step.id, signature=attempt.error_signature)
            self.loop_completed(record, "persistent_failure")
            raise PersistentFailure(
                f"{idle}step {step.id} failed twice in a row with the same error: "
                f"{attempt.error.splitlines()[0] if attempt.error else 'unknown error'}"
            )
        retry = self.config.reflection.enabled and self.config.autonomous_loop.retry_failed_steps
        allowed = self.config.reflection.max_iterations if retry else 1
        if record.window_count >= allowed:
            self.loop_completed(record, "exhausted")
            raise StepExhausted(
                f"{idle}step {step.id} failed {record.window_count} attempt(s) without passing its checks"
            )
        self.count_progress(attempt)

    def record_failure(self, step: Step, attempt: Attempt) -> None:
        """The failure in the run's figures and its failed steps; what the sandbox refused it."""
        if attempt.refused:
            kept = [line for line in self.state.sandbox_refused if line not in attempt.refused]
            self.state.sandbox_refused = [*kept, *attempt.refused][-KEEP_ENTRIES:]
        self.state.total_failures += 1
        self.state.consecutive_failures += 1
        self.state.failed_steps.append(
            FailedStep(
                step_id=step.id,
                description=step.title,
                error=attempt.error[:1000],
                retry_count=attempt.number - 1,
            )
        )
        self.bus.emit(
            EventType.STEP_FAILED,
            step.id,
            attempt=attempt.number,
            approach=attempt.approach,
            signature=attempt.error_signature,
            mechanism="reflection" if self.config.reflection.enabled else "none",
            **({"refused": attempt.refused} if attempt.refused else {}),
        )
