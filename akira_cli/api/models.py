"""What the run API returns: one model per answer, whose JSON is what the CLI's `--json` prints
and what the MCP server hands its client as structured content. Each also has `line()`: the one
line of text a person or a text-only client reads."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from akira_cli.words import counted


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built at first use: `status` uses few

    def data(self) -> dict[str, Any]:
        """The JSON object (fields a view left out stay out: `exclude_unset`)."""
        return self.model_dump(mode="json", exclude_unset=True)

    def json_text(self) -> str:
        return json.dumps(self.data(), indent=2)

    def line(self) -> str:
        raise NotImplementedError


class TaskEntry(Answer):
    path: str
    """Relative to the workspace."""
    feature: str
    layout: Literal["akira", "kiro", "spec-kit", "openspec"]
    steps_done: int
    steps_total: int
    task_id: str | None
    """Its latest loop, if any."""
    status: str | None
    origin: Literal["person", "step", "uncommitted"] = "person"
    """Who wrote it: `step` when an akira step's commit created it or changed more than its
    ticks (a start over MCP refuses it), `uncommitted` when git does not track it."""


class TaskList(Answer):
    tasks: list[TaskEntry]

    def line(self) -> str:
        if not self.tasks:
            return "no task files in the workspace (Specs/, .kiro/specs/, specs/, openspec/changes/)"
        shown = [
            f"{t.path} {t.steps_done}/{t.steps_total}" + (f" {t.status}" if t.status else "")
            for t in self.tasks
        ]
        return f"{counted(len(self.tasks), 'task file')}: " + "; ".join(shown)


class Started(Answer):
    """A run started (or resumed) in the background."""

    task_id: str
    status: str
    pid: int

    def line(self) -> str:
        return f"{self.task_id} {self.status} as process {self.pid}; poll it with loop_status"


class Finished(Answer):
    """A run that ran in the foreground, to its stop: the CLI prints `line()` and exits with
    `exit_code`."""

    task_id: str
    status: str
    exit_code: int
    message: str
    where: str = ""
    """What to read or run next (the report, the resume command, the pull request)."""

    def line(self) -> str:
        return f"{self.task_id} {self.status}: {self.message}{self.where}"


class Resumed(Answer):
    """A resume handed to the live process that waits (nothing new started)."""

    task_id: str
    status: str
    pid: int
    continued: bool = True

    def line(self) -> str:
        return f"resumed {self.task_id}; process {self.pid} continues"


class CurrentStepRow(Answer):
    step: str
    worktree: str | None


class PullRequestRow(Answer):
    url: str
    checks: Literal["pending", "red", "green"] | None
    round: int | None
    max_rounds: int | None
    waiting_for: int | None


class LoopSummary(Answer):
    """`loop status --task-id ID --json`."""

    task_id: str
    status: str
    group: str
    feature: str
    task_path: str
    iteration: int
    max_iterations: int
    success_rate: float
    current_step: str | None
    current_steps: list[CurrentStepRow]
    consecutive_failures: int
    pull_request: PullRequestRow | None
    following: str | None
    """`following pull request: round 1/3, waiting for 2 checks`, while it follows one."""
    not_acted_on: list[str] = []
    """Review comments by people without write access: `not acted on: mallory has no write access (...)`."""
    verified: int
    unverified: int
    changed_exam: int
    """Steps whose checks passed only with their exam changed (not verified; a person's look)."""
    done_by_person: int
    done_by_claim: int
    tokens: int
    cached_tokens: int
    cost_usd: float
    reviews: dict[str, int] | None
    review_tokens: int | None
    review_cost_usd: float | None
    waiting_until: str | None
    duration_seconds: float
    stop_reason: str
    systemic_issues: list[str]
    sandboxed: bool | None
    pid: int | None

    def line(self) -> str:
        if self.following:
            return f"{self.task_id} {self.following}"
        step = f", step {self.current_step}" if self.current_step else ""
        why = f" ({self.stop_reason})" if self.stop_reason and self.status != "running" else ""
        return f"{self.task_id} {self.status}{why}: iteration {self.iteration}/{self.max_iterations}{step}"

    def text(self) -> str:
        """`loop status --task-id ID` without --json: one `key: value` line per set field."""
        data = self.data()
        if self.pull_request is not None:
            checks = f" ({self.pull_request.checks})" if self.pull_request.checks else ""
            data["pull_request"] = self.pull_request.url + checks
        data["not_acted_on"] = "; ".join(self.not_acted_on)
        return "\n".join(f"{key}: {value}" for key, value in data.items() if value not in (None, "", []))


class Dashboard(Answer):
    """`loop status --json`: every loop, and the state files that cannot be read."""

    loops: list[LoopSummary]
    corrupt: list[str]

    def line(self) -> str:
        counts: dict[str, int] = {}
        for loop in self.loops:
            counts[loop.status] = counts.get(loop.status, 0) + 1
        said = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no loops yet"
        return said + (f"; {counted(len(self.corrupt), 'corrupt state file')}" if self.corrupt else "")


class RunningStep(Answer):
    step_id: str
    attempt: int
    worktree: str | None


class StepRow(Answer):
    id: str
    title: str
    done: bool
    attempts: int
    commit: str | None = None
    review: str | None = None


class CriterionStep(Answer):
    step_id: str
    done: bool
    verified: bool
    verified_by: Literal["step check", "project check only"] | None
    """By a check of the step's own, or by the project's checks only (no evidence for a criterion)."""
    changed_exam: bool = False
    """Its checks passed only with its exam changed (never evidence)."""
    review: str | None
    checks: list[str]
    """The step's own checks that passed (`Verify:`, `Exists:`, `Contains:`)."""
    project_checks: list[str]
    """The project-wide checks that passed with it."""
    commit: str | None


class CriterionRow(Answer):
    id: str
    text: str
    covered: bool
    steps: list[CriterionStep]


class Progress(Answer):
    """`loop progress --json`: the steps, the criteria and those not covered."""

    task_id: str
    status: str
    steps_done: int
    steps_total: int
    percent: float
    iteration: int
    max_iterations: int
    success_rate: float
    current_step: str | None
    current_steps: list[RunningStep]
    verified: int
    unverified: int
    changed_exam: int
    """Steps whose checks passed only with their exam changed (not verified; a person's look)."""
    done_by_person: int
    done_by_claim: int
    tokens: int
    cost_usd: float
    steps: list[StepRow]
    pull_request: str | None
    criteria: list[CriterionRow]
    not_covered: list[str]

    def line(self) -> str:
        return (
            f"{self.task_id} {self.status}: {self.steps_done}/{self.steps_total} steps ({self.percent}%), "
            f"iteration {self.iteration}/{self.max_iterations}"
        )


class Logs(Answer):
    """`loop logs --json`: the events, oldest first (the CLI prints one per line)."""

    task_id: str
    events: list[dict[str, Any]]
    live: bool
    """A process runs the loop (or was just started and has not locked it yet)."""

    def line(self) -> str:
        last = self.events[-1] if self.events else None
        return f"{counted(len(self.events), 'event')} of {self.task_id}" + (
            f", the last {last['type']}" if last else ""
        )


class Report(Answer):
    kind: Literal["completion", "escalation", "intervention", "progress"]
    path: str
    text: str

    def line(self) -> str:
        return f"the {self.kind} report {self.path}"


class Note(Answer):
    """After `stop`, `cancel`, or a resume with nothing to do: the loop's status, and what was
    done."""

    task_id: str
    status: str
    pid: int | None
    message: str

    def line(self) -> str:
        return self.message


class Undone(Answer):
    task_id: str
    status: str
    steps: list[str]
    """The steps reverted."""
    commits: list[str]
    """The revert commits made, newest last."""
    branch: str
    message: str
    warnings: list[str] = []
    """What did not go through (the reverts' push, the pull request's update), each with the
    command that does it by hand."""

    def line(self) -> str:
        return self.message


class EventPage(Answer):
    """The events written to a loop's log from a byte `offset` on (whole lines only), and the
    offset to read from next: a follower never reads the log twice."""

    task_id: str
    offset: int
    """Where the next read starts (the log's size at this read, less a torn last line)."""
    events: list[dict[str, Any]]
    live: bool

    def line(self) -> str:
        return f"{counted(len(self.events), 'event')} of {self.task_id}, up to byte {self.offset}"


class Budget(Answer):
    """The run's spending caps (`budget:` of its config), None for no cap."""

    task_id: str
    max_tokens_total: int | None
    max_cost_usd: float | None

    def line(self) -> str:
        tokens = self.max_tokens_total if self.max_tokens_total is not None else "no cap"
        cost = f"${self.max_cost_usd}" if self.max_cost_usd is not None else "no cap"
        return f"{self.task_id}: tokens {tokens}, cost {cost}"
