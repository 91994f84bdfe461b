"""Assembles one run: the loop and what it works with (the agents, the LLM client, the step
commits of a git-native run, the reviewer, the reflection, the sandbox, the reports), inside the
session that holds its lock (`loop.session`). Every front end runs a run through here."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli import redaction
from akira_cli.agents.base import REGISTRY, Agent, AgentContext
from akira_cli.agents.choice import choose_kind
from akira_cli.api.models import Finished
from akira_cli.api.partners import RunReports
from akira_cli.api.watching import live_path
from akira_cli.children.ledger import ChildLedger
from akira_cli.config import Config
from akira_cli.errors import AkiraError, ForceStopped, LoopStop
from akira_cli.events import EventBus, EventType, printable
from akira_cli.exam.judge import ExamJudge
from akira_cli.live_output import LiveOutput
from akira_cli.loop.conditions import Guard, TaskLocator
from akira_cli.loop.control import Control
from akira_cli.loop.core import AutonomousLoop
from akira_cli.loop.engine import PromptBuilder, StepEngine
from akira_cli.loop.outcomes import Outcomes
from akira_cli.loop.provider_faults import FaultWaiter
from akira_cli.loop.session import run_session
from akira_cli.loop.usage_limits import LimitWaiter
from akira_cli.redaction import redact
from akira_cli.reflection.service import build_reflection
from akira_cli.runner import CommandRunner
from akira_cli.sections import FollowSettings
from akira_cli.state.lock import TaskLock
from akira_cli.state.models import LoopState
from akira_cli.state.store import StateStore
from akira_cli.step_prompts import StepPrompts
from akira_cli.tasks.model import Step
from akira_cli.tasks.source import TaskSource
from akira_cli.watcher import WorkspaceWatcher
from akira_cli.workspace import Workspace, command_line, work_folder

if TYPE_CHECKING:
    from akira_cli.checks import Judge
    from akira_cli.follow.follower import Follower
    from akira_cli.follow.forge import Forge
    from akira_cli.git.pinned import Git
    from akira_cli.git.run import GitRun
    from akira_cli.git.steps import StepCommits
    from akira_cli.git.verify import CommitHooks
    from akira_cli.llm.client import LLMClient
    from akira_cli.loop.waves import Waves
    from akira_cli.sandbox.blame import Refusal
    from akira_cli.sandbox.bwrap import Sandbox


def run(
    workspace: Workspace,
    config: Config,
    store: StateStore,
    state: LoopState,
    *,
    wait: bool,
    show: bool = True,
    lock: TaskLock | None = None,
    tasks: TaskSource | None = None,
) -> Finished:
    """The run, in this process, to its stop; what it ended with."""

    def build(bus: EventBus, watcher: WorkspaceWatcher, stack: contextlib.ExitStack) -> AutonomousLoop:
        sandbox = stack.enter_context(sandbox_for(workspace, config, state, bus))
        state.sandboxed = sandbox is not None
        loop = build_loop(
            workspace, config, store, state, bus, watcher, wait=wait, tasks=tasks, sandbox=sandbox
        )
        stack.callback(loop.locator.close)
        return loop

    return finished(
        workspace, state, run_session(workspace, config, store, state, build, show=show, lock=lock)
    )


def finished(workspace: Workspace, state: LoopState, stop: LoopStop) -> Finished:
    where = ""
    if stop.report in ("intervention", "escalation"):
        where = f"; read {workspace.shown(workspace.needs_action / f'{stop.report}_{state.task_id}.md')}"
    if isinstance(stop, ForceStopped) and state.status == "paused":  # Ctrl-C, a signal, stop --force
        where += f"; continue with: {command_line(workspace, 'loop', 'resume', '--task-id', state.task_id)}"
    if state.git is not None and state.git.pr_url:
        where += f"; pull request: {state.git.pr_url}"
    return Finished(
        task_id=state.task_id,
        status=state.status,
        exit_code=stop.exit_code,
        message=printable(redact(stop.message)),  # it can carry what a step wrote
        where=where,
    )


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
    workdir = work_folder(workspace.root, config.agent.workdir)
    if not workdir.is_dir():
        raise AkiraError(f"agent.workdir {workdir} does not exist; create it or fix the config")
    return workdir


def step_commits(
    workspace: Workspace,
    config: Config,
    state: LoopState,
    workdir: Path,
    bus: EventBus,
    runner: CommandRunner,
) -> StepCommits | None:
    """A git-native run's commits (one per completed step), when it started as one; its HEAD must be on the
    task branch: a resume never switches branches under a person's feet. With `git.verify`, the
    repository's hooks run as the steps' commands do (in the sandbox)."""
    hooks = None
    if config.git.verify:
        from akira_cli.git.verify import CommitHooks

        hooks = functools.partial(CommitHooks, runner=runner, timeout=config.agent.command_timeout_seconds)
    run = git_run(workspace, config, state, hooks)
    if run is None:
        return None
    from akira_cli.git.steps import StepCommits

    return StepCommits(run, state, workdir, bus)


def git_run(
    workspace: Workspace, config: Config, state: LoopState, hooks: Callable[[Git], CommitHooks] | None = None
) -> GitRun | None:
    """The git side of a loop that started as a git-native run, with HEAD checked to be on its
    task branch (refused otherwise); None for any other loop. `hooks`: the repository's commit
    hooks, made for its git (`git.verify`)."""
    if state.git is None:
        return None
    from akira_cli.git.run import GitRun

    run = GitRun.detect(workspace.root, Path(state.task_path), config.git, root=state.git.root, hooks=hooks)
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
    sandbox: Sandbox | None = None,
) -> AutonomousLoop:
    """The loop and what it works with, each made once with what it needs. `sandbox`: every
    command of the run starts inside it."""
    workdir = agent_workdir(workspace, config)
    from akira_cli.git.dotenv import ignored_env_values

    redaction.register(ignored_env_values(workdir))  # the project's keys, masked like akira's
    runner = CommandRunner(
        workdir,
        env={"AKIRA_TASK_ID": state.task_id, "AKIRA_WORKSPACE": str(workspace.root)},
        ledger=ChildLedger(store.children_path(state.task_id)),
        on_start=store.sync_pending,
        wrapper=sandbox,
        live=LiveOutput(live_path(workspace, state.task_id)),
    )
    commits = step_commits(workspace, config, state, workdir, bus, runner)
    client = llm_client(config, state, bus)
    context = AgentContext(config, workspace, runner, bus, state.task_id, client)
    pool = AgentPool(state.agent_kind or config.agent.kind, context)
    control = Control(workspace, state, store, watcher)
    limits = LimitWaiter(state, bus, config.agent.max_limit_wait_seconds, control.save, control.pause)
    faults = functools.partial(FaultWaiter, bus, config.agent.max_transient_wait_seconds, control.pause)
    from akira_cli.review.build import step_reviewer

    steps = StepPrompts(workspace, config, lambda message: bus.emit(EventType.WARNING, message=message))
    prompts: PromptBuilder = steps
    follow = config.follow or (FollowSettings() if state.follow else None)
    if follow is not None and commits is not None:
        from akira_cli.follow.follower import fix_prompts

        prompts = fix_prompts(steps, state)  # a fix step's prompt is its check's or comment's
    engine = StepEngine(
        state,
        config,
        workspace,
        bus,
        runner,
        pool,
        prompts,
        Outcomes(state, config, workspace, bus, build_reflection(workspace, config, bus, client)),
        control,
        limits,
        judge=llm_judge(config, client),
        commits=commits,
        reviewer=step_reviewer(config, workspace, state, bus, commits, limits, faults),
        exam=ExamJudge(config, workspace, state, bus),
    )

    def agents_for(lane_runner: CommandRunner) -> AgentPool:
        lane_context = AgentContext(config, workspace, lane_runner, bus, state.task_id, client)
        return AgentPool(state.agent_kind or config.agent.kind, lane_context)

    locator = TaskLocator.of(workspace, state, watcher)
    guard = Guard(workspace, config, locator)
    return AutonomousLoop(
        workspace,
        config,
        store,
        state,
        bus,
        engine,
        watcher,
        locator,
        guard,
        RunReports(workspace, config, store, bus, commits),
        wait=wait,
        tasks=tasks,
        make_waves=waves_of(workspace, config, state, bus, commits, agents_for),
        follower=follower_of(config, follow, commits, engine, guard),
    )


def waves_of(
    workspace: Workspace,
    config: Config,
    state: LoopState,
    bus: EventBus,
    commits: StepCommits | None,
    agents_for: Callable[[CommandRunner], Callable[[Step], Agent]],
) -> Callable[[AutonomousLoop], Waves] | None:
    """A git-native run's parallel waves, when `parallel` is above 1: git's side of them
    (`git.wave_work`), and what the loop hands them as it is made."""
    if state.parallel <= 1 or commits is None:
        return None
    from akira_cli.git.wave_work import WaveWork
    from akira_cli.loop.waves import Waves

    work = WaveWork(commits.run, commits, state, bus, list(config.git.worktree_link), workspace.state_dir)

    def make(loop: AutonomousLoop) -> Waves:
        engine = loop.engine
        return Waves(
            work,
            engine,
            engine.iteration,
            engine.control,
            loop.book,
            loop.checkpoint,
            loop.boundary,
            loop.report_completed,
            state.parallel,
            agents_for,
        )

    return make


def follower_of(
    config: Config,
    follow: FollowSettings | None,
    commits: StepCommits | None,
    engine: StepEngine,
    guard: Guard,
) -> Follower | None:
    """A git-native run's follower of its pull request (`follow:`), whose fix steps the loop's
    engine works."""
    if follow is None or commits is None:
        return None
    from akira_cli.follow.follower import Follower

    return Follower(
        follow,
        commits,
        forges(config, commits.run.root),
        engine.state,
        engine.bus,
        engine,
        engine.iteration,
        engine.control,
        guard,
    )


def forges(config: Config, root: Path) -> Callable[[str], Forge]:
    """The forge of a pull request's URL: through glab for GitLab, else gh (as `git.pr` opened it)."""
    from akira_cli.git.pr import forge_tool

    if forge_tool(root, config.git) == "glab":
        from akira_cli.follow.glab import Glab

        return lambda url: Glab(url, root)
    from akira_cli.follow.gh import Gh

    return lambda url: Gh(url, root)


def sandbox_for(
    workspace: Workspace, config: Config, state: LoopState, bus: EventBus
) -> contextlib.AbstractContextManager[Sandbox | None]:
    """The run's sandbox and its proxy (docs/sandbox.md), or None."""
    from akira_cli.sandbox.blame import shown_host
    from akira_cli.sandbox.session import open_sandbox

    def warn(message: str) -> None:
        bus.emit(EventType.WARNING, message=message)

    def denied(step_id: str | None, refusal: Refusal) -> None:
        host, port = shown_host(refusal.host), refusal.port
        bus.emit(EventType.SANDBOX_DENIED, step_id, host=host, port=port, fix=refusal.line())

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
