"""Stop conditions, checked before every iteration and while a step runs (docs/design.md)."""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from akira_cli.config import Config
from akira_cli.errors import (
    FailureThresholdExceeded,
    ManualIntervention,
    MaxIterationsReached,
    StopRequested,
    TaskCompleted,
    TaskFileDeleted,
    TaskMovedToDone,
    TimeoutReached,
)
from akira_cli.hooks import active_hook, write_hook
from akira_cli.state.models import LoopState
from akira_cli.usage import check_budget
from akira_cli.watcher import WorkspaceWatcher
from akira_cli.workspace import Workspace, command_line, in_quotes

HOLD = getattr(os, "O_PATH", os.O_RDONLY | os.O_NONBLOCK) | os.O_CLOEXEC
"""How akira holds the task file open to know it by: never read, never waited on."""


@dataclass
class TaskLocator:
    """Finds the task file wherever a person moved it: path, recorded moves, its home (where a
    person moves it back to), then inode. Its identity (device and inode) decides what is at its
    path, and akira holds it open: while the file akira knows lives on elsewhere (a step renamed
    it, or its folder), another file at its path is not the task file; `replaced` names it, and
    akira never reads or writes it. A new file at its path once the old one is gone is the same
    file saved anew (an editor, `sed -i`), and is taken as such."""

    workspace: Workspace
    watcher: WorkspaceWatcher | None
    identity: tuple[int, int] | None = None
    home: Path | None = None
    replaced: Path | None = None
    """Set by `locate`: where another file stands in for the task file (None when none does)."""
    _inside: tuple[Path, tuple[int, int] | None] | None = None
    """The last path found inside the workspace, and the identity of the file it led to."""
    _held: int | None = None
    """The task file held open (never read) since `remember`: whether it lives on is an fstat."""

    @classmethod
    def of(
        cls, workspace: Workspace, state: LoopState, watcher: WorkspaceWatcher | None = None
    ) -> TaskLocator:
        return cls(workspace, watcher, state.task_file_identity, workspace.home(state))

    def remember(self, path: Path, stat: os.stat_result | None = None) -> tuple[int, int]:
        """The file's identity, from `stat` when the caller has just taken it."""
        stat = stat or path.stat()
        self.identity = (stat.st_dev, stat.st_ino)
        self.close()
        with contextlib.suppress(OSError):
            self._held = os.open(path, HOLD)
        return self.identity

    def close(self) -> None:
        if self._held is not None:
            os.close(self._held)
            self._held = None

    def locate(self, path: Path) -> Path | None:
        """The task file's path now; never a path outside the workspace (a state file's
        task_path is data, not a place akira may touch), never another file at its path."""
        found = self._find(path)
        if found is None or (found, self.identity) == self._inside:
            return found
        if not self.workspace.contains(found):
            return None
        # Resolving symlinks costs syscalls: once per place and file is enough. A new file at a
        # known path (a step's symlink to a file outside, once the task file is gone) is looked
        # at again.
        self._inside = (found, self.identity)
        return found

    def _find(self, path: Path) -> Path | None:
        self.replaced = None
        info = _regular(path)
        if info is not None and self.identity in (None, (info.st_dev, info.st_ino)):
            return path
        if info is not None and not self._lives():  # the old file is gone: this one was saved in its place
            self.remember(path, info)
            return path
        moved = self.watcher.follow(path) if self.watcher else None
        if moved is not None and self._ours(moved):
            found: Path | None = moved
        elif self.home is not None and self.home != path and self._ours(self.home):
            found = self.home
        else:
            found = self._scan()
        if info is not None:  # another file stands at its path while akira's lives on, elsewhere
            self.replaced = path
        return found

    def _lives(self) -> bool:
        """Whether the task file akira holds still has a name somewhere. Unknown (not held yet,
        as at a resume) is no: a deleted file's inode number may be a new file's now."""
        try:
            return self._held is not None and os.fstat(self._held).st_nlink > 0
        except OSError:
            return False

    def _ours(self, path: Path) -> bool:
        info = _regular(path)
        return info is not None and self.identity in (None, (info.st_dev, info.st_ino))

    def _scan(self) -> Path | None:
        if self.identity is None:
            return None
        for area in (self.workspace.done, self.workspace.needs_action, self.workspace.specs):
            for folder, _dirs, files in os.walk(area):
                for name in files:
                    candidate = Path(folder) / name
                    try:
                        info = candidate.lstat()  # a link is never the task file
                    except OSError:
                        continue
                    if (info.st_dev, info.st_ino) == self.identity:
                        return candidate
        return None


def _regular(path: Path) -> os.stat_result | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info if stat.S_ISREG(info.st_mode) else None


def replaced_stop(workspace: Workspace, state: LoopState, replaced: Path, during: str) -> StopRequested:
    """The pause for a task file (or its folder) that was renamed or replaced `during` a step:
    a control-plane change. The hook keeps the loop paused until a person looked."""
    resume = command_line(workspace, "loop", "resume", "--task-id", state.task_id)
    reason = (
        f"the task file {workspace.shown(replaced)} was replaced {during}: another file (or folder) "
        "stands there while akira's own task file lives on elsewhere (a step may have renamed it); "
        "akira took nothing from the new one. Put akira's task file back there (or delete it to go "
        f"on with the new one), then delete this hook or run {in_quotes(resume)}"
    )
    hook = write_hook(workspace, state, reason)
    return StopRequested(f"{reason} ({workspace.shown(hook)})")


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
        if self.locator.replaced is not None:
            raise replaced_stop(self.workspace, state, self.locator.replaced, "between two steps")
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
        check_budget(self.config.budget, state.usage)
        timeout = self.config.autonomous_loop.timeout_seconds
        if state.elapsed_seconds >= timeout:
            raise TimeoutReached(
                f"timeout of {timeout:.0f}s reached after {state.elapsed_seconds:.0f}s of work; "
                "raise autonomous_loop.timeout_seconds to continue"
            )
