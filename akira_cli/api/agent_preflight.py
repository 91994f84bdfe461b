"""The agent CLI's executable, checked at `loop start` and `loop resume` before anything starts:
a missing `claude` is one line and exit 1, not a branch, a state and two failed attempts
with `bash: line 1: claude: command not found`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.agents.executable import require_agent_executable

if TYPE_CHECKING:
    from akira_cli.config import Config
    from akira_cli.state.models import LoopState
    from akira_cli.tasks.model import Step
    from akira_cli.workspace import Workspace


def at_start(workspace: Workspace, cfg: Config, pending: list[Step]) -> None:
    from akira_cli.api.run import agent_workdir

    require_agent_executable(cfg.agent.kind, pending, cfg, agent_workdir(workspace, cfg))


def at_resume(workspace: Workspace, cfg: Config, state: LoopState) -> None:
    """The steps left are read from the task file wherever a person moved it; a task file that
    cannot be read is left to the run, which says what is wrong with it."""
    from akira_cli.api.run import agent_workdir
    from akira_cli.errors import AkiraError
    from akira_cli.loop.conditions import TaskLocator
    from akira_cli.tasks.parser import parse_task_text
    from akira_cli.tasks.reading import read_task_bytes

    path = TaskLocator.of(workspace, state).locate(Path(state.task_path))
    if path is None:
        return
    try:
        task_file = parse_task_text(read_task_bytes(path), path)
    except (AkiraError, OSError):
        return
    done = state.completed_ids()
    pending = [s for s in task_file.leaves(state.include_optional) if not s.ticked and s.id not in done]
    kind = state.agent_kind or cfg.agent.kind
    require_agent_executable(kind, pending, cfg, agent_workdir(workspace, cfg))
