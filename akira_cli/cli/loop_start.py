"""What `loop start` does before its loop runs: the branch and the state made, the checks that
refuse a start, and a detached start's child."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from akira_cli.cli.common import same_file
from akira_cli.errors import AkiraError
from akira_cli.redaction import MIN_SECRET, too_short
from akira_cli.workspace import Workspace, command_line, in_quotes

if TYPE_CHECKING:
    from akira_cli.config import Config
    from akira_cli.git.run import GitRun
    from akira_cli.state.models import LoopState
    from akira_cli.state.store import StateStore, TaskLock
    from akira_cli.tasks.model import TaskFile


def criteria_warnings(task_file: TaskFile) -> list[str]:
    """The spec's criteria file that does not parse, and ids steps name that it lacks (SPEC 16)."""
    from akira_cli.criteria.refs import unknown_id_warnings
    from akira_cli.criteria.spec import load_spec

    spec = load_spec(task_file.path)
    if spec is None:
        return []
    return spec.warnings + (unknown_id_warnings(task_file, spec) if spec.criteria else [])


def review_when_warnings(config: Config, task_file: TaskFile) -> list[str]:
    """`review.when` ids the task file lacks: those steps would never be reviewed, silently."""
    when = config.review.when
    if not config.review.enabled or not isinstance(when, list):
        return []
    missing = [step_id for step_id in when if task_file.get(str(step_id)) is None]
    if not missing:
        return []
    return [
        f"review.when names step(s) {', '.join(map(str, missing))}, which {task_file.path.name} lacks, "
        "so nothing is reviewed for them; fix the ids in config/autonomous_loop.yaml"
    ]


def nothing_to_do(
    workspace: Workspace, store: StateStore, task_file: TaskFile, include_optional: bool
) -> bool:
    """Every step ticked: one line, and no branch and no state (a run would only record them
    all as done by a person, on an empty branch). An unfinished loop on the file is resumed
    instead, as `start` says."""
    leaves = task_file.leaves(include_optional=True)
    left = [s for s in leaves if not s.ticked and not task_file.under_ticked_parent(s)]
    if any(include_optional or not task_file.is_optional(step) for step in left):
        return False
    refuse_unfinished(store, task_file.path, workspace)
    optional = f"; its {len(left)} optional step(s) run with --include-optional" if left else ""
    typer.echo(
        f"akira: nothing to do: every step of {workspace.shown(task_file.path)} is ticked{optional}", err=True
    )
    return True


@contextlib.contextmanager
def start_lock(store: StateStore) -> Iterator[None]:
    from filelock import Timeout

    try:
        with store.start_lock():
            yield
    except Timeout:
        raise AkiraError(
            f"another 'akira loop start' in {store.dir.parent} did not finish within a minute; try again"
        ) from None


def new_loop(
    workspace: Workspace,
    store: StateStore,
    path: Path,
    cfg: Config,
    include_optional: bool,
    agent: str | None,
    config: Path | None,
    detach: bool,
    git: GitRun | None = None,
) -> tuple[LoopState, TaskLock | None]:
    """The new loop's state, saved, with its lock taken (a detached child takes its own). On a
    git-native run the task branch is made first: no state is ever saved without it (a kill -9
    in between would resume the run as one without git)."""
    from akira_cli.state.models import LoopState

    now, stat = datetime.now(UTC), path.stat()
    state = LoopState(
        task_id=workspace.new_task_id(now, set(store.task_ids())),
        task_path=str(path),
        feature=workspace.feature_of(path),
        home=str(path),
        max_iterations=cfg.autonomous_loop.max_iterations,
        parallel=cfg.autonomous_loop.parallel,
        failure_threshold=cfg.autonomous_loop.failure_threshold,
        include_optional=include_optional,
        agent_kind=agent,
        config_file=str(config.resolve()) if config else None,
        task_file_identity=(stat.st_dev, stat.st_ino),
    )
    if git is not None:
        earlier = (other.git for _, other in store.scan() if other is not None and other.git)
        if warning := git.stacked(earlier):  # HEAD left on an earlier run's task branch
            typer.echo(f"akira: warning: {warning}", err=True)
        state.git = git.start(state, state.feature)
    store.save(state)
    if detach:
        return state, None
    lock = store.lock(state.task_id)
    lock.acquire(f"task {state.task_id} ({path.name})")
    return state, lock


def git_preflight(workspace: Workspace, path: Path, cfg: Config, no_git: bool) -> GitRun | None:
    """The run's git side (SPEC 12) when the task file lies in a git work tree; a repository
    with no commit yet, a detached HEAD with `git.branch: ""` or a `git.base` that names no
    branch is refused before anything is written."""
    from akira_cli.git.run import GitRun

    git = GitRun.detect(workspace.root, path, cfg.git, no_git)
    if git is not None:
        git.preflight()
    return git


def warn_short_secrets(cfg: Config) -> None:
    key = cfg.llm.api_key.get_secret_value() if cfg.llm.api_key else None
    for name in too_short(os.environ, key):
        typer.echo(
            f"akira: warning: {name} is shorter than {MIN_SECRET} characters, so it is not masked "
            "in what akira writes (masking it would garble the text); use the real key",
            err=True,
        )


def refuse_unfinished(store: StateStore, path: Path, workspace: Workspace) -> None:
    for _, state in store.scan():
        if state is None or state.status in ("completed", "cancelled"):
            continue
        if not same_file(Path(state.task_path), path):
            continue
        holder = store.lock(state.task_id).holder()
        if holder is not None:
            raise AkiraError(
                f"task {state.task_id} on {path} is already being run by process "
                f"{holder}; stop it with "
                f"{in_quotes(command_line(workspace, 'loop', 'stop', '--task-id', state.task_id))}"
            )
        raise AkiraError(
            f"{path} already has an unfinished loop {state.task_id} ({state.status}); continue it "
            f"with {in_quotes(command_line(workspace, 'loop', 'resume', '--task-id', state.task_id))}"
        )


def spawn_detached(workspace: Workspace, state: LoopState, no_wait: bool) -> int:
    out = workspace.state_dir / "logs" / f"{state.task_id}.out"
    out.parent.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "akira_cli",
        "loop",
        "resume",
        "--task-id",
        state.task_id,
        "--root",
        str(workspace.root),
    ]
    command += ["--no-wait"] if no_wait else []
    with out.open("ab") as handle:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=workspace.root,
        )
    typer.echo(state.task_id)
    follow = command_line(workspace, "loop", "logs", "--task-id", state.task_id, "--follow")
    typer.echo(
        f"akira: {state.task_id} runs in the background as process {process.pid}; "
        f"follow it with {in_quotes(follow)}",
        err=True,
    )
    return 0
