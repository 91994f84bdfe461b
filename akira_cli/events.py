"""Events: one model, an in-process bus that checks each event's data against its type's
payload (`event_payloads/`), and the JSONL log writer that subscribes to it."""

from __future__ import annotations

import builtins
import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field, ValidationError

from akira_cli.event_payloads.kinds import EventType as EventType
from akira_cli.event_payloads.kinds import Payload
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


P = TypeVar("P", bound=Payload)


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

    def read(self, kind: builtins.type[P]) -> P | None:
        """This event's data as `kind`'s typed fields, when it is that kind of event. Read
        leniently: a key an older akira wrote and the payload no longer names is passed over;
        data that lacks a required field (or another kind of event) is None."""
        if self.type != kind.kind:
            return None
        known = kind.model_fields
        try:
            return kind.model_validate({k: v for k, v in self.data.items() if k in known}, strict=False)
        except ValidationError:
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
        return self._publish(payload.kind, step_id, payload.model_dump())

    def emit(self, type: EventType, step_id: str | None = None, **data: Any) -> Event:
        """An event whose data is checked against its type's payload: an unknown key, a wrong
        type or a missing field is a TypeError here, where it is sent. The data is written as
        it was given (the check builds nothing that is kept)."""
        check, name = _checks.get(type) or _check_of(type)
        try:
            check(data)
        except ValidationError as exc:
            why = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise TypeError(f"{type} event data that {name} does not describe: {why}") from None
        return self._publish(type, step_id, data)

    def _publish(self, type: EventType, step_id: str | None, data: dict[str, Any]) -> Event:
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


_checks: dict[str, tuple[Callable[[dict[str, Any]], object], str]] = {}
"""Each event type's validator and payload's name, from the type's first event on."""
_checking = threading.Lock()


def _check_of(type: str) -> tuple[Callable[[dict[str, Any]], object], str]:
    from akira_cli.event_payloads.catalog import PAYLOADS  # not for a read of the log alone

    payload = PAYLOADS.get(type)
    if payload is None:
        raise TypeError(f"{type!r} is no event type (akira_cli/event_payloads/)")
    with _checking:
        payload.model_rebuild()  # built at its first use (defer_build)
        found = _checks[type] = (payload.__pydantic_validator__.validate_python, payload.__name__)
    return found


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
