"""The task file as the loop reads it: parsed again only when it changed on disk."""

from __future__ import annotations

import time
from pathlib import Path

from akira_cli.fileio import RACY_NS, read_bounded
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.tasks.parser import parse_task_text
from akira_cli.tasks.reading import read_task_bytes
from akira_cli.tasks.writeback import write_boxes


class TaskSource:
    """The parse of the task file, done again only when the file changed.

    A change shows in the file's inode, size or modification time, except within one timestamp
    tick of akira's last look (its own checkbox write, or a read): then the bytes are compared
    with what akira last wrote or read, as git does for "racily clean" files. So a person's edit
    is read at the next boundary, and an unchanged file is never parsed twice.
    """

    def __init__(self) -> None:
        self._key: tuple[int, int, int] | None = None
        self._task: TaskFile | None = None
        self._data: bytes | None = None
        """The bytes `_task` was parsed from, as akira last read or wrote them."""
        self._seen = 0

    @classmethod
    def seeded(cls, path: Path, data: bytes, task: TaskFile) -> TaskSource:
        """A source that already holds `task`, parsed from `data` read from `path` (the start's
        own check of the file), so that the loop does not parse it again; unless the file
        changed since (a start may run the project checks first): then it is read anew."""
        source = cls()
        seen = time.time_ns()
        stat = path.stat()
        if _same_size(path, stat.st_size) == data:  # after the stat: a later edit moves its time
            source._task, source._data = task, data
            source._key, source._seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size), seen
        return source

    def load(self, path: Path) -> TaskFile:
        seen = time.time_ns()  # before the look: an edit in the same tick is after it
        stat = path.stat()
        key = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if key == self._key and self._task is not None:
            if stat.st_mtime_ns < self._seen - RACY_NS:
                return self._task
            if self._data is not None and self._data == (_same_size(path, stat.st_size) or b""):
                self._seen = seen
                return self._task
        data = read_task_bytes(path)
        self._task, self._data = parse_task_text(data, path), data
        self._key, self._seen = key, seen
        return self._task

    def mark(self, path: Path, boxes: dict[str, str]) -> TaskFile:
        """Writes checkboxes by the steps' ids (see `write_boxes`), patching the last parse
        while the file still holds the bytes it was parsed from."""
        seen = time.time_ns()
        known = (self._task, self._data) if self._task is not None and self._data is not None else None
        task, data = write_boxes(path, boxes, known)
        stat = path.stat()
        self._task, self._data = task, data
        self._key, self._seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size), seen
        return task


def _same_size(path: Path, size: int) -> bytes | None:
    """The file's bytes in one read (a file object costs four syscalls more), or None when it
    cannot be read that way (then `read_task_bytes` says why)."""
    try:
        return read_bounded(path, size + 1)
    except OSError:
        return None


def is_done(
    task: TaskFile, step: Step, include_optional: bool, completed: frozenset[str] | set[str] = frozenset()
) -> bool:
    """Ticked (a leaf), or every child done (a parent); `completed` counts as ticked."""
    if not step.children:
        return step.ticked or step.id in completed
    children = [task.get(child) for child in step.children]
    return all(
        is_done(task, child, include_optional, completed)
        for child in children
        if child is not None and (include_optional or not child.optional)
    )


def earns_tick(
    task: TaskFile, step: Step, include_optional: bool, completed: frozenset[str] | set[str] = frozenset()
) -> bool:
    """A parent akira may tick: done, with at least one step of this run under it. A parent of
    optional steps only is left open without --include-optional: ticked, it would hide them
    from a later run that includes them (a ticked parent's children are not run)."""
    return is_done(task, step, include_optional, completed) and _has_counted_leaf(
        task, step, include_optional
    )


def _has_counted_leaf(task: TaskFile, step: Step, include_optional: bool) -> bool:
    if not include_optional and step.optional:
        return False
    if not step.children:
        return True
    children = (task.get(child) for child in step.children)
    return any(child is not None and _has_counted_leaf(task, child, include_optional) for child in children)
