"""The live display: redrawn while nothing happens, 80 columns wide, and it says what to type."""

from __future__ import annotations

import io
import re
import time

from rich.console import Console

from akira_cli.display import LiveDisplay
from akira_cli.state.models import CurrentStep, LoopState

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def display(out: io.StringIO) -> tuple[LoopState, LiveDisplay]:
    state = LoopState(
        task_id="task_20261123_120000",
        task_path="/home/someone/projects/a-rather-long-repository-name/.kiro/specs/user-authentication/tasks.md",
        current_step=CurrentStep(
            step_id="3.2", description="Wire the session store into the login handler " * 3
        ),
    )
    console = Console(file=out, width=80, force_terminal=True, color_system=None)
    resume = "akira loop resume --task-id task_20261123_120000 --root '/home/someone/projects/my repo'"
    return state, LiveDisplay(state, console, resume=resume)


def test_the_clock_moves_between_events() -> None:
    out = io.StringIO()
    _, live = display(out)
    try:
        deadline = time.monotonic() + 15
        seen: set[str] = set()
        while time.monotonic() < deadline and len(seen) < 2:
            seen |= set(re.findall(r"elapsed\s+(\d+)s", ANSI.sub("", out.getvalue())))
            time.sleep(0.05)
        assert len(seen) >= 2  # redrawn with a new elapsed time, with no event at all
    finally:
        live.close()


def test_it_fits_80_columns_and_says_what_to_type_when_paused() -> None:
    out = io.StringIO()
    state, live = display(out)
    state.status = "paused"
    live.close()
    frame = ANSI.sub("", out.getvalue()).split("status")[-1]
    lines = frame.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    text = " ".join(line.strip() for line in lines)
    assert "paused" in text and "to continue" in text
    start = next(i for i, line in enumerate(lines) if "to continue" in line)
    wrapped = " ".join(line[14:] for line in lines[start:])  # the command, however it wrapped
    expected = "run: akira loop resume --task-id task_20261123_120000 --root '/home/someone/projects/my repo'"
    assert expected in " ".join(wrapped.split())


def test_ordinary_events_wait_for_the_next_redraw_and_a_stop_is_drawn_at_once() -> None:
    """Drawing the panel costs about a millisecond and an iteration emits eight events: it is
    redrawn twice a second, and at once only for a start, a stop or a pause."""
    from akira_cli.events import Event, EventType

    out = io.StringIO()
    state, live = display(out)
    try:
        frames = ANSI.sub("", out.getvalue()).count("success rate")
        for n in range(200):
            live(Event(type=EventType.EVALUATION, task_id=state.task_id, step_id="3.2", data={"n": n}))
        ordinary = ANSI.sub("", out.getvalue()).count("success rate") - frames
        assert ordinary < 50, ordinary  # twice a second at most, not once per event
        before = ANSI.sub("", out.getvalue()).count("success rate")
        state.status = "paused"
        live(Event(type=EventType.STOP_CONDITION, task_id=state.task_id, data={"status": "paused"}))
        assert ANSI.sub("", out.getvalue()).count("success rate") > before
    finally:
        live.close()
