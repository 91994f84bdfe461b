"""What every doctor check shares: a `Finding` (one row of the report), the `DoctorContext` the
checks look at, the `Check` protocol and the registry the checks register in by name."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from akira_cli.agents.executable import AgentCommand
    from akira_cli.config import Config

Status = Literal["ok", "warn", "fail"]
TOOL_TIMEOUT_SECONDS = 60.0
"""A CLI's `--version` or `--help`: node CLIs start slowly on a busy machine, never hang."""


@dataclass(frozen=True)
class Finding:
    """One row of the report: `fail` would stop a run, `warn` may hurt one, `ok` is fine."""

    check: str
    status: Status
    detail: str
    fix: str = ""

    @classmethod
    def of_said(cls, check: str, said: str, status: Status = "fail") -> Finding:
        """A line akira would print (`what; how to fix it`) as a row, its fix apart."""
        detail, _, fix = said.rpartition("; ")
        return cls(check, status, detail or fix, fix if detail else "")

    def as_dict(self) -> dict[str, str]:
        return asdict(self)

    def redacted(self) -> Finding:
        """Secrets (a key in a CLI's message, a password in a URL) masked, as everywhere akira writes."""
        from akira_cli.redaction import redact

        return replace(self, detail=redact(self.detail), fix=redact(self.fix))


@dataclass
class DoctorContext:
    """What the checks look at: the workspace's configuration and this machine."""

    root: Path
    config: Config
    kind: str
    """The agent kind a run would use (`--agent`, else agent.kind)."""
    workdir: Path
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    agent: AgentCommand | None = None
    executable: str | None = None
    """Where the agent CLI's executable was found; None when it was not (or there is none)."""
    cli_version: tuple[int, int, int] | None = None
    """The agent CLI's version, once the version check has read it."""

    @property
    def home(self) -> Path:
        return Path(self.env.get("HOME") or Path.home())

    answers: dict[tuple[str, ...], ToolOutput] = field(default_factory=dict, repr=False)
    """What `prefetch` ran, by command line."""

    def prefetch(self, argvs: list[list[str]]) -> None:
        """Runs these programs side by side (a node CLI takes seconds to start, and its `--version`
        and `--help` need two starts); `tool` then answers from what they said."""
        from concurrent.futures import ThreadPoolExecutor

        todo = [argv for argv in dict.fromkeys(map(tuple, argvs)) if argv not in self.answers]
        if len(todo) < 2:
            return
        with ThreadPoolExecutor(max_workers=len(todo)) as pool:
            self.answers.update(zip(todo, pool.map(lambda argv: self.run(list(argv)), todo), strict=True))

    def tool(self, argv: list[str]) -> ToolOutput:
        """A program of this machine's (a CLI's `--version`, `--help`, `git --version`): what it said."""
        answer = self.answers.get(tuple(argv))
        return answer if answer is not None else self.run(argv)

    def run(self, argv: list[str]) -> ToolOutput:
        try:
            done = subprocess.run(
                argv,
                cwd=self.workdir,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=TOOL_TIMEOUT_SECONDS,
            )
        except subprocess.TimeoutExpired:
            return ToolOutput(None, "", f"no answer within {TOOL_TIMEOUT_SECONDS:.0f} s")
        except OSError as exc:
            return ToolOutput(None, "", exc.strerror or str(exc))
        return ToolOutput(done.returncode, done.stdout, done.stderr)


@dataclass(frozen=True)
class ToolOutput:
    code: int | None
    """None when the program did not run to its end (not startable, timed out)."""
    out: str
    err: str

    @property
    def text(self) -> str:
        return f"{self.out}\n{self.err}"


class Check(Protocol):
    name: str

    def run(self, context: DoctorContext) -> list[Finding]: ...


CHECKS: dict[str, Check] = {}


def register_check(check: Check) -> Check:
    CHECKS[check.name] = check
    return check
