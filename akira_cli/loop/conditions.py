"""Stop conditions, checked before every iteration (SPEC 5)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from akira_cli.config import Config
from akira_cli.errors import (
    AkiraError,
    BudgetExceeded,
    FailureThresholdExceeded,
    ManualIntervention,
    MaxIterationsReached,
    StopRequested,
    TaskCompleted,
    TaskFileDeleted,
    TaskMovedToDone,
    TimeoutReached,
)
from akira_cli.hooks import active_hook
from akira_cli.state.models import LoopState
from akira_cli.watcher import WorkspaceWatcher
from akira_cli.workspace import Workspace, command_line, in_quotes


@dataclass
class TaskLocator:
    """Finds the task file wherever a person moved it: path, recorded moves, its home (where
    a person moves it back to), then inode."""

    workspace: Workspace
    watcher: WorkspaceWatcher | None
    identity: tuple[int, int] | None = None
    home: Path | None = None
    _inside: Path | None = None

    @classmethod
    def of(
        cls, workspace: Workspace, state: LoopState, watcher: WorkspaceWatcher | None = None
    ) -> TaskLocator:
        return cls(workspace, watcher, state.task_file_identity, workspace.home(state))

    def remember(self, path: Path, stat: os.stat_result | None = None) -> tuple[int, int]:
        """The file's identity, from `stat` when the caller has just taken it."""
        stat = stat or path.stat()
        self.identity = (stat.st_dev, stat.st_ino)
        return self.identity

    def locate(self, path: Path) -> Path | None:
        """The task file's path now; never a path outside the workspace (a state file's
        task_path is data, not a place akira may touch)."""
        found = self._find(path)
        if found is None or found == self._inside:
            return found
        if not self.workspace.contains(found):
            return None
        self._inside = found  # resolving symlinks costs syscalls: once per new place is enough
        return found

    def _find(self, path: Path) -> Path | None:
        if path.is_file():
            return path
        moved = self.watcher.follow(path) if self.watcher else None
        if moved is not None and moved.is_file():
            return moved
        if self.home is not None and self.home.is_file():
            return self.home
        return self._scan()

    def _scan(self) -> Path | None:
        if self.identity is None:
            return None
        for area in (self.workspace.done, self.workspace.needs_action, self.workspace.specs):
            for folder, _dirs, files in os.walk(area):
                for name in files:
                    candidate = Path(folder) / name
                    stat = candidate.stat()
                    if (stat.st_dev, stat.st_ino) == self.identity:
                        return candidate
        return None


def bring_back(workspace: Workspace, state: LoopState) -> None:
    """`loop resume` on a task a person parked in Needs_Action/: it goes back home, with its
    feature folder when it was parked with it."""
    found = TaskLocator.of(workspace, state).locate(Path(state.task_path))
    if found is not None:
        state.task_path = str(found)
    path = workspace.require_inside(Path(state.task_path))
    home = workspace.home(state)
    if not path.is_file():
        back = workspace.shown(workspace.spec_folder(home))
        raise AkiraError(
            f"task file {path} not found; restore it (or move it back to {back}) and resume again"
        )
    if workspace.area_of(path) != "Needs_Action":
        return
    parked, target = workspace.spec_folder(path), workspace.spec_folder(home)
    if target != home and target.is_dir() and not any(target.iterdir()):
        target.rmdir()  # an empty folder left behind: the parked folder takes its place
    if parked == path or target == home or target.exists():  # the task file alone goes back
        parked, target = path, home
    if target.exists():
        raise AkiraError(
            f"cannot move {workspace.shown(path)} back to {workspace.shown(home)}: a file is already "
            "there; move the task file back yourself, then resume again"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(parked), str(target))
    state.task_path = str(home if target == home else target / path.name)


@dataclass
class Guard:
    workspace: Workspace
    config: Config
    locator: TaskLocator
    _where: tuple[Path | None, str | None] = (None, None)
    _task: tuple[str, Path] = ("", Path())
    _hooks: tuple[str, tuple[str, str]] = ("", ("", ""))

    def check_location(self, state: LoopState) -> Path:
        """Raises when the task was moved to Done/ or Needs_Action/, or deleted."""
        if self._task[0] != state.task_path:
            self._task = (state.task_path, Path(state.task_path))
        path = self.locator.locate(self._task[1])
        if path is None:
            resume = command_line(self.workspace, "loop", "resume", "--task-id", state.task_id)
            home = self.workspace.shown(self.workspace.spec_folder(self.workspace.home(state)))
            raise TaskFileDeleted(
                f"task file {state.task_path} was deleted; restore it (or move it back to "
                f"{home}) and run {in_quotes(resume)}"
            )
        if path is not self._task[1]:
            state.task_path = str(path)
        if path != self._where[0]:  # resolving symlinks costs syscalls: once per place
            self._where = (path, self.workspace.area_of(path))
        area = self._where[1]
        loop = self.config.autonomous_loop
        if area == "Done" and state.moving_to_done:
            raise TaskCompleted("every step is done; akira's move to Done/ was cut short and is finished")
        if area == "Done" and loop.check_done_folder:
            raise TaskMovedToDone(f"task moved to {self.workspace.shown(path)} by a person")
        if area == "Needs_Action" and loop.check_needs_action_folder:
            home = self.workspace.shown(self.workspace.spec_folder(self.workspace.home(state)))
            raise ManualIntervention(
                f"task moved to {self.workspace.shown(path)}; move it back to {home} to continue"
            )
        return path

    def check_hook(self, state: LoopState) -> None:
        if not self.config.autonomous_loop.check_stop_hook:
            return
        if self._hooks[0] != state.task_id:
            own, shared = self.workspace.hook_path(state.task_id), self.workspace.hook_path()
            self._hooks = (state.task_id, (str(own), str(shared)))
        if not any(map(os.path.exists, self._hooks[1])):
            return  # two stats, every iteration; the files are read only when one is there
        hook = active_hook(self.workspace, state.task_id)
        if hook is not None:
            raise StopRequested(
                f"stop hook {self.workspace.shown(hook)} present; delete it or run "
                f"{in_quotes(command_line(self.workspace, 'loop', 'resume', '--task-id', state.task_id))}"
            )

    def check_limits(self, state: LoopState) -> None:
        if state.iteration >= state.max_iterations:
            raise MaxIterationsReached(
                f"max iterations reached ({state.iteration}/{state.max_iterations}); resume with "
                "--max-iterations N to allow more"
            )
        if state.consecutive_failures >= state.failure_threshold:
            raise FailureThresholdExceeded(
                f"{state.consecutive_failures} failures in a row reached the failure threshold "
                f"({state.failure_threshold})"
            )
        self.check_budget(state)
        timeout = self.config.autonomous_loop.timeout_seconds
        if state.elapsed_seconds >= timeout:
            raise TimeoutReached(
                f"timeout of {timeout:.0f}s reached after {state.elapsed_seconds:.0f}s of work; "
                "raise autonomous_loop.timeout_seconds to continue"
            )

    def check_budget(self, state: LoopState) -> None:
        budget = self.config.budget
        used = state.usage
        if budget.max_tokens_total is not None and used.total_tokens >= budget.max_tokens_total:
            raise BudgetExceeded(
                f"token budget of {budget.max_tokens_total} used up ({used.total_tokens} tokens); "
                "raise budget.max_tokens_total to continue"
            )
        if budget.max_cost_usd is not None and used.cost_usd >= budget.max_cost_usd:
            raise BudgetExceeded(
                f"cost budget of ${budget.max_cost_usd:.2f} used up (${used.cost_usd:.2f}); "
                "raise budget.max_cost_usd to continue"
            )
