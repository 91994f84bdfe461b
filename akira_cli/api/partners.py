"""The run's reports, as the loop's `Reports` partner: the files a person reads
(`akira_cli.reports`), and the pull request a run hands off (`handoff.pull_request`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli import nofollow, reports
from akira_cli.events import EventType

if TYPE_CHECKING:
    from akira_cli.config import Config
    from akira_cli.errors import LoopStop
    from akira_cli.events import EventBus
    from akira_cli.git.steps import StepCommits
    from akira_cli.state.models import CompletedStep, LoopState
    from akira_cli.state.store import StateStore
    from akira_cli.workspace import Workspace


@dataclass
class RunReports:
    workspace: Workspace
    config: Config
    store: StateStore
    bus: EventBus
    commits: StepCommits | None

    def progress(self, state: LoopState) -> None:
        self.write(reports.progress_report, state)

    def completion(self, state: LoopState, open_steps: list[str], completed: list[CompletedStep]) -> None:
        self.write(reports.completion_report, state, open_steps, completed)

    def intervention(self, state: LoopState, stop: LoopStop) -> None:
        self.write(reports.intervention_request, state, stop)

    def escalation(self, state: LoopState, stop: LoopStop, kept: list[str], others: list[str]) -> None:
        from akira_cli.errors import PullRequestNeedsPerson

        if isinstance(stop, PullRequestNeedsPerson):
            from akira_cli.follow.report import escalation

            self.write(escalation, state, stop)  # it quotes the failing log
            return
        self.write(reports.escalation, state, stop, kept, others)

    def write(self, report: Callable[..., Path], *args: object) -> None:
        """A report in the work tree; a link a step put on its way is refused and said."""
        try:
            report(self.workspace, *args)
        except nofollow.Refused as exc:
            self.bus.emit(
                EventType.WARNING, message=f"{report.__name__.replace('_', ' ')} not written: {exc}"
            )

    def hand_off(self, state: LoopState, stop: LoopStop) -> None:
        from akira_cli.handoff.pull_request import hand_off, wants_pull_request

        if self.commits is not None and wants_pull_request(self.config, state, stop):
            hand_off(self.workspace, self.config, state, self.store, self.commits, self.bus, stop)
