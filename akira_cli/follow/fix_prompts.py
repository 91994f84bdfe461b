"""The prompt of a fix step (`ci-N`, `review-N`): the check's log or the person's comment,
quoted as data (a fenced block, a `>` quote) and never as a directive; the retry part is the
step prompts' own. Every other step's prompt is the step prompts' (`StepPrompts`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from akira_cli.redaction import redact
from akira_cli.state.follow import FixItem
from akira_cli.state.models import LoopState
from akira_cli.state.records import StepRecord
from akira_cli.step_prompts import StepPrompts, continuation
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.templates import render

SUMMARY = re.compile(r"^\s*SUMMARY:\s*(.+?)\s*$", re.MULTILINE)


@dataclass
class FollowPrompts:
    steps: StepPrompts
    item_for: Callable[[str], FixItem | None]
    url: Callable[[], str]

    def build(self, state: LoopState, task: TaskFile, step: Step, record: StepRecord) -> str:
        item = self.item_for(step.id)
        if item is None:
            return self.steps.build(state, task, step, record)
        failed = [a for a in record.window() if a.outcome == "failure"]
        action = "Take a different approach than before." if failed else "Make the pull request pass."
        return (
            render(
                "follow_step.md",
                continuation=continuation(state, step, record.window_count + 1, action),
                step_id=step.id,
                step_title=step.title,
                url=self.url(),
                source=source(item),
                quoted=quoted(item),
                checks="\n".join(self.steps.checks(step)) or "- the agent reports success",
                workdir=self.steps.config.agent.workdir or ".",
                retry=self.steps.retry(state, record, failed) if failed or record.guidance else "",
            ).strip()
            + "\n"
        )

    def followup(self, state: LoopState, step: Step, record: StepRecord) -> str:
        return self.steps.followup(state, step, record)


def source(item: FixItem) -> str:
    if item.kind == "ci":
        return f"Its check `{item.name}` failed; the failed job's log (its last lines, redacted):"
    where = f" on `{item.where}`" if item.where else ""
    return f"{item.author} asked for a change in a review comment{where}:"


def quoted(item: FixItem) -> str:
    text = redact(item.context)
    if item.kind == "review":
        return "\n".join(f"> {line}" for line in text.splitlines() or [""])
    fence = "`" * max([3, *(len(run) + 1 for run in re.findall(r"`+", text))])
    return f"{fence}text\n{text}\n{fence}"


def summary_of(response: str, fallback: str) -> str:
    """The agent's `SUMMARY:` line, one line and redacted; `fallback` when it gave none."""
    found = SUMMARY.findall(response or "")
    line = " ".join(found[-1].split()) if found else fallback
    return redact(line)[:200]
