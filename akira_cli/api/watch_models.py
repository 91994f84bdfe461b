"""The answers of the reads for a page that watches runs (`api/watching.py`): the fleet's
runs, what each attempt spent, and the running command's last output lines."""

from __future__ import annotations

from pydantic import Field

from akira_cli.api.models import Answer


class FleetRun(Answer):
    """One run of the fleet, as `fleet status --json` prints it."""

    model_config = Answer.model_config | {"extra": "ignore"}
    run_id: str
    task: str | None = None
    repo: str = ""
    ref: str | None = None
    branch: str | None = None
    status: str
    worker: str | None = None
    step: str | None = None
    steps_done: int = 0
    steps_total: int = 0
    cost_usd: float = 0.0
    updated_at: str = ""
    message: str = ""

    def line(self) -> str:
        return f"{self.run_id} {self.status} {self.steps_done}/{self.steps_total} {self.task or ''}".strip()


class FleetRuns(Answer):
    """The fleet's runs; `configured` False when the workspace has no fleet, `refusal` the line
    that says why its database could not be read."""

    configured: bool
    runs: list[FleetRun] = Field(default_factory=list)
    refusal: str | None = None

    def line(self) -> str:
        if not self.configured:
            return "no fleet configured"
        return self.refusal or f"{len(self.runs)} fleet run(s)"


class AttemptSpend(Answer):
    """What one attempt spent, as the run recorded it when the attempt ended: its agent CLI's
    own usage and every LLM call made while it ran."""

    step_id: str
    number: int
    iteration: int
    finished_at: str
    seconds: float
    tokens: int
    cost_usd: float

    def line(self) -> str:
        return f"step {self.step_id} attempt {self.number}: {self.tokens} tokens, ${self.cost_usd:.4f}"


class Spending(Answer):
    """Every attempt of a run that ended, oldest first, with what it spent."""

    task_id: str
    attempts: list[AttemptSpend]

    def line(self) -> str:
        spent = sum(attempt.cost_usd for attempt in self.attempts)
        return f"{self.task_id}: {len(self.attempts)} attempt(s), ${spent:.4f}"


class LiveLines(Answer):
    """The last lines of a run's running command's output (`ended`: its last command's, which
    ended), masked of secrets."""

    task_id: str
    command: str | None
    """The command line; None when no command ran yet."""
    lines: list[str]
    ended: bool
    live: bool
    """Whether a process runs the loop."""
    slot: int | None = None
    """The `[P]` wave's worktree slot the command runs in; None: the run's own work tree."""

    def line(self) -> str:
        if self.command is None:
            return f"{self.task_id}: no command ran yet"
        where = f" (wave slot {self.slot})" if self.slot is not None else ""
        return f"{self.task_id}: {'ran' if self.ended else 'running'}{where} {self.command}"
