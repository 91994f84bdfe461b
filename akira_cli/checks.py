"""The decision engine's deterministic checks and the evaluation that combines them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from akira_cli import nofollow
from akira_cli.check_settings import ProjectCheck
from akira_cli.errors import LoopStop
from akira_cli.runner import CommandRunner, tail
from akira_cli.state.records import CheckResult, Evaluation
from akira_cli.tasks.model import Step

MAX_CONTAINS = 16_000_000
"""How much of a file a `Contains:` check reads."""


class Check(Protocol):
    @property
    def name(self) -> str: ...

    def run(self) -> CheckResult: ...


class Judge(Protocol):
    """An optional LLM judge: a confidence in [0, 1] and its reasons."""

    def judge(self, step: Step, evaluation: Evaluation, output: str) -> tuple[float, list[str]]: ...


@dataclass
class VerifyCheck:
    command: str
    runner: CommandRunner
    timeout: float
    label: str = ""
    advisory: bool = False
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = self.label or f"Verify `{self.command}`"

    def run(self) -> CheckResult:
        result = self.runner.run(self.command, self.timeout)
        detail = "" if result.ok else f"{result.describe()}\n{tail(result.output, 1500)}".strip()
        output = tail(result.output, 1500)
        return CheckResult(
            name=self.name, passed=result.ok, detail=detail, advisory=self.advisory, output=output
        )


@dataclass
class ExistsCheck:
    path: str
    workdir: Path

    @property
    def name(self) -> str:
        return f"Exists `{self.path}`"

    def run(self) -> CheckResult:
        found = (self.workdir / self.path).exists()
        return CheckResult(
            name=self.name, passed=found, detail="" if found else f"{self.path} does not exist"
        )


@dataclass
class ContainsCheck:
    path: str
    text: str
    workdir: Path

    @property
    def name(self) -> str:
        return f"Contains `{self.path}` `{self.text}`"

    def run(self) -> CheckResult:
        """Reads a regular file in the work folder only, up to `MAX_CONTAINS` bytes: a FIFO, a
        device or a link out of the tree fails the check, and never blocks akira."""
        try:
            data = nofollow.read(self.workdir, self.path, MAX_CONTAINS + 1)
        except FileNotFoundError:
            return CheckResult(name=self.name, passed=False, detail=f"{self.path} does not exist")
        except OSError as exc:
            return CheckResult(
                name=self.name, passed=False, detail=f"{self.path} cannot be read: {exc.strerror}"
            )
        found = self.text in data[:MAX_CONTAINS].decode("utf-8", errors="replace")
        cut = f" (only its first {MAX_CONTAINS} bytes were read)" if len(data) > MAX_CONTAINS else ""
        detail = "" if found else f"{self.path} does not contain {self.text!r}{cut}"
        return CheckResult(name=self.name, passed=found, detail=detail)


@dataclass
class AgentCheck:
    """The agent's own result counts as one check."""

    ok: bool
    error: str
    name: str = "agent result"

    def run(self) -> CheckResult:
        return CheckResult(name=self.name, passed=self.ok, detail="" if self.ok else self.error)


def project_check_name(label: str) -> str:
    return f"check `{label}`"


def is_project_check(name: str) -> bool:
    """A project-wide check (`checks:` in config), not one the step's own directives name."""
    return name.startswith("check `")


def step_checks(
    step: Step,
    project: Iterable[ProjectCheck],
    runner: CommandRunner,
    workdir: Path,
    default_timeout: float,
    advisory_project: bool = False,
) -> list[Check]:
    timeout = step.timeout or default_timeout
    checks: list[Check] = [VerifyCheck(cmd, runner, timeout) for cmd in step.verify]
    checks += [ExistsCheck(path, workdir) for path in step.exists]
    checks += [ContainsCheck(path, text, workdir) for path, text in step.contains]
    for check in project:
        name, limit = project_check_name(check.label), check.timeout or default_timeout
        checks.append(VerifyCheck(check.run, runner, limit, name, advisory_project))
    return checks


def evaluate(
    checks: list[Check],
    threshold: float,
    *,
    judge: Judge | None = None,
    step: Step | None = None,
    output: str = "",
) -> Evaluation:
    """Complete iff every check passes and the confidence reaches the threshold.

    Without a judge the confidence is the fraction of checks passed. An error while evaluating
    means incomplete, with the error kept for the log.
    """
    try:
        results = [check.run() for check in checks]
        gating = [result for result in results if not result.advisory]
        passed = sum(result.passed for result in gating)
        confidence = passed / len(gating) if gating else 0.0
        reasons = [f"{r.name} failed: {r.detail}" for r in gating if not r.passed]
        if judge is not None and step is not None and passed == len(gating):
            evaluation = Evaluation(complete=False, confidence=confidence, checks=results)
            confidence, judge_reasons = judge.judge(step, evaluation, output)
            reasons += judge_reasons if confidence < threshold else []
        complete = passed == len(gating) and confidence >= threshold
        if not complete and not reasons:
            reasons = [f"confidence {confidence:.2f} is below the threshold {threshold:.2f}"]
        return Evaluation(complete=complete, confidence=confidence, checks=results, reasons=reasons)
    except LoopStop:
        raise  # a used-up budget stops the loop; it is not a verdict on the step
    except Exception as exc:  # an unreachable or confused judge included: incomplete, logged
        message = f"evaluation error: {type(exc).__name__}: {exc}"
        return Evaluation(complete=False, confidence=0.0, reasons=[message], error=message)
