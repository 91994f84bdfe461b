"""The loop's partners, as the loop sees them: the commits of a git-native run, a wave's
worktrees, the reviewer, the reports and the follower of the pull request. The run's assembly
(`akira_cli.api.run`) plugs in git's, the review's, the report writers and the follower; no
module of the loop imports them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from akira_cli.changes import Snapshot
    from akira_cli.checks import Check
    from akira_cli.errors import LoopStop
    from akira_cli.loop.iteration import FoundCommit
    from akira_cli.runner import CommandRunner
    from akira_cli.state.follow import PullRequestWatch
    from akira_cli.state.models import CompletedStep, LoopState
    from akira_cli.state.records import Attempt, ReviewResult, StepRecord
    from akira_cli.tasks.model import Step, TaskFile


class Commits(Protocol):
    """One commit per completed step on the task branch (`akira_cli.git.steps.StepCommits`)."""

    marks: dict[str, str]
    """Running steps' `[-]` boxes and what they were before: a commit never carries one."""
    prompt_note: str
    """What the agent's prompt says about commits."""
    look: Callable[[], bytes | None] | None
    """git's view of the work folder (`git status`) when it is the repository's top, through
    the run's pinned repository; None: the witness walks the files."""

    def before(self, files: Snapshot | None) -> None: ...

    def watch_branches(self) -> None:
        """Before an attempt: the branches as they are (kept while attempts run at once)."""
        ...

    def moved_branches(self, step: Step) -> LoopStop | None:
        """After an attempt: the stop that pauses the run when a branch but the task's moved."""
        ...

    def commit(
        self, step: Step, task: TaskFile, record: StepRecord, attempt: Attempt, files: Snapshot | None
    ) -> None: ...

    def failed(self, step: Step, attempt: Attempt, store_dir: Path) -> None: ...

    def adopt(self) -> Sequence[FoundCommit]: ...

    def commit_done(self, moved_from: Path, moved_to: Path, feature: str) -> None: ...

    def commit_ticks(self, feature: str) -> None: ...

    def hint(self, slot: Path, workdir: Path, said: str) -> str:
        """A line for a parallel step that failed in its worktree for want of something the main
        work tree has; "" when there is none."""
        ...


class Worktrees(Protocol):
    """A wave's git work (`akira_cli.git.wave_work.WaveWork`): each `[P]` step's worktree slot,
    its work committed on its step branch, and its landing on the task branch. It returns what
    it found and never writes the state."""

    def start(self) -> None:
        """A wave starts: from the task branch's tip as it is now."""
        ...

    def slot(self, slot: int) -> Path: ...

    def place(self, path: Path, workdir: Path) -> tuple[Path, Callable[[], bytes | None] | None, Path]:
        """Inside the slot at `path`: the work folder, git's look at it (None: the witness walks
        the files) and the workspace."""
        ...

    def take(self, slot: int, step_id: str) -> None:
        """On the step's thread: the slot on the step's branch, clean."""
        ...

    def commit_work(self, step: Step, attempt: Attempt, path: Path, workdir: Path) -> str | None:
        """On the step's thread: a passing attempt's work as a commit on its branch, or None."""
        ...

    def keep_failed(self, step: Step, attempt: Attempt, path: Path, workdir: Path) -> tuple[str, str] | None:
        """On the step's thread: a failed attempt's work saved as a patch: where, and its stat."""
        ...

    def land(self, step: Step, commit: str | None) -> list[str]:
        """The step's commit merged into the main work tree; the files that collided."""
        ...

    def unland(self, step: Step) -> None: ...

    def commit(self, step: Step, task: TaskFile, record: StepRecord, attempt: Attempt) -> None:
        """The landed step's commit on the task branch; a refusing hook fails `attempt`."""
        ...

    def listing(self) -> list[str]:
        """The task's worktrees and step branches that exist now."""
        ...

    def prepare(self) -> None: ...

    def remove(self) -> int:
        """Every worktree and step branch of the task removed; how many worktrees there were."""
        ...


class Where(Protocol):
    """Where an attempt ran (a `loop.lanes.Lane`): its runner, its worktree slot if any, its
    work folder."""

    @property
    def runner(self) -> CommandRunner: ...

    @property
    def path(self) -> Path | None: ...

    @property
    def workdir(self) -> Path: ...


class Reviewer(Protocol):
    """A second agent's verdict on an attempt whose checks passed, before its commit,
    or None when it is not asked; the engine decides what the verdict does to the attempt."""

    def review(
        self, step: Step, task: TaskFile, record: StepRecord, attempt: Attempt, agent: str, where: Where
    ) -> ReviewResult | None: ...


class Exam(Protocol):
    """A step's exam (`akira_cli.exam.judge.ExamJudge`): fixed before its first attempt, and a
    pass that changed it judged again with it as it stood (the held-out run)."""

    def fix(self, step: Step, record: StepRecord, where: Where, files: Snapshot | None) -> None: ...

    def judge(
        self,
        step: Step,
        record: StepRecord,
        attempt: Attempt,
        where: Where,
        checks: Callable[[CommandRunner, Path], list[Check]],
    ) -> None:
        """A passing attempt that changed its exam: held out, and failed with `changed_exam`
        (or completed as it, when the step or a person allowed it) when it passes only so."""
        ...


class Reports(Protocol):
    """The files a person reads (`akira_cli.reports`), and the pull request a run hands off."""

    def progress(self, state: LoopState) -> None: ...

    def completion(self, state: LoopState, open_steps: list[str], completed: list[CompletedStep]) -> None: ...

    def intervention(self, state: LoopState, stop: LoopStop) -> None: ...

    def escalation(self, state: LoopState, stop: LoopStop, kept: list[str], others: list[str]) -> None: ...

    def hand_off(self, state: LoopState, stop: LoopStop) -> None:
        """The pull request, when the run completes or needs a person."""
        ...


class Follower(Protocol):
    """After the pull request (`follow:`): its checks and review comments followed until it is
    green or a person is needed (`akira_cli.follow.follower.Follower`)."""

    def after(self, stop: LoopStop) -> PullRequestWatch | None:
        """Told of every stop the loop settled: a completed run's open pull request is followed
        from now on (the record of the watch, which the loop keeps in its state)."""
        ...

    def active(self) -> bool:
        """Following the pull request is under way (a resume goes on with it)."""
        ...

    def follow(self, save: Callable[[], None]) -> None:
        """Follows it to its end, saving the state with `save` (the loop's); raises the stop it
        ends with."""
        ...
