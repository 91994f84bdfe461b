"""Worktree slots for parallel `[P]` steps: at most N worktrees per task under
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
import shlex
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path, PurePath

from akira_cli import nofollow
from akira_cli.errors import AkiraError
from akira_cli.git.pinned import Git, GitError, Repository
from akira_cli.git.plumbing import STEP_REFS
from akira_cli.git.run import FALLBACK_AUTHOR, GitRun
from akira_cli.workspace import in_quotes

_REF_BAD = re.compile(r"[^A-Za-z0-9._-]")
INCLUDE_FILE = ".worktreeinclude"
MAX_INCLUDE = 256 * 1024


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


def slot_git(main: Git, path: Path) -> Git:
    """git in the worktree at `path`, pinned to the folder the main repository keeps for it
    (found from that side, by the `gitdir` file in each of its `worktrees/*`): the slot's own
    `.git` file lies in the step's work tree, and is never read."""
    common = main.repo.common_dir
    wanted = os.path.join(os.path.realpath(path), ".git")
    try:
        entries = list(os.scandir(common / "worktrees"))
    except OSError:
        entries = []
    for entry in entries:
        try:
            named = (Path(entry.path) / "gitdir").read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
        if named == wanted:
            return Git(Repository(path, Path(entry.path), common))
    prune = shlex.join(["git", "-C", str(main.root), "worktree", "prune"])
    raise GitError(
        f"{shlex.quote(str(path))} is not a worktree git knows; run {in_quotes(prune)}, then resume"
    )


def slot_view(main: Git, path: Path) -> Callable[[], bytes | None]:
    """The worktree's `git status`, for a witness (None until the slot is made)."""

    def look() -> bytes | None:
        try:
            return slot_git(main, path).look()
        except GitError:
            return None

    return look


class Slots:
    """The task's slots. akira makes, reuses and removes them without following a link (a step
    may plant one where a slot goes, `nofollow`): a planted link is refused, or removed by
    itself, never followed, and nothing outside `.akira/worktrees/` is ever deleted."""

    def __init__(
        self, run: GitRun, task_id: str, links: list[str], warn: Callable[[str], None] = lambda _: None
    ) -> None:
        self.run = run
        self.task_id = task_id
        self.links = links
        self.warn = warn
        self.parts = (".akira", "worktrees", ref_part(task_id))
        """The slots' folder below the workspace."""
        self.folder = run.workspace.joinpath(*self.parts)
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

    def prepare(self) -> None:
        """The slots' folder, made before any step runs, so that no step can put a link there first."""
        os.close(nofollow.open_folder(self.run.workspace, self.parts, create=True))

    def take(self, slot: int, step_id: str, tip: str) -> Path:
        """Slot `slot` on the step's branch at `tip`, clean; made on first use. Different slots
        are taken on different threads at once. A link on the way is refused (`AkiraError`)."""
        try:
            with nofollow.folder(self.run.workspace, self.parts, create=True) as fd:
                if worktree_at(fd, str(slot)) and self.known(slot):
                    return self.switch(slot, step_id, tip)
                with self._adding:  # one `worktree add` at a time: they share .git/worktrees and refs
                    nofollow.remove(fd, str(slot))  # git no longer knows it as a worktree (or a link)
                    branch, path = step_branch(self.task_id, step_id), self.path(slot)
                    self.run.git.run("worktree", "add", "-q", "-f", "-B", branch, str(path), tip)
        except nofollow.Refused as exc:
            raise AkiraError(f"worktree slot {self.path(slot)} not made: {exc}, then resume") from None
        self.bring(self.path(slot))
        return self.path(slot)

    def known(self, slot: int) -> bool:
        """Whether git knows the slot as one of its worktrees (else it is made again)."""
        try:
            slot_git(self.run.git, self.path(slot))
        except GitError:
            return False
        return True

    def switch(self, slot: int, step_id: str, tip: str) -> Path:
        """A slot made before, switched to the step's branch at `tip` and cleaned."""
        path, branch = self.path(slot), step_branch(self.task_id, step_id)
        git = slot_git(self.run.git, path)
        git.run("checkout", "-q", "-f", "--no-recurse-submodules", "-B", branch, tip)
        if not self.clean.pop(path, False):
            # Ignored files (the environment brought in) stay. A linked folder is a symlink,
            # which a `.venv/` pattern does not match (git counts a link as a file): kept by name.
            keep = [arg for name in self.extras()[1] for arg in ("-e", f"/{name}")]
            git.run("clean", "-q", "-f", "-d", *keep)
        self.link(path)  # a link an agent removed comes back
        return path

    def bring(self, path: Path) -> None:
        """The environment a fresh worktree lacks: `.worktreeinclude`'s ignored files, copied,
        and the `git.worktree_link` folders that git ignores, symlinked."""
        copies, _ = self.extras()
        for name in copies:
            try:
                nofollow.copy(self.run.root, path, PurePath(name))
            except nofollow.Refused as exc:
                self.warn(f"{INCLUDE_FILE}: {name} not copied into the worktree: {exc}")
            except OSError:
                continue
        self.link(path)

    def link(self, path: Path) -> None:
        """The `git.worktree_link` folders, symlinked into the slot where they are missing."""
        for name in self.extras()[1]:
            with contextlib.suppress(FileExistsError):
                os.symlink(self.run.root / name, path / name, target_is_directory=True)

    def extras(self) -> tuple[list[str], list[str]]:
        """What `bring` copies and links (looked up once a run)."""
        if self._extras is None:
            copies = self.ignored(self.included())
            present = [name for name in self.links if (self.run.root / name).is_dir() and "/" not in name]
            links = [name.rstrip("/") for name in self.ignored([f"{name}/" for name in present])]
            self._extras = (copies, links)
        return self._extras

    def included(self) -> list[str]:
        """The untracked files `.worktreeinclude` names. The file is read as akira reads the
        work tree (a link out of it, a FIFO: refused and said), and git is given akira's copy."""
        try:
            patterns = nofollow.read(self.run.root, INCLUDE_FILE, MAX_INCLUDE)
        except FileNotFoundError:
            return []
        except OSError as exc:
            self.warn(f"{INCLUDE_FILE} not read: {exc}")
            return []
        with tempfile.NamedTemporaryFile(prefix="akira-worktreeinclude-") as copy:
            copy.write(patterns)
            copy.flush()
            listed = self.run.git.run(
                "ls-files", "-z", "-o", "-i", f"--exclude-from={copy.name}", check=False
            )
        return [name for name in listed.stdout.decode("utf-8", "replace").split("\0") if name]

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
        git = slot_git(self.run.git, path)
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
        git = slot_git(self.run.git, path)
        git.run("add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", stdin=_z(names))
        return git.run("diff", "--cached", "--binary", "HEAD").stdout, git.out(
            "diff", "--cached", "--stat", "HEAD"
        )

    def drop_branch(self, step_id: str) -> None:
        """A step branch that has served its purpose (landed or collided), unless a slot holds it."""
        self.run.git.run("update-ref", "-d", f"refs/heads/{step_branch(self.task_id, step_id)}", check=False)

    def listing(self) -> list[str]:
        """The task's worktrees and step branches that exist now (for the escalation file)."""
        try:
            with nofollow.folder(self.run.workspace, self.parts) as fd:
                kept = [str(self.folder / name) for name in sorted(os.listdir(fd)) if worktree_at(fd, name)]
        except OSError:
            kept = []
        prefix = f"{STEP_REFS}/{ref_part(self.task_id)}/"
        refs = self.run.git.out("for-each-ref", "--format=%(refname)", prefix, check=False)
        return kept + [ref.removeprefix("refs/heads/") for ref in refs.splitlines() if ref]

    def remove(self) -> int:
        """Every worktree and step branch of the task; how many worktrees there were. Only what
        lies in the slots' folder is deleted: a link there is removed by itself, never followed."""
        removed = 0
        try:
            with nofollow.folder(self.run.workspace, self.parts) as fd:
                for name in sorted(os.listdir(fd)):
                    slot = worktree_at(fd, name)
                    removed += slot
                    if slot and self.run.git.ok(
                        "worktree", "remove", "--force", "--force", str(self.folder / name)
                    ):
                        continue
                    if nofollow.remove(fd, name):
                        self.warn(f"{self.folder / name} was a symbolic link; akira removed the link only")
            with nofollow.folder(self.run.workspace, self.parts[:-1]) as fd:
                os.rmdir(self.parts[-1], dir_fd=fd)
        except nofollow.Refused as exc:
            self.warn(f"the task's worktrees were not removed: {exc}; nothing was deleted there")
        except OSError:
            pass  # no slots' folder, or one that still holds what could not be removed
        self.run.git.run("worktree", "prune", check=False)
        prefix = f"{STEP_REFS}/{ref_part(self.task_id)}/"
        refs = self.run.git.out("for-each-ref", "--format=delete %(refname)", prefix, check=False)
        if refs:
            with contextlib.suppress(GitError):
                self.run.git.run("update-ref", "--stdin", stdin=f"{refs}\n".encode())
        return removed


def worktree_at(fd: int, name: str) -> bool:
    """Whether `name` in the open slots' folder is a slot made before: a folder (not a link)
    holding a `.git` file."""
    try:
        if not stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            return False
        return stat.S_ISREG(os.stat(f"{name}/.git", dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _z(names: list[str]) -> bytes:
    return b"".join(name.encode() + b"\0" for name in names)
