"""A wave's git work (docs/design.md, waves), the loop's `Worktrees` partner: the worktree slot
each `[P]` step runs in (`git.worktrees.Slots`), the step's work as a commit on its step branch
(or a failed attempt's patch), and its landing on the task branch (`git.landing`) with its step
commit (`git.steps.StepCommits`). The loop's `loop.waves.Waves` decides what runs and when; this
side only does what git does and returns what it found: it never writes the loop's state."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.events import EventBus, EventType
from akira_cli.fileio import atomic_write
from akira_cli.git import landing
from akira_cli.git.nested import left_out, nested_repositories, outside_nested
from akira_cli.git.run import GitRun, subject
from akira_cli.git.steps import StepCommits, safe
from akira_cli.git.worktrees import Slots, slot_view

if TYPE_CHECKING:
    from collections.abc import Callable

    from akira_cli.state.models import LoopState
    from akira_cli.state.records import Attempt, StepRecord
    from akira_cli.tasks.model import Step, TaskFile


class WaveWork:
    def __init__(
        self,
        run: GitRun,
        commits: StepCommits,
        state: LoopState,
        bus: EventBus,
        links: list[str],
        state_dir: Path,
    ) -> None:
        """`links`: `git.worktree_link`; `state_dir`: the workspace's, where failed patches go."""
        self.run, self.commits, self.state, self.bus = run, commits, state, bus
        self.state_dir = state_dir
        self.slots = Slots(run, state.task_id, links, self.warn)
        self.base = ""
        """The task branch's tip when the running wave started: every step branch starts there."""
        self.landed: dict[str, landing.Landing] = {}
        """The running wave's landings, by step: what its commit holds, or its unlanding undoes."""

    def start(self) -> None:
        """A wave starts from the task branch's tip; git forgets the slots whose folders are gone."""
        self.base, self.landed = self.run.plumb.head()[0], {}
        self.slots.prune()

    def slot(self, slot: int) -> Path:
        return self.slots.path(slot)

    def place(self, path: Path, workdir: Path) -> tuple[Path, Callable[[], bytes | None] | None, Path]:
        """Inside the slot at `path`: the same work folder as `workdir` in the main work tree,
        git's look at the slot when that folder is its top (else None), and the workspace."""
        inside = path / os.path.relpath(workdir, self.run.root)
        view = slot_view(self.run.git, path) if inside == path else None
        workspace = Path(os.path.normpath(path / os.path.relpath(self.run.workspace, self.run.root)))
        return inside, view, workspace

    def take(self, slot: int, step_id: str) -> None:
        """On the step's thread: the slot on the step's branch at the wave's base, clean."""
        self.slots.take(slot, step_id, self.base)

    def commit_work(self, step: Step, attempt: Attempt, path: Path, workdir: Path) -> str | None:
        """On the step's thread: what a passing attempt changed, as one commit on its branch
        (a repository the step made inside is left out, with a warning); None: nothing to commit."""
        names = self.committable(path, workdir, attempt.files_changed)
        nested = nested_repositories(path, self.names(path, workdir, attempt.files_changed))
        if nested:
            self.bus.emit(EventType.WARNING, step.id, message=left_out(nested), nested=nested[:20])
        message = f"{subject(step.id, step.title)}\n\nAkira-Step: {step.id}\n"
        commit = self.slots.commit(path, step.id, names, message)
        self.slots.clean[path] = len(names) == len(attempt.files_changed)
        return commit

    def keep_failed(self, step: Step, attempt: Attempt, path: Path, workdir: Path) -> tuple[str, str] | None:
        """On the step's thread: a failed attempt's work, as in the main work tree, saved as a
        patch (never committed): where it is (below the state folder's parent) and its `--stat`;
        None when it changed nothing. The slot is reset when it is reused."""
        patch, stat = self.slots.patch(path, self.committable(path, workdir, attempt.files_changed))
        if not patch:
            return None
        store = self.state_dir
        where = store / "attempts" / self.state.task_id / f"{safe(step.id)}-{attempt.number}.patch"
        atomic_write(where, patch, durable=False)
        return str(where.relative_to(store.parent)), stat

    def committable(self, path: Path, workdir: Path, changed: list[str]) -> list[str]:
        """The slot-relative names of what a step changed that its commit may hold: not the
        task file, nor the control plane, nor a repository the step made inside."""
        task = self.run.relative(Path(self.state.task_path))
        names = [
            name
            for name in self.names(path, workdir, changed)
            if name != task and not self.run.is_control(self.run.root / name)
        ]
        return outside_nested(path, names)

    @staticmethod
    def names(path: Path, workdir: Path, changed: list[str]) -> list[str]:
        return [os.path.relpath(workdir / name, path) for name in changed]

    def land(self, step: Step, commit: str | None) -> list[str]:
        """The step's commit merged onto the task branch in the main work tree (its branch then
        dropped); the files that collided (empty when it landed)."""
        task_file = self.run.relative(Path(self.state.task_path))
        done = landing.land(self.run, self.base, commit, task_file) if commit else landing.Landing()
        self.slots.drop_branch(step.id)
        self.landed[step.id] = done
        return done.collided

    def unland(self, step: Step) -> None:
        """The step's landing taken back out of the main work tree (its checks or its hook refused it)."""
        landing.unland(self.run, self.landed.pop(step.id))

    def commit(self, step: Step, task: TaskFile, record: StepRecord, attempt: Attempt) -> None:
        """The landed step's commit on the task branch (a refusing hook fails `attempt`)."""
        self.commits.commit(step, task, record, attempt, None, paths=self.landed[step.id].paths)

    def listing(self) -> list[str]:
        return self.slots.listing()

    def prepare(self) -> None:
        """The slots' folder, made before any step runs (a link there: warned, the first wave refuses it)."""
        try:
            self.slots.prepare()
        except OSError as exc:
            self.warn(f"the worktree slots' folder was not made: {exc}")

    def remove(self) -> int:
        """The task's worktrees and step branches, removed; how many worktrees there were."""
        return self.slots.remove()

    def warn(self, message: str) -> None:
        self.bus.emit(EventType.WARNING, message=message)
