"""The one way in: the Python API that the CLI, the fleet worker and the MCP server call.

Each verb takes the workspace (`root`: a folder, or None for the one the CLI would find) and the
CLI's options as keyword arguments, and returns a model from `akira_cli.api.models` whose JSON
is what the CLI's `--json` prints. A refusal is an `AkiraError` carrying the CLI's one line and
exit code. `start` and `resume` detach by default: they return once the run's state exists,
with its task id and process.

    from akira_cli import api

    run = api.start("~/project", "Specs/auth/tasks.md")
    api.status("~/project", run.task_id)

Importing this package is cheap (each verb imports what it uses), so the CLI starts fast.
"""

from akira_cli.api.control import cancel, stop, undo
from akira_cli.api.loops import follow, resume, start
from akira_cli.api.night import budget, events
from akira_cli.api.tasks import tasks
from akira_cli.api.views import logs, progress, report, status
from akira_cli.api.watching import fleet_runs, output, spending

__all__ = [
    "budget",
    "cancel",
    "events",
    "fleet_runs",
    "follow",
    "logs",
    "output",
    "progress",
    "report",
    "resume",
    "spending",
    "start",
    "status",
    "stop",
    "tasks",
    "undo",
]
