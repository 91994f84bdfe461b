"""`akira loop undo --step SID`: revert the commits akira made for SID and every later
step (and the move to Done/), newest first, with `git revert` (one revert commit each: history is
never rewritten); those steps are no longer completed, their boxes are unticked, and the loop is
left paused for a resume to run them again. This side works the repository and the task file and
says what it did (`Reverted`); the API writes it into the state."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from akira_cli.errors import AkiraError
from akira_cli.git.pinned import output_of
from akira_cli.git.run import FALLBACK_AUTHOR, GitRun
from akira_cli.git.step_message import commits_of
from akira_cli.state.git_record import GitRecord
from akira_cli.state.models import CompletedStep, LoopState
from akira_cli.state.store import StateStore
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.tasks.reading import TaskFileError
from akira_cli.tasks.writeback import set_box
from akira_cli.workspace import Workspace, command_line, in_quotes


@dataclass(frozen=True)
class Reverted:
    """What `undo` did: the completions it reverted (the latest ones, in their order), their
    boxes unticked in the task file."""

    undone: list[CompletedStep]
    since: str | None
    """The last revert commit: commits before it are never adopted again (None: none made)."""
    moved_back: Path | None
    """Where the task file is now when the revert of the move to Done/ took it back there."""


def undo(run: GitRun, state: LoopState, step_id: str, store: StateStore) -> Reverted:
    """Reverts SID and every later step and unticks their boxes; writes nothing into `state`
    (the caller records what was reverted, and saves). `store`: where the run that has the
    commit of a step this one has none of is looked for."""
    record = state.git
    if record is None:
        raise AkiraError(f"task {state.task_id} is not a git-native run; there are no commits to revert")
    run.check_resume(record)
    undone = undoable(run, record, state, step_id, store)
    since = revert_all(run, record, undone)
    path, moved_back = Path(state.task_path), None
    if state.moved_from and not path.exists():
        path = moved_back = Path(state.moved_from) / "tasks.md"  # the revert moved it back
    untick(path, [done.step_id for done in undone])
    return Reverted(undone, since, moved_back)


def undoable(
    run: GitRun, record: GitRecord, state: LoopState, step_id: str, store: StateStore
) -> list[CompletedStep]:
    """SID's completion and every later one; why not, when SID is not completed here or has no
    commit of its own."""
    ids = [done.step_id for done in state.completed_steps]
    task = task_file(state)
    if step_id not in ids and task is not None and (step := task.get(step_id)) is not None:
        under = [sid for sid in descendants(task, step) if sid in ids]  # a parent: from its first sub-step
        step_id = min(under, key=ids.index) if under else step_id
    if step_id not in ids:
        if step_id in state.completed_ids():
            found = [f.sha for f in commits_of(run.git, record, state.task_id) if f.step_id == step_id]
            by_hand = run.shown("revert", found[0]) if found else "git revert <its commit>"
            raise AkiraError(
                f"step {step_id} was completed long ago and its record is sealed in the history; "
                f"revert it by hand with '{by_hand}'"
            )
        raise AkiraError(not_completed(run, state, task, step_id))
    undone = state.completed_steps[ids.index(step_id) :]
    if undone[0].commit is None:
        raise AkiraError(no_commit(run, state, undone, store))
    return undone


def task_file(state: LoopState) -> TaskFile | None:
    from akira_cli.tasks.parser import parse_task_file

    try:
        return parse_task_file(Path(state.task_path))
    except (OSError, TaskFileError):
        return None


def descendants(task: TaskFile, step: Step) -> list[str]:
    found: list[str] = []
    for child in step.children:
        inner = task.get(child)
        found += [child, *(descendants(task, inner) if inner is not None else [])]
    return found


def not_completed(run: GitRun, state: LoopState, task: TaskFile | None, step_id: str) -> str:
    """Why there is nothing to undo for `step_id`: no such step, a parent none of whose
    sub-steps was completed, or a step not completed."""
    progress = command_line(Workspace(run.workspace), "loop", "progress", "--task-id", state.task_id)
    step = task.get(step_id) if task is not None else None
    if task is not None and step is None:
        ids = [leaf.id for leaf in task.leaves(state.include_optional)]
        shown = ", ".join(ids[:12]) + (", …" if len(ids) > 12 else "")
        return (
            f"task {state.task_id} has no step {step_id} (its steps: {shown}); see which are done "
            f"with {in_quotes(progress)}"
        )
    if step is not None and step.children:
        return (
            f"step {step_id} is a parent, and none of its sub-steps ({', '.join(step.children)}) was "
            f"completed in task {state.task_id}; there is nothing to undo"
        )
    return f"step {step_id} is not completed in task {state.task_id}; there is nothing to undo"


def revert_all(run: GitRun, record: GitRecord, undone: list[CompletedStep]) -> str | None:
    """The commits of `undone` and the move to Done/ reverted, newest first, with the folders
    git removed on the way put back; the last revert commit (None: there was none to make)."""
    commits = [done.commit for done in undone if done.commit]
    commits += [record.done_commit] if record.done_commit else []
    refuse_dirty(run, commits)
    folders = kept_folders(run, [done.commit for done in undone if done.commit])  # not Done/'s
    for sha in reversed(commits):
        revert(run, sha)
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)  # git removed it with the last file it held
    return run.git.out("rev-parse", "HEAD") if commits else None


def no_commit(run: GitRun, state: LoopState, undone: list[CompletedStep], store: StateStore) -> str:
    """Why a step with no commit of its own (a person ticked it) cannot be undone, and what can:
    the latest run of the same spec that has its commit, else this run's next commit."""
    done, workspace = undone[0], Workspace(run.workspace)
    branch = state.git.branch if state.git is not None else ""
    said = f"step {done.step_id} has no commit on {branch} to revert ({done.how} in {state.task_id})"
    others = [
        (other.started_at, other.task_id, other.git.branch, other)
        for _, other in store.scan()
        if other is not None and other.task_id != state.task_id and other.git is not None
        if other.feature == state.feature
    ]
    for _, task_id, other_branch, other in sorted(others, reverse=True):
        if any(step.step_id == done.step_id and step.commit for step in store.all_completed(other)):
            again = command_line(workspace, "loop", "undo", "--task-id", task_id, "--step", done.step_id)
            return f"{said}; its commit is in {task_id} on {other_branch}: run {in_quotes(again)}"
    later = next((step.step_id for step in undone if step.commit), None)
    if later is not None:
        again = command_line(workspace, "loop", "undo", "--task-id", state.task_id, "--step", later)
        return f"{said}; this run's commits start at step {later}: run {in_quotes(again)}"
    return f"{said}; akira did no work for it, so there is nothing to revert"


def refuse_dirty(run: GitRun, commits: list[str]) -> None:
    files: set[str] = set()
    for sha in commits:
        files.update(run.git.out("diff-tree", "--no-commit-id", "--name-only", "-r", sha).splitlines())
    if not files:
        return
    listed = run.git.run("status", "--porcelain", "-z", "--", *sorted(files)).stdout.decode(
        "utf-8", "replace"
    )
    dirty = [entry[3:] for entry in listed.split("\0") if len(entry) > 3]
    if dirty:
        shown = ", ".join(dirty[:5])
        raise AkiraError(
            f"files of the commits to revert have uncommitted changes ({shown}); commit or stash "
            f"them first ('{run.shown('stash')}'), then undo again"
        )


def kept_folders(run: GitRun, commits: list[str]) -> list[Path]:
    """The folders that hold files the commits added and that exist now. git removes a folder
    when a revert deletes the last file in it, though an earlier step may have made it (a
    `mkdir -p tests` that no commit can hold): undo puts such a folder back, empty. A folder
    that one of the undone steps made itself comes back empty too, as git keeps no record of
    empty folders to tell the two apart: a folder too many is harmless to most steps, a
    folder too few breaks the steps that are run again."""
    added: set[str] = set()
    for sha in commits:
        listed = run.git.out("diff-tree", "--no-commit-id", "--name-only", "-z", "-r", "--diff-filter=A", sha)
        added.update(name for name in listed.split("\0") if name)
    folders = {parent for name in added for parent in Path(name).parents if parent != Path(".")}
    return [run.root / folder for folder in sorted(folders) if (run.root / folder).is_dir()]


def revert(run: GitRun, sha: str) -> None:
    author = () if run.has_author() else FALLBACK_AUTHOR
    hooks = () if run.settings.verify else ("-c", "core.hooksPath=/dev/null")
    done = run.git.run(*author, *hooks, "revert", "--no-edit", sha, check=False)
    if done.returncode != 0:
        run.git.run("revert", "--abort", check=False)
        said = " ".join(output_of(done).split())[:240]
        raise AkiraError(f"git could not revert {sha[:12]}: {said}; the branch is as it was")


def untick(path: Path, step_ids: list[str]) -> None:
    """The undone steps' boxes back to `[ ]` (the reverts did it already where a commit held the tick)."""
    for step_id in step_ids:
        try:
            set_box(path, step_id, " ")
        except (TaskFileError, FileNotFoundError, KeyError):
            continue
