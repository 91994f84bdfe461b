"""Write steps' checkboxes back into tasks.md, and read the feature's requirements.md.

Write-back changes exactly one byte per box, the step's own; everything else in the file stays
as the person wrote it.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

from akira_cli.fileio import name_path
from akira_cli.tasks import lease
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.tasks.parser import parse_task_text
from akira_cli.tasks.reading import SETTLE_SECONDS, TaskFileError, read_task_bytes

WRITABLE_BOXES = (" ", "x", "X", "-", "~")
READER_WAIT = 0.05
"""How long a box waits for a write lease while other processes have the file open, before it
is written without one when they only read it (a pager kept open on tasks.md)."""

REQUIREMENT_HEADING_RE = re.compile(
    r"#{2,4}[ \t]+Requirement[ \t]+(?P<id>\d+(?:\.\d+)*)\.?[ \t]*"
    r"(?:[:.\-–—][ \t]*(?P<title>.*?))?[ \t#]*$",
    re.I,
)
CRITERIA_HEADING_RE = re.compile(r"#{2,6}[ \t]+acceptance criteria\b", re.I)
CRITERION_RE = re.compile(r"[ \t]*(?:(?P<number>\d+)[.)]|[-*+])[ \t]+(?P<text>.+)")
MARKUP_RE = re.compile(r"\*\*|__")


def set_box(path: Path, step_id: str, char: str) -> TaskFile:
    """Set one step's checkbox to `char` and return the file as it now is on disk."""
    return write_boxes(path, {step_id: char})[0]


def write_boxes(
    path: Path, boxes: dict[str, str], known: tuple[TaskFile, bytes] | None = None
) -> tuple[TaskFile, bytes]:
    """Set each step's checkbox (`boxes`: step id to character) in one write: the file as it
    now is on disk, parsed, and its bytes.

    A box is written by the step's identity, never by a line number or an offset alone: only
    while the file holds exactly the bytes the steps' offsets were parsed from, checked and
    written under a write lease (`tasks.lease`) that keeps every other process from opening the
    file meanwhile (see `_patch` for a file a pager keeps open). A person's edit that moved a
    step's line (a swap, a rewrite in place) makes the file be read and parsed again, and the
    step found again by its id. A step the file no longer has fails the whole write, before a
    byte is written.

    `known` is a parse of the file and the bytes it was parsed from (the loop's last look): while
    the file still holds them, it is patched without being parsed again (the loop does this
    every step, so the cost does not grow with the number of steps).
    """
    for char in boxes.values():
        if char not in WRITABLE_BOXES:
            raise ValueError(f"checkbox character must be one of {WRITABLE_BOXES}, got {char!r}")
    for _ in range(3):
        task_file, data = known or _parsed(path)
        changes = []
        for step_id, char in boxes.items():
            step = task_file.get(step_id)
            if step is None:
                raise TaskFileError(
                    f"{path}: no step with id '{step_id}'; check the id against the task file"
                )
            if step.box != char or known is not None:
                changes.append((step, char))
        if not changes:
            return task_file, data
        written = _patch(path, changes, data)
        if written is not None:
            return task_file, written
        known = None  # the file changed since it was parsed: read it again
    raise TaskFileError(f"{path}: changed while its checkbox was being written; it is read again")


def _parsed(path: Path) -> tuple[TaskFile, bytes]:
    data = read_task_bytes(path)
    return parse_task_text(data, path), data


def _patch(path: Path, changes: list[tuple[Step, str]], seen: bytes) -> bytes | None:
    """Writes one byte in place per step while the file holds exactly `seen` (the bytes the
    steps were parsed from): the bytes now, or None when the file holds other bytes. The inode
    and the rest of the file stay as they are. Not fsynced on purpose: the state file is the
    truth, and the loop re-ticks completed steps from it after a crash.

    Compared and written under a write lease, granted only while no other process has the file
    open: one that opens it for a moment (a person's read before a save) is waited for. A file
    that another process keeps open only to read it (a pager) is compared and written without a
    lease after `READER_WAIT`, once a read lease shows that no process has it open for writing;
    a writer is waited for, up to `SETTLE_SECONDS`."""
    started = time.monotonic()
    while True:
        with _opened(path) as fd:
            try:
                lease.hold(fd, write=True)  # False (no leases here): written as before, unleased
            except lease.Busy:
                pass
            else:
                return _write(fd, path, changes, seen)
        waited = time.monotonic() - started
        if waited >= READER_WAIT and not lease.written_to(path):
            with _opened(path) as fd:
                return _write(fd, path, changes, seen)
        if waited >= SETTLE_SECONDS:
            raise TaskFileError(f"{path}: another process keeps it open for writing")
        time.sleep(0.002)


def _write(fd: int, path: Path, changes: list[tuple[Step, str]], seen: bytes) -> bytes | None:
    now = bytearray(seen)
    try:
        if os.pread(fd, len(seen) + 1, 0) != seen:
            return None
        for step, char in changes:
            if step.box != char:
                os.pwrite(fd, char.encode("ascii"), step.box_offset)
                step.box = char
            now[step.box_offset] = ord(char)
    except OSError as exc:
        name_path(exc, path)
        raise
    return bytes(now)


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[int]:
    """The task file open for writing; closing it lets go of a lease taken on it."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise TaskFileError(
            f"{path}: cannot write the task file ({exc.strerror}); check its permissions"
        ) from None
    try:
        yield fd
    finally:
        os.close(fd)


def load_requirements(feature_dir: Path) -> dict[str, str]:
    """Requirement texts by id from `<feature_dir>/requirements.md`, empty when there is none.

    "1" is the requirement's title and user story; "1.1" is its first acceptance criterion.
    """
    try:
        text = (feature_dir / "requirements.md").read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return {}
    return _RequirementsReader().read(text.lstrip("\ufeff"))


class _RequirementsReader:
    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.requirement = ""
        self.in_criteria = False
        self.criterion = ""
        self.criteria_count = 0
        self.story_started = False

    def read(self, text: str) -> dict[str, str]:
        for line in text.splitlines():
            self._line(line.rstrip())
        return self.texts

    def _line(self, line: str) -> None:
        if heading := REQUIREMENT_HEADING_RE.match(line):
            self._start_requirement(heading["id"], heading["title"] or "")
        elif line.startswith("#"):
            self.in_criteria = bool(self.requirement and CRITERIA_HEADING_RE.match(line))
            self.criterion = ""
        elif self.requirement and line.strip():
            self._body_line(line)
        else:
            self.criterion = ""

    def _start_requirement(self, requirement_id: str, title: str) -> None:
        self.requirement, self.in_criteria, self.criterion = requirement_id, False, ""
        self.criteria_count, self.story_started = 0, False
        self.texts[requirement_id] = _plain(title)

    def _body_line(self, line: str) -> None:
        if not self.in_criteria:
            self._append(self.requirement, line)
        elif criterion := CRITERION_RE.match(line):
            self.criteria_count += 1
            number = criterion["number"] or str(self.criteria_count)
            self.criterion = f"{self.requirement}.{number}"
            self.texts[self.criterion] = _plain(criterion["text"])
        elif self.criterion:
            self._append(self.criterion, line)

    def _append(self, key: str, line: str) -> None:
        text = _plain(line)
        joiner = " "
        if key == self.requirement and not self.story_started:
            self.story_started = True
            text = re.sub(r"^user story:\s*", "", text, flags=re.I)
            joiner = " — "
        self.texts[key] = f"{self.texts[key]}{joiner}{text}" if self.texts[key] else text


def _plain(text: str) -> str:
    return MARKUP_RE.sub("", text).strip()
