"""The journal `.state/history/<id>.jsonl`: the full history a bounded state file leaves out.

The state file (schema 2) keeps counters and the last few of everything; each save first
appends what is new since the last save to the journal (attempts, completed steps, failures,
reflection ids), one JSON object per line, in one `write` and without fsync: a `kill -9` does
not lose the page cache, and the state file, saved right after (and made durable by its save
log, `state.savelog`), is the truth.

Completed steps are the ledger, so they leave the state file only once they are durable here:
a save that trims them first appends them as one `sealed` batch and fsyncs the journal. A load
reads the batches back, chained by the count each starts at, so a batch written by a save that
a crash then cut off is replaced by the next one and never counted twice. Lines are numbered,
and a reader keeps the last line of each number: a save cut off after its append is written
again by the next one, which is the one its state file counts.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from akira_cli.fileio import name_path
from akira_cli.redaction import redact_bytes
from akira_cli.state.models import KEEP_FINISHED, CompletedStep, FailedStep, LoopState, breakdown_key
from akira_cli.state.records import KEEP_ATTEMPTS, KEEP_ENTRIES, Attempt


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._lock = threading.Lock()
        self._sealing = 0
        """How many completed steps the last `sealed` batch written holds, until they leave
        the state file."""
        self._synced = False
        """Whether that batch is on disk (fsynced)."""

    def record(self, state: LoopState, *, defer: bool = False) -> None:
        """Appends what is new in `state` (one write, before the state file that counts it as
        journaled is saved), then trims the state's lists back to their bounds.

        The lines are not fsynced: a kill -9 keeps the page cache, and a line a crash cut off
        before its state file was saved is written again by the next save (a reader keeps the
        last line of each number). Completed steps are the ledger: they leave the state file
        only once the `sealed` batch listing them is fsynced. With `defer` (the save at a
        step's start) that fsync is left to `sync`, which the command starting next calls, and
        the steps leave the state file at the next save."""
        lines, batch = list(_new_lines(state)), []
        if self._sealing:
            self._let_go(state)
        elif len(state.completed_steps) >= 2 * KEEP_ENTRIES:
            batch = state.completed_steps[: len(state.completed_steps) - KEEP_ENTRIES]
            ids = [step.step_id for step in batch]
            sealed = {"kind": "sealed", "from": state.history.completed_sealed, "ids": ids}
            lines.append(json.dumps(sealed, separators=(",", ":")))
        self.append(lines)
        if batch:
            self._sealing = len(batch)
            if not defer:
                self._let_go(state)
        _trim(state)

    def _let_go(self, state: LoopState) -> None:
        """The written batch made durable (unless a command's start did it), then its steps
        leave the state file."""
        self.sync(raise_errors=True)
        _seal(state, self._sealing)
        self._sealing, self._synced = 0, False

    def sync(self, *, raise_errors: bool = False) -> None:
        """Makes a written `sealed` batch durable. From a command's start an error is left to
        the next save, which tries again and says what failed."""
        with self._lock:
            if not self._sealing or self._synced or self._fd is None:
                return
            try:
                os.fsync(self._fd)
            except OSError as exc:
                if raise_errors:
                    name_path(exc, self.path)
                    raise
                return
            self._synced = True

    def append(self, lines: list[Line]) -> None:
        if not lines:
            return
        data = "".join(_text(line) + "\n" for line in lines).encode()
        try:
            os.write(self._open(), redact_bytes(data))
        except OSError as exc:
            name_path(exc, self.path)
            raise

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
            size = os.fstat(self._fd).st_size
            if size and os.pread(self._fd, 1, size - 1) != b"\n":
                os.write(self._fd, b"\n")  # a line torn by a crash stays one bad line
        return self._fd

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


Line = str | tuple[str, int, BaseModel]
"""A journal line: its text, or (kind, number, model), encoded when the buffer is written."""


def _text(line: Line) -> str:
    if isinstance(line, str):
        return line
    kind, n, model = line
    return f'{{"kind":"{kind}","n":{n},{model.model_dump_json()[1:]}'


def _new_lines(state: LoopState) -> Iterator[Line]:
    history = state.history
    start = history.completed_sealed
    for n in range(max(start, history.completed_journaled), start + len(state.completed_steps)):
        yield ("completed", n, state.completed_steps[n - start])
    history.completed_journaled = start + len(state.completed_steps)
    start = history.failed_dropped
    for n in range(max(start, history.failed_journaled), start + len(state.failed_steps)):
        yield ("failed", n, state.failed_steps[n - start])
    history.failed_journaled = start + len(state.failed_steps)
    start = history.reflections_dropped
    for n in range(max(start, history.reflections_journaled), start + len(state.reflections)):
        line = {"kind": "reflection", "n": n, "id": state.reflections[n - start]}
        yield json.dumps(line, separators=(",", ":"))
    history.reflections_journaled = start + len(state.reflections)
    for record in state.steps.values():
        new = min(record.attempts_total - record.journaled, len(record.attempts))
        first = record.attempts_total - new
        for n, attempt in enumerate(record.attempts[len(record.attempts) - new :], first):
            yield ("attempt", n, attempt)
        record.journaled = record.attempts_total


def _seal(state: LoopState, count: int) -> None:
    """Moves the oldest `count` completed steps out of the state file, keeping their sums."""
    history = state.history
    for step in state.completed_steps[:count]:
        key = breakdown_key(step)
        history.sealed_by[key] = history.sealed_by.get(key, 0) + 1
        history.sealed_seconds += step.duration_seconds
        history.sealed_first_attempt += step.attempts == 1
        state._sealed.add(step.step_id)
    history.completed_sealed += count
    del state.completed_steps[:count]


def _trim(state: LoopState) -> None:
    history = state.history
    for record in state.steps.values():
        if len(record.attempts) > KEEP_ATTEMPTS:  # only a version 1 record (add() trims)
            record.trim(KEEP_ATTEMPTS)
    bounded = ((state.failed_steps, "failed_dropped"), (state.reflections, "reflections_dropped"))
    for items, dropped in bounded:
        if len(items) >= 2 * KEEP_ENTRIES:
            excess = len(items) - KEEP_ENTRIES
            del items[:excess]
            setattr(history, dropped, getattr(history, dropped) + excess)
    done = state.completed_ids()
    finished = [step_id for step_id in state.steps if step_id in done]
    if len(finished) >= 2 * KEEP_FINISHED:
        per_step = state.metrics.iterations_per_step
        for step_id in finished[: len(finished) - KEEP_FINISHED]:
            del state.steps[step_id]
            per_step.pop(step_id, None)


@dataclass
class History:
    """What the journal holds, each entry once (the last copy of a repeated line wins)."""

    completed: list[CompletedStep] = field(default_factory=list)
    failed: list[FailedStep] = field(default_factory=list)
    attempts: dict[str, list[Attempt]] = field(default_factory=dict)
    reflections: list[str] = field(default_factory=list)
    sealed: dict[int, list[str]] = field(default_factory=dict)

    def sealed_ids(self, count: int) -> set[str]:
        """The ids of the first `count` sealed steps, following the chain of batches."""
        ids: set[str] = set()
        at = 0
        while at < count and at in self.sealed:
            batch = self.sealed[at][: count - at]
            ids.update(batch)
            at += len(self.sealed[at]) or 1
        return ids


def read_history(path: Path, kinds: frozenset[str] | None = None) -> History:
    """The journal at `path` (empty when there is none); torn or foreign lines are skipped."""
    found: dict[str, dict[Any, dict[str, Any]]] = {}
    sealed: dict[int, list[str]] = {}
    with contextlib.suppress(FileNotFoundError), path.open("rb") as handle:
        wanted = [f'"kind":"{kind}"'.encode() for kind in kinds or ()]
        for raw in handle:
            if wanted and not any(mark in raw for mark in wanted):
                continue
            try:
                line = json.loads(raw)
                kind = line.pop("kind")
                if kinds is not None and kind not in kinds:
                    continue
                if kind == "sealed":
                    sealed[int(line["from"])] = [str(i) for i in line["ids"]]
                else:  # the last line of a number wins: it is the one its state file counts
                    key = (line.get("step_id"), line.pop("n")) if kind == "attempt" else (None, line.pop("n"))
                    found.setdefault(kind, {})[key] = line
            except (ValueError, KeyError, TypeError, AttributeError):
                continue
    history = History(sealed=sealed)

    def each(kind: str) -> list[dict[str, Any]]:
        return [found[kind][key] for key in sorted(found.get(kind, {}), key=lambda k: k[1])]

    with contextlib.suppress(ValueError):
        history.completed = [CompletedStep.model_validate(line) for line in each("completed")]
        history.failed = [FailedStep.model_validate(line) for line in each("failed")]
        history.reflections = [str(line["id"]) for line in each("reflection")]
        for line in each("attempt"):
            attempt = Attempt.model_validate(line)
            history.attempts.setdefault(attempt.step_id, []).append(attempt)
    return history
