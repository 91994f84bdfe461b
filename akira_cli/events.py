"""Events: one typed model, an in-process bus, and the JSONL log writer that subscribes to it."""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from akira_cli.fileio import name_path
from akira_cli.redaction import redact, redact_bytes


def utcnow() -> str:
    return stamp(time.time())


_second: tuple[int, str] = (-1, "")


def stamp(seconds: float) -> str:
    """A Unix time as the ISO 8601 UTC text akira writes, to the millisecond (the text up to
    the second is kept: a loop stamps a dozen things a millisecond apart)."""
    global _second
    whole, millis = divmod(int(seconds * 1000), 1000)
    known = _second  # one read: another thread may replace it
    if known[0] != whole:
        known = _second = (whole, datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S"))
    return f"{known[1]}.{millis:03d}Z"


class EventType(StrEnum):
    LOOP_STARTED = "loop_started"
    LOOP_PAUSED = "loop_paused"
    LOOP_RESUMED = "loop_resumed"
    LOOP_COMPLETED = "loop_completed"
    STOP_CONDITION = "stop_condition"
    ITERATION_STARTED = "iteration_started"
    STEP_STARTED = "step_started"
    WAVE_STARTED = "wave_started"
    STEP_COMPLETED = "step_completed"
    STEP_FAILED = "step_failed"
    ATTEMPT_STARTED = "attempt_started"
    ATTEMPT_INTERRUPTED = "attempt_interrupted"
    TRANSIENT_RETRY = "transient_retry"
    EVALUATION = "evaluation"
    REFLECTION_GENERATED = "reflection_generated"
    POST_ACTION_REFLECTION = "post_action_reflection"
    REPLANNED = "replanned"
    PERSISTENT_FAILURE = "persistent_failure"
    SYSTEMIC_ISSUE = "systemic_issue"
    REFLECTION_LOOP_COMPLETED = "reflection_loop_completed"
    METRICS = "metrics"
    REINJECTED = "reinjected"
    LLM_CALL = "llm_call"
    TOOL_CALL = "tool_call"
    REASONING_PHASE = "reasoning_phase"
    REASONING_PASS = "reasoning_pass"
    CONVERGENCE = "convergence"
    REFINEMENT = "refinement"
    VALIDATION = "validation"
    PROFILE_UPDATED = "profile_updated"
    WARNING = "warning"
    LEDGER = "ledger"
    COMMIT = "commit"
    USAGE_LIMIT = "usage_limit"
    CONTROL_PLANE_CHANGED = "control_plane_changed"
    REVIEW = "review"
    PULL_REQUEST = "pull_request"
    FOLLOW = "follow"
    SANDBOX_DENIED = "sandbox_denied"
    EXAM = "exam"


class Event(BaseModel):
    ts: str = Field(default_factory=utcnow)
    type: str
    task_id: str = ""
    step_id: str | None = None
    iteration: int = 0
    data: dict[str, Any] = Field(default_factory=dict)

    def line(self) -> str:
        """One readable line for `loop logs` and the displays: a step wrote much of what an
        event holds (a host, a path, an output), so no control character in it is printed raw."""
        where = f" step {self.step_id}" if self.step_id else ""
        detail = " ".join(f"{k}={_short(v)}" for k, v in self.data.items())
        return printable(redact(f"{self.ts} [{self.iteration}]{where} {self.type} {detail}".rstrip()))


class Payload(BaseModel):
    """An event's `data` as a model: `EventBus.send` writes it, `Event.read` reads it back, so a
    key one side names and the other lacks is a type error or a refusal, never "until None"."""

    model_config = ConfigDict(extra="forbid")
    kind: ClassVar[EventType]


class UsageLimitWait(Payload):
    kind = EventType.USAGE_LIMIT
    message: str
    waiting_until: str
    """When the limit resets (ISO 8601 UTC)."""
    seconds: float


class StopReached(Payload):
    kind = EventType.STOP_CONDITION
    condition: str
    status: str
    message: str
    exit_code: int
    report: str | None = None
    """The file written for a person: `escalation`, `intervention` or `completion`."""


class LoopPaused(Payload):
    kind = EventType.LOOP_PAUSED
    reason: str
    waiting: bool


class LoopCompleted(Payload):
    kind = EventType.LOOP_COMPLETED
    task_path: str
    iterations: int
    metrics: dict[str, Any]


P = TypeVar("P", bound=Payload)


def read_payload(event: Event, kind: type[P]) -> P | None:
    """`event`'s data as `kind`, when it is that kind of event and its data has that shape."""
    if event.type != kind.kind:
        return None
    try:
        return kind.model_validate(event.data)
    except ValueError:
        return None


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else _PLAIN.get(type(value), _json)(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json(value: Any) -> str:
    return json.dumps(value, default=str)


def _float(value: float) -> str:
    """What json.dumps writes for a float (its repr; NaN and infinities its own way)."""
    return repr(value) if math.isfinite(value) else _json(value)


_PLAIN: dict[type, Callable[[Any], str]] = {
    int: repr,  # an int of any size: json.dumps writes its repr too
    float: _float,
    bool: lambda value: "true" if value else "false",
    type(None): lambda value: "null",
}
"""The values most events carry, spelled as JSON without building an encoder for each."""

_ESCAPES = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))}
_ESCAPES |= {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"}


def printable(text: str) -> str:
    """`text` with its control characters (C0, DEL, C1) escaped: `\\x1b`, `\\n`. What a step
    wrote never moves a person's terminal, nor forges a line of its own."""
    if text.isascii() and text.isprintable():  # the common line: nothing to escape, no lookups
        return text
    return text.translate(_ESCAPES)


Subscriber = Callable[[Event], None]


class EventBus:
    """Synchronous fan-out. A failing subscriber never breaks the loop."""

    def __init__(self, task_id: str = "") -> None:
        self.task_id = task_id
        self.iteration = 0
        self._subscribers: tuple[Subscriber, ...] = ()
        """Replaced, never changed: a subscriber added during an emit is not called by it."""
        self._lock = threading.Lock()

    def subscribe(self, subscriber: Subscriber) -> None:
        self._subscribers = (*self._subscribers, subscriber)

    def send(self, payload: Payload, step_id: str | None = None) -> Event:
        """A typed event: its data is the payload's fields, every one present."""
        return self.emit(payload.kind, step_id, **payload.model_dump())

    def emit(self, type: str, step_id: str | None = None, **data: Any) -> Event:
        event = Event(
            type=str(type),
            task_id=self.task_id,
            step_id=step_id,
            iteration=self.iteration,
            data=data,
        )
        with self._lock:
            for subscriber in self._subscribers:
                try:
                    subscriber(event)
                except Exception:  # observers must not stop the work
                    continue
        return event


GATHERED = frozenset(
    {
        EventType.EVALUATION,
        EventType.POST_ACTION_REFLECTION,
        EventType.REFLECTION_LOOP_COMPLETED,
        EventType.METRICS,
        EventType.STEP_COMPLETED,
        EventType.ITERATION_STARTED,
        EventType.STEP_STARTED,
    }
)
"""The loop's bookkeeping between two attempts (from the attempt's evaluation on): the next
attempt's start, a reflection or the stop follows within milliseconds, and writes them with it
in one write."""


class JsonlLog:
    """Appends events to `.state/logs/<id>.jsonl`, one object per line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._lines: list[bytes] = []

    def __call__(self, event: Event) -> None:
        self._lines.append(redact_bytes((event.model_dump_json() + "\n").encode()))
        if event.type not in GATHERED:
            self.flush()

    def flush(self) -> None:
        if self._lines:
            data, self._lines = b"".join(self._lines), []
            try:
                os.write(self._fd, data)
            except OSError as exc:
                name_path(exc, self.path)
                raise

    def close(self) -> None:
        try:
            self.flush()
        finally:
            os.close(self._fd)


def read_events(path: Path) -> Iterator[Event]:
    """Reads a log, skipping a torn last line left by a crash."""
    if not path.exists():
        return
    with path.open(encoding="utf-8") as handle:
        for raw in handle:
            raw = raw.strip()
            if not raw:
                continue
            try:
                yield Event.model_validate_json(raw)
            except ValueError:
                continue
