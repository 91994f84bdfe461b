"""Write a step's checkbox back into tasks.md, and read the feature's requirements.md.

Write-back changes exactly one byte; everything else in the file stays as the person wrote it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from akira_cli.fileio import name_path
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.tasks.parser import TaskFileError, parse_task_text, read_task_bytes

WRITABLE_BOXES = (" ", "x", "X", "-", "~")

REQUIREMENT_HEADING_RE = re.compile(
    r"#{2,4}[ \t]+Requirement[ \t]+(?P<id>\d+(?:\.\d+)*)\.?[ \t]*"
    r"(?:[:.\-–—][ \t]*(?P<title>.*?))?[ \t#]*$",
    re.I,
)
CRITERIA_HEADING_RE = re.compile(r"#{2,6}[ \t]+acceptance criteria\b", re.I)
CRITERION_RE = re.compile(r"[ \t]*(?:(?P<number>\d+)[.)]|[-*+])[ \t]+(?P<text>.+)")
MARKUP_RE = re.compile(r"\*\*|__")


def set_box(path: Path, step_id: str, char: str, known: TaskFile | None = None) -> TaskFile:
    """Set one step's checkbox to `char` and return the file as it now is on disk.

    `known` is a parse of the file's current content: when its box offset still points at a
    checkbox, the file is patched without reading or parsing it again (the loop does this every
    step, so the cost does not grow with the file).
    """
    if char not in WRITABLE_BOXES:
        raise ValueError(f"checkbox character must be one of {WRITABLE_BOXES}, got {char!r}")
    step = known.get(step_id) if known is not None else None
    if known is not None and step is not None and _patch(path, step, char):
        return known
    task_file = parse_task_text(read_task_bytes(path), path)
    step = task_file.get(step_id)
    if step is None:
        raise TaskFileError(f"{path}: no step with id '{step_id}'; check the id against the task file")
    if step.box != char and not _patch(path, step, char):
        raise TaskFileError(f"{path}: changed while its checkbox was being written; it is read again")
    return task_file


def _patch(path: Path, step: Step, char: str) -> bool:
    """Writes one byte in place when the three bytes around it are still `[box]`: it cannot
    tear, the inode and the rest of the file stay as they are. Not fsynced on purpose: the
    state file is the truth, and the loop re-ticks completed steps from it after a crash."""
    at = step.box_offset
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise TaskFileError(
            f"{path}: cannot write the task file ({exc.strerror}); check its permissions"
        ) from None
    try:
        if os.pread(fd, 3, at - 1) != f"[{step.box}]".encode():
            return False
        if step.box != char:
            os.pwrite(fd, char.encode("ascii"), at)
            step.box = char
        return True
    except OSError as exc:
        name_path(exc, path)
        raise
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
