"""Runs shell commands in their own process group, so a timeout or a forced stop kills the whole
tree: which command starts how (its confinement, its variables, the ledger of its group, starting it
again when its confinement never started it) and what came of it. A started command's streams are
`streams.py`'s."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from akira_cli.streams import Pipes, kill_group

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from akira_cli.children.ledger import ChildLedger
    from akira_cli.live_output import LiveOutput, LiveWriter

OUTPUT_LIMIT = 64_000
STARTS = 5
"""How many times a confined command is started when its confinement fails to set up before it
runs (bwrap cannot bind the task file while a person replaces it): nothing of it ran, so
starting it again runs nothing twice, and a step's check that never ran never fails the step."""


@dataclass
class CommandResult:
    command: str
    exit_code: int | None
    output: str
    duration: float
    timed_out: bool = False
    interrupted: bool = False
    stderr: str = ""
    """Only with `run(..., split=True)`: then `output` is stdout alone."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.interrupted

    def describe(self) -> str:
        if self.interrupted:
            return f"`{self.command}` was interrupted by a forced stop"
        if self.timed_out:
            return f"`{self.command}` timed out after {self.duration:.0f}s"
        if self.exit_code == 127:
            return f"`{self.command}` exited 127: command not found"
        return f"`{self.command}` exited {self.exit_code}"


def tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "…" + text[-limit:]


class CommandWrapper(Protocol):
    """Turns a command line into the one that runs it confined (`sandbox.Sandbox`, docs/sandbox.md)."""

    def wrap(
        self, argv: Sequence[str], cwd: Path, environ: Mapping[str, str], status_fd: int | None = None
    ) -> tuple[list[str], dict[str, str]]:
        """`status_fd`: where the confinement writes, as JSON, an `exit-code` once the command
        ran (none when it never started)."""
        ...

    def moved(self, tree: Path) -> CommandWrapper:
        """The same confinement for a parallel step's worktree slot."""
        ...

    def looking(self, preset: str | None = None) -> CommandWrapper:
        """The same confinement with the work tree read-only, for `preset`'s CLI (a reviewer)."""
        ...

    def sharing(self, folder: Path, reading: Sequence[Path] = ()) -> CommandWrapper:
        """The same confinement with `folder` (akira's, outside the work tree) writable and
        `reading` readable too."""
        ...

    def begin(self, step_id: str) -> None:
        """The step whose commands run next in this work tree: what is refused from now is its."""
        ...

    def blame(self, said: str) -> tuple[list[str], list[str]]:
        """What the confinement refused since `begin`, one line each with the line of
        configuration that allows it: what `said` (a failure's text) shows stopped the step (a
        host it names, a hidden path it did not find), and what else was refused."""
        ...


_ENVIRON = threading.Lock()


def inherit(variables: dict[str, str] | None) -> None:
    """Puts a command's variables (AKIRA_TASK_ID, AKIRA_STEP_ID, ...) into akira's own
    environment, which the command inherits. Passing `env=` instead makes every spawn encode the
    whole environment again: the most expensive part of starting a command after the fork.
    They are the current step's, the same for every command of that step."""
    if not variables:
        return
    with _ENVIRON:
        for name, value in variables.items():
            if os.environ.get(name) != value:
                os.environ[name] = value


class CommandRunner:
    """One command at a time; `kill()` from another thread ends the running one's process group."""

    def __init__(
        self,
        cwd: Path,
        env: dict[str, str] | None = None,
        ledger: ChildLedger | None = None,
        on_start: Callable[[], None] | None = None,
        *,
        private_env: bool = False,
        wrapper: CommandWrapper | None = None,
        live: LiveOutput | None = None,
    ) -> None:
        self.cwd = cwd
        self.live = live
        """Where each command's output goes as it comes, for `akira web` (`live_output.py`)."""
        self.private_env = private_env
        """Each command gets its variables passed to it, not put into akira's environment: a
        parallel step's runner, whose commands run beside other steps' (another AKIRA_STEP_ID)."""
        self.env = env
        self.ledger = ledger
        """Where the running groups are listed, so that a later run can kill what a crash left."""
        self.on_start = on_start
        """Called once each command has started: what need not come before it (a pending
        fsync) is done while it runs."""
        self.commands = 0
        """How many commands this runner has started."""
        self.bash = shutil.which("bash") or "bash"
        """Found once: `bash` alone makes every spawn try each folder of PATH in turn."""
        self._current: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self.killed = False
        self.wrapper = wrapper
        """A sandboxed run's: every command starts inside it."""

    def run(
        self,
        command: str,
        timeout: float,
        *,
        stdin: str | None = None,
        env: dict[str, str] | None = None,
        split: bool = False,
        wrapper: CommandWrapper | None = None,
    ) -> CommandResult:
        """`split` (with `stdin`): stderr is read apart from stdout, for an agent CLI that
        writes its answer to one and its warnings and stack traces to the other. `wrapper`: this
        command's confinement instead of the runner's (a reviewer's read-only one)."""
        wrapper = wrapper or self.wrapper
        for _ in range(STARTS):
            result, ran = self._run(command, timeout, stdin, env, split, wrapper)
            if ran or result.timed_out or self.killed:
                break
        return result

    def _run(
        self,
        command: str,
        timeout: float,
        stdin: str | None,
        env: dict[str, str] | None,
        split: bool,
        wrapper: CommandWrapper | None,
    ) -> tuple[CommandResult, bool]:
        """One start of the command, and whether it ran (False when its confinement never
        started it)."""
        started = time.monotonic()
        pipes = Pipes.open(stdin, split, confined=wrapper is not None)
        try:
            argv, executable, own_env = self._command_line(command, env, wrapper, pipes.status_w)
            if self.ledger is not None:
                self.ledger.spawning()
            process = subprocess.Popen(
                argv,
                executable=executable,
                cwd=self.cwd,
                env=own_env,
                start_new_session=True,
                **pipes.popen(),
            )
        except BaseException:
            pipes.close()
            raise
        finally:
            pipes.spawned()
        self.commands += 1
        live = self.live.started(command) if self.live is not None else None
        try:
            out, err, timed_out = self._watch(process, pipes, timeout, live)
        finally:
            ran = pipes.ran()
            pipes.close()
            if live is not None:
                live.close(process.returncode)
        interrupted = self.killed and not timed_out and process.returncode != 0
        text, errors = (tail(data.decode("utf-8", "replace"), OUTPUT_LIMIT) for data in (out, err))
        return CommandResult(
            command, process.returncode, text, time.monotonic() - started, timed_out, interrupted, errors
        ), ran

    def _command_line(
        self, command: str, env: dict[str, str] | None, wrapper: CommandWrapper | None, status_w: int
    ) -> tuple[list[str], str, dict[str, str] | None]:
        """The argv, the program and the environment (None: akira's own) a command starts with:
        inside `wrapper` when there is one. Its variables are passed to it when it runs beside
        other steps' or confined, else put into akira's environment (`inherit`)."""
        own_env = None
        if self.private_env:
            with _ENVIRON:  # another thread may be putting a variable into it right now
                own_env = {**os.environ, **(self.env or {}), **(env or {})}
        if wrapper is not None:
            with _ENVIRON:
                merged = own_env or {**os.environ, **(self.env or {}), **(env or {})}
            argv, own_env = wrapper.wrap([self.bash, "-c", command], self.cwd, merged, status_w)
            return argv, argv[0], own_env
        if own_env is None:
            inherit(self.env)
            inherit(env)
        return ["bash", "-c", command], self.bash, own_env

    def _watch(
        self, process: subprocess.Popen[bytes], pipes: Pipes, timeout: float, live: LiveWriter | None
    ) -> tuple[bytes, bytes, bool]:
        """A started command until it ends: killable (`kill`, the ledger a later run reads), its
        output and its stderr read, and whether it timed out."""
        with self._lock:
            self._current = process
            if self.killed:  # a forced stop came while the command was starting
                kill_group(process)
        try:
            if self.ledger is not None:
                self.ledger.started(process.pid)
            if self.on_start is not None:
                self.on_start()
            return pipes.read(process, timeout, live)
        except BaseException:
            kill_group(process)  # nobody would wait for it any more
            raise
        finally:
            with self._lock:
                self._current = None
            if self.ledger is not None:
                self.ledger.ended(process.pid)

    def sync_pending(self) -> None:
        """Does what `on_start` does, for an attempt whose agent starts no command right away,
        and after each agent's run (a no-op when a command's start did it already)."""
        if self.on_start is not None:
            self.on_start()

    def kill(self) -> None:
        """Forced stop: kill the running command's whole process group."""
        self.killed = True
        with self._lock:
            if self._current is not None:
                kill_group(self._current)
