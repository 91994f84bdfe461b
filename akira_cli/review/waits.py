"""A reviewer's usage limit and its provider's faults, waited out as the agent's are: the same
waits, the same events, the same caps. A reviewer still failing past a cap is not a stop: its
step is left `none` (not reviewed), with what the CLI said."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from akira_cli.errors import NeedsPerson
from akira_cli.review.agent import Answer, ReviewerAgent
from akira_cli.runner import CommandRunner

if TYPE_CHECKING:
    from akira_cli.agents.base import ProviderFault, UsageLimit


class LimitWait(Protocol):
    """The run's wait for a usage limit (`loop.usage_limits.LimitWaiter`)."""

    def wait_out(self, step_id: str, limit: UsageLimit, *, record: bool = True) -> None: ...


class FaultWait(Protocol):
    """One outage's waits for a failing provider (`loop.provider_faults.FaultWaiter`)."""

    def wait_out(self, step_id: str, fault: ProviderFault) -> None: ...


@dataclass
class ReviewerWaits:
    limits: LimitWait
    """The run's usage-limit wait (the agent's): on the loop's thread it records `waiting_until`."""
    faults: Callable[[], FaultWait]
    """A new wait for a failing provider, made for each review (its caps count one outage)."""

    def ask(
        self, agent: ReviewerAgent, prompt: str, runner: CommandRunner, step_id: str, attempt: int, main: bool
    ) -> list[Answer]:
        """Every answer the reviewer gave, the last one the one that counts. A stop hook during
        a wait raises `StopRequested`, as it does for the agent. `main`: the review runs on the
        loop's thread (a wave step's runs on its own, which never writes the state)."""
        faults = self.faults()
        answers: list[Answer] = []
        while True:
            answer = agent.ask(prompt, runner, step_id, attempt)
            answers.append(answer)
            try:
                if answer.limit is not None:
                    self.limits.wait_out(step_id, answer.limit, record=main)
                elif answer.fault is not None and not answer.fault.auth:
                    faults.wait_out(step_id, answer.fault)
                else:
                    return answers
            except NeedsPerson as exc:  # past the cap: the step is not reviewed
                answer.failure = f"{answer.failure} (not waited out: {exc})"
                return answers
