"""One run's session around its loop: the task's lock, the reaper, the event log, notifications,
the display, the watcher and the signals. What the loop works with (agents, commits, reviewer,
sandbox, reports) is built by its caller (`akira_cli.api.run`), through `build`."""

from __future__ import annotations

import contextlib
import gc
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.children.ledger import ChildLedger
from akira_cli.children.reaper import Reaper
from akira_cli.config import Config
from akira_cli.display import make_display
from akira_cli.errors import AkiraError, LoopStop
from akira_cli.events import EventBus, EventType, JsonlLog
from akira_cli.fileio import describe_os_error
from akira_cli.notify import Notifier
from akira_cli.state.lock import TaskLock
from akira_cli.state.models import LoopState
from akira_cli.state.store import StateStore
from akira_cli.watcher import WorkspaceWatcher
from akira_cli.workspace import Workspace, command_line, in_quotes

if TYPE_CHECKING:
    from akira_cli.loop.core import AutonomousLoop

Build = Callable[[EventBus, WorkspaceWatcher, contextlib.ExitStack], "AutonomousLoop"]
"""Builds the run's loop on its bus and watcher; what it opens goes on the stack."""


def run_session(
    workspace: Workspace,
    config: Config,
    store: StateStore,
    state: LoopState,
    build: Build,
    *,
    show: bool = True,
    lock: TaskLock | None = None,
) -> LoopStop:
    """Runs the loop under the task's lock (taken here unless the caller holds it already);
    the stop it ended with. Whatever happens, the lock is released, the watcher stopped and no
    command left running."""
    with contextlib.ExitStack() as stack:
        if lock is None:
            lock = store.lock(state.task_id)
            lock.acquire(f"task {state.task_id} ({Path(state.task_path).name})")
        stack.callback(lock.release)
        orphans = ChildLedger(store.children_path(state.task_id)).reap(state.task_id, workspace.root)
        # Kills this run's commands if akira dies; told at the end (after the kill below, LIFO).
        reaper = Reaper(lock.lock_path, store.children_path(state.task_id), state.task_id, workspace.root)
        reaper.start()
        stack.callback(reaper.stop)
        bus = EventBus(state.task_id)
        bus.iteration = state.iteration
        log = JsonlLog(workspace.log_path(state.task_id))
        stack.callback(log.close)
        if config.autonomous_loop.log_every_iteration:
            bus.subscribe(log)
        else:
            bus.subscribe(lambda event: None if event.type == EventType.ITERATION_STARTED else log(event))
        if config.notify.command:
            notifier = Notifier(config.notify, workspace, bus)
            bus.subscribe(notifier)
            stack.callback(notifier.drain)
        if orphans:
            bus.emit(EventType.WARNING, message=f"killed process groups left by an earlier run: {orphans}")
        resume = command_line(workspace, "loop", "resume", "--task-id", state.task_id)
        display = make_display(state, resume) if show else None
        if display is not None:
            bus.subscribe(display)
            stack.callback(display.close)
        watcher = WorkspaceWatcher(workspace)
        watcher.start()
        stack.callback(watcher.stop)
        loop = build(bus, watcher, stack)
        if loop.engine.runner.ledger is not None:
            stack.callback(loop.engine.runner.ledger.close)  # runs after the kill below (LIFO)
        stack.callback(loop.engine.runner.kill)  # a command still running in a worker thread
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            previous = signal.signal(signum, lambda *_: loop.force_stop())
            stack.callback(signal.signal, signum, previous)
        # What start-up built lives as long as the run: no collection walks it again (unfrozen
        # at the end, for callers that run several loops in-process). No gc.collect() first: on
        # a large task file it takes tens of milliseconds, for a little garbage kept a while.
        gc.freeze()
        stack.callback(gc.unfreeze)
        try:
            return loop.run()
        except OSError as exc:
            raise AkiraError(
                describe_os_error(exc, f"run {in_quotes(resume)}; the saved state is intact")
            ) from None
