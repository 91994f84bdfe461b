"""A fleet run (the fleet): one task file, at a path relative to its repository, in one repository
at one ref. Adding one enqueues a DBOS workflow; at most one run per repository and task path
is live (DBOS's deduplication on the queue refuses a second). Status comes from DBOS's
workflows and the progress the workers report."""

from __future__ import annotations

import hashlib
import shlex
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from akira_cli.errors import AkiraError
from akira_cli.fleet.database import APP_VERSION, QUEUE, WORKFLOW, Tables, open_client
from akira_cli.git.pinned import git_env, hardened, toplevel
from akira_cli.redaction import url_without_password

STATUS_KEYS = (
    "run_id", "task", "repo", "ref", "branch", "status", "worker", "step",
    "steps_done", "steps_total", "cost_usd", "updated_at",
)  # fmt: skip
PRIORITY_TOP = 1_000_000
"""`--priority N` (higher runs sooner) as DBOS's priority (lower runs sooner, 1 and up)."""
DBOS_STATUS = {"ENQUEUED": "queued", "DELAYED": "queued", "PENDING": "running", "CANCELLED": "cancelled"}
HANDED_BACK = "handed_back"
"""A run's progress status once a stopping worker handed it back: pending for DBOS, queued for
a person, until another worker takes it."""


class RunSpec(BaseModel):
    """What a worker needs to take a run (the workflow's input)."""

    run_id: str
    repo: str
    task: str
    ref: str
    branch: str = ""
    """Chosen by the worker that first takes the run (`fleet/branch.py`) and recorded with its
    progress; runs added by older versions carry theirs here."""
    added_at: float


def git_out(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """git about a remote, or in a repository found where `cwd` is (the person's, or a fresh
    clone), with akira's hardened settings (`git/pinned.py`)."""
    return subprocess.run(
        hardened(args), cwd=cwd, env=git_env(), capture_output=True, text=True, timeout=120, check=False
    )


def new_run(task: Path, repo: str | None, ref: str | None) -> RunSpec:
    """The run for `task`: checked to be a task file the workers will find in the repository
    at the ref, and the repository to be one they can clone."""
    path = task / "tasks.md" if task.is_dir() else task
    local: Path | None
    if repo is None and not path.is_file():
        raise AkiraError(f"{shlex.quote(str(path))}: task file not found; check the --task path")
    if repo is None:
        top = toplevel(path.parent if path.parent.exists() else Path.cwd())
        if top is None:
            raise AkiraError(
                f"{shlex.quote(str(task))} is not in a git repository; give --repo URL, "
                "or run 'git init' there"
            )
        try:
            relative = path.resolve().relative_to(top.resolve()).as_posix()
        except ValueError:
            raise AkiraError(
                f"{shlex.quote(str(task))} is not inside the repository {shlex.quote(str(top))}; "
                "give a task path inside it"
            ) from None
        repo_text, local = str(top), Path(top)
    else:
        relative, repo_text = task.as_posix(), repo
        local = Path(repo) if Path(repo).is_dir() else None
    listed = git_out("ls-remote", "--symref", repo_text, "HEAD")
    if listed.returncode != 0:
        said = " ".join(listed.stderr.split())[:200]
        raise AkiraError(
            f"the repository {url_without_password(repo_text)} cannot be cloned: {said}; "
            "give --repo a path or URL the workers can reach"
        )
    if ref is None:
        if local is not None:
            ref = git_out("symbolic-ref", "-q", "--short", "HEAD", cwd=local).stdout.strip()
        else:
            heads = [line.split()[1] for line in listed.stdout.splitlines() if line.startswith("ref:")]
            ref = heads[0].removeprefix("refs/heads/") if heads else ""
        if not ref:
            raise AkiraError(
                f"{url_without_password(repo_text)} has no current branch (a detached HEAD); "
                "give --ref BRANCH"
            )
    if local is not None and git_out("cat-file", "-e", f"{ref}:{relative}", cwd=local).returncode != 0:
        raise AkiraError(
            f"{shlex.quote(relative)} is not in {shlex.quote(url_without_password(repo_text))} at {ref}: "
            f"the workers clone the repository, so commit the task file there "
            f"({shlex.join(['git', '-C', str(local), 'add', relative])} && "
            f"{shlex.join(['git', '-C', str(local), 'commit'])}), or give --ref"
        )
    run_id = "run-" + uuid.uuid4().hex[:10]
    return RunSpec(
        run_id=run_id,
        repo=repo_text,
        task=relative,
        ref=ref,
        added_at=time.time(),
    )


def count_steps(spec: RunSpec) -> int | None:
    """The task's steps at the run's ref (as a worker will count them), when the repository is a
    local path; None for a URL, whose steps the worker counts once it has cloned it."""
    from akira_cli.tasks.parser import parse_task_text

    if not Path(spec.repo).is_dir():
        return None
    shown = subprocess.run(
        hardened(["cat-file", "blob", f"{spec.ref}:{spec.task}"]), cwd=spec.repo, env=git_env(),
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    try:
        return (
            len(parse_task_text(shown.stdout, Path(spec.task)).leaves(False))
            if shown.returncode == 0
            else None
        )
    except Exception:
        return None  # the loop refuses a task file it cannot read, with its own line


def live_key(spec: RunSpec) -> str:
    return hashlib.sha1(f"{spec.repo}\0{spec.task}".encode()).hexdigest()[:24]


def add(url: str, spec: RunSpec, priority: int) -> str:
    """Enqueues the run; refuses a second live run of the same repository and task path."""
    from dbos._error import DBOSQueueDeduplicatedError

    client = open_client(url)
    try:
        options: dict[str, Any] = {
            "queue_name": QUEUE,
            "workflow_name": WORKFLOW,
            "workflow_id": spec.run_id,
            "deduplication_id": live_key(spec),
            "app_version": APP_VERSION,
            "priority": max(1, PRIORITY_TOP - priority),  # DBOS runs its lower numbers first
        }
        try:
            client.enqueue(options, spec.model_dump())  # type: ignore[arg-type]
        except DBOSQueueDeduplicatedError:
            live = [
                run.workflow_id
                for run in client.list_workflows(
                    name=WORKFLOW,
                    status=["ENQUEUED", "PENDING", "DELAYED"],
                    load_input=False,
                    load_output=False,
                )
                if run.deduplication_id == live_key(spec)
            ]
            named = ", ".join(live) or "queued"
            raise AkiraError(
                f"{spec.task} in {url_without_password(spec.repo)} already has a live run ({named}); "
                f"wait for it, or run 'akira fleet cancel {live[0] if live else 'RUN_ID'}'"
            ) from None
    finally:
        client.destroy()
    total = count_steps(spec)
    if total is not None:  # a queued run shows 0/N, not 0/0
        tables = Tables(url)
        try:
            tables.report(spec.run_id, steps_total=total)
        finally:
            tables.close()
    return spec.run_id


def cancel(url: str, run_id: str) -> str:
    """Drops a queued run, or stops a running one at its next step (its worker sees it)."""
    client = open_client(url)
    try:
        found = client.list_workflows(
            workflow_ids=[run_id], name=WORKFLOW, load_input=False, load_output=False
        )
        if not found:
            raise AkiraError(f"no fleet run {run_id}; see the runs with 'akira fleet status'")
        if found[0].status not in ("ENQUEUED", "DELAYED", "PENDING"):
            raise AkiraError(f"fleet run {run_id} has ended ({found[0].status.lower()}); nothing to cancel")
        client.cancel_workflow(run_id)
        return "dropped from the queue" if found[0].status != "PENDING" else "stops at its next step"
    finally:
        client.destroy()


def rows(url: str) -> list[dict[str, Any]]:
    """One row per run, with the keys `fleet status --json` prints, oldest first."""
    client = open_client(url)
    tables = Tables(url)
    try:
        progress = tables.progress()
        runs = client.list_workflows(name=WORKFLOW, load_output=True)
    finally:
        client.destroy()
        tables.close()
    out = []
    for run in runs:
        args = (run.input or {}).get("args") or [{}]  # type: ignore[call-overload]
        spec = args[0] if args and isinstance(args[0], dict) else {}
        seen = progress.get(run.workflow_id, {})
        status = DBOS_STATUS.get(run.status)
        if status == "running" and seen.get("status") == HANDED_BACK:
            status = "queued"  # no worker holds it: the next to look takes it
        if status is None:
            output = run.output if isinstance(run.output, dict) else {}
            status = output.get("status", "failed") if run.status == "SUCCESS" else "failed"
        updated = seen.get("updated_at") or (run.updated_at or 0) / 1000
        out.append(
            {
                "run_id": run.workflow_id,
                "task": spec.get("task"),
                "repo": url_without_password(str(spec.get("repo", ""))),
                "ref": spec.get("ref"),
                "branch": seen.get("branch") or spec.get("branch") or None,
                "status": status,
                "worker": seen.get("worker") or (run.executor_id if status == "running" else None),
                "step": seen.get("step"),
                "steps_done": seen.get("steps_done") or 0,
                "steps_total": seen.get("steps_total") or 0,
                "cost_usd": round(seen.get("cost_usd") or 0.0, 4),
                "updated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(updated)),
                "message": seen.get("message") or "",
                "_age": time.time() - (run.created_at or 0) / 1000,
            }
        )
    return out
