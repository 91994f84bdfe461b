"""Wires one loop run together: lock, event log, display, watcher, agents, engine, signals."""

from __future__ import annotations

import contextlib
import gc
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.agents import REGISTRY, Agent, AgentContext
from akira_cli.agents.base import choose_kind
from akira_cli.checks import Judge
from akira_cli.config import Config
from akira_cli.display import make_display
from akira_cli.errors import AkiraError, ForceStopped
from akira_cli.events import EventBus, EventType, JsonlLog
from akira_cli.fileio import describe_os_error
from akira_cli.loop.conditions import TaskLocator
from akira_cli.loop.core import AutonomousLoop
from akira_cli.loop.engine import StepEngine
from akira_cli.loop.usage_limits import LimitWaiter
from akira_cli.notify import Notifier
from akira_cli.orphans import ChildLedger
from akira_cli.prompts import StepPrompts
from akira_cli.reaper import Reaper
from akira_cli.redaction import redact
from akira_cli.reflection.service import build_reflection
from akira_cli.runner import CommandRunner
from akira_cli.state.models import LoopState
from akira_cli.state.store import StateStore, TaskLock
from akira_cli.tasks.model import Step
from akira_cli.tasks.source import TaskSource
from akira_cli.watcher import WorkspaceWatcher
from akira_cli.workspace import Workspace, command_line, in_quotes

if TYPE_CHECKING:
    from akira_cli.git.run import GitRun
    from akira_cli.git.steps import StepCommits
    from akira_cli.llm.client import LLMClient
    from akira_cli.sandbox.bwrap import Sandbox


class AgentPool:
    """Builds each agent kind once, on first use."""

    def __init__(self, kind: str, context: AgentContext) -> None:
        self.kind = kind
        self.context = context
        self._agents: dict[str, Agent] = {}

    def __call__(self, step: Step) -> Agent:
        kind = choose_kind(self.kind, step, self.context.config)
        if kind not in REGISTRY:
            raise AkiraError(f"unknown agent kind '{kind}'; use one of: {', '.join(REGISTRY)}")
        if kind not in self._agents:
            self._agents[kind] = REGISTRY[kind](self.context)
        return self._agents[kind]


def llm_client(config: Config, state: LoopState, bus: EventBus) -> LLMClient | None:
    """One client per run; its usage object is the state's, so budgets see every call."""
    if not config.llm.base_url:
        return None
    from akira_cli.llm.client import LLMClient

    return LLMClient(
        config.llm, limits=config.resource_limits, budget=config.budget, bus=bus, usage=state.usage
    )


def llm_judge(config: Config, client: LLMClient | None) -> Judge | None:
    if client is None or not config.evaluation.llm_judge:
        return None
    from akira_cli.reflection.llm import LLMJudge

    return LLMJudge(client)


def agent_workdir(workspace: Workspace, config: Config) -> Path:
    workdir = (workspace.root / config.agent.workdir) if config.agent.workdir else workspace.root
    if not workdir.is_dir():
        raise AkiraError(f"agent.workdir {workdir} does not exist; create it or fix the config")
    return workdir


def step_commits(
    workspace: Workspace, config: Config, state: LoopState, workdir: Path, bus: EventBus
) -> StepCommits | None:
    """A git-native run's commits (SPEC 12), when it started as one; its HEAD must be on the
    task branch: a resume never switches branches under a person's feet."""
    run = git_run(workspace, config, state)
    if run is None:
        return None
    from akira_cli.git.steps import StepCommits

    return StepCommits(run, state, workdir, bus)


def git_run(workspace: Workspace, config: Config, state: LoopState) -> GitRun | None:
    """The git side of a loop that started as a git-native run, with HEAD checked to be on its
    task branch (refused otherwise); None for any other loop."""
    if state.git is None:
        return None
    from akira_cli.git.run import GitRun

    run = GitRun.detect(workspace.root, Path(state.task_path), config.git)
    if run is not None:
        run.check_resume(state.git)
    return run


def build_loop(
    workspace: Workspace,
    config: Config,
    store: StateStore,
    state: LoopState,
    bus: EventBus,
    watcher: WorkspaceWatcher,
    *,
    wait: bool,
    tasks: TaskSource | None = None,
) -> AutonomousLoop:
    workdir = agent_workdir(workspace, config)
    runner = CommandRunner(
        workdir,
        env={"AKIRA_TASK_ID": state.task_id, "AKIRA_WORKSPACE": str(workspace.root)},
        ledger=ChildLedger(store.children_path(state.task_id)),
        on_start=store.sync_pending,
    )
    client = llm_client(config, state, bus)
    context = AgentContext(config, workspace, runner, bus, state.task_id, client)
    pool = AgentPool(state.agent_kind or config.agent.kind, context)
    engine = StepEngine(
        state,
        config,
        workspace,
        bus,
        runner,
        pool,
        StepPrompts(workspace, config),
        build_reflection(workspace, config, bus, client),
        pause=lambda _: False,  # the three replaced by the loop's own below
        should_stop=lambda: False,
        limits=LimitWaiter(state, bus, config.agent.max_limit_wait_seconds, lambda: None, lambda _: False),
        judge=llm_judge(config, client),
        commits=step_commits(workspace, config, state, workdir, bus),
    )
    loop = AutonomousLoop(
        workspace,
        config,
        store,
        state,
        bus,
        engine,
        watcher,
        TaskLocator.of(workspace, state, watcher),
        wait=wait,
        tasks=tasks,
    )
    engine.pause, engine.should_stop = loop.pause, loop.stop_wanted
    from akira_cli.review.build import step_reviewer

    engine.reviewer = step_reviewer(config, workspace, state, bus, engine.commits)

    def agents_for(lane_runner: CommandRunner) -> AgentPool:
        lane_context = AgentContext(config, workspace, lane_runner, bus, state.task_id, client)
        return AgentPool(state.agent_kind or config.agent.kind, lane_context)

    loop.agents_for = agents_for
    if state.parallel > 1 and engine.commits is not None:
        from akira_cli.loop.waves import Waves

        loop.waves = Waves(loop, engine.commits.run, engine.commits, state.parallel)
    engine.limits.pause, engine.limits.save = loop.pause, lambda: store.save(state)
    return loop


def sandbox_for(
    workspace: Workspace, config: Config, state: LoopState, bus: EventBus
) -> contextlib.AbstractContextManager[Sandbox | None]:
    """The run's sandbox and its proxy (SPEC 15), or None."""
    from akira_cli.sandbox.session import open_sandbox

    def warn(message: str) -> None:
        bus.emit(EventType.WARNING, message=message)

    def denied(host: str) -> None:
        bus.emit(EventType.SANDBOX_DENIED, host=host)

    task = lambda: Path(state.task_path)  # noqa: E731 (a person may move it)
    return open_sandbox(
        config,
        workspace.root,
        agent_workdir(workspace, config),
        task,
        denied,
        kind=state.agent_kind,
        warn=warn,
    )


def run_session(
    workspace: Workspace,
    config: Config,
    store: StateStore,
    state: LoopState,
    *,
    wait: bool,
    show: bool = True,
    lock: TaskLock | None = None,
    tasks: TaskSource | None = None,
) -> int:
    """Runs the loop under the task's lock (taken here unless the caller holds it already).
    Whatever happens, the lock is released, the watcher stopped and no command left running."""
    with contextlib.ExitStack() as stack:
        if lock is None:
            lock = store.lock(state.task_id)
            lock.acquire(f"task {state.task_id} ({Path(state.task_path).name})")
        stack.callback(lock.release)
        orphans = ChildLedger(store.children_path(state.task_id)).reap(state.task_id, workspace.root)
        # Kills this run's commands if akira dies; told at the end (after the kill below, LIFO).
        reaper = Reaper(lock.lock_path, store.children_path(state.task_id), state.task_id, workspace.root)
        reaper.start()
        stack.callback(reaper.stop)
        bus = EventBus(state.task_id)
        bus.iteration = state.iteration
        log = JsonlLog(workspace.log_path(state.task_id))
        stack.callback(log.close)
        if config.autonomous_loop.log_every_iteration:
            bus.subscribe(log)
        else:
            bus.subscribe(lambda event: None if event.type == EventType.ITERATION_STARTED else log(event))
        if config.notify.command:
            notifier = Notifier(config.notify, workspace, bus)
            bus.subscribe(notifier)
            stack.callback(notifier.drain)
        if orphans:
            bus.emit(EventType.WARNING, message=f"killed process groups left by an earlier run: {orphans}")
        resume = command_line(workspace, "loop", "resume", "--task-id", state.task_id)
        display = make_display(state, resume) if show else None
        if display is not None:
            bus.subscribe(display)
            stack.callback(display.close)
        watcher = WorkspaceWatcher(workspace)
        watcher.start()
        stack.callback(watcher.stop)
        sandbox = stack.enter_context(sandbox_for(workspace, config, state, bus))
        state.sandboxed = sandbox is not None
        loop = build_loop(workspace, config, store, state, bus, watcher, wait=wait, tasks=tasks)
        loop.engine.runner.wrapper = sandbox  # every command of the run starts inside (SPEC 15)
        if loop.engine.runner.ledger is not None:
            stack.callback(loop.engine.runner.ledger.close)  # runs after the kill below (LIFO)
        stack.callback(loop.engine.runner.kill)  # a command still running in a worker thread
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            previous = signal.signal(signum, lambda *_: loop.force_stop())
            stack.callback(signal.signal, signum, previous)
        # What start-up built lives as long as the run: no collection walks it again (unfrozen
        # at the end, for callers that run several loops in-process). No gc.collect() first: on
        # a large task file it takes tens of milliseconds, for a little garbage kept a while.
        gc.freeze()
        stack.callback(gc.unfreeze)
        try:
            stop = loop.run()
        except OSError as exc:
            resume = command_line(workspace, "loop", "resume", "--task-id", state.task_id)
            raise AkiraError(
                describe_os_error(exc, f"run {in_quotes(resume)}; the saved state is intact")
            ) from None
    where = ""
    if stop.report in ("intervention", "escalation"):
        where = f"; read {workspace.shown(workspace.needs_action / f'{stop.report}_{state.task_id}.md')}"
    if isinstance(stop, ForceStopped) and state.status == "paused":  # Ctrl-C, a signal, stop --force
        where += f"; continue with: {command_line(workspace, 'loop', 'resume', '--task-id', state.task_id)}"
    if state.git is not None and state.git.pr_url:
        where += f"; pull request: {state.git.pr_url}"
    print(f"akira: {state.task_id} {state.status}: {redact(stop.message)}{where}", file=sys.stderr)
    return stop.exit_code
