"""What a git-native start refuses of the checkout it would work in, and of the agent's
program: another task's live loop there, the person's uncommitted work (`git/yours.py`), an
agent CLI the sandbox would hide (`sandbox/sees.py`). All before anything is written."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.errors import AkiraError
from akira_cli.workspace import Workspace, command_line, in_quotes

if TYPE_CHECKING:
    from akira_cli.config import Config
    from akira_cli.git.run import GitRun
    from akira_cli.state.store import StateStore
    from akira_cli.tasks.model import Step


def refuse_for_checkout(
    store: StateStore, git: GitRun | None, workspace: Workspace, path: Path, own: bool = False
) -> None:
    """A git-native start in a checkout another task's loop works, or with the person's
    uncommitted changes to tracked files (`git/yours.py`; `own`: the checkout is akira's, a fleet
    clone, with no person's work in it), is refused before anything is written."""
    from akira_cli.git.yours import refuse_uncommitted

    if git is None:
        return
    refuse_busy_checkout(store, git, workspace)
    if own:
        return
    task, root = git.relative(path), git.root
    refuse_uncommitted(git.git, git.shown, lambda name: name == task or git.is_control(root / name))


def refuse_busy_checkout(store: StateStore, git: GitRun, workspace: Workspace) -> None:
    """Another task's live loop in this checkout: a start's branch switch would move HEAD under
    it, and it would stop as if its agent had switched branches."""
    for _, state in store.scan():
        if state is None or state.git is None or state.status in ("completed", "cancelled"):
            continue
        if state.git.root not in (None, str(git.root)):
            continue
        holder = store.lock(state.task_id).holder()
        if holder is not None:
            stop = command_line(workspace, "loop", "stop", "--task-id", state.task_id)
            raise AkiraError(
                f"task {state.task_id} ({workspace.shown(Path(state.task_path))}) is running in this "
                f"checkout as process {holder}, on {state.git.branch}; a second run here would switch "
                f"its branch under it: wait for it, stop it with {in_quotes(stop)}, or start this one "
                "in a clone or worktree of its own"
            )


def refuse_hidden_agent(cfg: Config, steps: list[Step], workdir: Path, root: Path) -> None:
    """A sandboxed run whose agent CLI lies where the sandbox hides it (`sandbox/sees.py`) would
    stop at its first step: refused before anything is written."""
    from akira_cli.agents.choice import choose_kind
    from akira_cli.agents.executable import agent_command
    from akira_cli.sandbox.sees import hidden_program

    for step in steps:
        try:
            command = agent_command(choose_kind(cfg.agent.kind, step, cfg), cfg)
        except AkiraError:
            continue  # no agent for the step: the run's own refusal says so
        if command is None:
            continue
        preset = command.preset.name if command.preset is not None else None
        label, trees = "the agent's program", [workdir, root]
        hides = hidden_program(label, command.executable, cfg.sandbox, trees, preset)
        if command.executable and hides is not None:
            raise AkiraError(hides)
        return  # one CLI per run
