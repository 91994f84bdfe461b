"""Notifications: `notify.command` runs when a loop completes, needs action, pauses or
waits for a usage limit, with AKIRA_EVENT, AKIRA_TASK_ID, AKIRA_STATUS, AKIRA_MESSAGE and
AKIRA_FILE in its environment. It runs in a thread, so it never blocks the loop, and a failure
is logged as a warning, never fatal."""

from __future__ import annotations

import os
import subprocess
import threading

from akira_cli.event_payloads.run import LoopCompleted, LoopPaused, StopReached, UsageLimitWait
from akira_cli.events import Event, EventBus, EventType
from akira_cli.redaction import redact
from akira_cli.sections import NotifySettings
from akira_cli.workspace import Workspace


class Notifier:
    def __init__(self, settings: NotifySettings, workspace: Workspace, bus: EventBus) -> None:
        self.settings = settings
        self.workspace = workspace
        self.bus = bus
        self.threads: list[threading.Thread] = []

    def __call__(self, event: Event) -> None:
        found = self.describe(event)
        if found is None or not self.settings.command:
            return
        kind, status, message, path = found
        env = {
            **os.environ,
            "AKIRA_EVENT": kind,
            "AKIRA_TASK_ID": event.task_id,
            "AKIRA_STATUS": status,
            "AKIRA_MESSAGE": redact(message)[:1000],
            "AKIRA_FILE": path,
        }
        thread = threading.Thread(target=self.run, args=(env,), daemon=True)
        thread.start()
        self.threads.append(thread)

    def describe(self, event: Event) -> tuple[str, str, str, str] | None:
        task_id = event.task_id
        if event.read(LoopCompleted) is not None:
            report = self.workspace.reports / f"{task_id}.md"
            return "completed", "completed", f"{task_id} completed", str(report)
        if (stop := event.read(StopReached)) is not None and stop.status == "needs_action":
            path = self.workspace.needs_action / f"{stop.report or 'intervention'}_{task_id}.md"
            return "needs_action", "needs_action", stop.message, str(path)
        if (paused := event.read(LoopPaused)) is not None:
            return "paused", "paused", paused.reason, ""
        if (wait := event.read(UsageLimitWait)) is not None:
            return "usage_limit", "running", f"waiting for a usage limit until {wait.waiting_until}", ""
        return None

    def run(self, env: dict[str, str]) -> None:
        assert self.settings.command is not None
        try:
            done = subprocess.run(
                ["bash", "-c", self.settings.command],
                env=env,
                capture_output=True,
                timeout=self.settings.timeout,
                cwd=self.workspace.root,
            )
            if done.returncode != 0:
                self.bus.emit(EventType.WARNING, message=f"notify.command exited {done.returncode}")
        except (OSError, subprocess.SubprocessError) as exc:
            self.bus.emit(EventType.WARNING, message=f"notify.command failed: {exc}")

    def drain(self, timeout: float = 5.0) -> None:
        """Gives running notifications a moment to finish when the session ends."""
        for thread in self.threads:
            thread.join(timeout)
