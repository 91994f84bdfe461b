"""What keeps an iteration cheap (flat cost) must not change what akira writes or reads."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import pytest

from akira_cli.events import stamp, utcnow
from tests.support.workspace import Akira


def test_a_stamp_is_the_iso_utc_text_to_the_millisecond() -> None:
    rng = random.Random(11)
    for seconds in [0.0, 1.9995, 1_700_000_000.999, 1_700_000_001.0005] + [
        rng.uniform(0, 4e9) for _ in range(20_000)
    ]:
        whole = datetime.fromtimestamp(int(seconds * 1000) / 1000, UTC)
        assert stamp(seconds) == whole.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert utcnow().endswith("Z") and len(utcnow()) == len("2026-11-23T17:35:53.411Z")


@pytest.mark.slow
def test_a_start_parses_the_task_file_once(akira: Akira, monkeypatch: pytest.MonkeyPatch) -> None:
    """The start checks the file by parsing it; the loop goes on from that parse."""
    import akira_cli.tasks.parser as parser
    import akira_cli.tasks.source as source

    parsed: list[str] = []
    real = parser.parse_task_text

    def counting(data: bytes | str, path: object) -> object:
        parsed.append(str(path))
        return real(data, path)  # type: ignore[arg-type]

    monkeypatch.setattr(parser, "parse_task_text", counting)
    monkeypatch.setattr(source, "parse_task_text", counting)
    akira.write_task("once", "- [ ] 1. one\n  - Run: `true`\n- [ ] 2. two\n  - Run: `true`\n")
    assert akira.run("loop", "start", "--task", "Specs/once/tasks.md").code == 0
    assert len(parsed) == 1


def test_the_bookkeeping_between_attempts_reaches_the_log_in_one_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events the loop emits between two attempts are written with the next attempt's start
    (or the stop, or the end of the run), in order; every other event at once."""
    import os

    from akira_cli.event_payloads.run import Figures
    from akira_cli.events import EventBus, EventType, JsonlLog, read_events

    log_path = tmp_path / "log.jsonl"
    log = JsonlLog(log_path)
    writes: list[int] = []
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: (writes.append(fd), real_write(fd, data))[1])
    bus = EventBus("task_20260101_000000")
    bus.subscribe(log)
    bus.emit(EventType.EVALUATION, "1", attempt=1, complete=True, confidence=1.0, reasons=[])
    bus.emit(EventType.METRICS, "1", step_iterations=1, **dict.fromkeys(Figures.model_fields, 0))
    bus.emit(EventType.STEP_COMPLETED, "1", attempts=1, duration_seconds=0.1)
    bus.emit(EventType.ITERATION_STARTED, "2", attempt=1)
    assert writes == [] and not log_path.read_text()
    bus.emit(EventType.ATTEMPT_STARTED, "2", attempt=1, agent="script")
    assert len(writes) == 1
    bus.emit(EventType.WARNING, message="at once")
    bus.emit(EventType.STEP_COMPLETED, "2", attempts=1, duration_seconds=0.1)
    assert len(writes) == 2
    log.close()  # the end of a run writes what waits
    kinds = [event.type for event in read_events(log_path)]
    assert kinds == [
        "evaluation",
        "metrics",
        "step_completed",
        "iteration_started",
        "attempt_started",
        "warning",
        "step_completed",
    ]


def test_a_task_file_edited_after_the_start_read_it_is_read_again(tmp_path: Path) -> None:
    """The start hands its parse to the loop; an edit made in between (the project checks may
    run for minutes first) must not be hidden behind it."""
    import os

    from akira_cli.tasks.parser import parse_task_text
    from akira_cli.tasks.source import TaskSource

    path = tmp_path / "tasks.md"
    first = b"- [ ] 1. one\n  - Run: `true`\n"
    path.write_bytes(first)
    task = parse_task_text(first, path)
    path.write_bytes(b"- [ ] 1. two\n  - Run: `true`\n")  # same size, edited meanwhile
    long_ago = path.stat().st_mtime_ns - 10**10
    os.utime(path, ns=(long_ago, long_ago))  # and no longer racily clean
    source = TaskSource.seeded(path, first, task)
    assert [s.title for s in source.load(path).steps] == ["two"]
    parsed = parse_task_text(path.read_bytes(), path)
    assert TaskSource.seeded(path, path.read_bytes(), parsed).load(path) is parsed  # not parsed again
