"""What an attempt changed: the work folder's files (evidence of work) and the control plane
(reported, never obeyed), each looked at before and after the agent's run. The task file is
held open while the agent runs, and its folder's identity kept: another file or folder at their
path afterwards, while the held file still lives under another name, means the step renamed or
replaced them, which the engine does not let pass. A file saved anew in its place (an editor,
`sed -i`: the old one is gone) is an edit, as one made in place is.

Between two attempts of one run akira does only its own bookkeeping, so the "after" of one
attempt is the "before" of the next when it is fresh and no command ran since (a step's checks
run after it and may write files). Only `.state`, which akira writes in between (its state, its
memory), is looked at again. A stop forgets it: what happens while the loop stands still is not
the next agent's doing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from akira_cli.changes import AKIRA_AREAS, Snapshot, Walker, changed, snapshot
from akira_cli.control_plane import AKIRAS, ControlPlane, Fingerprint
from akira_cli.loop.conditions import HOLD
from akira_cli.runner import CommandRunner

FRESH_SECONDS = 1.0
"""How old an attempt's "after" may be to serve as the next one's "before"."""


@dataclass
class _Look:
    at: float
    commands: int
    """The runner's count of started commands when the look was taken."""
    files: Snapshot | None
    plane: dict[str, Fingerprint]


class Witness:
    def __init__(
        self,
        root: Path,
        workdir: Path,
        control: ControlPlane,
        runner: CommandRunner,
        view: Callable[[], bytes | None] | None = None,
    ) -> None:
        self.root, self.workdir, self.control, self.runner = root, workdir, control, runner
        self.view = view
        """git's view of the work folder (`Git.look`), when it is the top of the run's
        repository; else the files are walked (a `.git` a step makes is never asked)."""
        self._before: _Look | None = None
        self._after: _Look | None = None
        self._task: tuple[Path | None, str | None] = (None, None)
        self._walker = Walker()
        self._held: tuple[int, tuple[int, int]] | None = None
        """The task file held open as the attempt started, and its folder's device and inode."""
        self.replaced = False
        """Whether the last attempt renamed or replaced the task file or its folder."""

    def files(self) -> Snapshot | None:
        """The work folder's files; akira's own folders are skipped when it is the workspace."""
        skip = AKIRA_AREAS if self.workdir == self.root else frozenset()
        return snapshot(self.workdir, skip, self._walker, self.view)

    def before(self) -> None:
        """Looks at both just before the agent runs."""
        last, self._after = self._after, None
        fresh = last is not None and time.monotonic() - last.at < FRESH_SECONDS
        if last is not None and fresh and last.commands == self.runner.commands:
            plane = {name: seen for name, seen in last.plane.items() if not name.startswith(".state/")}
            plane.update(self.control.snapshot(AKIRAS))
            self._before = _Look(last.at, last.commands, last.files, plane)
        else:
            self._before = _Look(0.0, 0, self.files(), self.control.snapshot())
        self._hold()

    def after(self) -> tuple[list[str], list[str]]:
        """Right after the agent's run: the control-plane paths it changed, and the files it
        changed (the task file an agent ticks is no evidence of work)."""
        before = self._before
        assert before is not None, "before() comes first"
        plane, files = self.control.snapshot(), self.files()
        self._after = _Look(time.monotonic(), self.runner.commands, files, plane)
        self.replaced = self._released()
        control, workdir = self.control, self.workdir
        ticked = self._relative(control.task_path())  # akira's own ticks: no evidence
        work = [f for f in changed(before.files, files) if f != ticked and not control.covers(workdir / f)]
        return ControlPlane.changed(before.plane, plane), work

    def looked(self, after: bool = False) -> Snapshot | None:
        """The files as the last look before (or after) the attempt saw them."""
        look = self._after if after else self._before
        return look.files if look is not None else None

    def _hold(self) -> None:
        self._released()
        task = self.control.task_path()
        if task is None:
            return
        try:
            fd = os.open(task, HOLD)
        except OSError:
            return
        try:
            folder = os.stat(task.parent)
        except OSError:
            os.close(fd)
            return
        self._held = (fd, (folder.st_dev, folder.st_ino))

    def _released(self) -> bool:
        """Lets the held task file go; whether another file or folder stands at its path now
        while the held one still lives on (nothing there: moved or deleted, for the loop to find)."""
        held, self._held = self._held, None
        if held is None:
            return False
        fd, folder_was = held
        try:
            task = self.control.task_path()
            if task is None:
                return False
            was = os.fstat(fd)
            try:
                now, folder = os.stat(task), os.stat(task.parent)
            except OSError:
                return False
            if (folder.st_dev, folder.st_ino) != folder_was:
                return True
            return (now.st_dev, now.st_ino) != (was.st_dev, was.st_ino) and was.st_nlink > 0
        finally:
            os.close(fd)

    def _relative(self, task: Path | None) -> str | None:
        if task != self._task[0]:
            self._task = (task, os.path.relpath(task, self.workdir) if task is not None else None)
        return self._task[1]

    def forget(self) -> None:
        """The loop stopped, or akira wrote where the agent's files are looked at."""
        self._after = None
