"""The `git` CLI as akira runs it on the host: one repository, found once and pinned, and nothing
that a step wrote into the work tree or the repository ever run or followed.

A step's processes may write the work tree (and, unsandboxed, `.git/` too). akira runs git there
after every step, unconfined, so each command is told exactly where the repository is
(`GIT_DIR`, `GIT_WORK_TREE`, `GIT_COMMON_DIR`: a renamed or replaced `.git`, a `commondir` file,
a worktree's `gitdir:` file are never followed), and every setting through which git would run
a program of the repository's is overridden on its command line (`-c` outranks every file).
What stays is the person's own configuration of programs they chose (filters, merge drivers,
`gpg.program`, credential helpers, `core.sshCommand` for `git.push`), which `.git/config` and
the home's git settings hold and a sandboxed step cannot write.

No pager, no editor, no prompt for credentials, C locale (so that messages can be read).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
    "GIT_ASKPASS": "",  # set and empty: git then never falls back to core.askPass
    "SSH_ASKPASS": "",
    "GCM_INTERACTIVE": "never",
}
"""Set on every git command."""
DROPPED = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_PREFIX",
    "GIT_NAMESPACE",
    "GIT_EXTERNAL_DIFF",
)
"""Taken out of the inherited environment: git runs on the repository akira found, with its own
index, and runs no diff program."""
NO_HOOKS = os.devnull
"""`core.hooksPath`: a path under which no file can ever exist, so that git finds no hook (the
repository's hooks run inside the sandbox instead, `git/verify.py`)."""
SAFE_CONFIG = (
    # a program git would start to ask which files changed (the repository's config may name one)
    ("core.fsmonitor", "false"),
    # hooks: a step can write a work-tree hooks folder (husky's `.husky/`) or `.git/hooks/`
    ("core.hooksPath", NO_HOOKS),
    # a nested repository is never descended into: its own config would name its own programs
    ("diff.ignoreSubmodules", "all"),
    ("status.submoduleSummary", "false"),
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("push.recurseSubmodules", "no"),
    # no repository on this machine is reached for a submodule (see REMOTE_COMMANDS)
    ("protocol.file.allow", "never"),
    # an external diff program (textconv and per-file diff drivers are COMMAND_OPTIONS' job): an
    # empty one fails closed, should a command without `--no-ext-diff` ever ask for it
    ("diff.external", ""),
    # `git log` would start gpg to check signatures
    ("log.showSignature", "false"),
    # no pager whatever the config says (GIT_PAGER is set too)
    ("core.pager", "cat"),
    # no automatic gc or maintenance after akira's commits: a loop commits every few seconds,
    # the person's next git command does the upkeep
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)
"""`-c key=value` on every command: the command line outranks the repository's config and the
person's global one."""
COMMAND_OPTIONS = {
    "status": ("--ignore-submodules=all",),
    "diff": ("--no-ext-diff", "--no-textconv", "--ignore-submodules=all"),
    "diff-index": ("--ignore-submodules=all",),
    "diff-tree": ("--ignore-submodules=all",),
    "log": ("--no-ext-diff", "--no-textconv"),
    "show": ("--no-ext-diff", "--no-textconv"),
}
"""Put right after the subcommand: what its own options can switch off beyond the config (the
diff programs and textconv drivers that `.gitattributes`, a file a step writes, picks per file)."""
REMOTE_COMMANDS = ("push", "fetch", "clone", "ls-remote")
"""They reach the person's own remote (`git.push`, the fleet's `--repo`), which may be a path on
this machine: for them the file transport is git's default `user`, which allows what a person
names and still refuses what a submodule does."""
_PREFIX = tuple(arg for key, value in SAFE_CONFIG for arg in ("-c", f"{key}={value}"))
_REMOTE_PREFIX = (*_PREFIX, "-c", "protocol.file.allow=user")


class GitError(AkiraError):
    """A git command failed; the message is one line naming the command and git's words."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output
        """Everything git and its hooks printed, for a reflection to read."""


@dataclass(frozen=True)
class Repository:
    """Where a repository lies, found once (`find`) and then pinned on every command."""

    top: Path
    """The work tree's top folder."""
    git_dir: Path
    """HEAD and the index: `top/.git`, or a linked worktree's own folder under the common one."""
    common_dir: Path
    """Refs, objects, config and hooks."""

    def env(self) -> dict[str, str]:
        return {
            "GIT_DIR": str(self.git_dir),
            "GIT_WORK_TREE": str(self.top),
            "GIT_COMMON_DIR": str(self.common_dir),  # a `commondir` file in GIT_DIR is not read
        }


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in DROPPED}
    env.update(FIXED)
    env.update(extra or {})
    return env


def hardened(args: Sequence[str]) -> list[str]:
    """`git <args>` with SAFE_CONFIG before the caller's own `-c` pairs and the subcommand's
    COMMAND_OPTIONS right after it."""
    at = 0
    while at + 1 < len(args) and args[at] == "-c":
        at += 2
    command = args[at] if at < len(args) else ""
    prefix = _REMOTE_PREFIX if command in REMOTE_COMMANDS else _PREFIX
    return ["git", *prefix, *args[: at + 1], *COMMAND_OPTIONS.get(command, ()), *args[at + 1 :]]


class Git:
    """Runs git on one pinned repository (`repo`), in its top folder."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self.root = repo.top
        self._env = repo.env()

    @classmethod
    def found(cls, folder: Path) -> Git | None:
        """The repository that holds `folder`, pinned; None outside one."""
        repo = find(folder)
        return cls(repo) if repo is not None else None

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
                hardened(args),
                cwd=self.root,
                env=git_env({**self._env, **(env or {})}),
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

    def look(self) -> bytes | None:
        """`git status` of the whole work tree, each untracked file by name, taking no lock (a
        look never writes the person's index); None when git cannot answer."""
        try:
            done = self.run(
                "status", "--porcelain=v1", "-z", "--untracked-files=all",
                env={"GIT_OPTIONAL_LOCKS": "0"}, check=False, timeout=30,
            )  # fmt: skip
        except GitError:
            return None
        return done.stdout if done.returncode == 0 else None


def output_of(done: subprocess.CompletedProcess[bytes]) -> str:
    return (done.stdout + done.stderr).decode("utf-8", "replace").strip()


def describe(args: Sequence[str], done: subprocess.CompletedProcess[bytes]) -> str:
    said = " ".join(output_of(done).split()) or f"exit {done.returncode}"
    return f"'git {' '.join(args[:3])}' failed: {said[:300]}"


def find(folder: Path) -> Repository | None:
    """The repository that holds `folder` (git's own search upward, with SAFE_CONFIG), or None:
    not a repository, or no git on PATH. Called once, at a run's start; every later command is
    pinned to its answer."""
    try:
        done = subprocess.run(
            hardened(["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"]),
            cwd=folder,
            env=git_env(),
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.decode("utf-8", "replace").splitlines()
    if done.returncode != 0 or len(lines) != 3 or not lines[0]:
        return None
    top, git_dir = Path(lines[0]).resolve(), Path(lines[1]).resolve()
    return Repository(top, git_dir, (folder / lines[2]).resolve())


def toplevel(folder: Path) -> Path | None:
    """The top folder of the git work tree that holds `folder`, or None (not a repository, or
    no git on PATH)."""
    repo = find(folder)
    return repo.top if repo is not None else None
