"""The one small interface every agent shares, and the registry agents are picked from by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from akira_cli.errors import AkiraError
from akira_cli.usage import Usage

if TYPE_CHECKING:
    from akira_cli.agents.presets.base import ProviderFault, UsageLimit
    from akira_cli.config import Config
    from akira_cli.events import EventBus
    from akira_cli.llm.client import LLMClient
    from akira_cli.runner import CommandRunner
    from akira_cli.tasks.model import Step
    from akira_cli.workspace import Workspace


@dataclass
class AgentRequest:
    task_id: str
    step: Step
    attempt: int
    tried: set[str]
    """Approaches already tried for this step, across resumes."""
    prompt: str
    workdir: Path
    timeout: float
    should_stop: Callable[[], bool] = lambda: False
    task_path: Path | None = None
    """The running task file: part of the control plane the agent may not write."""
    session_id: str | None = None
    """The step's conversation to resume (`agent.session: continue`); None starts a new one."""


@dataclass
class AgentResult:
    ok: bool
    approach: str
    actions: list[str] = field(default_factory=list)
    output: str = ""
    error: str = ""
    transient: bool = False
    interrupted: bool = False
    usage: Usage = field(default_factory=Usage)
    """Usage an agent CLI reported itself (the llm agent's is counted by its client)."""
    response: str = ""
    session_id: str | None = None
    limit: UsageLimit | None = None
    """The agent CLI's plan limit is reached: not a failure, waited out."""
    fault: ProviderFault | None = None
    """The model provider failed (429/5xx/529: waited out with backoff; a bad key: a person)."""


class Agent(Protocol):
    name: str
    wants_prompt: bool
    """Whether `run` reads `request.prompt`; the engine skips building it otherwise."""
    spawns: bool
    """Whether `run` starts with a command: the save that starts the attempt is then made
    durable while that command starts (`CommandRunner.on_start`), otherwise before `run`."""

    def run(self, request: AgentRequest) -> AgentResult: ...


@dataclass
class AgentContext:
    config: Config
    workspace: Workspace
    runner: CommandRunner
    bus: EventBus
    task_id: str
    llm: LLMClient | None = None
    """The session's one LLM client (its usage is the state's usage), when an endpoint is set."""


AgentFactory = Callable[[AgentContext], Agent]
REGISTRY: dict[str, AgentFactory] = {}


def register_agent(name: str) -> Callable[[AgentFactory], AgentFactory]:
    """Built-ins register the same way a plug-in would."""

    def decorate(factory: AgentFactory) -> AgentFactory:
        REGISTRY[name] = factory
        return factory

    return decorate


def preflight(kind: str, steps: list[Step], config: Config) -> None:
    """Refuses up front, before any state is written, a run no agent could carry out."""
    for step in steps:
        chosen = choose_kind(kind, step, config)
        if chosen == "llm" and not config.llm.base_url:
            raise AkiraError(
                "the llm agent needs an LLM endpoint; set llm.base_url or OPENAI_BASE_URL "
                "(config/autonomous_loop.yaml or the environment, e.g. http://127.0.0.1:11434/v1)"
            )
        if chosen == "command" and not (config.agent.command or config.agent.preset):
            raise AkiraError(
                "the command agent needs agent.preset or agent.command in config/autonomous_loop.yaml, "
                'e.g. preset: claude, or command: "claude -p"'
            )


def choose_kind(kind: str, step: Step, config: Config) -> str:
    """`auto`: script when the step has Run:, else llm when configured, else command."""
    if kind != "auto":
        return kind
    if step.run:
        return "script"
    if config.llm.base_url:
        return "llm"
    if config.agent.command or config.agent.preset:
        return "command"
    from akira_cli.agents.presets.base import PRESETS, found_on_path

    found = found_on_path()
    seen = f"found on PATH: {', '.join(found)}" if found else "none of them is on PATH"
    raise AkiraError(
        f"step {step.id} has no 'Run:' directive and no agent is configured; add a 'Run:' line "
        "to the step, set llm.base_url (or OPENAI_BASE_URL), or name your agent CLI with "
        f"--agent NAME or agent.preset ({', '.join(PRESETS)}; {seen}) or agent.command; akira "
        "never starts a paid agent nobody configured"
    )
