"""What a start or a resume does before its run: the checks that refuse it, the branch and the
state made, a task parked in Needs_Action/ brought back, and a detached run's child."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from akira_cli.api.lookup import same_file
from akira_cli.errors import AkiraError
from akira_cli.redaction import MIN_SECRET, too_short
from akira_cli.words import counted
from akira_cli.workspace import Workspace, command_line, in_quotes

DETACH_WAIT = 30.0
"""How long a detached start waits for its process to take the task's lock."""

if TYPE_CHECKING:
    from akira_cli.config import Config
    from akira_cli.git.run import GitRun
    from akira_cli.state.lock import TaskLock
    from akira_cli.state.models import CompletedStep, LoopState
    from akira_cli.state.store import StateStore
    from akira_cli.tasks.model import TaskFile


def criteria_warnings(task_file: TaskFile) -> list[str]:
    """The spec's criteria file that does not parse, and ids steps name that it lacks, as warnings."""
    from akira_cli.criteria.refs import unknown_id_warnings
    from akira_cli.criteria.spec import load_spec

    spec = load_spec(task_file.path)
    if spec is None:
        return []
    return spec.warnings + (unknown_id_warnings(task_file, spec) if spec.criteria else [])


def nothing_to_do(
    workspace: Workspace, store: StateStore, task_file: TaskFile, include_optional: bool
) -> str | None:
    """Every step ticked: what to say, and no branch and no state is made (a run would only
    record them all as done by a person, on an empty branch). An unfinished loop on the file is
    refused as `start` refuses it: it is resumed instead."""
    leaves = task_file.leaves(include_optional=True)
    left = [s for s in leaves if not s.ticked and not task_file.under_ticked_parent(s)]
    if any(include_optional or not task_file.is_optional(step) for step in left):
        return None
    refuse_unfinished(store, task_file.path, workspace)
    optional = f"; its {counted(len(left), 'optional step')} run with --include-optional" if left else ""
    return f"nothing to do: every step of {workspace.shown(task_file.path)} is ticked{optional}"


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


SECRET_SETTINGS = ("llm.api_key",)
"""Settings a state file cannot keep: what akira writes is masked, so a key would come back as ***."""


def kept_settings(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """`api.start`'s settings as the state keeps them for every resume; a key is refused."""
    kept = {key: value for key, value in (settings or {}).items() if value is not None}
    if secret := next((key for key in kept if key in SECRET_SETTINGS), None):
        raise AkiraError(
            f"settings names {secret}, which a run cannot keep for its resumes (the state file masks "
            "it); set it in the environment or in config/autonomous_loop.yaml instead"
        )
    return kept


def iteration_warnings(cfg: Config, pending: int) -> list[str]:
    """More steps left than iterations allowed: the run would stop at `max_iterations` with
    steps never tried, though the count is known now. Each step takes an iteration at least."""
    allowed = cfg.autonomous_loop.max_iterations
    if pending <= allowed:
        return []
    return [
        f"the task has {pending} steps left but autonomous_loop.max_iterations is {allowed}, so the run "
        f"stops after {allowed} iterations; raise it (--max-iterations {pending * 2}, or "
        "autonomous_loop.max_iterations in config/autonomous_loop.yaml)"
    ]


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
    git: GitRun | None,
    say: Callable[[str], None],
    ticked: frozenset[str] = frozenset(),
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
        completed_steps=earlier_completions(store, path, ticked),
    )
    if git is not None:
        from akira_cli.git.base import stacked

        earlier = (other.git for _, other in store.scan() if other is not None and other.git)
        if warning := stacked(git.current_branch(), git.settings, earlier):
            say(f"warning: {warning}")
        state.git = git.start(state, state.feature)
    store.save(state)
    if detach:
        return state, None
    lock = store.lock(state.task_id)
    lock.acquire(f"task {state.task_id} ({path.name})")
    return state, lock


def earlier_completions(store: StateStore, path: Path, ticked: frozenset[str]) -> list[CompletedStep]:
    """Boxes of `path` ticked by an earlier run of akira's on it (not by a person): taken as
    akira's, so that a new run counts them neither as a person's decision nor runs them. Their
    commits stay that run's (`loop undo` names it)."""
    found: dict[str, CompletedStep] = {}
    for _, other in store.scan() if ticked else ():
        if other is None or not same_file(Path(other.home or other.task_path), path):
            continue
        for done in store.all_completed(other):
            if done.done_by == "akira" and done.step_id in ticked:
                unmade = {"commit": None, "review": None, "earlier_run": other.task_id}
                found[done.step_id] = done.model_copy(update=unmade)
    return list(found.values())


def git_preflight(workspace: Workspace, path: Path, cfg: Config, no_git: bool) -> GitRun | None:
    """The run's git side when the task file lies in a git work tree; a repository with no
    commit yet, a detached HEAD with `git.branch: ""` or a `git.base` that names no branch is
    refused before anything is written."""
    from akira_cli.git.run import GitRun

    git = GitRun.detect(workspace.root, path, cfg.git, no_git)
    if git is not None:
        git.preflight(path)
    return git


def follow_warnings(cfg: Config, follow: bool) -> list[str]:
    """Following needs a pull request: `--follow` or `follow:` with `git.pr: off` follows nothing."""
    if (follow or cfg.follow is not None) and cfg.git.pr == "off":
        return ["follow is on, but git.pr is off, so there is no pull request to follow; set git.pr: draft"]
    return []


def can_follow(workspace: Workspace, store: StateStore, state: LoopState, cfg: Config) -> None:
    """`akira pr follow` refuses a run it cannot follow, with one line."""
    if state.git is None or not state.git.pr_url:
        why = "a run opens one with git.pr: draft and git.push set, when it completes"
        if state.git is not None and cfg.git.pr != "off" and cfg.git.push:
            from akira_cli.git.pr import forge_problem

            problem = forge_problem(Path(state.git.root or workspace.root), cfg.git)
            why = problem or "it opens one when it completes"
        raise AkiraError(f"task {state.task_id} has no pull request to follow; {why}")
    if state.status == "cancelled":
        raise AkiraError(f"task {state.task_id} was cancelled; there is nothing to follow")
    live = store.lock(state.task_id).holder()
    if live is not None:
        stop = command_line(workspace, "loop", "stop", "--task-id", state.task_id)
        raise AkiraError(
            f"task {state.task_id} is being run by process {live}; it follows its pull request itself "
            f"(stop it with {in_quotes(stop)})"
        )
    if not cfg.git.push:
        raise AkiraError(
            "following a pull request needs git.push (the remote its fixes are pushed to); set it"
        )


def short_secret_warnings(cfg: Config) -> list[str]:
    key = cfg.llm.api_key.get_secret_value() if cfg.llm.api_key else None
    return [
        f"{name} is shorter than {MIN_SECRET} characters, so it is not masked in what akira writes "
        "(masking it would garble the text); use the real key"
        for name in too_short(os.environ, key)
    ]


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


def save_as_read(workspace: Workspace, store: StateStore, state: LoopState) -> None:
    """The resumed state saved for a detached process, under the task's lock and only when no
    other process saved since it was read: an older copy saved over a later one would drop the
    steps that one completed."""
    lock = store.lock(state.task_id)
    lock.acquire(f"task {state.task_id}")  # a process that holds it runs the task: refused, with its PID
    try:
        resume = command_line(workspace, "loop", "resume", "--task-id", state.task_id)
        store.refuse_older(state, in_quotes(resume))
        store.save(state)
    finally:
        lock.release()


def spawn_detached(workspace: Workspace, state: LoopState, no_wait: bool) -> subprocess.Popen[bytes]:
    """The run in a process of its own (`loop resume` on the saved state), in a new session: it
    outlives the caller, as `--detach` promises. A thread reaps it, so a long-lived caller (the
    MCP server) keeps no zombie."""
    out = workspace.state_dir / "logs" / f"{state.task_id}.out"
    out.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "akira_cli", "loop", "resume", "--task-id", state.task_id]
    command += ["--root", str(workspace.root), *(["--no-wait"] if no_wait else [])]
    with out.open("ab") as handle:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=workspace.root,
        )
    threading.Thread(target=process.wait, name=f"reap-{process.pid}", daemon=True).start()
    return process


def running_as(store: StateStore, state: LoopState, process: subprocess.Popen[bytes]) -> str:
    """Waits (up to `DETACH_WAIT` seconds) until the detached process holds the task, so that
    whoever polls next sees it running, never "interrupted"; its status then. A process that
    ended first left its answer in the state, or its refusal as the last line of its output."""
    deadline = time.monotonic() + DETACH_WAIT
    while time.monotonic() < deadline and process.poll() is None:
        if store.lock(state.task_id).holder() == process.pid:
            return "running"
        time.sleep(0.02)
    if process.poll() is None:
        return "running"  # still starting on a slow machine: it takes the lock or says why in its log
    after = store.load(state.task_id)
    if process.returncode == 1 and after.status == state.status:
        out = store.dir / "logs" / f"{state.task_id}.out"
        lines = out.read_text(encoding="utf-8", errors="replace").strip().splitlines() if out.exists() else []
        raise AkiraError(
            lines[-1].removeprefix("akira: error: ") if lines else f"task {state.task_id} did not start"
        )
    return after.status


def bring_back(workspace: Workspace, state: LoopState) -> None:
    """`loop resume` on a task a person parked in Needs_Action/: it goes back home (where `loop
    start` found it), with its feature folder when it was parked with it. No link a step put on
    either way is followed."""
    from akira_cli import nofollow
    from akira_cli.loop.conditions import TaskLocator

    found = TaskLocator.of(workspace, state).locate(Path(state.task_path))
    if found is not None:
        state.task_path = str(found)
    path = workspace.require_inside(Path(state.task_path))
    home = workspace.home(state)
    if not path.is_file():
        back = workspace.shown(workspace.spec_folder(home))
        raise AkiraError(
            f"task file {path} not found; restore it (or move it back to {back}) and resume again"
        )
    if workspace.area_of(path) != "Needs_Action":
        return
    root = workspace.root
    parked, target = workspace.spec_folder(path), workspace.spec_folder(home)
    if target != home:
        with contextlib.suppress(OSError), nofollow.folder(root, target.parent.relative_to(root).parts) as fd:
            os.rmdir(target.name, dir_fd=fd)  # an empty folder left behind: the parked one takes its place
    if parked == path or target == home or os.path.lexists(target):  # the task file alone goes back
        parked, target = path, home
    try:
        nofollow.move(root, parked.resolve().relative_to(root), target.relative_to(root))
    except FileExistsError:
        raise AkiraError(
            f"cannot move {workspace.shown(path)} back to {workspace.shown(home)}: a file is already "
            "there; move the task file back yourself, then resume again"
        ) from None
    except nofollow.Refused as exc:
        raise AkiraError(f"cannot move {path} back to {target}: {exc}, then resume again") from None
    state.task_path = str(home if target == home else target / path.name)
