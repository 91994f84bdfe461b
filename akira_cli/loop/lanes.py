"""Where an attempt runs (a lane), and an attempt between its start and its end (`Pending`).

The main lane is the work folder of the main work tree, where steps run one at a time. A wave
step (a `[P]` step) runs in a lane of its own: a worktree slot with its own runner, witness and
agents, so that its commands, its checks and what it changed never mix with another step's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.agents.base import Agent, AgentRequest, AgentResult
from akira_cli.loop.witness import Witness
from akira_cli.runner import CommandRunner
from akira_cli.state.records import Attempt, StepRecord
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.usage import Usage

if TYPE_CHECKING:
    from akira_cli.control_plane import ControlPlane


@dataclass
class Lane:
    runner: CommandRunner
    witness: Witness
    workdir: Path
    agent_for: Callable[[Step], Agent]
    slot: int | None = None
    """The worktree slot of a wave step's lane; None for the main work tree."""
    path: Path | None = None
    """The slot's folder (the worktree's top)."""


@dataclass
class Pending:
    """One attempt: started on the loop's thread, run on any, finished on the loop's thread."""

    step: Step
    task: TaskFile
    record: StepRecord
    agent: Agent
    request: AgentRequest
    lane: Lane
    iteration: int
    started: float
    spent: Usage
    result: AgentResult | None = None
    retries: int = 0
    plane_changed: list[str] = field(default_factory=list)
    task_replaced: bool = False
    """Another task file or folder stands at the task file's path after the run (`Witness`)."""
    attempt: Attempt | None = None
    commit: str | None = None
    """A wave step's commit on its step branch (made in its slot)."""
    error: BaseException | None = None
    """What the run raised (the loop's thread raises it again)."""


def slot_lane(
    slot: int,
    path: Path,
    workdir: Path,
    main: CommandRunner,
    control: ControlPlane,
    make_agents: Callable[[CommandRunner], Callable[[Step], Agent]],
    view: Callable[[], bytes | None] | None = None,
    workspace: Path | None = None,
) -> Lane:
    """A lane in worktree slot `slot` at `path`: the work folder is the same folder inside it,
    and so is `AKIRA_WORKSPACE` (`workspace`): the main work tree is read-only to the step.
    `view`: git's look at the slot, when the work folder is its top."""
    env = {**(main.env or {}), "AKIRA_WORKTREE": str(path)}
    if workspace is not None:
        env["AKIRA_WORKSPACE"] = str(workspace)
    runner = CommandRunner(workdir, env=env, ledger=main.ledger, private_env=True)
    if main.wrapper is not None:  # the slot is the step's work tree; the main one is read-only there
        runner.wrapper = main.wrapper.moved(path)
    witness = Witness(path, workdir, control, runner, view)
    return Lane(runner, witness, workdir, make_agents(runner), slot, path)
