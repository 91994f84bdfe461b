"""One family of exceptions.

`AkiraError` is bad input or an environment problem a person must fix: the CLI prints its
message on one line and exits 1. `LoopStop` and its subclasses are control flow: each one
carries its stop condition, the status it leaves the state in, and the process exit code.
"""

from __future__ import annotations

from typing import ClassVar


class AkiraError(Exception):
    """A problem a person can fix. The message says what, where, and how to fix it."""

    exit_code: ClassVar[int] = 1


class UsageError(AkiraError):
    """Options that do not go together, or a value of the wrong shape: exit 2, as click's."""

    exit_code: ClassVar[int] = 2


class LoopStop(Exception):
    """Raised to leave the loop. Subclasses know their condition, status and exit code."""

    condition: ClassVar[str] = ""
    status: ClassVar[str] = "paused"
    exit_code: ClassVar[int] = 3
    report: ClassVar[str] = ""  # "completion", "intervention", "escalation" or ""

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.__class__.__doc__ or self.condition)
        self.message = str(self.args[0])


class TaskCompleted(LoopStop):
    """Every non-optional step is done."""

    condition = "completed"
    status = "completed"
    exit_code = 0
    report = "completion"


class TaskMovedToDone(LoopStop):
    """A person moved the task into Done/."""

    condition = "task_in_done"
    status = "completed"
    exit_code = 0
    report = "completion"


class StopRequested(LoopStop):
    """A stop hook is present."""

    condition = "stop_hook_triggered"


class ManualIntervention(LoopStop):
    """A person moved the task into Needs_Action/."""

    condition = "manual_intervention"


class TaskFileDeleted(LoopStop):
    """The task file was deleted; this is never treated as done."""

    condition = "task_file_deleted"


class TaskFileInvalid(LoopStop):
    """A person's edit left the task file unparseable; the loop waits for a fix."""

    condition = "manual_intervention"


class ForceStopped(LoopStop):
    """`loop stop --force` or a signal interrupted the running step."""

    condition = "stop_hook_triggered"


class MaxIterationsReached(LoopStop):
    """The iteration budget of the task is used up."""

    condition = "max_iterations_reached"
    status = "needs_action"
    exit_code = 4
    report = "intervention"


class FailureThresholdExceeded(LoopStop):
    """Too many failed attempts in a row."""

    condition = "failure_threshold_exceeded"
    status = "needs_action"
    exit_code = 4
    report = "escalation"


class PersistentFailure(LoopStop):
    """The same error twice in a row: trying again the same way will not help."""

    condition = "persistent_failure"
    status = "needs_action"
    exit_code = 4
    report = "escalation"


class StepExhausted(LoopStop):
    """A step used all of its reflection attempts without passing its checks."""

    condition = "failure_threshold_exceeded"
    status = "needs_action"
    exit_code = 4
    report = "escalation"


class BudgetExceeded(LoopStop):
    """The token or cost budget is used up."""

    condition = "budget_exceeded"
    status = "needs_action"
    exit_code = 4
    report = "intervention"


class TimeoutReached(LoopStop):
    """The overall timeout_seconds is used up."""

    condition = "timeout_reached"
    status = "needs_action"
    exit_code = 4
    report = "intervention"


class NoProgress(LoopStop):
    """Attempts in a row changed no file and passed no check: the agent is not getting anywhere."""

    condition = "no_progress"
    status = "needs_action"
    exit_code = 4
    report = "intervention"


class NeedsPerson(LoopStop):
    """Something a person must fix before the work can go on (an agent that cannot run, an LLM
    endpoint that stays unreachable or refuses the key); nothing is lost, resume continues."""

    condition = "needs_person"
    status = "needs_action"
    exit_code = 4
    report = "intervention"


class BranchMoved(LoopStop):
    """A step moved, made or deleted a branch other than the task's: the person looks first."""

    condition = "branch_moved"
    report = "intervention"


class PullRequestGreen(LoopStop):
    """Every check of the pull request passed and every review comment is answered."""

    condition = "pull_request_green"
    status = "completed"
    exit_code = 0
    report = "completion"


class PullRequestNeedsPerson(LoopStop):
    """Following the pull request gave up: the same failure twice, the rounds spent, or the wait
    for its checks too long. Its escalation quotes the failing log."""

    condition = "pull_request_red"
    status = "needs_action"
    exit_code = 4
    report = "escalation"


class LoopFailed(LoopStop):
    """An unrecoverable error (for example the agent cannot be built)."""

    condition = "failed"
    status = "failed"
    exit_code = 1
