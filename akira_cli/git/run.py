"""A git-native run (docs/design.md): the task branch, and one commit per completed step.

A step's commit is made from a temporary index (`GIT_INDEX_FILE`): HEAD's tree, the files the
step's attempts changed as the work tree has them, and the task file with the step's tick (put
in by the loop after the save, so the commit carries it already). The person's index keeps every
other path as it was; only the paths akira committed are set to the new commit in it, so that
`git status` stays quiet. With `git.verify` the repository's hooks run in the step's sandbox
(`verify.py`), and a hook that refuses is a `CommitRefused` with everything it printed. A
repository a step made inside the work tree is never committed (`nested.py`), nor are lines that
add a secret (`secret_scan.py`). The commit message ends with `Akira-*` trailers (`step_message.py`
writes them and reads them back: after a kill -9 a resume finds a commit the state does not know
of by them)."""

from __future__ import annotations

import os
import re
import shlex
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from akira_cli.errors import AkiraError
from akira_cli.git.base import base_commit, refuse_elsewhere, task_branch
from akira_cli.git.nested import nested_repositories, outside_nested, refuse_nested_start
from akira_cli.git.pinned import Git, Repository, find, output_of
from akira_cli.git.plumbing import Plumbing
from akira_cli.git.secret_scan import refuse_secrets
from akira_cli.git.verify import CommitHooks
from akira_cli.redaction import redact
from akira_cli.sections import GitSettings
from akira_cli.state.git_record import GitRecord
from akira_cli.state.models import LoopState
from akira_cli.workspace import in_quotes

NEVER_COMMITTED = (".state", ".hooks", ".akira", "Logs", "Needs_Action", "config")
"""akira's control plane and reports, at the workspace's top: never in a commit."""
EXCLUDED = (
    ".state/",
    ".hooks/",
    ".akira/",
    "Logs/completion_reports/",
    "Logs/progress_reports/",
    "Needs_Action/escalation_*.md",
    "Needs_Action/intervention_*.md",
)
"""Listed in .git/info/exclude (never a tracked .gitignore), so that `git status` stays quiet:
akira's folders, and its reports by name (a repository's own Logs/ or Needs_Action/ files still
show)."""
FALLBACK_AUTHOR = ("-c", "user.name=akira", "-c", "user.email=akira@localhost")
SUBJECT_WIDTH = 72
SMALL_INDEX = 256 * 1024
"""An index file smaller than this (some 2,500 files): one `git commit` is cheaper than the
three plumbing commands that spare it a refresh of every entry."""


class GitRun:
    """One loop's git side: `root` is the repository, `workspace` the workspace folder in it."""

    def __init__(
        self,
        repo: Repository,
        workspace: Path,
        settings: GitSettings,
        hooks: Callable[[Git], CommitHooks] | None = None,
    ) -> None:
        self.git = Git(repo)
        self.root = repo.top
        self.workspace = workspace
        self.settings = settings
        self.plumb = Plumbing(self.git)
        self.hooks = hooks(self.git) if hooks is not None else None
        """The repository's hooks, run in the step's sandbox (`git.verify`): made by `hooks`."""
        self._author: bool | None = None

    @classmethod
    def detect(
        cls,
        workspace: Path,
        task: Path,
        settings: GitSettings,
        no_git: bool = False,
        root: str | None = None,
        hooks: Callable[[Git], CommitHooks] | None = None,
    ) -> GitRun | None:
        """The run's git side when the task file lies in a git work tree and git is on; None
        otherwise. `git.enabled: true` outside a repository is an error. `root`: the repository
        the run started in, as its state records it: looked for there, never from the task's
        folder, where a step could have made a `.git` of its own."""
        if no_git or settings.enabled is False:
            return None
        repo = find(Path(root) if root else task.parent)
        if root and (repo is None or repo.top != Path(root)):
            raise AkiraError(
                f"this run's repository {shlex.quote(root)} is no longer a git work tree there; "
                "put it back, or start the task again"
            )
        if repo is None:
            if settings.enabled is True:
                raise AkiraError(
                    f"git.enabled is true, but {task} is not in a git work tree; run 'git init' in its "
                    "repository, or set git.enabled: auto"
                )
            return None
        if not root:
            refuse_nested_start(repo, workspace.resolve(), task)
        return cls(repo, workspace.resolve(), settings, hooks)

    # -- start and resume -----------------------------------------------------------------------

    def preflight(self, task: Path | None = None) -> str:
        """HEAD's commit; refuses, before anything is written, what `start` could not do with
        the task file `task`."""
        head = self.git.out("rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
        if not head:
            first = self.shown("commit", "--allow-empty", "-m", "First commit")
            raise AkiraError(
                f"{self.shown_root} has no commit yet, so there is no HEAD to branch from; "
                f"run {in_quotes(first)}"
            )
        if not self.settings.branch and not self.current_branch():
            switch = self.shown("switch", "<branch>")
            raise AkiraError(
                f"HEAD is detached in {self.shown_root} and git.branch is empty; run {in_quotes(switch)} "
                "or set git.branch"
            )
        push = self.settings.push
        if push and not re.search(r"[:/\\]", push) and not self.git.ok("remote", "get-url", push):
            remotes = ", ".join(self.git.out("remote", check=False).split()) or "none"
            raise AkiraError(
                f"git.push names {push}, which is not a remote of {self.shown_root} "
                f"(its remotes: {remotes}); "
                f"add it with {in_quotes(self.shown('remote', 'add', push, '<url>'))}, or fix git.push"
            )
        base = base_commit(self.git, self.settings, self.shown_root)
        if task is not None:
            refuse_elsewhere(self.git, self.settings, base, self.relative(task), self.current_branch())
        return head

    def start(self, state: LoopState, feature: str) -> GitRecord:
        """Creates and checks out the task branch from `git.base`, else from HEAD, carrying
        uncommitted changes along as `git switch -c` does (a change git would have to overwrite
        is refused, never lost); or takes the current branch with `git.branch: ""`."""
        head = self.preflight()
        started_on, base = self.current_branch(), base_commit(self.git, self.settings, self.shown_root)
        target = self.settings.base or started_on  # where the work is merged and its pull request points
        if not self.settings.branch:
            record = GitRecord(
                branch=started_on, base=head, started_on=target, created=False, root=str(self.root)
            )
        else:
            name = self.free_name(task_branch(self.settings.branch, feature, state.task_id))
            switch = ("switch", "-c", name, *([base] if base else []))
            done = self.git.run(*switch, check=False)
            if done.returncode != 0:
                said = " ".join(output_of(done).split())[:240]
                raise AkiraError(
                    f"git refused to create and check out the task branch {name} in {self.root}: {said}; "
                    f"see why with '{self.shown(*switch)}'"
                )
            record = GitRecord(
                branch=name, base=base or head, started_on=target, created=True, root=str(self.root)
            )
        self.exclude()
        return record

    def check_resume(self, record: GitRecord) -> None:
        """`resume` never switches branches under a person's feet."""
        current = self.current_branch()
        self.exclude()  # a run started by an older akira lacks the newer lines
        if current != record.branch:
            where = f"on {current}" if current else "detached"
            raise AkiraError(
                f"HEAD is {where}, not on the task branch {record.branch}; run "
                f"{in_quotes(self.shown('switch', record.branch))}, then resume again"
            )

    def current_branch(self) -> str:
        """The branch HEAD is on, "" when detached."""
        return self.plumb.head()[1].removeprefix("refs/heads/")

    def free_name(self, wanted: str) -> str:
        if not self.git.ok("check-ref-format", "--branch", wanted):
            raise AkiraError(
                f"git.branch gives '{wanted}', which is not a valid branch name; change git.branch"
            )
        name, number = wanted, 1
        while self.git.ok("show-ref", "--verify", "-q", f"refs/heads/{name}"):
            number += 1
            name = f"{wanted}-{number}"
        return name

    def exclude(self) -> None:
        """akira's own folders in .git/info/exclude, relative to the repository's top."""
        path = self.git.repo.common_dir / "info" / "exclude"
        prefix = self.relative(self.workspace)
        wanted = [f"/{prefix}/{name}" if prefix else f"/{name}" for name in EXCLUDED]
        try:
            have = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            have = []
        missing = [line for line in wanted if line not in have]
        if missing:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as handle:
                handle.write(
                    "".join(
                        f"{line}\n" for line in ["# akira's state, hooks, worktrees and reports", *missing]
                    )
                )

    # -- commits ----------------------------------------------------------------------------------

    def commit(
        self,
        subject: str,
        trailers: dict[str, str],
        paths: Iterable[Path],
        replaced: dict[Path, bytes] | None = None,
        *,
        seen_by_git: bool = False,
        changed_now: set[str] | None = None,
    ) -> str | None:
        """Commits `paths` as the work tree has them (deleted ones as deletions) and `replaced`
        files with the given bytes, on HEAD; None when neither holds a change (a step whose
        only change is its tick gets a commit of the tick alone). `seen_by_git`:
        the paths come from `git status`, so none is ignored; `changed_now`: what `git status`
        shows changed right now (then git is not asked again)."""
        names = self.committable(paths, seen_by_git)
        blobs = {self.relative(path): data for path, data in (replaced or {}).items() if self.inside(path)}
        names = sorted(set(names) - set(blobs))
        if changed_now is not None:
            names = [name for name in names if name in changed_now]
        if not names and not blobs:
            return None
        message = redact(f"{subject}\n\n" + "".join(f"{key}: {value}\n" for key, value in trailers.items()))
        head, _ = self.plumb.head()
        with tempfile.TemporaryDirectory(prefix="akira-index-") as folder:
            shared, temp = Path(folder), Path(folder) / "index"
            env = {"GIT_INDEX_FILE": str(temp)}
            copied = self.plumb.copy_index(temp)
            ticks = [
                arg
                for name, data in sorted(blobs.items())
                for arg in ("--cacheinfo", f"{self.file_mode(name)},{self.plumb.blob(data)},{name}")
            ]
            self.git.run(
                "update-index", "--add", "--remove", *ticks, "-z", "--stdin", env=env, stdin=_z(names)
            )
            if (changed_now is None or not names) and not self.differs(env, [*names, *sorted(blobs)]):
                return None  # nothing changed, not even a tick
            refuse_secrets(self.git, env, names)  # push protection: the step's added lines
            if self.hooks is not None:
                message = self.hooks.before(shared, temp, message)
            author = () if self.has_author() else FALLBACK_AUTHOR
            if copied is not None and copied[1] < SMALL_INDEX:
                self.git_commit(author, env, message)  # one process
                sha, _ = self.plumb.head()
            else:
                sha = self.plain_commit(author, env, message, subject, head)
            self.plumb.put_back(temp, copied, sorted({*names, *blobs}))
            if self.hooks is not None:
                self.hooks.after(shared, temp)
        return sha

    def git_commit(self, author: tuple[str, ...], env: dict[str, str], message: str) -> None:
        """`git commit` on the temporary index (no hook runs on the host)."""
        self.git.run(*author, "commit", "-q", "--no-verify", "-F", "-", env=env, stdin=message.encode())

    def plain_commit(
        self, author: tuple[str, ...], env: dict[str, str], message: str, subject: str, head: str
    ) -> str:
        """The same commit in a large repository: its tree, the commit and the branch moved from
        `head` to it (a compare-and-swap: a HEAD that moved meanwhile is an error), without `git
        commit`'s refresh of every index entry."""
        tree = self.git.out("write-tree", env=env)
        sha = self.git.out(*author, "commit-tree", tree, "-p", head, "-F", "-", stdin=message.encode())
        self.git.run("update-ref", "-m", f"commit: {subject}", "HEAD", sha, head)
        return sha

    def differs(self, env: dict[str, str], names: list[str]) -> bool:
        """Whether the temporary index differs from HEAD at `names`."""
        if not names:
            return False
        quiet = self.git.run("diff-index", "--cached", "--quiet", "HEAD", "--", *names, env=env, check=False)
        return quiet.returncode != 0

    def repair_index(self, task_id: str) -> list[str]:
        from akira_cli.git.repair import repair_index

        return repair_index(self.git, task_id)

    def committable(self, paths: Iterable[Path], seen_by_git: bool = False) -> list[str]:
        """Repository-relative names of `paths`, without akira's control plane and reports and
        without what the repository ignores (`seen_by_git`: git's own view has none of those)."""
        names = []
        for path in paths:
            if not self.inside(path) or self.is_control(path):
                continue
            names.append(self.relative(path))
        names = outside_nested(self.root, names)
        if not names or seen_by_git:
            return names
        ignored = self.git.run("check-ignore", "-z", "--stdin", stdin=_z(names), check=False).stdout
        dropped = set(ignored.decode("utf-8", "replace").split("\0"))
        return [name for name in names if name not in dropped]

    def nested(self, paths: Iterable[Path]) -> list[str]:
        """The repositories a step made inside the work tree that `paths` are or lie in."""
        return nested_repositories(self.root, [self.relative(path) for path in paths if self.inside(path)])

    def is_control(self, path: Path) -> bool:
        try:
            top = Path(os.path.abspath(path)).relative_to(self.workspace).parts[:1]
        except ValueError:
            return False
        return bool(top) and top[0] in NEVER_COMMITTED

    def has_author(self) -> bool:
        """Whether git config names an author (asked once a run)."""
        if self._author is None:
            names = self.git.out("config", "--get-regexp", r"^user\.(name|email)$", check=False)
            keys = {line.split(" ", 1)[0] for line in names.splitlines()}
            self._author = {"user.name", "user.email"} <= keys
        return self._author

    def file_mode(self, name: str) -> str:
        """The mode git records for a path of the work tree: a symlink, executable or not."""
        try:
            info = os.lstat(self.root / name)
        except OSError:
            return "100644"
        if stat.S_ISLNK(info.st_mode):
            return "120000"
        return "100755" if info.st_mode & 0o100 else "100644"

    # -- helpers ----------------------------------------------------------------------------------

    def inside(self, path: Path) -> bool:
        return os.path.abspath(path).startswith(f"{self.root}{os.sep}") or os.path.abspath(path) == str(
            self.root
        )

    def relative(self, path: Path) -> str:
        """The repository-relative name (a symlink is named, not followed)."""
        name = Path(os.path.relpath(os.path.abspath(path), self.root)).as_posix()
        return "" if name == "." else name

    @property
    def shown_root(self) -> str:
        return shlex.quote(str(self.root))

    def shown(self, *args: str) -> str:
        """A git command a person can paste, from any folder."""
        return shlex.join(["git", "-C", str(self.root), *args])


def subject(step_id: str, title: str) -> str:
    """`<id> <title>`, cut so the line stays within 72 characters."""
    line = " ".join(f"{step_id} {title}".split())
    return line if len(line) <= SUBJECT_WIDTH else line[: SUBJECT_WIDTH - 1].rstrip() + "…"


def _lines(names: Iterable[str]) -> bytes:
    return "".join(f"{name}\n" for name in names).encode()


def _z(names: Iterable[str]) -> bytes:
    return b"".join(name.encode() + b"\0" for name in names)
