"""The `[P]` steps' tests' shared moves: commit a task file to the repository, then start it."""

from __future__ import annotations

from tests.support.git import git
from tests.support.workspace import Akira


def tasks(repo: Akira, text: str) -> None:
    repo.write_task("feat", text)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-q", "-m", "the tasks")


def start(repo: Akira, *args: str, timeout: float = 120) -> tuple[int, str]:
    done = repo.cli("loop", "start", "--task", "Specs/feat/tasks.md", *args, timeout=timeout)
    return done.code, done.err
