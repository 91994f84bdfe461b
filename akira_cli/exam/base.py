"""What a step's exam files held before its first attempt: the commit it started from (a
git-native run), or a copy of its exam files under `.state/exam/` (any other run), which steps
cannot write (the control plane)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol

from akira_cli import nofollow
from akira_cli.git.pinned import Git
from akira_cli.git.plumbing import Plumbing

LIMIT = 8_000_000
"""How much of one exam file is read or kept."""


class Base(Protocol):
    def old(self, path: str) -> bytes | None:
        """`path` (under the work folder) as it was before the step; None: it did not exist."""
        ...


@dataclass(frozen=True)
class CommitBase:
    git: Git
    sha: str
    prefix: str
    """The work folder under the repository's top, "" or ending in "/"."""

    def old(self, path: str) -> bytes | None:
        done = self.git.run("cat-file", "blob", f"{self.sha}:{self.prefix}{path}", check=False)
        return done.stdout if done.returncode == 0 else None

    def moved_since(self) -> list[str]:
        """The work folder's files that commits made since the step started changed (an agent
        that committed itself): the work tree's look does not show them."""
        head = Plumbing(self.git).head()[0]  # HEAD's file read: no git started for a step that moved nothing
        if not head or head == self.sha:
            return []
        names = self.git.out("diff", "--name-only", "--no-renames", self.sha, head, check=False)
        return [name.removeprefix(self.prefix) for name in names.splitlines() if name.startswith(self.prefix)]

    def ignored(self) -> list[str]:
        """The work folder's files git ignores, folders that are ignored whole left out (an
        installed package is no exam): those a changed `.gitignore` may hide."""
        listed = self.git.run(
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
            "--",
            self.prefix or ".",
            check=False,
        ).stdout.decode("utf-8", "replace")
        names = [name for name in listed.split("\0") if name and not name.endswith("/")]
        return [name.removeprefix(self.prefix) for name in names if name.startswith(self.prefix)]


@dataclass(frozen=True)
class CopyBase:
    folder: Path

    def old(self, path: str) -> bytes | None:
        try:
            return nofollow.read(self.folder, path, LIMIT)
        except OSError:
            return None

    def take(self, workdir: Path, paths: list[str]) -> None:
        """Copies `paths` (the exam files) from the work folder, never through a link out of it."""
        for path in paths:
            with contextlib.suppress(OSError):
                data = nofollow.read(workdir, path, LIMIT)
                nofollow.write(self.folder, PurePosixPath(path), data, durable=False)


def current(workdir: Path, path: str) -> bytes | None:
    """`path` in the step's tree now: None when it is gone; a link out of the tree, or what
    cannot be read, is never what the file was."""
    try:
        return nofollow.read(workdir, path, LIMIT)
    except FileNotFoundError:
        return None
    except OSError:
        return b"\0unreadable"
