"""The reviewer per step (the morning review), as the engine sees it: after a step's checks pass and before
its commit, `review(...)` asks the reviewer and returns its verdict; the engine decides what it
does to the attempt (`loop.outcomes.Outcomes.reviewed`).

- approve: `approved`;
- changes: `changes`, with the reasons, unless this is the step's `review.max_rounds`-th
  rejection (or its last allowed attempt): then `disputed`, for a person to look at;
- no verdict (the reviewer failed, timed out, or said nothing readable): `none`, a warning.
"""

from __future__ import annotations

from collections.abc import Callable

from akira_cli.events import EventBus, EventType
from akira_cli.loop.partners import Where
from akira_cli.review.agent import Answer, ReviewerAgent
from akira_cli.review.diff import StepDiffs, step_files
from akira_cli.review.prompt import review_prompt
from akira_cli.review.verdict import read_verdict
from akira_cli.review.waits import ReviewerWaits
from akira_cli.sections import ModelPrice, ReviewSettings
from akira_cli.state.models import LoopState
from akira_cli.state.records import Attempt, ReviewResult, StepRecord
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.usage import Usage

RequirementTexts = Callable[[Step, TaskFile], list[str]]
"""The texts of the requirements a step names, with their acceptance criteria (the criteria
package reads them from the spec beside the task file); by default the ids the step names."""


def requirement_ids(step: Step, task: TaskFile) -> list[str]:
    return [f"Requirement {rid}" for rid in step.requirements]


class StepReview:
    def __init__(
        self,
        settings: ReviewSettings,
        state: LoopState,
        bus: EventBus,
        agent: ReviewerAgent,
        diffs: StepDiffs,
        attempts_allowed: int,
        requirement_texts: RequirementTexts = requirement_ids,
        prices: dict[str, ModelPrice] | None = None,
        waits: ReviewerWaits | None = None,
    ) -> None:
        self.settings = settings
        self.state = state
        self.bus = bus
        self.agent = agent
        self.diffs = diffs
        self.attempts_allowed = attempts_allowed
        self.requirement_texts = requirement_texts
        self.prices = prices or {}
        self.waits = waits

    def wanted(self, step: Step, task: TaskFile) -> bool:
        when = self.settings.when
        if when == "every":
            return True
        if isinstance(when, list):
            return step.id in when
        return self.is_last(step, task)

    def is_last(self, step: Step, task: TaskFile) -> bool:
        """No other step is left open but the steps running beside it in a parallel wave: a
        task that ends with a wave has each of its last steps reviewed on the whole branch."""
        done = self.state.completed_ids()
        running = {current.step_id for current in self.state.current_steps}
        for other in task.leaves(self.state.include_optional):
            closed = other.ticked or other.id in done or other.id in running
            if other.id != step.id and not (closed or task.under_ticked_parent(other)):
                return False
        return True

    def review(
        self, step: Step, task: TaskFile, record: StepRecord, attempt: Attempt, agent: str, where: Where
    ) -> ReviewResult | None:
        if attempt.outcome != "success" or not self.wanted(step, task):
            return None
        whole = self.settings.when == "last"
        if agent == "checkpoint" and not whole:
            return None  # it ran the project checks and changed nothing (a last one shows the whole branch)
        reviews = [a.review for a in record.window() if a.review is not None]
        earlier = [review for review in reviews if review.verdict == "changes"]
        number = len(earlier) + 1
        requirements = self.requirement_texts(step, task)
        diff = self.diffs.text(step_files(record, attempt), where, whole)
        prompt = review_prompt(step, requirements, attempt, diff, earlier, whole)
        answers = self.ask(prompt, step.id, attempt.number, where)
        answer, usage = answers[-1], self.count(answers)
        verdict = read_verdict(answer.text) if not answer.failure else None
        result = ReviewResult(verdict="none", reviewer=self.agent.name, round=number, usage=usage)
        if verdict is None:
            why = answer.failure or f"no verdict in its answer: {answer.text.strip()[-300:] or '(empty)'}"
            result.reasons = why
            self.bus.emit(
                EventType.WARNING,
                step.id,
                message=f"the reviewer {self.agent.name} gave no verdict, so step {step.id} is not "
                f"reviewed (Akira-Review: none): {why[:300]}",
            )
        elif verdict.verdict == "approve":
            result.verdict, result.reasons = "approved", verdict.reasons
        elif number >= self.settings.max_rounds or attempt.number >= self.attempts_allowed:
            result.verdict, result.reasons = "disputed", verdict.reasons
        else:
            result.verdict, result.reasons = "changes", verdict.reasons
        self.bus.emit(
            EventType.REVIEW,
            step.id,
            attempt=attempt.number,
            verdict=result.verdict,
            round=number,
            reviewer=self.agent.name,
            reasons=result.reasons[:500],
            tokens=usage.total_tokens,
            cost_usd=round(usage.cost_usd, 6),
        )
        return result

    def ask(self, prompt: str, step_id: str, number: int, where: Where) -> list[Answer]:
        """The reviewer's answers: its usage limit and provider faults waited out first."""
        if self.waits is None:
            return [self.agent.ask(prompt, where.runner, step_id, number)]
        return self.waits.ask(self.agent, prompt, where.runner, step_id, number, main=where.path is None)

    def count(self, answers: list[Answer]) -> Usage:
        """The reviewer's usage (the loop counts it toward the budgets, and apart); its calls
        are its runs (a CLI's own turns are not reviews)."""
        reported = Usage()
        for answer in answers:
            reported.add(answer.usage)
        reported.calls = len(answers)
        return self.priced(reported)

    def priced(self, usage: Usage) -> Usage:
        price = self.prices.get(self.settings.model or "") or self.prices.get(self.agent.name)
        if usage.cost_usd or price is None:
            return usage
        return usage.model_copy(update={"cost_usd": price.cost(usage.prompt_tokens, usage.completion_tokens)})
