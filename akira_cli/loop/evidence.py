"""Evidence-based completion (docs/guarantees.md): an agent's exit 0 is a claim, not evidence.

A step is verified when at least one deterministic check ran for it (its own or a project
check) and all passed. A step with no check at all is complete only when the attempt left
evidence (files in the workspace changed); an attempt that changed nothing and ran no check is
no progress. A checkpoint step ("Checkpoint - ensure all tests pass") is judged by the project
checks alone. `evaluation.require_checks` makes a step with no check fail with "no check".

The script agent is the exception to the evidence rule: its `Run:` commands are a person's own
instructions (a deploy, a migration), so their exit 0 completes a step without checks, recorded
as unverified.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from akira_cli.agents.base import AgentRequest, AgentResult
from akira_cli.config import Config
from akira_cli.errors import NeedsPerson
from akira_cli.runner import CommandRunner
from akira_cli.state.records import CheckResult
from akira_cli.tasks.model import Step

CHECKPOINT_RE = re.compile(r"\bcheck[- ]?point\b|\bensure all tests pass", re.I)


def is_checkpoint(step: Step) -> bool:
    return bool(CHECKPOINT_RE.search(step.title)) or any(CHECKPOINT_RE.search(d) for d in step.details)


def require_project_checks(step: Step, config: Config) -> None:
    """A checkpoint with no project check to run cannot be judged: a person must name one."""
    if not config.checks:
        raise NeedsPerson(
            f"step {step.id} is a checkpoint ('{step.title[:80]}') and there is no project check to "
            "run; add the project's test command under 'checks:' in config/autonomous_loop.yaml "
            "(for example '- run: python -m pytest -q'), then resume"
        )


@dataclass
class EvidenceCheck:
    """Passes when the attempt left evidence a step without checks needs; fails with the reason."""

    reason: str
    name: str = "evidence"

    def run(self) -> CheckResult:
        return CheckResult(name=self.name, passed=not self.reason, detail=self.reason)


def evidence_check(
    step: Step, config: Config, agent: str, files_changed: list[str], project_gating: bool
) -> EvidenceCheck | None:
    """The extra check a step without deterministic checks gets, or None when it has some."""
    if step.has_checks or project_gating or agent == "checkpoint":
        return None
    if config.evaluation.require_checks:
        return EvidenceCheck(
            "no check: evaluation.require_checks is on and this step has no Verify/Exists/Contains "
            "line and no project check"
        )
    if agent == "script":
        return None
    if not files_changed:
        return EvidenceCheck(
            "no progress: the attempt changed no file and the step has no check to pass; an exit 0 "
            "alone is not evidence"
        )
    return EvidenceCheck("")


class CheckpointAgent:
    """Stands in for the agent on a checkpoint step: nothing runs but the project checks."""

    name = "checkpoint"
    wants_prompt = False
    spawns = False

    def run(self, request: AgentRequest) -> AgentResult:
        return AgentResult(True, "checkpoint", ["project checks"])


def red_baseline(config: Config, runner: CommandRunner) -> list[str]:
    """The project checks that already fail before the first step (they become advisory)."""
    failing = []
    for check in config.checks:
        result = runner.run(check.run, check.timeout or config.agent.command_timeout_seconds)
        if not result.ok:
            failing.append(f"`{check.label}` ({result.describe().split('` ', 1)[-1]})")
    return failing
