"""The reviewer of a run (the morning review), built from `review:` in the config; None while it is off."""

from __future__ import annotations

import os
import shlex
import shutil
from typing import TYPE_CHECKING

from akira_cli.errors import AkiraError
from akira_cli.events import EventBus, EventType

if TYPE_CHECKING:
    from collections.abc import Callable

    from akira_cli.config import Config
    from akira_cli.git.steps import StepCommits
    from akira_cli.llm.client import LLMClient
    from akira_cli.review.gate import RequirementTexts, StepReview
    from akira_cli.review.waits import FaultWait, LimitWait
    from akira_cli.state.models import LoopState
    from akira_cli.tasks.model import Step, TaskFile
    from akira_cli.workspace import Workspace


def preflight(config: Config) -> None:
    """A reviewer that cannot work, refused before anything starts."""
    if (config.review.agent or "").strip() == "llm" and not config.llm.base_url:
        raise AkiraError(
            "review.agent: llm needs an LLM endpoint; set llm.base_url or OPENAI_BASE_URL in "
            "config/autonomous_loop.yaml, or name a preset (claude, codex) or a command"
        )


def reviewer_program(config: Config) -> str:
    """The program `review.agent` runs ('' for `llm` or no reviewer)."""
    from akira_cli.agents.presets.base import PRESETS

    name = (config.review.agent or "").strip()
    if not name or name == "llm":
        return ""
    preset = PRESETS.get(name)
    return preset.executable if preset is not None else shlex.split(name)[0]


def missing_reviewer(config: Config) -> str | None:
    """Why every review would be `none`: the reviewer's program is not installed (said at
    `loop start` and by `akira doctor`); None when it is found, or there is no reviewer."""
    program = reviewer_program(config) if config.review.enabled else ""
    if not program or shutil.which(os.path.expanduser(program)) is not None:
        return None
    from akira_cli.agents.executable import install_command
    from akira_cli.agents.presets.versions import PINS

    where = "is not on PATH" if "/" not in program else "is not an executable file"
    pin = PINS.get(program)
    install = "install it" + (f" ({install_command(pin.installer, pin.package, pin.version)})" if pin else "")
    return (
        f"the reviewer's program {program} {where}: every step it should review will be left not "
        f"reviewed (Akira-Review: none); {install} or fix review.agent"
    )


def hidden_reviewer(config: Config, workspace: Workspace) -> str | None:
    """Why every review would be `none` in a sandboxed run: the sandbox hides the reviewer's
    program (under /tmp, or under the home off PATH), though it is installed."""
    if config.sandbox.mode != "on":
        return None
    from akira_cli.sandbox.sees import hidden_program

    name = (config.review.agent or "").strip()
    label, program = "the reviewer's program", reviewer_program(config)
    hides = hidden_program(label, program, config.sandbox, [workspace.root], name)
    if hides is None:
        return None
    return f"{hides}; every step it should review is left not reviewed (Akira-Review: none)"


def step_reviewer(
    config: Config,
    workspace: Workspace,
    state: LoopState,
    bus: EventBus,
    commits: StepCommits | None,
    limits: LimitWait | None = None,
    faults: Callable[[], FaultWait] | None = None,
    requirement_texts: RequirementTexts | None = None,
) -> StepReview | None:
    """`limits` and `faults`: the run's usage-limit wait and a maker of provider-fault waits
    (the loop's, handed in by the run's assembly), to wait out the reviewer's limits and
    provider faults as the agent's are."""
    settings = config.review
    if not settings.enabled:
        return None
    from akira_cli.review.agent import CommandReviewer, LLMReviewer, ReviewerAgent
    from akira_cli.review.diff import StepDiffs
    from akira_cli.review.gate import StepReview
    from akira_cli.review.waits import ReviewerWaits

    agent: ReviewerAgent
    if (settings.agent or "").strip() == "llm":
        preflight(config)
        agent = LLMReviewer(lambda: review_client(config, bus))
    else:
        if (missing := missing_reviewer(config) or hidden_reviewer(config, workspace)) is not None:
            bus.emit(EventType.WARNING, message=missing)
        agent = CommandReviewer(settings, workspace.state_dir / "prompts", state.task_id)
    retry = config.reflection.enabled and config.autonomous_loop.retry_failed_steps
    waits = ReviewerWaits(limits, faults) if limits is not None and faults is not None else None
    return StepReview(
        settings,
        state,
        bus,
        agent,
        StepDiffs(commits, state.git.base if state.git is not None else None),
        config.reflection.max_iterations if retry else 1,
        requirement_texts or criteria_or_ids,
        config.llm.prices,
        waits,
    )


def review_client(config: Config, bus: EventBus) -> LLMClient:
    """The reviewer's LLM client (`review.model`, else `llm.model`), with a usage of its own: the
    review adds it to the state's (the budgets) and to the reviewer's (reported apart)."""
    from akira_cli.llm.client import LLMClient

    llm = config.llm.model_copy(update={"model": config.review.model or config.llm.model})
    return LLMClient(llm, limits=config.resource_limits, bus=bus)


def criteria_or_ids(step: Step, task: TaskFile) -> list[str]:
    """The texts of the criteria the step names, for the reviewer's prompt, read from the spec's
    requirements.md or spec.md; the ids alone when the feature has no criteria file."""
    from akira_cli.criteria.refs import requirement_texts
    from akira_cli.review.gate import requirement_ids

    return requirement_texts(step, task) or requirement_ids(step, task)
