"""Every event type has one pydantic payload (`akira_cli/event_payloads/`): the bus refuses data its
payload does not describe where it is sent, a real run's every event fits its payload, and a
log an older akira wrote is still read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from akira_cli.event_payloads import reasoning, run
from akira_cli.event_payloads.catalog import PAYLOADS
from akira_cli.event_payloads.kinds import EventType, Payload, registry
from akira_cli.event_payloads.run import LoopStarted, StopReached, Warned
from akira_cli.events import Event, EventBus, JsonlLog, read_events
from tests.support.git import commits
from tests.support.workspace import Akira


def test_every_event_type_has_exactly_one_payload() -> None:
    assert sorted(PAYLOADS) == sorted(EventType)
    defined = [
        value
        for module in (run, reasoning)
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, Payload) and value.__module__ == module.__name__
    ]
    kinds = [payload.kind for payload in defined]
    assert sorted(kinds) == sorted(EventType)  # one each: no type with two, none with none
    for kind, payload in PAYLOADS.items():
        assert payload.kind == kind and payload.model_config.get("extra") == "forbid", payload

    class Twin(Payload):
        kind = EventType.WARNING
        message: str

    with pytest.raises(TypeError, match="Twin and Warned are both warning"):
        registry(Warned, Twin)


def test_an_unknown_key_a_wrong_type_or_a_missing_field_is_refused_where_it_is_sent(
    tmp_path: Path,
) -> None:
    path = tmp_path / "log.jsonl"
    log = JsonlLog(path)
    bus = EventBus("t")
    bus.subscribe(log)
    with pytest.raises(
        TypeError, match=r"^warning event data that Warned does not describe: colour: Extra inputs"
    ):
        bus.emit(EventType.WARNING, message="x", colour="red")
    with pytest.raises(TypeError, match=r"StepStarted.*title"):
        bus.emit(EventType.STEP_STARTED, "1", title=3)
    with pytest.raises(TypeError, match=r"LoopPaused.*waiting"):
        bus.emit(EventType.LOOP_PAUSED, reason="stop hook")  # a required field left out
    with pytest.raises(TypeError, match=r"AttemptStarted.*attempt"):
        bus.emit(EventType.ATTEMPT_STARTED, "1", attempt="2", agent="script")  # no coercion
    with pytest.raises(TypeError, match="is no event type"):
        bus.emit("made_up", message="x")  # type: ignore[arg-type]
    sent = bus.emit(EventType.WARNING, message="kept", nested=["sub"])
    log.close()
    assert [event.data for event in read_events(path)] == [{"message": "kept", "nested": ["sub"]}]
    assert sent.read(Warned) == Warned(message="kept", nested=["sub"])


def test_a_log_an_older_akira_wrote_is_still_read(tmp_path: Path) -> None:
    """Reading is lenient where sending is strict: a key no payload names any more is passed
    over, and data that no longer fits is still an event, read as nothing of that kind."""
    path = tmp_path / "old.jsonl"
    old = [
        {"type": "loop_started", "data": {"task_path": "t.md", "pid": 7, "iteration": 0,
                                          "max_iterations": 50, "steps_total": 3, "host": "old"}},
        {"type": "stop_condition", "data": {"condition": "c", "status": "needs_action",
                                            "message": "m", "exit_code": 4, "until": "gone"}},
        {"type": "warning", "data": {"text": "renamed long ago"}},
        {"type": "removed_type", "data": {"x": 1}},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in old))
    events = list(read_events(path))
    assert [event.type for event in events] == ["loop_started", "stop_condition", "warning", "removed_type"]
    started = events[0].read(LoopStarted)
    assert started is not None and started.steps_total == 3
    stop = events[1].read(StopReached)
    assert stop is not None and (stop.exit_code, stop.report) == (4, None)
    assert events[2].read(Warned) is None and "text=renamed long ago" in events[2].line()
    assert events[0].read(StopReached) is None  # another kind of event


def test_every_event_of_a_real_run_fits_its_payload(repo: Akira) -> None:
    """A git-native run with a command agent, a step that fails once and is reflected on,
    and the completion: each event in its log is what its type's payload describes."""
    agent = repo.root / "agent.sh"
    agent.write_text("echo made > made.txt\n")
    repo.write_config(f"agent:\n  command: bash {agent}\n")
    assert repo.shared is not None
    tried = repo.shared / "tried"
    task = repo.write_task(
        "feat",
        f"""
        - [ ] 1. Make the file
          - Exists: `made.txt`
        - [ ] 2. Pass the second time
          - Run: `test -f {tried} || {{ touch {tried}; exit 1; }}`
        """,
    )
    done = repo.cli("loop", "start", "--task", str(task))
    assert done.code == 0, done.err
    assert commits(repo.root) == ["1 Make the file", "2 Pass the second time", "feat: done"]
    events = repo.events()
    for event in events:
        payload = PAYLOADS[event.type]
        payload.model_validate(event.data)  # strict, as the bus checked it when it was sent
        assert event.read(payload) is not None
    seen = {event.type for event in events}
    assert {
        EventType.LOOP_STARTED,
        EventType.ITERATION_STARTED,
        EventType.ATTEMPT_STARTED,
        EventType.EVALUATION,
        EventType.STEP_FAILED,
        EventType.REFLECTION_GENERATED,
        EventType.STEP_COMPLETED,
        EventType.METRICS,
        EventType.COMMIT,
        EventType.STOP_CONDITION,
        EventType.LOOP_COMPLETED,
    } <= seen, seen


def test_the_notifier_reads_the_typed_fields_of_the_events_the_bus_sends(akira: Akira) -> None:
    """What `notify.command` is told comes from the payloads' fields, so it cannot name a key no
    event carries; an event whose data lacks one (an older log) tells it nothing."""
    from akira_cli.event_payloads.run import Figures, LoopCompleted, LoopPaused, UsageLimitWait
    from akira_cli.notify import Notifier
    from akira_cli.sections import NotifySettings
    from akira_cli.workspace import Workspace

    workspace = Workspace.resolve(akira.root)
    bus = EventBus("task_1")
    notifier = Notifier(NotifySettings(), workspace, bus)
    figures = Figures.model_validate(dict.fromkeys(Figures.model_fields, 0))
    told = [
        notifier.describe(bus.send(LoopCompleted(task_path="t.md", iterations=3, metrics=figures))),
        notifier.describe(
            bus.send(StopReached(condition="c", status="needs_action", message="read it", exit_code=4))
        ),
        notifier.describe(bus.send(LoopPaused(reason="stop hook", waiting=False))),
        notifier.describe(
            bus.send(UsageLimitWait(message="m", waiting_until="2026-01-01T00:00:00Z", seconds=9))
        ),
        notifier.describe(bus.emit(EventType.WARNING, message="not told")),
    ]
    assert told == [
        ("completed", "completed", "task_1 completed", str(workspace.reports / "task_1.md")),
        ("needs_action", "needs_action", "read it", str(workspace.needs_action / "intervention_task_1.md")),
        ("paused", "paused", "stop hook", ""),
        ("usage_limit", "running", "waiting for a usage limit until 2026-01-01T00:00:00Z", ""),
        None,
    ]
    older = Event(type=EventType.USAGE_LIMIT, task_id="task_1", data={"message": "m", "until": "later"})
    assert notifier.describe(older) is None
