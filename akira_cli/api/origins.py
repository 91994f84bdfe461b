"""Who wrote a task file: `person`, `step` (an akira step's commit created it or changed more
than its ticks) or `uncommitted` (git does not track it). A task file a step wrote is work a
step planted for later: a start refuses it, so its `Run:` lines never run unseen.

akira's own commits carry an `Akira-Step` trailer, and the tick a run's commit puts in its
own task file changes a box and nothing else; any other change that such a commit made to a
task file is the step's."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from akira_cli.errors import AkiraError

Origin = Literal["person", "step", "uncommitted"]
_BOX = re.compile(r"\[[ xX\-~]\]")
_COMMIT = "\x00commit "


def origins(top: Path, paths: Iterable[Path]) -> dict[Path, Origin]:
    """The origin of each of `paths` (task files in the repository whose top is `top`); every
    one `uncommitted` where `top` is no repository."""
    from akira_cli.git.pinned import Git, find

    wanted = {path.resolve(): path for path in paths}
    repo = find(top)
    if repo is None or not wanted:
        return dict.fromkeys(wanted.values(), "uncommitted")
    git = Git(repo)
    names = {
        str(real.relative_to(repo.top)): path
        for real, path in wanted.items()
        if real.is_relative_to(repo.top)
    }
    try:
        tracked = set(git.out("ls-files", "-z", "--", *names, check=False).split("\0"))
        log = git.out(
            "log", "--format=%x00commit %H%n%B%x00", "-p", "--unified=0", "--no-renames", "--", *names
        )
    except AkiraError:
        return dict.fromkeys(wanted.values(), "uncommitted")
    stepped = written_by_steps(log)
    found: dict[Path, Origin] = dict.fromkeys(wanted.values(), "uncommitted")
    for name, path in names.items():
        found[path] = "step" if name in stepped else "person" if name in tracked else "uncommitted"
    return found


def in_spec_folder(top: Path, path: Path) -> bool:
    """`path` lies in one of the spec folders at the workspace's top `top`."""
    from akira_cli.workspace import SPEC_FOLDERS

    real = path.resolve()
    return any(real.is_relative_to((top / folder).resolve()) for folder in SPEC_FOLDERS)


def written_by_steps(log: str) -> set[str]:
    """The files an akira step's commit created or changed beyond its boxes, in `git log -p`."""
    written: set[str] = set()
    for commit in log.split(_COMMIT)[1:]:
        message, _, diff = commit.partition("\x00")
        if not re.search(r"^Akira-Step: ", message, re.MULTILINE):
            continue
        for part in re.split(r"^diff --git ", diff, flags=re.MULTILINE)[1:]:
            header, _, body = part.partition("\n@@")
            name = re.search(r"^\+\+\+ b/(.+)$", header, re.MULTILINE)
            if name is None:
                continue
            if "new file mode" in header or not ticks_only(body):
                written.add(name.group(1))
    return written


def ticks_only(hunks: str) -> bool:
    """The hunks change boxes and nothing else."""
    removed = sorted(_BOX.sub("[ ]", line[1:]) for line in hunks.splitlines() if line.startswith("-"))
    added = sorted(_BOX.sub("[ ]", line[1:]) for line in hunks.splitlines() if line.startswith("+"))
    return removed == added
