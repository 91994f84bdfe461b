"""A command that dies with the process that started it, started without `preexec_fn`.

    python -m akira_cli.fleet.deathsig PARENT_PID COMMAND [ARG...]

A fleet worker runs its runs in threads, and `preexec_fn` is unsafe there: the forked child runs
Python while another thread may hold a lock it needs. So the worker starts this small module
instead. In its own single-threaded process it asks Linux for SIGKILL when its parent dies
(PR_SET_PDEATHSIG, which `exec` keeps), checks that the parent is still PARENT_PID (one that died
before the request was made would never send it), and becomes COMMAND. The loop's own reaper then
kills the loop's commands. The signal comes when the thread that started the child ends, so the
worker starts each child from the thread that waits for it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
ORPHANED = 125
"""The exit code when the parent was gone before the command could start."""


def tethered(command: list[str]) -> list[str]:
    """`command`, started through this module: it dies with the calling process. Python runs
    isolated (`-I`): the clone it starts in is never on its import path."""
    return [sys.executable, "-I", "-m", "akira_cli.fleet.deathsig", str(os.getpid()), *command]


def main(argv: list[str]) -> int:
    parent, command = int(argv[0]), argv[1:]
    with contextlib.suppress(AttributeError, OSError):  # not Linux: the worker's timeout recovers
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        return ORPHANED
    os.execvp(command[0], command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
