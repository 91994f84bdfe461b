"""The one small interface every agent shares, and the registry agents are picked from by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from akira_cli.usage import Usage

if TYPE_CHECKING:
    from akira_cli.config import Config
    from akira_cli.events import EventBus
    from akira_cli.llm.client import LLMClient
    from akira_cli.runner import CommandRunner
    from akira_cli.tasks.model import Step
    from akira_cli.workspace import Workspace


@dataclass
class UsageLimit:
    """The CLI's plan limit is reached; `reset_at` when the message says when it resets."""

    message: str
    reset_at: datetime | None = None


@dataclass
class ProviderFault:
    """The model provider failed, not the agent, so no attempt is spent: an overloaded or failing API (429,
    5xx, 529) is waited out with backoff; a refused key (`auth`: 401, 403) asks a person."""

    message: str
    status: int | None = None
    auth: bool = False


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
