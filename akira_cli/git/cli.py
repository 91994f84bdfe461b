"""The `git` CLI as akira runs it: a subprocess with a fixed environment, in one repository.

No pager, no editor, no prompt for credentials, C locale (so that messages can be read), and
nothing from the caller's environment that would point git at another repository or index.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from akira_cli.errors import AkiraError

FIXED = {
    "LC_ALL": "C",
    "LANG": "C",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": ":",
    "EDITOR": ":",
    "VISUAL": ":",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "GCM_INTERACTIVE": "never",
}
"""Set on every git command."""
DROPPED = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_PREFIX",
    "GIT_NAMESPACE",
)
"""Taken out of the inherited environment: git runs on the repository akira found, with its own index."""


class GitError(AkiraError):
    """A git command failed; the message is one line naming the command and git's words."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output
        """Everything git and its hooks printed, for a reflection to read."""


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in DROPPED}
    env.update(FIXED)
    env.update(extra or {})
    return env


class Git:
    """Runs git in `root` (a repository's top folder)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def run(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
        check: bool = True,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[bytes]:
        try:
            done = subprocess.run(
                ["git", *args],
                cwd=self.root,
                env=git_env(env),
                input=stdin,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except FileNotFoundError:
            raise GitError("git is not installed or not on PATH; install git or run with --no-git") from None
        except subprocess.TimeoutExpired:
            raise GitError(f"'git {' '.join(args[:3])}' took more than {timeout:g}s in {self.root}") from None
        if check and done.returncode != 0:
            raise GitError(describe(args, done), output_of(done))
        return done

    def out(
        self, *args: str, env: Mapping[str, str] | None = None, stdin: bytes | None = None, check: bool = True
    ) -> str:
        return self.run(*args, env=env, stdin=stdin, check=check).stdout.decode("utf-8", "replace").strip()

    def ok(self, *args: str, env: Mapping[str, str] | None = None) -> bool:
        return self.run(*args, env=env, check=False).returncode == 0


def output_of(done: subprocess.CompletedProcess[bytes]) -> str:
    return (done.stdout + done.stderr).decode("utf-8", "replace").strip()


def describe(args: Sequence[str], done: subprocess.CompletedProcess[bytes]) -> str:
    said = " ".join(output_of(done).split()) or f"exit {done.returncode}"
    return f"'git {' '.join(args[:3])}' failed: {said[:300]}"


def toplevel(folder: Path) -> Path | None:
    """The top folder of the git work tree that holds `folder`, or None (not a repository, or
    no git on PATH)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=folder,
            env=git_env(),
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return Path(done.stdout.decode("utf-8", "replace").strip()).resolve()
