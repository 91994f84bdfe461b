"""What a person sees while a loop runs: a live Rich panel on a terminal, plain lines in a pipe."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from akira_cli.event_payloads.run import LoopStarted, SandboxDenied
from akira_cli.events import Event, EventType
from akira_cli.state.models import LoopState
from akira_cli.words import counted

SHOWN = {
    EventType.LOOP_STARTED,
    EventType.WAVE_STARTED,
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
    EventType.REVIEW,
    EventType.SANDBOX_DENIED,
    EventType.FOLLOW,
}


AT_ONCE = {
    EventType.LOOP_STARTED,
    EventType.STOP_CONDITION,
    EventType.LOOP_PAUSED,
    EventType.LOOP_RESUMED,
    EventType.LOOP_COMPLETED,
}


class PlainDisplay:
    """One line per meaningful event, no ANSI codes."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout

    def __call__(self, event: Event) -> None:
        if event.type in SHOWN:
            self.stream.write(event.line() + "\n")  # print() would write the newline apart
            self.stream.flush()

    def close(self) -> None:
        return None


class LiveDisplay:
    """A live panel: status, step, iteration i/N, attempt, attempt success rate, elapsed time and ETA,
    redrawn twice a second (the clock moves between events), cut to the terminal's width, and,
    when the loop is paused, the command that continues it."""

    LABEL = 20

    def __init__(self, state: LoopState, console: Console | None = None, resume: str = "") -> None:
        self.state = state
        self.console = console or Console()
        self.resume = resume
        self.started = time.monotonic()
        self.last = ""
        self.refused: list[str] = []
        """What the sandbox refused, the last few, each with the line that allows it."""
        self.total = 0
        self.live = Live(
            get_renderable=self.render, console=self.console, refresh_per_second=2, transient=False
        )
        self.live.start()

    def __call__(self, event: Event) -> None:
        """Notes the event. A start, a stop or a pause is drawn at once; the rest at the next
        redraw: drawing the panel takes about a millisecond, and an iteration emits eight events."""
        if (started := event.read(LoopStarted)) is not None:
            self.total = started.steps_total
        if event.type in SHOWN:
            self.last = event.line()
        if (denied := event.read(SandboxDenied)) is not None:
            step = f"step {event.step_id}: " if event.step_id else ""
            self.refused = [*self.refused, f"{step}{denied.fix}"][-3:]
        if event.type in AT_ONCE:
            self.live.refresh()

    def render(self) -> Any:
        state = self.state
        elapsed = time.monotonic() - self.started
        done = len(state.completed_steps)
        width = max(20, self.console.width - self.LABEL - 2)
        table = Table.grid(padding=(0, 1))
        table.add_column(width=self.LABEL, no_wrap=True)
        table.add_column(width=width)
        step = state.current_step
        status = state.status + (
            f", waiting for a usage limit until {state.waiting_until}" if state.waiting_until else ""
        )
        rows = [
            ("status", status),
            ("task", f"{state.task_id}  {state.task_path}"),
            (
                "step",
                f"{step.step_id} {step.description}" if step else "-" if not state.current_steps else "",
            ),
            *[
                (f"step {running.step_id}", f"attempt {running.attempt}  {running.description}")
                for running in list(state.current_steps)
            ],
            (
                "iteration",
                f"{state.iteration}/{state.max_iterations}   attempt {step.attempt if step else '-'}",
            ),
            ("attempt success rate", f"{state.success_rate:.0%}  ({counted(done, 'step')} done)"),
            ("elapsed", f"{elapsed:.0f}s   ETA {self.eta(elapsed, done)}"),
            ("last", self.last or "-"),
        ]
        for label, value in rows:
            table.add_row(label, Text(value, no_wrap=True, overflow="ellipsis"))
        for line in self.refused:  # never cut either: it ends with the line that allows it
            table.add_row("sandbox refused", Text(line, overflow="fold"))
        if state.status == "paused" and self.resume:  # never cut: a person must read all of it
            table.add_row(
                "to continue", Text(f"delete the stop hook, or run: {self.resume}", overflow="fold")
            )
        return table

    def eta(self, elapsed: float, done: int) -> str:
        """Time per completed step so far, times the steps still open."""
        if not done or not self.total:
            return "?"
        return f"~{elapsed / done * max(self.total - done, 0):.0f}s"

    def close(self) -> None:
        self.live.refresh()
        self.live.stop()


def make_display(state: LoopState, resume: str = "") -> PlainDisplay | LiveDisplay:
    return LiveDisplay(state, resume=resume) if sys.stdout.isatty() else PlainDisplay()
