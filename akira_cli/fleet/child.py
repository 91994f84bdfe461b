"""A fleet run's loop, in a child process of its worker (`python -m akira_cli.fleet.child`): the
run API's start in the foreground, with the run's settings as arguments, never through the
environment. The child dies with its worker (`loop_run.die_with_parent`), so a dead worker's
loop never runs on beside the one that recovers it."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m akira_cli.fleet.child")
    parser.add_argument("--task", required=True, help="the task file in the clone")
    parser.add_argument("--push", required=True, help="git.push: the remote each step's commit goes to")
    parser.add_argument("--branch", required=True, help='git.branch: "" to commit on the current one')
    args = parser.parse_args(argv)
    from akira_cli import api, redaction
    from akira_cli.api.models import Finished
    from akira_cli.errors import AkiraError
    from akira_cli.fileio import describe_os_error

    redaction.register_environment()
    try:
        run = api.start(
            None,
            args.task,
            detach=False,
            no_wait=True,
            settings={"git.push": args.push, "git.branch": args.branch},
            own_checkout=True,  # the worker's clone: what its setup changed is no person's work
            say=lambda line: print(f"akira: {line}", file=sys.stderr),
        )
    except (AkiraError, OSError) as exc:
        said = str(exc) if isinstance(exc, AkiraError) else describe_os_error(exc)
        print(f"akira: error: {redaction.redact(said)}", file=sys.stderr)
        return exc.exit_code if isinstance(exc, AkiraError) else 1
    print(f"akira: {run.line()}", file=sys.stderr)
    return run.exit_code if isinstance(run, Finished) else 0


if __name__ == "__main__":
    sys.exit(main())
