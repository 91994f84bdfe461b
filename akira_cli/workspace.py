"""The workspace folder: its layout, task ids, and finding a task by id, path or feature name."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from akira_cli.errors import AkiraError

MARKERS = (".state", "Specs", ".kiro", ".specify", "openspec")
"""A folder holding one of these is a workspace; commands look for the nearest one upward."""
LAYOUT = ("Specs", "Done", "Needs_Action", "Logs/completion_reports", ".state", ".hooks", "config")
CONTROL = (".state", ".hooks", "config")
SPEC_FOLDERS = ("Specs", ".kiro/specs", "specs", "openspec/changes")
"""Where the spec tools keep task files: the person's, never a step's (read-only in a step's
sandbox), and the only places a client of `akira mcp` is offered task files from."""


class Placed(Protocol):
    """What a loop's state says of where its task file lives (`LoopState`)."""

    task_path: str
    feature: str
    home: str | None


@dataclass(frozen=True)
class Workspace:
    root: Path

    @classmethod
    def resolve(cls, root: str | Path | None = None, task: Path | None = None) -> Workspace:
        """--root, else $AKIRA_ROOT, else the folder of the spec tool that holds `task`, else the
        nearest folder upward from here that is a workspace (as git finds its repository)."""
        chosen = root or os.environ.get("AKIRA_ROOT")
        if chosen:
            path = Path(chosen).expanduser().resolve()
            if not path.is_dir():
                raise AkiraError(f"{path}: workspace folder not found; pass an existing --root DIR")
            return cls(path)
        here = Path.cwd().resolve()
        if task is not None and (holder := spec_root((here / task.expanduser()).resolve())):
            return cls(holder)
        return cls(discover(here))

    @property
    def specs(self) -> Path:
        return self.root / "Specs"

    @property
    def done(self) -> Path:
        return self.root / "Done"

    @property
    def needs_action(self) -> Path:
        return self.root / "Needs_Action"

    @property
    def reports(self) -> Path:
        return self.root / "Logs" / "completion_reports"

    @property
    def state_dir(self) -> Path:
        return self.root / ".state"

    @property
    def hooks(self) -> Path:
        return self.root / ".hooks"

    @property
    def memory(self) -> Path:
        return self.state_dir / "memory"

    def log_path(self, task_id: str) -> Path:
        return self.state_dir / "logs" / f"{task_id}.jsonl"

    def hook_path(self, task_id: str | None = None) -> Path:
        suffix = f"_{task_id}" if task_id else ""
        return self.hooks / f"stop_autonomous_loop{suffix}.md"

    def area_of(self, path: Path) -> str | None:
        """Which top-level folder a path lies in: 'Specs', 'Done', 'Needs_Action' or None."""
        try:
            relative = path.resolve().relative_to(self.root)
        except ValueError:
            return None
        head = relative.parts[0] if relative.parts else ""
        return head if head in ("Specs", "Done", "Needs_Action") else None

    def contains(self, path: Path) -> bool:
        """Whether `path` (symlinks resolved) lies inside the workspace."""
        try:
            return path.resolve().is_relative_to(self.root)
        except (OSError, RuntimeError, ValueError):
            return False

    def require_inside(self, path: Path, what: str = "task file") -> Path:
        """Refuses a path read from a file or given by a person that leads outside."""
        if not self.contains(path):
            raise AkiraError(
                f"{path}: the {what} is outside the workspace {self.root} (by its path or a "
                "symlink); akira never moves or deletes files outside it: move it inside, or "
                "pass --root with the folder that holds it"
            )
        return path

    def relative(self, path: Path) -> str:
        try:
            return str(path.resolve().relative_to(self.root))
        except ValueError:
            return str(path)

    def shown(self, path: Path) -> str:
        """`path` as a person opens it from the current folder, for the lines akira prints:
        relative when it lies under that folder (the workspace's own names, when run from its
        root), else absolute; shell-quoted, so that it pastes as it is."""
        import shlex

        resolved = path.resolve()
        try:
            return shlex.quote(str(resolved.relative_to(Path.cwd().resolve())))
        except (ValueError, OSError):
            return shlex.quote(str(resolved))

    def home(self, task: Placed) -> Path:
        """Where the task file lives: where `loop start` found it (under Specs/, or where Kiro,
        spec-kit or OpenSpec keep it). A person moves it back there to resume, and a spec that
        started outside Specs/ ends there. A loop from before akira recorded it: where the file
        is now, or under Specs/ while it is parked in Needs_Action/ or Done/."""
        if task.home:
            return Path(task.home)
        path = Path(task.task_path)
        if self.area_of(path) in ("Needs_Action", "Done"):
            return self.specs / (task.feature or self.feature_of(path)) / "tasks.md"
        return path

    def spec_folder(self, task_path: Path) -> Path:
        """What a person moves with the task file: its feature folder (with requirements.md and
        design.md), or the file itself when it lies loose in one of the workspace's folders."""
        folder = task_path.parent
        loose = (self.root, self.specs, self.done, self.needs_action)
        return folder if task_path.name == "tasks.md" and folder not in loose else task_path

    def feature_of(self, task_path: Path) -> str:
        """The feature folder's name, or the file's stem for a loose task file."""
        if task_path.name.lower() == "tasks.md":
            return task_path.parent.name
        return task_path.stem

    def new_task_id(self, now: datetime, taken: set[str]) -> str:
        base = now.strftime("task_%Y%m%d_%H%M%S")
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}_{n}"
        return candidate

    def ensure_layout(self, own_specs: bool = True) -> None:
        """`own_specs`: akira's Specs/, Done/ and Needs_Action/ too (a project whose specs a
        spec tool keeps gets its Needs_Action/ when one is first written)."""
        for folder in LAYOUT if own_specs else CONTROL:
            (self.root / folder).mkdir(parents=True, exist_ok=True)


def work_folder(root: Path, folder: str | None) -> Path:
    """The agent's work folder: `agent.workdir` (`folder`) inside the workspace at `root`, else
    the workspace's top. The run, the engine and `akira doctor` all take it from here."""
    return root / folder if folder else root


def command_line(workspace: Workspace, *args: str) -> str:
    """An akira command a person can paste as it is: quoted, with --root unless the workspace
    is the current folder."""
    import shlex

    words = ["akira", *args]
    try:
        here = Path.cwd().resolve() == workspace.root
    except OSError:
        here = False
    if not here:
        words += ["--root", str(workspace.root)]
    return shlex.join(words)


def in_quotes(command: str) -> str:
    """A command inside a sentence, between quotes that do not clash with its own: double when it
    holds a quoted path (`--root '/tmp/my project'`), else single. What lies between them pastes."""
    return f'"{command}"' if "'" in command else f"'{command}'"


def discover(start: Path) -> Path:
    """The nearest folder from `start` upward that holds a workspace marker, else `start`."""
    for folder in (start, *start.parents):
        if any((folder / marker).is_dir() for marker in MARKERS):
            return folder
    return start


def spec_root(task: Path) -> Path | None:
    """The repository folder of a task file kept where a spec tool keeps it, or None:
    Kiro's .kiro/specs/<feature>/tasks.md, spec-kit's specs/<NNN-feature>/tasks.md (next to
    .specify/) and OpenSpec's openspec/changes/<change>/tasks.md."""
    parents = task.parents
    if len(parents) < 4 or task.name != "tasks.md":
        return None
    if parents[1].name == "specs" and parents[2].name == ".kiro":
        return parents[3]
    if parents[1].name == "specs" and (parents[2] / ".specify").is_dir():
        return parents[2]
    if parents[1].name == "changes" and parents[2].name == "openspec":
        return parents[3]
    return None
