"""The criteria table (the morning review): one row per acceptance criterion, with the steps that name it,
whether each was verified, its review and the checks that ran. The completion report ends with
it, `loop progress --json` carries it, and the pull request's body shows it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from akira_cli.criteria.refs import served
from akira_cli.criteria.spec import Criterion, Spec, load_spec
from akira_cli.state.models import CompletedStep, LoopState
from akira_cli.tasks.model import Step, TaskFile

NO_REVIEW = "—"
TEXT_WIDTH = 110
STEP_CHECK, PROJECT_ONLY = "step check", "project check only"
"""How a step was verified: by a check of its own (`Verify:`, `Exists:`, `Contains:`), or only
by the project-wide checks, which pass whatever criterion the step names."""


@dataclass
class Evidence:
    step_id: str
    done: bool
    verified: bool
    review: str | None = None
    checks: list[str] = field(default_factory=list)
    """The step's own checks that passed."""
    project_checks: list[str] = field(default_factory=list)
    """The project-wide checks that passed with it."""
    commit: str | None = None
    changed_exam: bool = False
    """Its checks passed only with its exam changed: counted apart, never evidence."""

    @property
    def verified_by(self) -> str | None:
        if not self.verified:
            return None
        return PROJECT_ONLY if self.project_checks and not self.checks else STEP_CHECK

    @property
    def counts(self) -> bool:
        """Evidence: done by akira, with a check of the step's own passing, and not disputed by
        the reviewer."""
        return self.done and self.verified_by == STEP_CHECK and self.review != "disputed"


@dataclass
class Row:
    criterion: Criterion
    steps: list[Evidence] = field(default_factory=list)

    @property
    def covered(self) -> bool:
        return any(step.counts for step in self.steps)


def rows_for(spec: Spec, task: TaskFile, state: LoopState, done: list[CompletedStep]) -> list[Row]:
    by_id = {step.step_id: step for step in done}
    rows = {criterion_id: Row(criterion) for criterion_id, criterion in spec.criteria.items()}
    for step in task.steps:
        ids = served(step, spec)
        if not ids:
            continue
        for leaf in _leaves(task, step):  # a parent is not executed: its steps carry the evidence
            evidence = _evidence(
                leaf.id, leaf.ticked or task.under_ticked_parent(leaf), by_id.get(leaf.id), state
            )
            for criterion_id in ids:
                if all(known.step_id != leaf.id for known in rows[criterion_id].steps):
                    rows[criterion_id].steps.append(evidence)
    return list(rows.values())


def _leaves(task: TaskFile, step: Step) -> list[Step]:
    """The executed steps under a step (itself when it has none under it that must run: a
    parent whose children are all optional stands for itself)."""
    found: list[Step] = []
    for child_id in step.children:
        child = task.get(child_id)
        if child is not None and not task.is_optional(child):
            found.extend(_leaves(task, child))
    return found or [step]


def _evidence(step_id: str, ticked: bool, completed: CompletedStep | None, state: LoopState) -> Evidence:
    from akira_cli.checks import is_project_check

    if completed is None:
        return Evidence(step_id, done=ticked, verified=False)  # ticked by a person, or open
    return Evidence(
        step_id,
        done=True,
        verified=completed.verified and completed.done_by != "person",
        review=review_of(completed) or review_of(state.steps.get(step_id)),
        checks=[name for name in completed.checks if not is_project_check(name)],
        project_checks=[name for name in completed.checks if is_project_check(name)],
        commit=completed.commit,
        changed_exam=completed.changed_exam,
    )


def review_of(record: object) -> str | None:
    """The reviewer's verdict a record carries (`approved`, `disputed`, `none`), if it has one."""
    value = getattr(record, "review", None) if record is not None else None
    if value is None:
        return None
    if isinstance(value, str):
        return value or None
    for name in ("outcome", "verdict", "status"):
        found = getattr(value, name, None) or (value.get(name) if isinstance(value, dict) else None)
        if isinstance(found, str) and found:
            return found
    return None


def table_for(task_path: Path, state: LoopState, done: list[CompletedStep]) -> tuple[Spec, list[Row]] | None:
    """The feature's criteria and their rows; None when no criteria file lies beside the task
    file or it names no criteria (the warning says why, at start)."""
    from akira_cli.tasks.parser import parse_task_text
    from akira_cli.tasks.reading import TaskFileError, read_task_bytes

    spec = load_spec(task_path)
    if spec is None or not spec.criteria:
        return None
    try:
        task = parse_task_text(read_task_bytes(task_path), task_path)
    except (OSError, TaskFileError):
        return None
    return spec, rows_for(spec, task, state, done)


def to_json(rows: list[Row]) -> list[dict[str, Any]]:
    return [
        {
            "id": row.criterion.id,
            "text": row.criterion.text,
            "covered": row.covered,
            "steps": [
                {
                    "step_id": step.step_id,
                    "done": step.done,
                    "verified": step.verified,
                    "verified_by": step.verified_by,
                    "changed_exam": step.changed_exam,
                    "review": step.review,
                    "checks": step.checks,
                    "project_checks": step.project_checks,
                    "commit": step.commit,
                }
                for step in row.steps
            ],
        }
        for row in rows
    ]


def render(spec: Spec, rows: list[Row], shown: str) -> str:
    """The report's closing section: the table, then the criteria without evidence."""
    lines = [
        "## Acceptance criteria",
        f"From `{shown}`: one row per criterion, with the steps that name it. A step is verified "
        "by a check of its own (`Verify:`, `Exists:`, `Contains:`), or by the project's checks only.",
        "",
        "| Criterion | Steps | Verified | Review | Checks |",
        "|---|---|---|---|---|",
    ]
    lines += [_line(row) for row in rows]
    missing = [row for row in rows if not row.covered]
    lines += ["", "## Not covered by evidence"]
    if not missing:
        lines.append("- none: every criterion has a step verified by a check of its own")
    lines += [f"- **{row.criterion.id}** {_short(row.criterion.text)}: {_why(row)}" for row in missing]
    return "\n".join(lines) + "\n"


def _line(row: Row) -> str:
    """One criterion's row of the table."""
    text = _short(row.criterion.text)
    steps = ", ".join(
        step.step_id + (f" `{step.commit[:8]}`" if step.commit else "") + ("" if step.done else " (open)")
        for step in row.steps
    )
    verified = ", ".join(
        f"{s.step_id}: {'CHANGED ITS EXAM' if s.changed_exam else VERIFIED[s.verified_by]}" for s in row.steps
    )
    reviews = ", ".join(f"{s.step_id}: {s.review}" for s in row.steps if s.review)
    own = sorted({check for step in row.steps for check in step.checks})
    project = sorted({check for step in row.steps for check in step.project_checks})
    checks = ", ".join([*own, *(f"project: {check}" for check in project)])
    return (
        f"| **{row.criterion.id}** {_cell(text)} | {_cell(steps) or '—'} | {verified or '—'} "
        f"| {_cell(reviews) or NO_REVIEW} | {_cell(checks) or '—'} |"
    )


VERIFIED = {STEP_CHECK: "yes", PROJECT_ONLY: "project check only", None: "no"}


def _why(row: Row) -> str:
    """Why a criterion has no evidence."""
    if not row.steps:
        return "no step names it"
    if not any(step.done for step in row.steps):
        return "its steps are not done"
    disputed = [s.step_id for s in row.steps if s.verified_by == STEP_CHECK and s.review == "disputed"]
    if disputed:
        return f"its checks passed, but the reviewer disputed step(s) {', '.join(disputed)}"
    changed = [s.step_id for s in row.steps if s.changed_exam]
    if changed:
        return f"step(s) {', '.join(changed)} passed only with their exam changed (a person's look)"
    project = [s.step_id for s in row.steps if s.done and s.verified_by == PROJECT_ONLY]
    if project:
        return (
            f"only the project's checks passed for step(s) {', '.join(project)}, and they pass "
            "whatever a step names; no check of the step's own (Verify:, Exists:, Contains:) shows it"
        )
    return "no step that names it was verified by a check"


def _short(text: str) -> str:
    return text if len(text) <= TEXT_WIDTH else text[: TEXT_WIDTH - 1].rstrip() + "…"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
