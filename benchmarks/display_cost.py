"""What the live panel costs a loop on a terminal, per event.

    .venv/bin/python benchmarks/display_cost.py [--events 2000]

loop_overhead.py runs akira with its output in /dev/null, where the display is plain lines.
On a terminal it is a Rich live panel, and an iteration emits about eight events. This feeds
events to a LiveDisplay writing to a terminal-like console (in memory) and prints the mean time
per ordinary event, per event that is drawn at once (a stop), and the plain display's.
"""

from __future__ import annotations

import argparse
import io
import sys
import time

import _common  # noqa: F401  (puts the repository on sys.path)
from rich.console import Console

from akira_cli.display import LiveDisplay, PlainDisplay
from akira_cli.events import Event, EventType
from akira_cli.state.models import CurrentStep, LoopState


def per_event(sink: object, event: Event, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        sink(event)  # type: ignore[operator]
    return (time.perf_counter() - started) / count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    args = parser.parse_args()
    state = LoopState(
        task_id="task_20261123_120000",
        task_path="/w/Specs/feature/tasks.md",
        current_step=CurrentStep(step_id="3.2", description="Wire the session store"),
    )
    ordinary = Event(type=EventType.EVALUATION, task_id=state.task_id, step_id="3.2", data={"ok": 1})
    stop = Event(type=EventType.STOP_CONDITION, task_id=state.task_id, data={"status": "paused"})
    live = LiveDisplay(state, Console(file=io.StringIO(), width=100, force_terminal=True))
    try:
        live_ordinary = per_event(live, ordinary, args.events)
        live_stop = per_event(live, stop, max(args.events // 20, 10))
    finally:
        live.close()
    plain = per_event(PlainDisplay(io.StringIO()), ordinary, args.events)
    print(f"display cost per event, mean of {args.events}")
    print(f"  live panel, ordinary event (drawn at the next redraw): {1e6 * live_ordinary:8.1f} us")
    print(f"  live panel, a stop (drawn at once):                    {1e6 * live_stop:8.1f} us")
    print(f"  plain lines (not a terminal), same event:               {1e6 * plain:8.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
