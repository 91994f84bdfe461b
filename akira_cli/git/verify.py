"""The repository's commit hooks (`git.verify`): run inside the step's sandbox, like a check, and
never on the host, where akira's own git finds no hook at all (`cli.NO_HOOKS`).

A hooks folder is as much the step's to write as any other file when `core.hooksPath` names one
in the work tree (husky's `.husky/`), so a hook is what a step wrote until it runs confined. The
hooks run as `git commit` would run them, on the commit akira is about to make: `pre-commit`
with its temporary index (`GIT_INDEX_FILE`), `prepare-commit-msg` and `commit-msg` with its
message file, which they may rewrite, and `post-commit` once it is made. A folder of akira's
holds the index and the message, writable inside; `.git/` stays read-only there, so a hook that
writes into it (`git add`, `git stash`) fails, and with it the commit.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from akira_cli.errors import AkiraError
from akira_cli.git.pinned import Git
from akira_cli.redaction import redact
from akira_cli.runner import CommandResult, CommandWrapper

BEFORE = ("pre-commit", "prepare-commit-msg", "commit-msg")
AFTER = "post-commit"
MESSAGE_FILE = "COMMIT_EDITMSG"


class CommitRefused(AkiraError):
    """The repository's hook refused a step's commit: the attempt fails with its output."""

    def __init__(self, message: str, output: str) -> None:
        super().__init__(message)
        self.output = output


class Runner(Protocol):
    """Where the hooks run: the step's runner (its sandbox, when the run has one)."""

    wrapper: CommandWrapper | None

    def run(
        self, command: str, timeout: float, *, wrapper: CommandWrapper | None = None
    ) -> CommandResult: ...


class CommitHooks:
    def __init__(self, git: Git, runner: Runner, timeout: float) -> None:
        self.git = git
        self.runner = runner
        self.timeout = timeout
        self._folder: Path | None = None

    def folder(self) -> Path:
        """Where the person's configuration puts the hooks (asked once a run): `core.hooksPath`
        from their config files (akira's own override is on the command line), else the
        repository's `hooks/`."""
        if self._folder is None:
            said = self.git.out(
                "config", "--show-origin", "--type=path", "--get-all", "core.hooksPath", check=False
            )
            chosen = [
                line.split("\t", 1)[1] for line in said.splitlines() if not line.startswith("command line:")
            ]
            path = Path(chosen[-1]) if chosen and chosen[-1] else self.git.repo.common_dir / "hooks"
            self._folder = path if path.is_absolute() else self.git.root / path
        return self._folder

    def present(self) -> list[str]:
        """The hooks a commit would run now (a hook in the work tree may come or go)."""
        folder = self.folder()
        return [name for name in (*BEFORE, AFTER) if os.access(folder / name, os.X_OK)]

    def before(self, shared: Path, index: Path, message: str) -> str:
        """Runs the hooks that may refuse the commit or shape its message; the message they
        leave. `shared`: akira's folder of the commit, which holds `index`, writable inside."""
        present = self.present()
        if not any(name in present for name in BEFORE):
            return message
        path = shared / MESSAGE_FILE
        path.write_text(message, encoding="utf-8")
        for name, args in (
            ("pre-commit", ()),
            ("prepare-commit-msg", (str(path), "message")),
            ("commit-msg", (str(path),)),
        ):
            if name in present:
                self.run(name, args, shared, index)
        return path.read_text(encoding="utf-8", errors="replace")

    def after(self, shared: Path, index: Path) -> None:
        """`post-commit`, whose answer changes nothing."""
        if AFTER in self.present():
            self.run(AFTER, (), shared, index, check=False)

    def run(self, name: str, args: Sequence[str], shared: Path, index: Path, check: bool = True) -> None:
        hook = self.folder() / name
        command = (
            f"cd {shlex.quote(str(self.git.root))} && "
            f"GIT_INDEX_FILE={shlex.quote(str(index))} exec {shlex.join([str(hook), *args])}"
        )
        wrapper = self.runner.wrapper
        if wrapper is not None:  # the hooks folder may lie in the home, which the sandbox hides
            wrapper = wrapper.sharing(shared, [self.folder()])
        done = self.runner.run(command, self.timeout, wrapper=wrapper)
        if check and not done.ok:
            said = redact(done.output.strip())
            line = " ".join(said.split())[:300] or done.describe()
            raise CommitRefused(f"the repository's {name} hook refused the commit: {line}", said)
