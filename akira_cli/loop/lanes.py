"""Where an attempt runs (a lane), an attempt between its start and its end (`Pending`), and a
wave of them in flight (`InFlight`).

The main lane (`MainLane`) is the work folder of the main work tree, where steps run one at a
time. A wave step (a `[P]` step) runs in a lane of its own (`WaveLane`): a worktree slot with
its own runner, witness and agents, so that its commands, its checks and what it changed never
mix with another step's. The engine runs every attempt the same way; the lane it is handed is
the one thing that differs between the two modes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

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
    from akira_cli.loop.iteration import Iteration
    from akira_cli.loop.partners import Commits
    from akira_cli.loop.provider_faults import FaultWaiter
    from akira_cli.loop.usage_limits import LimitWaiter


class Lane(Protocol):
    """Where an attempt runs, and what its mode does around the agent's run: the engine calls
    the same four hooks for every attempt, and the main lane and a wave step's lane answer each
    in their own way."""

    @property
    def runner(self) -> CommandRunner: ...

    @property
    def witness(self) -> Witness: ...

    @property
    def workdir(self) -> Path: ...

    @property
    def agent_for(self) -> Callable[[Step], Agent]: ...

    @property
    def slot(self) -> int | None:
        """The worktree slot of a wave step's lane; None for the main work tree."""
        ...

    @property
    def path(self) -> Path | None:
        """The slot's folder (the worktree's top); None for the main work tree."""
        ...

    def starting(self, spawns: bool) -> None:
        """On the loop's thread, once the attempt's start is recorded. `spawns`: the agent
        starts by running a command (whose start makes the start's save durable)."""
        ...

    def running(self) -> None:
        """On the run's own thread, before the agent runs."""
        ...

    def waited(self, step_id: str, result: AgentResult, faults: FaultWaiter) -> bool:
        """A provider fault or a usage limit the agent met: True when it was waited out here
        and the agent runs again, False when the run ends with it (its caller waits)."""
        ...

    def ran(self) -> None:
        """After the agent's run, before its result is looked at."""
        ...

    def kept(self, pending: Pending) -> bool:
        """On the loop's thread, before the attempt is recorded: its work kept; True when a
        success completes its step now (a wave step's completes when it lands)."""
        ...


@dataclass
class MainLane:
    """The main work tree, where the loop's own thread runs one step at a time: it looks at
    the tree and the start's save is made durable before the agent runs, a usage limit is
    waited out here (a stop during any wait gives the iteration back), and the attempt's work
    is committed (or kept as a patch) as it finishes."""

    runner: CommandRunner
    witness: Witness
    workdir: Path
    agent_for: Callable[[Step], Agent]
    commits: Commits | None
    limits: LimitWaiter
    iteration: Iteration
    store_dir: Path
    """Where a failed attempt's patch goes (the workspace's `.state/`)."""
    slot: int | None = None
    path: Path | None = None

    def starting(self, spawns: bool) -> None:
        self.witness.before()
        if self.commits is not None:
            self.commits.before(self.witness.looked())
        if not spawns:
            self.runner.sync_pending()  # the start's save, durable before the agent runs

    def running(self) -> None:
        return None

    def waited(self, step_id: str, result: AgentResult, faults: FaultWaiter) -> bool:
        try:
            if result.limit is not None:
                self.limits.wait_out(step_id, result.limit)
            elif result.fault is not None:
                faults.wait_out(step_id, result.fault)
        except LoopStop:
            self.iteration.give_back()  # a usage limit or a provider fault spends no iteration
            raise
        return True

    def ran(self) -> None:
        self.runner.sync_pending()  # whatever ran, durable before the result is looked at

    def kept(self, pending: Pending) -> bool:
        attempt = pending.attempt
        assert attempt is not None
        if self.commits is not None and attempt.outcome == "success":  # a hook may fail it
            looked = self.witness.looked(after=True)
            self.commits.commit(pending.step, pending.task, pending.record, attempt, looked)
        if self.commits is not None and attempt.outcome == "failure":
            self.commits.failed(pending.step, attempt, self.store_dir)
        return True


@dataclass
class WaveLane:
    """A wave step's worktree slot, its run on a thread of its own: it looks at its tree on
    that thread once its slot is ready, leaves a usage limit to the loop's thread (which waits
    it out once for the whole wave), and its work lands later, in file order (`loop.waves`)."""

    runner: CommandRunner
    witness: Witness
    workdir: Path
    agent_for: Callable[[Step], Agent]
    slot: int | None = None
    path: Path | None = None

    def starting(self, spawns: bool) -> None:
        return None

    def running(self) -> None:
        self.witness.before()

    def waited(self, step_id: str, result: AgentResult, faults: FaultWaiter) -> bool:
        if result.limit is not None:
            return False
        if result.fault is not None:
            faults.wait_out(step_id, result.fault)
        return True

    def ran(self) -> None:
        return None

    def kept(self, pending: Pending) -> bool:
        return False


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
) -> WaveLane:
    """A lane in worktree slot `slot` at `path`: the work folder is the same folder inside it,
    and so is `AKIRA_WORKSPACE` (`workspace`): the main work tree is read-only to the step.
    `view`: git's look at the slot, when the work folder is its top."""
    env = {**(main.env or {}), "AKIRA_WORKTREE": str(path)}
    if workspace is not None:
        env["AKIRA_WORKSPACE"] = str(workspace)
    # the slot is the step's work tree; the main one is read-only there
    wrapper = main.wrapper.moved(path) if main.wrapper is not None else None
    live = main.live.slot(slot) if main.live is not None else None
    runner = CommandRunner(workdir, env=env, ledger=main.ledger, private_env=True, wrapper=wrapper, live=live)
    witness = Witness(path, workdir, control, runner, view)
    return WaveLane(runner, witness, workdir, make_agents(runner), slot, path)
