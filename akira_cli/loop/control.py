"""What a step's work needs of the run around it, made before the loop and handed to the
engine, its usage-limit waits, the reviewer and the follower: a pause that a stop cuts short,
whether a stop is wanted, the state's save, and the run's clock."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from akira_cli.hooks import active_hook
from akira_cli.state.models import LoopState
from akira_cli.state.store import StateStore
from akira_cli.watcher import WorkspaceWatcher
from akira_cli.workspace import Workspace


@dataclass
class Control:
    workspace: Workspace
    state: LoopState
    store: StateStore
    watcher: WorkspaceWatcher
    forced: threading.Event = field(default_factory=threading.Event)
    """Set by a forced stop (a signal, `stop --force`)."""
    mark: float = field(default_factory=time.monotonic)
    """When the time worked was last added to the state's `elapsed_seconds`."""

    def pause(self, seconds: float) -> bool:
        """Waits out a backoff; True as soon as a stop is wanted. File events only wake it to
        check, so an unrelated change in the workspace never cuts the wait short."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if self.stop_wanted():
                return True
            self.watcher.wait(left)
        return self.stop_wanted()

    def stop_wanted(self) -> bool:
        """Checked at safe boundaries inside a step: a forced stop, or a hook a person dropped."""
        return self.forced.is_set() or active_hook(self.workspace, self.state.task_id) is not None

    def save(self) -> None:
        """The state as it is, saved (a wait's `waiting_until`): no box ticked, no report."""
        self.store.save(self.state)

    def account(self) -> None:
        """The time worked since the last account, added to the state's `elapsed_seconds`."""
        now = time.monotonic()
        self.state.elapsed_seconds += now - self.mark
        self.mark = now

    def idle(self) -> None:
        """The time since the last account was not work (a pause waiting for a resume)."""
        self.mark = time.monotonic()
