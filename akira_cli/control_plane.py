"""The control plane is not the agent's (docs/guarantees.md).

The running task file, `config/`, `.hooks/`, `.state/`, `.git/` and akira's reports steer akira.
The `llm` agent's `write_file` refuses them; what a `command` or `script` agent changes there
during an attempt is found by comparing a snapshot taken before with one taken after, reported
as an event, and never obeyed (config is read once per run, the state is akira's memory, and the
task file's directives are taken from akira's own view; see `loop.TaskSource`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PROTECTED_DIRS = (".state", ".hooks", "config", ".git")
REPORT_DIRS = (("Logs", "completion_reports"), ("Needs_Action",))
WATCHED = ("config", ".hooks", ".git/hooks", ".git/config", ".state", ".state/memory")
"""What `snapshot` looks at: small folders (one level each) and single files."""
AKIRAS = (".state", ".state/memory")
"""The watched places akira itself writes between two attempts (its state, its memory)."""
Fingerprint = tuple[int, int, int]


@dataclass
class ControlPlane:
    root: Path
    """The workspace root."""
    task_path: Callable[[], Path | None] = lambda: None
    """Where the running task file is now (a person may move it)."""

    def refusal(self, path: Path, existing: os.stat_result | None) -> str | None:
        """Why the agent may not write `path` (a real path, symlinks already followed), or None."""
        try:
            parts = path.relative_to(self.root).parts
        except ValueError:
            return None
        if parts and parts[0] in PROTECTED_DIRS:
            return f"'{'/'.join(parts)}' is akira's control plane ({parts[0]}/); the agent may not write it"
        if any(parts[: len(report)] == report for report in REPORT_DIRS):
            return f"'{'/'.join(parts)}' is where akira writes its reports; write your work elsewhere"
        if self._is_task_file(path, existing):
            return (
                f"'{'/'.join(parts)}' is the running task file; akira ticks its boxes itself "
                "after checking the work"
            )
        return None

    def covers(self, path: Path) -> bool:
        return self.refusal(path, None) is not None

    def _is_task_file(self, path: Path, existing: os.stat_result | None) -> bool:
        task = self.task_path()
        if task is None:
            return False
        if path == task:
            return True
        try:
            info = task.stat()
        except OSError:
            return False
        return existing is not None and (existing.st_dev, existing.st_ino) == (info.st_dev, info.st_ino)

    def snapshot(self, names: tuple[str, ...] = WATCHED) -> dict[str, Fingerprint]:
        """(size, mtime, inode) of each watched file; one listing per folder, one stat per file."""
        seen: dict[str, Fingerprint] = {}
        root = str(self.root)
        for name in names:
            path = f"{root}/{name}"
            records_only = name.startswith(".state")  # its lock, pid and pgid files churn
            try:
                with os.scandir(path) as entries:
                    for entry in entries:
                        if records_only and not entry.name.endswith((".json", ".jsonl", ".wal")):
                            continue
                        with contextlib.suppress(OSError):
                            info = entry.stat(follow_symlinks=False)
                            if not stat.S_ISDIR(info.st_mode):
                                seen[f"{name}/{entry.name}"] = (info.st_size, info.st_mtime_ns, info.st_ino)
            except NotADirectoryError:
                with contextlib.suppress(OSError):
                    info = os.lstat(path)
                    seen[name] = (info.st_size, info.st_mtime_ns, info.st_ino)
            except OSError:
                continue
        return seen

    @staticmethod
    def changed(before: dict[str, Fingerprint], after: dict[str, Fingerprint]) -> list[str]:
        names = set(before) | set(after)
        return sorted(name for name in names if before.get(name) != after.get(name))
