"""The loop's commits (git-native runs): one per completed step, one for the move to Done/, and the
commits a kill -9 left unrecorded, found again by their trailers.

A step's commit is made when its evaluation passed and before the step is recorded complete, so
that a hook that refuses it fails the attempt. It holds the files the step's attempts changed and
the task file with the step's tick (the loop writes the same tick to the file after its save).
"""

from __future__ import annotations

from pathlib import Path

from akira_cli.changes import Snapshot
from akira_cli.errors import BranchMoved, NeedsPerson
from akira_cli.events import EventBus, EventType, printable
from akira_cli.failures import signature
from akira_cli.fileio import atomic_write
from akira_cli.git import attempts, hints, moves
from akira_cli.git.branches import BranchWatch
from akira_cli.git.nested import left_out
from akira_cli.git.pinned import GitError
from akira_cli.git.run import GitRun, subject
from akira_cli.git.step_message import Found, Message, commits_of, task_bytes, ticked_bytes, trailers
from akira_cli.git.verify import CommitRefused
from akira_cli.state.models import LoopState
from akira_cli.state.records import Attempt, StepRecord
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.templates import render
from akira_cli.workspace import Workspace, in_quotes

IN_HEAD = "HEAD"
"""A file akira committed and nobody changed since: the same as in HEAD, nothing to hash."""


class StepCommits:
    def __init__(self, run: GitRun, state: LoopState, workdir: Path, bus: EventBus) -> None:
        self.run = run
        self.state = state
        self.workdir = workdir
        self.bus = bus
        self.prompt_note = "\n\n" + render("commits.md")
        self.seen_by_git = workdir.resolve() == run.root
        """The attempts' changed files come from `git status` (the work folder is the
        repository's top: the witness looks through `run.git`)."""
        self.look = run.git.look if self.seen_by_git else None
        self._head = ""
        self.branches = BranchWatch(run)
        self._dirty: dict[str, str | None] = {}
        run.plumb.heal()  # a lock a kill -9 left in the middle of putting the index back
        self._hashed: dict[str, tuple[tuple[int, int], str | None]] = {}
        """Blobs of changed files by their (mtime, size), so that an unchanged one is not hashed again."""
        self.marks: dict[str, str] = {}
        """Running steps' `[-]` boxes and what they were before (the loop's `TaskBook.marks`)."""
        self._home_ignored: bool | None = None
        self.messages: dict[str, Message] = {}
        """The commits of steps that are not in the task file, by step id."""

    def before(self, files: Snapshot | None) -> None:
        """Before an attempt: where HEAD is (to see what an agent committed itself), and the
        work tree as HEAD plus the blobs of the paths already changed (a failed attempt's
        patch is taken against it, and `git.failed_attempt: reset` goes back to it). `files`:
        the witness's look, which is `git status` when the work folder is the repository."""
        self._head = self.run.plumb.head()[0]
        if files is None or not self.seen_by_git:
            self._dirty = attempts.dirty(self.run)
            return
        task = self.run.relative(Path(self.state.task_path))
        wanted = {
            name: seen
            for name, seen in files.items()
            if name != task and not self.run.is_control(self.workdir / name)
        }
        stale = [name for name, seen in wanted.items() if self._hashed.get(name, ((-2, -2), None))[0] != seen]
        if stale:
            for name, blob in attempts.blobs(self.run, stale).items():
                self._hashed[name] = (wanted[name], blob)
        self._hashed = {name: self._hashed[name] for name in wanted}
        self._dirty = {name: blob for name, (_, blob) in self._hashed.items() if blob != IN_HEAD}

    def commit(
        self,
        step: Step,
        task: TaskFile,
        record: StepRecord,
        attempt: Attempt,
        files: Snapshot | None,
        paths: list[Path] | None = None,
    ) -> None:
        """The completed step's commit; a refusing hook (or git failing) fails the attempt.
        `files`: the witness's look after the attempt (`git status`, when it is git's view);
        `paths`: what a parallel step's landing wrote (then those are the step's files)."""
        record_git = self.state.git
        if record_git is None:
            return
        self.check_branch(step)
        if paths is None:
            self.note_agent_commits(step, attempt)
            paths = [
                self.workdir / name for kept in [*record.attempts, attempt] for name in kept.files_changed
            ]
        self.note_nested(step, paths)
        task_path, folders = self.moved(files)
        paths = moves.outside(paths, folders)
        message = self.messages.get(step.id)
        ticked = ticked_bytes(task_path, task, step, self.state, self.marks) if message is None else None
        ticked = None if self.home_ignored() else ticked
        title = message.subject if message is not None else subject(step.id, step.title)
        changed_now = set(files) if files is not None and self.seen_by_git else None
        try:
            sha = self.run.commit(
                title,
                trailers(self.state.task_id, step, attempt, message),
                paths,
                {self.home: ticked} if ticked else None,  # where the branch keeps it
                seen_by_git=self.seen_by_git,
                changed_now=changed_now,
            )
        except CommitRefused as exc:
            fail(attempt, exc.output or str(exc))
            return
        except GitError as exc:
            fail(attempt, f"{exc}\n{exc.output}".strip())
            return
        attempt.commit = sha
        if sha is not None:
            if changed_now is not None and files is not None:  # as in HEAD now, while unchanged
                for name in changed_now & {self.run.relative(path) for path in set(paths)}:
                    self._hashed[name] = (files[name], IN_HEAD)
            self.bus.emit(EventType.COMMIT, step.id, commit=sha, branch=record_git.branch)
            self.push()

    def note_agent_commits(self, step: Step, attempt: Attempt) -> None:
        """The commits the agent made itself since the attempt started: kept in the attempt, and
        a warning (they stay on the branch, below the step's commit)."""
        head = self.run.plumb.head()[0]
        if self._head and head != self._head:
            made = self.run.git.out("log", "--format=%h %s", f"{self._head}..{head}", check=False)
            attempt.agent_commits = made.splitlines()[:20]
            self.bus.emit(EventType.WARNING, step.id, message=f"the agent committed itself: {made[:300]}")

    @property
    def home(self) -> Path:
        """Where the task file lies on the task branch: its place at `loop start`."""
        return moves.home(self.run.workspace, self.state)

    def home_ignored(self) -> bool:
        """The task file is untracked and the repository ignores it (a `.gitignore`'d spec
        folder): its ticks stay out of every commit, as any ignored file does. Asked once."""
        if self._home_ignored is None:
            self._home_ignored = hints.ignored(self.run, self.run.relative(self.home))
        return self._home_ignored

    def moved(self, files: Snapshot | None = None) -> tuple[Path, list[Path]]:
        """Where the task file is now, and the folders a person moved the spec between."""
        return moves.placed(self.run.workspace, self.state, self.workdir, files)

    def step_diff(self, changed: list[Path]) -> tuple[bytes, str]:
        """The patch and `--stat` of what `changed` became since HEAD, the commit the step
        started from: what its commit will hold (the reviewer's diff)."""
        return attempts.attempt_diff(self.run, {}, moves.outside(changed, self.moved()[1]))

    def hint(self, slot: Path, workdir: Path, said: str) -> str:
        """The worktree hint for a parallel step that failed in `slot` (`git.hints`)."""
        from akira_cli.git.hints import worktree_hint

        return worktree_hint(self.run, slot, workdir, said, self.run.settings.worktree_link)

    def failed(self, step: Step, attempt: Attempt, store_dir: Path) -> None:
        """A failed attempt's changes: saved as a patch, summed up for the reflection and the
        next prompt, and with `git.failed_attempt: reset` undone (the patch keeps them)."""
        changed = moves.outside([self.workdir / name for name in attempt.files_changed], self.moved()[1])
        try:
            patch, stat = attempts.attempt_diff(self.run, self._dirty, changed)
        except GitError as exc:
            self.bus.emit(
                EventType.WARNING, step.id, message=f"the failed attempt's patch was not taken: {exc}"
            )
            return
        if not patch:
            return
        where = store_dir / "attempts" / self.state.task_id / f"{safe(step.id)}-{attempt.number}.patch"
        atomic_write(where, patch, durable=False)
        attempt.patch = str(where.relative_to(store_dir.parent))
        summary = f"What this attempt changed (its patch: {attempt.patch}):\n{stat}"
        attempt.output_tail = f"{attempt.output_tail}\n\n{summary}".strip()[-4000:]
        if self.run.settings.failed_attempt == "reset":
            attempts.restore(self.run, self._dirty, changed)
            self.bus.emit(EventType.LEDGER, step.id, action="attempt_reset", patch=attempt.patch)

    def note_nested(self, step: Step, paths: list[Path]) -> None:
        """A repository the step made inside the work tree: named, and left out of the commit."""
        nested = self.run.nested(paths)
        if nested:
            self.bus.emit(EventType.WARNING, step.id, message=left_out(nested), nested=nested[:20])

    def watch_branches(self) -> None:
        self.branches.watch()

    def moved_branches(self, step: Step) -> BranchMoved | None:
        """After an attempt: a branch but the task's that moved since the attempt started is
        reported, and the stop that pauses the run (`branches.py`)."""
        record = self.state.git
        found = self.branches.moved(step.id, record.branch) if record is not None else None
        if found is None:
            return None
        line, refs = found
        self.bus.emit(EventType.WARNING, step.id, message=line, branches=refs[:20])
        return BranchMoved(line)

    def check_branch(self, step: Step) -> None:
        record = self.state.git
        if record is not None and self.run.current_branch() != record.branch:
            switch = self.run.shown("switch", record.branch)
            raise NeedsPerson(
                f"HEAD left the task branch {record.branch} during step {step.id} (the agent switched "
                f"branches?); run {in_quotes(switch)}, then resume"
            )

    def adopt(self) -> list[Found]:
        """akira's commits of this task on the branch, for the loop to record those the state
        does not know of (a kill -9 between a commit and the save that records it); the index
        such a kill left, put back."""
        record = self.state.git
        if record is None:
            return []
        found = commits_of(self.run.git, record, self.state.task_id)
        self.run.repair_index(self.state.task_id)
        return found

    def commit_done(self, moved_from: Path, moved_to: Path, feature: str) -> None:
        """The move of the task to Done/ as one more commit, so that the branch ends clean."""
        record = self.state.git
        if record is None or record.done_commit is not None:
            return
        home = Workspace(self.run.workspace).spec_folder(self.home)  # where a person moved it from
        gone = self.run.git.out(
            "ls-files", "-z", "--", self.run.relative(moved_from), self.run.relative(home), check=False
        )
        paths = [self.run.root / name for name in gone.split("\0") if name]
        paths += [path for path in moved_to.rglob("*") if path.is_file()]
        try:
            sha = self.run.commit(f"{feature}: done", {"Akira-Task": self.state.task_id}, paths)
        except (CommitRefused, GitError) as exc:
            self.bus.emit(EventType.WARNING, message=f"the move to Done/ was not committed: {exc}")
            return
        record.done_commit = sha
        if sha is not None:
            self.bus.emit(EventType.COMMIT, commit=sha, branch=record.branch, done=True)
            self.push()

    def commit_ticks(self, feature: str) -> None:
        """At the end of a run that leaves the task file in place: ticks no step commit carried
        (a person's, or a parent's), as one last commit, so that the tracked files are clean."""
        record = self.state.git
        if record is None:
            return
        data = task_bytes(Path(self.state.task_path), self.state)  # wherever a person put it
        if data is None or self.home_ignored():
            return
        try:
            sha = self.run.commit(
                f"{feature}: ticks", {"Akira-Task": self.state.task_id}, [], {self.home: data}
            )
        except (CommitRefused, GitError) as exc:
            self.bus.emit(EventType.WARNING, message=f"the last ticks were not committed: {exc}")
            return
        if sha is not None:
            self.bus.emit(EventType.COMMIT, commit=sha, branch=record.branch, ticks=True)
            self.push()

    def push(self) -> None:
        """`git.push: <remote>`: the task branch after each commit; a failure is logged, and
        the next commit tries again. Never forced."""
        remote, record = self.run.settings.push, self.state.git
        if not remote or record is None:
            return
        said = push(self.run, record.branch, remote)
        if said is not None:
            self.bus.emit(
                EventType.WARNING,
                message=f"git push to {remote} failed (tried again at the next commit): {said}",
            )


def push(run: GitRun, branch: str, remote: str) -> str | None:
    """The task branch to `remote`, never forced; what git said when it failed, else None."""
    done = run.git.run("push", "-q", remote, f"{branch}:{branch}", check=False, timeout=300)
    if done.returncode == 0:
        return None
    said = " ".join((done.stderr or done.stdout).decode("utf-8", "replace").split())[:300]
    return printable(said)  # the remote's hooks write it: no escape sequence reaches a terminal


def safe(step_id: str) -> str:
    """A step id as part of a file name."""
    return "".join(ch if ch.isalnum() or ch in ".-_" else "_" for ch in step_id)[:60] or "step"


def fail(attempt: Attempt, output: str) -> None:
    """The attempt fails with what git (or its hook) said: the reflection and the next prompt see it."""
    attempt.outcome = "failure"
    attempt.error = f"the commit was refused: {output}"[:4000]
    attempt.error_signature = signature(attempt.error)
