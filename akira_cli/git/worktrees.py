"""Worktree slots for parallel steps (SPEC 13): at most N worktrees per task under
`.akira/worktrees/<task_id>/<slot>`, each switched from step to step.

A fresh `git worktree add` checks out every tracked file; a slot that is reused is switched to
the next step's branch with `checkout -f -B` and cleaned, which rewrites only what differs. A
slot brings what git does not: the files `.worktreeinclude` names that git ignores (copied) and
the `git.worktree_link` folders (symlinked), so that agents and checks find their environment.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import threading
from pathlib import Path

from akira_cli.errors import AkiraError
from akira_cli.git.cli import Git, GitError
from akira_cli.git.run import FALLBACK_AUTHOR, GitRun

STEP_REFS = "refs/heads/akira-step"
_REF_BAD = re.compile(r"[^A-Za-z0-9._-]")
INCLUDE_FILE = ".worktreeinclude"


def require_git(parallel: int, git: GitRun | None, where: str, no_git: bool = False) -> None:
    """Parallel steps run in worktrees: without git (or with --no-git) they are refused."""
    if git is None and parallel > 1:
        raise AkiraError(
            f"parallel steps ({parallel}) run in git worktrees, but {where} is not in a git work "
            f"tree{' (--no-git)' if no_git else ''}; run 'git init' and commit, or use --parallel 1"
        )


def ref_part(text: str) -> str:
    """`text` as one part of a branch name: characters git refuses (such as `~`) become `_`."""
    part = _REF_BAD.sub("_", text).strip(".") or "_"
    return part[:-5] + "_lock" if part.endswith(".lock") else part


def step_branch(task_id: str, step_id: str) -> str:
    return f"akira-step/{ref_part(task_id)}/{ref_part(step_id)}"


class Slots:
    def __init__(self, run: GitRun, task_id: str, links: list[str]) -> None:
        self.run = run
        self.task_id = task_id
        self.links = links
        self.folder = run.workspace / ".akira" / "worktrees" / ref_part(task_id)
        self._extras: tuple[list[str], list[str]] | None = None
        self._adding = threading.Lock()
        self.clean: dict[Path, bool] = {}
        """Slots whose last step committed every file it changed: nothing untracked to clean."""

    def path(self, slot: int) -> Path:
        return self.folder / str(slot)

    def prune(self) -> None:
        """Once, before a wave's slots are taken on several threads at once: git forgets the
        worktrees whose folders are gone (a prune while another thread adds one could drop it)."""
        self.run.git.run("worktree", "prune", check=False)

    def take(self, slot: int, step_id: str, tip: str) -> Path:
        """Slot `slot` on the step's branch at `tip`, clean; made on first use. Different slots
        are taken on different threads at once."""
        path, branch = self.path(slot), step_branch(self.task_id, step_id)
        if (path / ".git").is_file():
            git = Git(path)
            git.run("checkout", "-q", "-f", "--no-recurse-submodules", "-B", branch, tip)
            if not self.clean.pop(path, False):
                # Ignored files (the environment brought in) stay. A linked folder is a symlink,
                # which a `.venv/` pattern does not match (git counts a link as a file): kept by name.
                keep = [arg for name in self.extras()[1] for arg in ("-e", f"/{name}")]
                git.run("clean", "-q", "-f", "-d", *keep)
            self.link(path)  # a link an agent removed comes back
            return path
        with self._adding:  # one `worktree add` at a time: they share .git/worktrees and refs
            shutil.rmtree(path, ignore_errors=True)  # a folder git no longer knows as a worktree
            path.parent.mkdir(parents=True, exist_ok=True)
            self.run.git.run("worktree", "add", "-q", "-f", "-B", branch, str(path), tip)
        self.bring(path)
        return path

    def bring(self, path: Path) -> None:
        """The environment a fresh worktree lacks: `.worktreeinclude`'s ignored files, copied,
        and the `git.worktree_link` folders that git ignores, symlinked."""
        copies, _ = self.extras()
        for name in copies:
            target = path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(OSError):
                shutil.copy2(self.run.root / name, target, follow_symlinks=False)
        self.link(path)

    def link(self, path: Path) -> None:
        """The `git.worktree_link` folders, symlinked into the slot where they are missing."""
        for name in self.extras()[1]:
            with contextlib.suppress(FileExistsError):
                os.symlink(self.run.root / name, path / name, target_is_directory=True)

    def extras(self) -> tuple[list[str], list[str]]:
        """What `bring` copies and links (looked up once a run)."""
        if self._extras is None:
            git, copies = self.run.git, []
            if (self.run.root / INCLUDE_FILE).is_file():
                listed = git.run(
                    "ls-files", "-z", "-o", "-i", f"--exclude-from={INCLUDE_FILE}", check=False
                ).stdout
                named = [name for name in listed.decode("utf-8", "replace").split("\0") if name]
                copies = self.ignored(named)
            present = [name for name in self.links if (self.run.root / name).is_dir() and "/" not in name]
            links = [name.rstrip("/") for name in self.ignored([f"{name}/" for name in present])]
            self._extras = (copies, links)
        return self._extras

    def ignored(self, names: list[str]) -> list[str]:
        if not names:
            return []
        # exit 1: none of them is ignored, which is an answer, not a failure
        done = self.run.git.run("check-ignore", "-z", "--stdin", stdin=_z(names), check=False)
        return [name for name in done.stdout.decode("utf-8", "replace").split("\0") if name]

    def commit(self, path: Path, step_id: str, names: list[str], message: str) -> str | None:
        """The step's work as one commit on its branch in the slot (no hooks: they run when the
        step lands on the task branch); None when `names` hold no change."""
        if not names:
            return None
        git = Git(path)
        git.run("add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", stdin=_z(names))
        if git.ok("diff-index", "--cached", "--quiet", "HEAD"):
            return None
        tree = git.out("write-tree")
        author = () if self.run.has_author() else FALLBACK_AUTHOR
        sha = git.out(*author, "commit-tree", tree, "-p", "HEAD", "-F", "-", stdin=message.encode())
        git.run("update-ref", f"refs/heads/{step_branch(self.task_id, step_id)}", sha)
        return sha

    def patch(self, path: Path, names: list[str]) -> tuple[bytes, str]:
        """A failed attempt's changes in its slot: the patch (binary-safe) and its `--stat`.
        The slot's index is akira's own; the next `take` resets it."""
        if not names:
            return b"", ""
        git = Git(path)
        git.run("add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", stdin=_z(names))
        return git.run("diff", "--cached", "--binary", "HEAD").stdout, git.out(
            "diff", "--cached", "--stat", "HEAD"
        )

    def drop_branch(self, step_id: str) -> None:
        """A step branch that has served its purpose (landed or collided), unless a slot holds it."""
        self.run.git.run("update-ref", "-d", f"refs/heads/{step_branch(self.task_id, step_id)}", check=False)

    def listing(self) -> list[str]:
        """The task's worktrees and step branches that exist now (for the escalation file)."""
        kept = [str(path) for path in sorted(self.folder.glob("*")) if (path / ".git").is_file()]
        prefix = f"{STEP_REFS}/{ref_part(self.task_id)}/"
        refs = self.run.git.out("for-each-ref", "--format=%(refname)", prefix, check=False)
        return kept + [ref.removeprefix("refs/heads/") for ref in refs.splitlines() if ref]

    def remove(self) -> int:
        """Every worktree and step branch of the task; how many worktrees there were."""
        removed = 0
        for path in sorted(self.folder.glob("*")) if self.folder.is_dir() else []:
            done = self.run.git.run("worktree", "remove", "--force", "--force", str(path), check=False)
            removed += 1
            if done.returncode != 0:
                shutil.rmtree(path, ignore_errors=True)
        with contextlib.suppress(OSError):
            self.folder.rmdir()
        self.run.git.run("worktree", "prune", check=False)
        prefix = f"{STEP_REFS}/{ref_part(self.task_id)}/"
        refs = self.run.git.out("for-each-ref", "--format=delete %(refname)", prefix, check=False)
        if refs:
            with contextlib.suppress(GitError):
                self.run.git.run("update-ref", "--stdin", stdin=f"{refs}\n".encode())
        return removed


def _z(names: list[str]) -> bytes:
    return b"".join(name.encode() + b"\0" for name in names)
