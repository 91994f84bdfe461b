"""The plan from the model's draft: mended where it names no step, built through the guarded
ADD operation, and never empty (Phase B: a draft that parses but changes nothing is asked again)."""

from __future__ import annotations

from akira_cli.reasoning.models import Delta, Plan, RefinementAction, TTLAllocation
from akira_cli.reasoning.planner import DeltaApplier, PlanDraft, StepDraft


def build_plan(
    task: str, draft: PlanDraft, ttl: TTLAllocation
) -> tuple[Plan, DeltaApplier, list[RefinementAction], list[str]]:
    """The declarative plan from a draft, assembled through the same guarded ADD operation.

    Returns the plan, the applier that will guard its refinement, the draft steps refused (too
    deeply nested, no description, a cycle) and the warnings of what was mended. A parent or a
    dependency that names no step of the draft is dropped, with a warning, and the step is kept
    (at top level): small models write such plans all the time. A plan left with no step is the
    task itself as its one step, so no schema-valid draft leaves the engine nothing to run.
    """
    plan = Plan(goal=task, follow_up_questions=list(draft.follow_up_questions))
    applier = DeltaApplier(ttl)
    steps, warnings = _mended(draft.steps)
    refused = []
    for step in _parents_first(steps):
        delta = Delta(op="ADD", step_id=step.id, **step.model_dump(exclude={"id"}))
        action = applier.apply(plan, delta, count=False)
        if not action.accepted:
            refused.append(action)
    warning = ensure_a_step(plan, applier)
    if warning:
        warnings.append(warning)
    plan.renumber()
    return plan, applier, refused, warnings


def ensure_a_step(plan: Plan, applier: DeltaApplier) -> str | None:
    """An empty plan gets the task itself as its one step; returns the warning, if it did."""
    if plan.steps:
        return None
    applier.apply(plan, Delta(op="ADD", step_id="s1", description=plan.goal), count=False)
    plan.renumber()
    return "the plan has no step; the task itself is its one step"


def _mended(steps: list[StepDraft]) -> tuple[list[StepDraft], list[str]]:
    """The draft's steps with unknown parents and dependencies dropped, and what was dropped."""
    known = {step.id for step in steps if step.id}
    mended, warnings = [], []
    for step in steps:
        label = step.id or step.description[:40]
        parent = step.parent_id
        if parent is not None and (parent not in known or parent == step.id):
            warnings.append(
                f"plan step '{label}' names parent '{parent}', which is no step; kept at top level"
            )
            parent = None
        unknown = [dep for dep in step.dependencies if dep not in known or dep == step.id]
        if unknown:
            names = ", ".join(f"'{dep}'" for dep in unknown)
            warnings.append(f"plan step '{label}' depends on {names}, which is no step; dropped")
        dependencies = [dep for dep in step.dependencies if dep not in unknown]
        mended.append(step.model_copy(update={"parent_id": parent, "dependencies": dependencies}))
    return mended, warnings


def _parents_first(steps: list[StepDraft]) -> list[StepDraft]:
    parents = {step.id: step.parent_id for step in steps if step.id}

    def level(step: StepDraft) -> int:
        seen, parent = 0, step.parent_id
        while parent and seen <= len(parents):
            seen, parent = seen + 1, parents.get(parent)
        return seen

    return sorted(steps, key=level)
