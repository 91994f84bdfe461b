"""The recursive planner: a declarative plan, then refinement by ADD/MODIFY/REMOVE deltas only.

The model proposes; `DeltaApplier` decides. It keeps step ids stable, refuses any change to an
executed step, enforces the nesting and refinement limits by marking the fragment for manual
intervention, and refuses a delta that would create a dependency cycle (the structural half of
validating a fragment before acceptance; the engine adds the semantic half and passes its vetoes
back in as `vetoed`).

When the model reports that its rewrite conflicts with an executed step (`invalidate`),
the applier marks that step `invalid` and records why; its content stays as it was. Only
executed steps can be invalidated, and doing so costs no refinement attempt (nothing is
rewritten). An invalidated step never runs again: an ADD with `replaces` stands in for it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from akira_cli.llm.client import LLMClient
from akira_cli.reasoning import prompts
from akira_cli.reasoning.models import (
    ActionType,
    Delta,
    Invalidation,
    ManualIntervention,
    Plan,
    PlannedToolCall,
    PlanStep,
    RefinementAction,
    RepairConflict,
    Reply,
    TaskProfile,
    TTLAllocation,
    ValidationIssue,
)
from akira_cli.reasoning.validation import find_cycles

NESTING = "nesting depth"


class StepDraft(Reply):
    id: str = ""
    description: str
    dependencies: list[str] = Field(default_factory=list)
    provides: list[str] = Field(default_factory=list)
    tool_calls: list[PlannedToolCall] = Field(default_factory=list)
    incoming_context: str | None = None
    handoff_to_next: str | None = None
    parent_id: str | None = None


class PlanDraft(Reply):
    steps: list[StepDraft] = Field(min_length=1)
    follow_up_questions: list[str] = Field(default_factory=list)


class RefinementReply(Reply):
    deltas: list[Delta] = Field(default_factory=list)
    invalidate: list[Invalidation] = Field(default_factory=list)
    """Executed steps the deltas contradict; the host marks them `invalid`."""
    follow_up_questions: list[str] = Field(default_factory=list)


class Planner:
    """The LLM side: drafts a plan and proposes deltas. Raises LLMError."""

    def __init__(self, client: LLMClient, tools: Sequence[str]) -> None:
        self.client = client
        self.tools = ", ".join(tools) or "none"

    def draft(self, task: str, context: str, profile: TaskProfile, ttl: TTLAllocation) -> PlanDraft:
        messages = prompts.messages(
            "plan",
            task=task,
            context=context or "(none)",
            profile=profile,
            tools=self.tools,
            max_depth=str(ttl.max_nesting_depth),
        )
        return self.client.structured(messages, PlanDraft, purpose="reasoning.plan")

    def refine(self, task: str, plan: Plan, triggers: dict[str, Any]) -> RefinementReply:
        messages = prompts.messages("refine", task=task, plan=plan, triggers=triggers, tools=self.tools)
        return self.client.structured(messages, RefinementReply, purpose="reasoning.refine")


class DeltaApplier:
    """Applies deltas under the limits; remembers refinement counts across passes."""

    def __init__(self, ttl: TTLAllocation) -> None:
        self.ttl = ttl
        self.total = 0
        self.per_fragment: dict[str, int] = {}
        self.manual: dict[str, str] = {}

    @property
    def exhausted(self) -> bool:
        return self.total >= self.ttl.max_refinements_total

    def copy(self) -> DeltaApplier:
        """An independent copy, for a trial run of a refinement."""
        return copy.deepcopy(self)

    def apply_all(
        self,
        plan: Plan,
        deltas: Sequence[Delta],
        triggered_by: list[str],
        *,
        invalidate: Sequence[Invalidation] = (),
        vetoed: Mapping[int, str] | None = None,
    ) -> list[RefinementAction]:
        """Invalidations first (so that an ADD can replace the step), then the deltas in order.

        `vetoed` maps a delta's index to why its fragment failed validation: that delta is
        refused and still counts as an attempt on its fragment, and a later delta that builds
        on a step it would have added is refused with it.
        """
        vetoed = vetoed or {}
        actions = [self.invalidate(plan, item) for item in invalidate]
        dropped: set[str] = set()
        for index, delta in enumerate(deltas):
            if index in vetoed:
                actions.append(self._veto(delta, vetoed[index]))
                if delta.op == "ADD":
                    dropped.add(delta.step_id)
            elif builds_on := _builds_on(delta, dropped):
                actions.append(_refused(delta, f"builds on '{builds_on}', whose change was rejected"))
            else:
                actions.append(self.apply(plan, delta))
        for action in actions:
            action.triggered_by = triggered_by
        plan.renumber()
        return actions

    def invalidate(self, plan: Plan, item: Invalidation) -> RefinementAction:
        """Marks an executed step `invalid`; anything else is refused."""
        reason = item.reason.strip() or "(the planner gave no reason)"
        action = RefinementAction(type="step_mark_invalid", target=item.step_id, reason=reason)
        step = plan.get(item.step_id)
        refusal = None
        if step is None:
            refusal = f"no step '{item.step_id}' in the plan"
        elif step.invalidation is not None:
            refusal = f"step '{step.id}' is already invalid"
        elif step.status not in {"complete", "failed"}:
            refusal = f"step '{step.id}' is {step.status}; only executed steps can be invalidated"
        if refusal is not None:
            action.accepted, action.rejection = False, refusal
            return action
        assert step is not None
        step.status, step.invalidation = "invalid", reason
        return action

    def _veto(self, delta: Delta, reason: str) -> RefinementAction:
        fragment = fragment_of(delta)
        self.total += 1
        self.per_fragment[fragment] = self.per_fragment.get(fragment, 0) + 1
        return _refused(delta, reason)

    def apply(self, plan: Plan, delta: Delta, *, count: bool = True) -> RefinementAction:
        action = RefinementAction(
            type=_action_type(delta),
            target=delta.step_id,
            changes=delta.changes(),
            reason=delta.reason,
        )
        fragment = fragment_of(delta)
        refusal = self._refusal(plan, delta, fragment, count)
        if refusal is None:
            refusal = _guarded_change(plan, delta, action, self.ttl.max_nesting_depth)
            if refusal is not None and refusal.startswith(NESTING):
                self._stop(fragment, refusal)
        if refusal is not None:
            action.accepted, action.rejection = False, refusal
            return action
        if count:
            self.total += 1
            self.per_fragment[fragment] = self.per_fragment.get(fragment, 0) + 1
        return action

    def _refusal(self, plan: Plan, delta: Delta, fragment: str, count: bool) -> str | None:
        if not count:
            return None
        if self.exhausted:
            return self._stop(
                fragment, f"refinement limit of {self.ttl.max_refinements_total} in all reached"
            )
        if self.per_fragment.get(fragment, 0) >= self.ttl.max_refinements_per_fragment:
            limit = self.ttl.max_refinements_per_fragment
            return self._stop(fragment, f"refinement limit of {limit} for this fragment reached")
        return None

    def _stop(self, fragment: str, reason: str) -> str:
        self.manual.setdefault(fragment, reason)
        return reason

    def interventions(self) -> list[ManualIntervention]:
        return [ManualIntervention(step_id=sid, reason=why) for sid, why in self.manual.items()]

    def mark(self, step_id: str, reason: str) -> None:
        self.manual.setdefault(step_id, reason)


def fragment_of(delta: Delta) -> str:
    """The fragment a delta refines: a nested ADD refines its parent, the rest their target."""
    return (delta.parent_id or delta.step_id) if delta.op == "ADD" else delta.step_id


def _builds_on(delta: Delta, dropped: set[str]) -> str | None:
    needs = [*(delta.dependencies or []), delta.parent_id, delta.step_id if delta.op != "ADD" else None]
    return next((step_id for step_id in needs if step_id and step_id in dropped), None)


def _refused(delta: Delta, reason: str) -> RefinementAction:
    return RefinementAction(
        type=_action_type(delta),
        target=delta.step_id,
        changes=delta.changes(),
        reason=delta.reason,
        accepted=False,
        rejection=reason,
    )


def _action_type(delta: Delta) -> ActionType:
    if delta.op == "ADD":
        return "subplan_create" if delta.parent_id else "step_add"
    return "step_modify" if delta.op == "MODIFY" else "step_remove"


def _guarded_change(plan: Plan, delta: Delta, action: RefinementAction, max_depth: int) -> str | None:
    """Applies one delta to `plan` in place, or returns why it is refused (plan untouched)."""
    candidate = plan.model_copy(deep=True)
    add = delta.op == "ADD"
    refusal = _add(candidate, delta, action, max_depth) if add else _change(candidate, delta)
    if refusal is None and find_cycles(_graph(candidate)):
        refusal = "the change would create a dependency cycle"
    if refusal is None:
        plan.steps = candidate.steps
    return refusal


def _graph(plan: Plan) -> dict[str, list[str]]:
    return {step.id: list(step.dependencies) for step in plan.steps}


def _change(plan: Plan, delta: Delta) -> str | None:
    target = plan.get(delta.step_id)
    if target is None:
        return f"no step '{delta.step_id}' in the plan"
    if target.invalidation is not None:
        return f"step '{target.id}' was invalidated after it ran; executed steps are immutable"
    if target.status in {"complete", "failed", "running"}:
        return f"step '{target.id}' is {target.status}; executed steps are immutable"
    if delta.op == "REMOVE":
        plan.steps.remove(target)
        for step in plan.steps:
            if not step.executed and target.id in step.dependencies:
                step.dependencies.remove(target.id)
        return None
    for field, value in delta.changes().items():
        if field not in {"parent_id", "replaces"}:
            setattr(target, field, value)
    if target.status in {"invalid", "incomplete"}:
        target.status, target.clarity_state = "pending", None
    return None


def _add(plan: Plan, delta: Delta, action: RefinementAction, max_depth: int) -> str | None:
    parent = plan.get(delta.parent_id) if delta.parent_id else None
    if delta.parent_id and parent is None:
        return f"parent step '{delta.parent_id}' is not in the plan"
    depth = parent.depth + 1 if parent else 1
    if depth > max_depth:
        return f"{NESTING} {depth} exceeds the limit of {max_depth}"
    if not delta.description:
        return "an added step needs a description"
    replaced = plan.get(delta.replaces) if delta.replaces else None
    if delta.replaces and (replaced is None or replaced.invalidation is None):
        return f"step '{delta.replaces}' is not an invalidated step; only those can be replaced"
    step_id = _free_id(plan, delta.step_id)
    action.target = step_id
    step = PlanStep(id=step_id, depth=depth, **delta.changes())
    if replaced is not None:
        _stand_in(plan, step, replaced.id)
    position = _insert_position(plan, parent)
    plan.steps.insert(position, step)
    if parent is not None and not parent.executed and parent.status != "running":
        parent.dependencies.append(step_id)
    return None


def _stand_in(plan: Plan, step: PlanStep, replaced: str) -> None:
    """The steps still to run that needed `replaced` depend on `step` instead."""
    step.dependencies = [dep for dep in step.dependencies if dep != replaced]
    for other in plan.steps:
        if not other.executed and replaced in other.dependencies:
            other.dependencies = [step.id if dep == replaced else dep for dep in other.dependencies]


def _free_id(plan: Plan, wanted: str) -> str:
    ids = plan.ids()
    if wanted and wanted not in ids:
        return wanted
    number = len(plan.steps) + 1
    while f"s{number}" in ids:
        number += 1
    return f"s{number}"


def _insert_position(plan: Plan, parent: PlanStep | None) -> int:
    """Top-level steps go last; sub-steps go right before their parent, which waits for them."""
    if parent is None:
        return len(plan.steps)
    return plan.steps.index(parent)


def repair_conflicts(
    actions: Sequence[RefinementAction], issues: Sequence[ValidationIssue]
) -> list[RepairConflict]:
    """Validator repairs that disagree with an accepted planner change on the same step.

    The planner's change stands; the validator's repair stays in the report as advisory.
    """
    changed = {action.target: action for action in actions if action.accepted}
    conflicts = []
    for issue in issues:
        if issue.repair is None:
            continue
        target = issue.repair.step_id or issue.location
        action = changed.get(target)
        proposed = {"op": issue.repair.op, **issue.repair.changes()}
        if action is None or _same_change(action, proposed):
            continue
        planner = {"type": action.type, **action.changes}
        conflicts.append(
            RepairConflict(
                target=target,
                issue_id=issue.issue_id,
                validator_repair=proposed,
                planner_change=planner,
            )
        )
    return conflicts


def _same_change(action: RefinementAction, proposed: dict[str, Any]) -> bool:
    ops = {
        "step_add": "ADD",
        "subplan_create": "ADD",
        "step_modify": "MODIFY",
        "step_remove": "REMOVE",
    }
    wanted = {k: v for k, v in proposed.items() if k != "op"}
    return ops.get(action.type) == proposed["op"] and wanted == action.changes
