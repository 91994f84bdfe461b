"""Where an attempt runs (a lane), an attempt between its start and its end (`Pending`), and a
wave of them in flight (`InFlight`).

The main lane is the work folder of the main work tree, where steps run one at a time. A wave
step (a `[P]` step) runs in a lane of its own: a worktree slot with its own runner, witness and
agents, so that its commands, its checks and what it changed never mix with another step's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.agents.base import Agent, AgentRequest, AgentResult
from akira_cli.errors import AkiraError, ForceStopped, LoopStop, NeedsPerson
from akira_cli.loop.witness import Witness
from akira_cli.runner import CommandRunner
from akira_cli.state.records import Attempt, StepRecord
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.usage import Usage

if TYPE_CHECKING:
    from akira_cli.agents.base import UsageLimit
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


@dataclass
class InFlight:
    """One wave's progress on the loop's thread: the steps that wait, run, are done (to land in
    file order) and have landed, and the stop that ends the wave."""

    order: list[str]
    queue: list[Step]
    free: list[int]
    """The worktree slots no step runs in."""
    running: dict[Future[Pending], Pending] = field(default_factory=dict)
    done: dict[str, Pending] = field(default_factory=dict)
    landed: list[str] = field(default_factory=list)
    stop: LoopStop | None = None
    stopped_at: Step | None = None
    """The step the escalation is about."""
    limit: tuple[str, UsageLimit] | None = None
    """A usage limit a step met: the whole wave waits it out, then runs that step again."""

    @classmethod
    def of(cls, steps: list[Step], size: int) -> InFlight:
        return cls([step.id for step in steps], list(steps), list(range(min(size, len(steps)))))

    @property
    def starting(self) -> bool:
        """Whether another step starts now: one waits, a slot is free, nothing stops or waits."""
        return bool(self.queue and self.free) and self.stop is None and self.limit is None

    def halt(self, exc: LoopStop | AkiraError, step: Step) -> None:
        """A finished step's stop: the first one says why, unless a forced stop comes later."""
        if self.stop is None or isinstance(exc, ForceStopped):
            self.stop = exc if isinstance(exc, LoopStop) else NeedsPerson(str(exc))
            self.stopped_at = step

    def requeue(self, step: Step, reached: UsageLimit) -> None:
        """A step a usage limit cut short: back in the queue, in file order."""
        self.queue.insert(0, step)
        self.queue.sort(key=lambda s: self.order.index(s.id))
        self.limit = self.limit or (step.id, reached)

    def landable(self) -> Iterator[Pending]:
        """The done steps that land now, in file order: those before the first that still runs,
        and none once a forced stop came."""
        busy = {pending.step.id for pending in self.running.values()}
        for step_id in self.order:
            if step_id in busy:
                break
            if step_id in self.done and not isinstance(self.stop, ForceStopped):
                yield self.done.pop(step_id)


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
