"""`akira fleet add | worker | status | cancel`: the fleet's commands. dbos is imported only in here, inside
the commands, and only when it is installed (the `fleet` extra)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from akira_cli.cli.common import PlainUsage, RootOption, TaskRootOption, exits
from akira_cli.errors import AkiraError

app = typer.Typer(
    help="Many tasks on many machines: a durable queue of task files (DBOS).", no_args_is_help=True
)

DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--database-url",
        help="The queue's database: sqlite:///PATH or postgresql://USER:PASSWORD@HOST:PORT/DB "
        "(default: AKIRA_FLEET_DATABASE_URL, fleet.database_url, then .state/fleet.sqlite in the workspace).",
    ),
]


def context(root: str | None, database_url: str | None) -> tuple[str, Any]:
    """The database URL and the fleet settings: from the workspace when there is one; a worker
    on a machine with no workspace needs only the URL."""
    from akira_cli.api.lookup import workspace_and_config
    from akira_cli.config import Config
    from akira_cli.fleet.database import ENV_URL, require_dbos
    from akira_cli.fleet.database import database_url as resolve

    require_dbos()
    try:
        workspace, config = workspace_and_config(root)
        folder = workspace.root
    except AkiraError:
        if not (database_url or os.environ.get(ENV_URL)):
            raise
        config, folder = Config(), Path.cwd()
    return resolve(database_url, folder, config.fleet.database_url), config.fleet


@app.command("add")
@exits
def add(
    task: Annotated[
        Path, typer.Option("--task", readable=False, help="The tasks.md to run (in a git repository).")
    ],
    repo: Annotated[
        str | None,
        typer.Option(
            "--repo", help="A path or URL the workers clone (default: the repository holding --task)."
        ),
    ] = None,
    ref: Annotated[
        str | None, typer.Option("--ref", help="The branch to start from (default: its current branch).")
    ] = None,
    priority: Annotated[
        int, typer.Option("--priority", min=0, max=999_999, help="Higher runs sooner (default 0).")
    ] = 0,
    database_url: DatabaseOption = None,
    root: TaskRootOption = None,
) -> int:
    """Put a task file on the queue; prints the run id alone on stdout."""
    from akira_cli.fleet import runs

    url, _ = context(root, database_url)
    spec = runs.new_run(task, repo, ref)
    typer.echo(runs.add(url, spec, priority))
    return 0


@app.command("worker")
@exits
def worker(
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Runs worked at once.")] = 1,
    name: Annotated[
        str | None, typer.Option("--name", help="This worker's name (default: host-pid).")
    ] = None,
    work_dir: Annotated[
        Path | None, typer.Option("--work-dir", help="Where runs are cloned (default: fleet.work_dir).")
    ] = None,
    worker_timeout: Annotated[
        float | None,
        typer.Option(
            "--worker-timeout",
            min=0.5,
            help="Seconds of silence after which a worker's runs are recovered "
            "(default: fleet.worker_timeout_seconds, 60).",
        ),
    ] = None,
    database_url: DatabaseOption = None,
    root: RootOption = None,
) -> int:
    """Take runs from the queue and work them; SIGTERM hands them back at a step boundary."""
    from akira_cli.fleet.worker import Worker

    url, settings = context(root, database_url)
    folder = (work_dir or Path(settings.work_dir)).expanduser().resolve()
    timeout = worker_timeout or settings.worker_timeout_seconds
    return Worker(url, name, concurrency, folder, timeout).serve()


@app.command("status")
@exits
def status(
    json_out: Annotated[
        bool, typer.Option("--json", metavar="", help="A JSON list, one object per run.")
    ] = False,
    database_url: DatabaseOption = None,
    root: RootOption = None,
) -> int:
    """Every run: its status, worker, step, steps done and cost (no worker needs to run)."""
    from akira_cli.fleet.runs import STATUS_KEYS, rows

    url, _ = context(root, database_url)
    found = rows(url)
    if json_out:
        keys = (*STATUS_KEYS, "message")
        typer.echo(json.dumps([{key: row[key] for key in keys} for row in found], indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table("run", "task", "status", "worker", "step", "steps", "cost", "age")
    for row in found:
        status_text = row["status"] + (
            f" ({row['message'][:60]})" if row["message"] and row["status"] != "running" else ""
        )
        table.add_row(
            row["run_id"],
            row["task"] or "",
            status_text,
            row["worker"] or "-",
            row["step"] or "-",
            f"{row['steps_done']}/{row['steps_total']}" if row["steps_total"] else "-",
            f"${row['cost_usd']:.4f}",
            age(row["_age"]),
        )
    Console(width=max(100, Console().width)).print(table)
    return 0


@app.command("cancel", cls=PlainUsage)
@exits
def cancel(
    run_id: Annotated[
        str, typer.Argument(metavar="RUN_ID", help="The run to cancel (see 'akira fleet status').")
    ],
    database_url: DatabaseOption = None,
    root: RootOption = None,
) -> int:
    """Drop a queued run, or stop a running one at its next step."""
    from akira_cli.fleet.runs import cancel as cancel_run

    url, _ = context(root, database_url)
    typer.echo(f"akira: {run_id} {cancel_run(url, run_id)}", err=True)
    return 0


def age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"


def fleet_lister(root: Path, configured: str | None) -> Callable[[], list[dict[str, Any]] | None]:
    """For `akira web`: a lister of the fleet's runs, which answers None while the workspace
    has no fleet (no database named by AKIRA_FLEET_DATABASE_URL or `fleet.database_url`
    (`configured`), and no `.state/fleet.sqlite` there). The fleet is imported only when there
    is one, and a fleet that cannot be read (no `fleet` extra, an unreachable database) is its
    one line (an `AkiraError`)."""

    def listed() -> list[dict[str, Any]] | None:
        from akira_cli.fleet.database import ENV_URL

        if not (os.environ.get(ENV_URL) or configured or (root / ".state" / "fleet.sqlite").is_file()):
            return None
        from akira_cli.fleet.database import database_url, require_dbos
        from akira_cli.fleet.runs import rows

        require_dbos()
        return rows(database_url(None, root, configured))

    return listed
