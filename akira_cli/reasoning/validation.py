"""Semantic validation: host structural checks first, then the LLM's advisory judgement.

The host checks tool names against the registry, dependency cycles and missing dependencies.
The model then judges specificity, relevance, do/say mismatch, hallucinated tools, consistency
and cross-phase agreement. Reports are advisory: they feed refinement and the
convergence judgement, never the loop's control directly.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, field_validator

from akira_cli.llm.client import LLMClient
from akira_cli.llm.types import LLMSchemaError
from akira_cli.reasoning import prompts
from akira_cli.reasoning.models import (
    Delta,
    IssueType,
    Plan,
    Reply,
    Severity,
    ValidationIssue,
    ValidationReport,
)

_ISSUE_TYPES = set(IssueType.__args__)  # type: ignore[attr-defined]


class IssueDraft(Reply):
    type: IssueType = "other"
    severity: Severity = "medium"
    description: str
    location: str = ""
    proposed_repair: str = ""
    repair: Delta | None = None

    @field_validator("type", mode="before")
    @classmethod
    def _known_type(cls, value: Any) -> Any:
        text = str(value).strip().lower().replace("/", "_").replace("-", "_").replace(" ", "_")
        aliases = {"do_say": "do_say_mismatch", "hallucinated_tool": "hallucination"}
        text = aliases.get(text, text)
        return text if text in _ISSUE_TYPES else "other"

    @field_validator("severity", mode="before")
    @classmethod
    def _known_severity(cls, value: Any) -> Any:
        text = str(value).strip().lower()
        return text if text in {"high", "medium", "low"} else "medium"


class ValidationReply(Reply):
    issues: list[IssueDraft] = Field(default_factory=list)


def structural_issues(plan: Plan, tools: Sequence[str]) -> list[ValidationIssue]:
    """Host-side checks, run before the model looks at the plan."""
    found = [*_unknown_tools(plan, set(tools)), *_missing_dependencies(plan), *_cycles(plan)]
    for number, issue in enumerate(found, start=1):
        issue.issue_id = f"host-{number}"
    return found


def _host_issue(type_: IssueType, code: str, location: str, text: str, repair: str) -> ValidationIssue:
    return ValidationIssue(
        issue_id="",
        type=type_,
        severity="high",
        description=text,
        location=location,
        proposed_repair=repair,
        source="host",
        code=code,
    )


def _unknown_tools(plan: Plan, registry: set[str]) -> list[ValidationIssue]:
    issues = []
    for step in plan.steps:
        names = [call.name for call in step.tool_calls]
        names += [call.name for call in step.executed_tool_calls]
        for name in dict.fromkeys(names):
            if name not in registry:
                known = ", ".join(sorted(registry)) or "none"
                text = f"step {step.id} uses tool '{name}', which is not in the registry"
                repair = f"use one of the registered tools ({known}) or no tool"
                issues.append(_host_issue("hallucination", "unknown_tool", step.id, text, repair))
    return issues


def _missing_dependencies(plan: Plan) -> list[ValidationIssue]:
    ids = plan.ids()
    return [
        _host_issue(
            "consistency",
            "missing_dependency",
            step.id,
            f"step {step.id} depends on '{dep}', which is not in the plan",
            f"remove the dependency on '{dep}' or add that step",
        )
        for step in plan.steps
        for dep in step.dependencies
        if dep not in ids
    ]


def _cycles(plan: Plan) -> list[ValidationIssue]:
    graph = {step.id: [d for d in step.dependencies if d != step.id] for step in plan.steps}
    self_loops = [step.id for step in plan.steps if step.id in step.dependencies]
    cycles = [[sid] for sid in self_loops] + find_cycles(graph)
    return [
        _host_issue(
            "consistency",
            "dependency_cycle",
            cycle[0],
            "dependency cycle: " + " -> ".join([*cycle, cycle[0]]),
            "break the cycle by removing one of these dependencies",
        )
        for cycle in cycles
    ]


def find_cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Each cycle once, found by depth-first search over the known nodes."""
    state: dict[str, int] = {}  # 1 = on the stack, 2 = finished
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if nxt not in graph:
                continue
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [])
    return cycles


class SemanticValidator:
    """Validates a plan (Phase B) or a plan with its outputs and answer (Phase C)."""

    def __init__(self, client: LLMClient, tools: Sequence[str]) -> None:
        self.client = client
        self.tools = list(tools)
        self._ids = itertools.count(1)

    def validate(self, task: str, plan: Plan, *, answer: str | None = None) -> ValidationReport:
        """Host checks, then one LLM call. API failures propagate; schema failures are noted."""
        artifact: Literal["plan", "execution"] = "plan" if answer is None else "execution"
        report = self._report(artifact, structural_issues(plan, self.tools))
        self._judge(report, f"validate_{artifact}", task=task, plan=plan, answer=answer or "")
        return report

    def validate_fragment(self, task: str, plan: Plan, step_ids: Sequence[str]) -> ValidationReport:
        """The steps a refinement changed, before the change is accepted.

        The host checks run on those steps first; one LLM call then judges the ones that passed
        them, with the rest of the plan as context. No call when every step already failed."""
        changed = set(step_ids)
        host = [issue for issue in structural_issues(plan, self.tools) if issue.location in changed]
        report = self._report("fragment", host)
        failed = {issue.location for issue in host}
        fragment = [step for step in plan.steps if step.id in changed - failed]
        if fragment:
            self._judge(report, "validate_fragment", task=task, plan=plan, fragment=fragment)
        return report

    def _report(
        self, artifact: Literal["plan", "execution", "fragment"], host: list[ValidationIssue]
    ) -> ValidationReport:
        return ValidationReport(validation_id=f"val-{next(self._ids)}", artifact_type=artifact, issues=host)

    def _judge(self, report: ValidationReport, template: str, **values: Any) -> None:
        """Adds the model's issues to `report`; a reply that stays off-schema is noted instead."""
        messages = prompts.messages(
            template,
            tools=", ".join(self.tools) or "none",
            host_issues=report.issues or "none",
            **values,
        )
        artifact = report.artifact_type
        try:
            reply = self.client.structured(
                messages, ValidationReply, purpose=f"reasoning.validate.{artifact}"
            )
        except LLMSchemaError as exc:
            report.error = f"semantic validation unavailable: {exc}"
            return
        report.issues += [
            ValidationIssue(issue_id=f"{report.validation_id}-{n}", **draft.model_dump())
            for n, draft in enumerate(reply.issues, start=1)
        ]
