"""Reading and writing state files: atomic saves, one live process per task, backups, archive."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from akira_cli.errors import AkiraError
from akira_cli.events import utcnow
from akira_cli.fileio import atomic_write, fsync_dir, spare_of, swap_in
from akira_cli.redaction import redact_bytes
from akira_cli.state import savelog
from akira_cli.state.journal import History, Journal, read_history
from akira_cli.state.lock import TaskLock
from akira_cli.state.models import CompletedStep, LoopState

if TYPE_CHECKING:
    from filelock import FileLock

PREFIX = "autonomous_loop_"
KEEP_BACKUPS = 5


def _iteration(path: Path) -> int:
    return int(path.suffixes[-2].lstrip(".")) if len(path.suffixes) >= 2 else 0


class StateStore:
    def __init__(self, state_dir: Path) -> None:
        self.dir = state_dir
        self.archive_dir = state_dir / "archive"
        self.backup_dir = state_dir / "backups"
        self.corrupt_dir = state_dir / "corrupt"
        self.history_dir = state_dir / "history"
        self._encoded: dict[tuple[str, str], tuple[tuple[object, ...], str]] = {}
        self._journals: dict[str, Journal] = {}
        self._logs: dict[str, savelog.SaveLog] = {}
        self._saved: dict[str, tuple[int, bytes]] = {}
        """Each loop's last save: its number and the bytes written (a backup copies them)."""
        self._old: set[Path] = set()
        """State files a deferred save swapped out, unlinked by `sync_pending`."""

    def path(self, task_id: str) -> Path:
        return self.dir / f"{PREFIX}{task_id}.json"

    def archived_path(self, task_id: str) -> Path:
        return self.archive_dir / f"{PREFIX}{task_id}.json"

    def start_lock(self) -> FileLock:
        """Held while a `loop start` looks for an unfinished loop, picks an id and takes the
        task's lock, so two starts on one file cannot both run and ids never clash."""
        from filelock import FileLock

        self.dir.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.dir / "start.lock"), timeout=60)

    def children_path(self, task_id: str) -> Path:
        return self.dir / f"{PREFIX}{task_id}.pgid"

    def lock(self, task_id: str) -> TaskLock:
        return TaskLock(self.dir / f"{PREFIX}{task_id}.lock")

    def exists(self, task_id: str) -> bool:
        return self.path(task_id).exists() or self.archived_path(task_id).exists()

    def refuse_older(self, state: LoopState, resume: str) -> None:
        """Raises when the task's saved state is a later save than `state`: another process ran
        the task after `state` was read, and running from it or saving it would drop what that
        process recorded (the state is the ledger). `resume`: the command that reads it anew."""
        if self.exists(state.task_id) and self.load(state.task_id).saves > state.saves:
            raise AkiraError(
                f"another process ran {state.task_id} after this one read its state; run {resume}"
            )

    def journal_path(self, task_id: str) -> Path:
        return self.history_dir / f"{task_id}.jsonl"

    def log_path(self, task_id: str) -> Path:
        return self.dir / f"{PREFIX}{task_id}.wal"

    def save(self, state: LoopState, *, defer_sync: bool = False) -> None:
        """The journal gets what is new (no fsync unless completed steps leave the state file),
        then the bounded state file is swapped in whole (`fileio.swap_in`) and its bytes made
        durable in the save log: one fdatasync per iteration. With `defer_sync` (the save that
        starts an attempt), both syncs wait for `sync_pending`. The state file is replaced and
        fsynced itself on its first save by this process and on every save whose status is not
        `running` (see `state.savelog`)."""
        state.updated_at = utcnow()
        state.saves += 1
        journal = self._journals.get(state.task_id)
        if journal is None:
            journal = self._journals[state.task_id] = Journal(self.journal_path(state.task_id))
        journal.record(state, defer=defer_sync)
        data = redact_bytes(self.encode(state))
        log = self._logs.get(state.task_id)
        durable = log is None or state.status != "running"
        if log is None:
            log = self._logs[state.task_id] = savelog.SaveLog(self.log_path(state.task_id))
        path = self.path(state.task_id)
        if durable:
            self._drop_old()
        if durable or not swap_in(path, data, keep_old=defer_sync):
            atomic_write(path, data, durable=durable, masked=True)
        elif defer_sync:
            self._old.add(spare_of(path))
        log.write(state.saves, data, defer=defer_sync and not durable, both=durable)
        self._saved[state.task_id] = (state.saves, data)

    def sync_pending(self) -> None:
        """Makes what a deferred save left durable: the journals' `sealed` batches (see
        `Journal.record`) and the save logs' last records (see `state.savelog`); and unlinks the
        state file it swapped out."""
        for journal in list(self._journals.values()):
            journal.sync()
        for log in list(self._logs.values()):
            log.sync()
        self._drop_old()

    def _drop_old(self) -> None:
        while self._old:
            with contextlib.suppress(OSError):  # gone already: the next swap unlinked it
                os.unlink(self._old.pop())

    def history(self, state: LoopState, kinds: frozenset[str] | None = None) -> History:
        """The full history of a loop: what the journal holds (see `state.journal`)."""
        return read_history(self.journal_path(state.task_id), kinds)

    def all_completed(self, state: LoopState) -> list[CompletedStep]:
        """Every completed step in order: the sealed ones from the journal, then the state's."""
        sealed = state.history.completed_sealed
        if not sealed:
            return list(state.completed_steps)
        earlier = self.history(state, frozenset({"completed"})).completed[:sealed]
        return earlier + state.completed_steps

    def encode(self, state: LoopState) -> bytes:
        """The same JSON as `state.model_dump_json()` (steps last), without re-encoding records
        that did not change since the last save (their JSON is cached under their counters)."""
        head = state.model_dump_json(exclude={"steps"})
        parts = []
        for step_id, record in state.steps.items():
            key = (
                record.attempts_total,
                record.window_start,
                record.window_count,
                len(record.reflections),
                record.reflections[-1:],
                record.guidance,
                record.post_action is not None,
                record.session_id,
            )
            cached = self._encoded.get((state.task_id, step_id))
            if cached is None or cached[0] != key:
                cached = (key, record.model_dump_json())
                self._encoded[(state.task_id, step_id)] = cached
            parts.append(f"{json.dumps(step_id)}:{cached[1]}")
        if len(self._encoded) > 2 * len(state.steps) + 8:  # records that left the state file
            self._encoded = {k: v for k, v in self._encoded.items() if k[1] in state.steps}
        steps = ",".join(parts)
        return f'{head[:-1]},"steps":{{{steps}}}}}'.encode()

    def load(self, task_id: str) -> LoopState:
        for path in (self.path(task_id), self.archived_path(task_id)):
            if path.exists():
                return self.read(path)
        raise AkiraError(f"no loop with task id '{task_id}'; run 'akira loop status' to list them")

    def read(self, path: Path) -> LoopState:
        raw = path.read_bytes()
        try:
            state = LoopState.model_validate_json(raw)
        except (ValidationError, ValueError, UnicodeDecodeError) as exc:
            recovered = _cut_save(path, raw)
            if recovered is not None:
                cut = "cut short" if raw else "empty"
                wal = path.with_suffix(".wal")
                print(f"akira: {path} is {cut}, as a power cut leaves it: read from {wal}", file=sys.stderr)
                return self._with_sealed(recovered)
            reason = _first_error(exc)
            logged = _from_log(path)
            moved = self.quarantine(path, with_log=logged is None)
            if logged is not None:  # the log holds this loop's last save whole: that is the state
                atomic_write(path, logged[1], masked=True)
                wal = path.with_suffix(".wal")
                print(
                    f"akira: {path} was corrupt ({reason}) and is moved to {moved}; its last save "
                    f"(number {logged[0].saves}) is read from {wal}",
                    file=sys.stderr,
                )
                return self._with_sealed(logged[0])
            backups = sorted(self.backup_dir.glob(f"{path.stem}.*.json"), key=_iteration)
            if backups:
                copy = shlex.join(["cp", str(backups[-1]), str(path)])
                fix = f"restore the newest backup with: {copy}"
            else:
                fix = "there is no backup of it; start the task again with 'akira loop start --task'"
            raise AkiraError(f"{path}: corrupt state file ({reason}); moved to {moved}; {fix}") from None
        return self._with_sealed(_newer_save(path, state))

    def _with_sealed(self, state: LoopState) -> LoopState:
        sealed = state.history.completed_sealed
        if sealed:  # the ledger: completed steps that live only in the journal
            ids = self.history(state, frozenset({"sealed"})).sealed_ids(sealed)
            state._sealed, state._done = ids, (-1, set())
        return state

    def quarantine(self, path: Path, *, with_log: bool = True) -> Path:
        """Moves a corrupt state file to `.state/corrupt/`, and its save log too unless the
        state is recovered from it (`with_log`: so that a backup a person restores is what the
        next load reads)."""
        self.corrupt_dir.mkdir(parents=True, exist_ok=True)
        target = self.corrupt_dir / f"{path.stem}.{utcnow().replace(':', '')}.json"
        os.replace(path, target)
        if with_log:
            with contextlib.suppress(FileNotFoundError):
                os.replace(path.with_suffix(".wal"), target.with_suffix(".wal"))
        return target

    def backup(self, state: LoopState) -> Path:
        """A copy of the state's last save (encoded anew if this store never saved it), for a
        person to restore by hand: the state file itself is the durable one."""
        target = self.backup_dir / f"{PREFIX}{state.task_id}.{state.iteration}.json"
        saves, data = self._saved.get(state.task_id, (-1, b""))
        if saves != state.saves:
            data = redact_bytes(state.model_dump_json().encode())
        atomic_write(target, data, durable=False, masked=True)
        old = sorted(self.backup_dir.glob(f"{PREFIX}{state.task_id}.*.json"), key=_iteration)
        for stale in old[:-KEEP_BACKUPS]:
            stale.unlink(missing_ok=True)
        return target

    def archive(self, state: LoopState) -> Path:
        self.save(state)
        self.archive_dir.mkdir(parents=True, exist_ok=True)
        target = self.archived_path(state.task_id)
        os.replace(self.path(state.task_id), target)
        fsync_dir(self.dir)
        log = self._logs.pop(state.task_id, None) or savelog.SaveLog(self.log_path(state.task_id))
        log.remove()  # the archived state file is durable on its own
        return target

    def unarchive(self, task_id: str) -> None:
        """An archived state goes back among the active ones (a finished run's pull request is
        followed again), so that no loop has two state files."""
        archived = self.archived_path(task_id)
        if archived.exists() and not self.path(task_id).exists():
            os.replace(archived, self.path(task_id))
            fsync_dir(self.dir)

    def task_ids(self) -> list[str]:
        ids = {p.stem[len(PREFIX) :] for p in self._files()}
        return sorted(ids)

    def _files(self) -> Iterator[Path]:
        for folder in (self.dir, self.archive_dir):
            if folder.is_dir():
                yield from folder.glob(f"{PREFIX}*.json")

    def scan(self) -> Iterator[tuple[Path, LoopState | None]]:
        """Every state file, active and archived; a corrupt one yields None (left in place), one
        that a power cut left empty or cut short its save log's record."""
        for path in self._files():
            state: LoopState | None = None
            with contextlib.suppress(OSError):
                raw = path.read_bytes()
                try:
                    state = LoopState.model_validate_json(raw)
                except (ValidationError, ValueError):
                    state = _cut_save(path, raw)
                    if state is None and (logged := _from_log(path)) is not None:
                        state = logged[0]
            yield path, state


def _newer_save(path: Path, state: LoopState) -> LoopState:
    """The save log's newest record instead of the state file when it is a later save of the
    same loop: a power cut took the state file's last replacement, the log kept it."""
    newer = savelog.latest(path.with_suffix(".wal"))
    if newer is None or newer[0] <= state.saves:
        return state
    return _logged(newer, state.task_id) or state


def _cut_save(path: Path, raw: bytes) -> LoopState | None:
    """The save log's newest record of this loop when the state file is what a power cut leaves
    of a save (see `fileio.swap_in`): empty, or the first part of a record the log holds. A file
    with anything else in it is not akira's: None, and it is quarantined."""
    found = savelog.records(path.with_suffix(".wal"))
    if not any(data.startswith(raw) for _, data in found):
        return None
    return _logged(max(found), path.stem[len(PREFIX) :])


def _from_log(path: Path) -> tuple[LoopState, bytes] | None:
    """The newest whole record of this loop in the save log next to `path`, whatever the state
    file holds: a state file that is corrupt is recovered from it."""
    task_id = path.stem[len(PREFIX) :]
    for record in sorted(savelog.records(path.with_suffix(".wal")), reverse=True):
        state = _logged(record, task_id)
        if state is not None:
            return state, record[1]
    return None


def _logged(record: tuple[int, bytes], task_id: str) -> LoopState | None:
    """A save log's record (save number, bytes) as the state it holds, when that is save number
    `seq` of loop `task_id`; else None (not a state, or another loop's: a copied log)."""
    seq, data = record
    try:
        logged = LoopState.model_validate_json(data)
    except (ValidationError, ValueError, UnicodeDecodeError):
        return None
    return logged if logged.task_id == task_id and logged.saves == seq else None


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        error = exc.errors()[0]
        if error["type"] == "json_invalid":
            return "not valid JSON"
        return f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}"
    return "not valid JSON"
