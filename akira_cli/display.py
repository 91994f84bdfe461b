"""What a person sees while a loop runs: a live Rich panel on a terminal, plain lines in a pipe."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from akira_cli.events import Event, EventType
from akira_cli.state.models import LoopState

SHOWN = {
    EventType.LOOP_STARTED,
    EventType.STEP_STARTED,
    EventType.STEP_COMPLETED,
    EventType.STEP_FAILED,
    EventType.TRANSIENT_RETRY,
    EventType.REPLANNED,
    EventType.REFLECTION_GENERATED,
    EventType.PERSISTENT_FAILURE,
    EventType.STOP_CONDITION,
    EventType.LOOP_PAUSED,
    EventType.LOOP_RESUMED,
    EventType.LOOP_COMPLETED,
    EventType.SYSTEMIC_ISSUE,
    EventType.WARNING,
}


class PlainDisplay:
    """One line per meaningful event, no ANSI codes."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout

    def __call__(self, event: Event) -> None:
        if event.type in SHOWN:
            print(event.line(), file=self.stream, flush=True)

    def close(self) -> None:
        return None


class LiveDisplay:
    """A live panel: step, iteration i/N, attempt, success rate, elapsed time and ETA."""

    def __init__(self, state: LoopState, console: Console | None = None) -> None:
        self.state = state
        self.console = console or Console()
        self.started = time.monotonic()
        self.last = ""
        self.total = 0
        self.live = Live(self.render(), console=self.console, refresh_per_second=4, transient=False)
        self.live.start()

    def __call__(self, event: Event) -> None:
        if event.type == EventType.LOOP_STARTED:
            self.total = int(event.data.get("steps_total") or 0)
        if event.type in SHOWN:
            self.last = event.line()
        self.live.update(self.render())

    def render(self) -> Any:
        state = self.state
        elapsed = time.monotonic() - self.started
        done = len(state.completed_steps)
        table = Table.grid(padding=(0, 2))
        step = state.current_step
        table.add_row("task", f"{state.task_id}  {state.task_path}")
        table.add_row("step", f"{step.step_id} {step.description}" if step else "-")
        table.add_row("iteration", f"{state.iteration}/{state.max_iterations}")
        table.add_row("attempt", str(step.attempt) if step else "-")
        table.add_row("success rate", f"{state.success_rate:.0%}  ({done} steps done)")
        table.add_row("elapsed", f"{elapsed:.1f}s   ETA {self.eta(elapsed, done)}")
        table.add_row("last", self.last or "-")
        return table

    def eta(self, elapsed: float, done: int) -> str:
        """Time per completed step so far, times the steps still open."""
        if not done or not self.total:
            return "?"
        return f"~{elapsed / done * max(self.total - done, 0):.0f}s"

    def close(self) -> None:
        self.live.update(self.render())
        self.live.stop()


def make_display(state: LoopState) -> PlainDisplay | LiveDisplay:
    return LiveDisplay(state) if sys.stdout.isatty() else PlainDisplay()
