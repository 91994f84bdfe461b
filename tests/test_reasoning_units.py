"""Host-side logic of the reasoning engine, without a model: TTL, deltas, checks, convergence."""

from __future__ import annotations

from typing import Any

import pytest

from akira_cli.reasoning import prompts
from akira_cli.reasoning.convergence import ConvergenceReply, assess
from akira_cli.reasoning.models import Delta, Invalidation, Plan, PlanStep, TaskProfile, TTLAllocation
from akira_cli.reasoning.planner import DeltaApplier, repair_conflicts
from akira_cli.reasoning.profile import ttl_for
from akira_cli.reasoning.validation import structural_issues
from akira_cli.sections import ReasoningSettings


def profile(depth: int, sufficiency: float, breadth: str, confidence: str) -> TaskProfile:
    return TaskProfile.model_validate(
        {
            "reasoning_depth": depth,
            "information_sufficiency": sufficiency,
            "expected_tool_usage": "moderate",
            "output_breadth": breadth,
            "confidence_requirement": confidence,
        }
    )


def ttl(**overrides: int) -> TTLAllocation:
    values = {
        "passes": 6,
        "max_nesting_depth": 5,
        "max_refinements_per_fragment": 3,
        "max_refinements_total": 10,
    }
    values.update(overrides)
    return TTLAllocation(**values, requested=dict(values))


def plan_of(*steps: dict[str, Any]) -> Plan:
    plan = Plan(goal="g", steps=[PlanStep(**step) for step in steps])
    plan.renumber()
    return plan


# -- Phase A: the documented TTL function ---------------------------------------------------


def test_ttl_for_default_profile_is_four_passes_without_caps() -> None:
    allocation = ttl_for(TaskProfile.default(), ReasoningSettings())
    assert allocation.passes == 4
    assert allocation.max_nesting_depth == 3
    assert allocation.max_refinements_per_fragment == 3
    assert allocation.max_refinements_total == 8
    assert allocation.cap_hits == []


def test_ttl_for_simple_profile_is_small() -> None:
    allocation = ttl_for(profile(1, 0.9, "narrow", "low"), ReasoningSettings())
    assert (allocation.passes, allocation.max_nesting_depth) == (2, 2)


def test_ttl_for_caps_are_recorded_never_silent() -> None:
    allocation = ttl_for(profile(5, 0.2, "broad", "high"), ReasoningSettings(max_passes=6))
    assert allocation.requested["passes"] == 9
    assert allocation.passes == 6
    assert allocation.max_refinements_total == 10
    assert "passes: 9 capped to 6" in allocation.cap_hits
    assert "max_refinements_total: 18 capped to 10" in allocation.cap_hits


def test_ttl_for_is_deterministic() -> None:
    settings = ReasoningSettings()
    first = profile(4, 0.3, "moderate", "high")
    assert ttl_for(first, settings) == ttl_for(first.model_copy(), settings)


def test_default_profile_matches_the_seed() -> None:
    default = TaskProfile.default()
    assert (
        default.reasoning_depth,
        default.information_sufficiency,
        default.expected_tool_usage,
        default.output_breadth,
        default.confidence_requirement,
    ) == (3, 0.5, "moderate", "moderate", "medium")


# -- Phase B/C: deltas ------------------------------------------------------------------------


def test_executed_steps_are_immutable_sc014() -> None:
    plan = plan_of(
        {"id": "s1", "description": "done", "status": "complete", "step_output": "42"},
        {"id": "s2", "description": "failed", "status": "failed"},
        {"id": "s3", "description": "todo", "dependencies": ["s1"]},
    )
    before = [step.model_dump() for step in plan.steps[:2]]
    applier = DeltaApplier(ttl())
    actions = applier.apply_all(
        plan,
        [
            Delta(op="MODIFY", step_id="s1", description="rewrite history"),
            Delta(op="REMOVE", step_id="s2"),
            Delta(op="MODIFY", step_id="s3", description="todo, concretely"),
        ],
        ["trigger"],
    )
    assert [a.accepted for a in actions] == [False, False, True]
    assert "immutable" in (actions[0].rejection or "")
    assert [step.model_dump() for step in plan.steps[:2]] == before
    assert plan.get("s3") is not None and plan.get("s3").description == "todo, concretely"  # type: ignore[union-attr]
    assert applier.total == 1


def test_add_keeps_ids_stable_and_renumbers_pending_steps() -> None:
    plan = plan_of(
        {"id": "s1", "description": "a", "status": "complete", "step_index": 1, "total_steps": 2},
        {"id": "s2", "description": "b"},
    )
    applier = DeltaApplier(ttl())
    applier.apply_all(plan, [Delta(op="ADD", step_id="s2", description="dup id")], [])
    applier.apply_all(plan, [Delta(op="REMOVE", step_id="s2")], [])
    assert [s.id for s in plan.steps] == ["s1", "s3"]
    assert (plan.steps[1].step_index, plan.steps[1].total_steps) == (2, 2)
    assert (plan.steps[0].step_index, plan.steps[0].total_steps) == (1, 2)


def test_remove_drops_the_dependency_from_pending_steps() -> None:
    plan = plan_of(
        {"id": "s1", "description": "a"},
        {"id": "s2", "description": "b", "dependencies": ["s1"]},
    )
    DeltaApplier(ttl()).apply_all(plan, [Delta(op="REMOVE", step_id="s1")], [])
    assert plan.steps[0].dependencies == []


def test_modify_of_a_blocked_step_makes_it_pending_again() -> None:
    plan = plan_of({"id": "s1", "description": "a", "status": "invalid", "step_output": "?"})
    DeltaApplier(ttl()).apply_all(plan, [Delta(op="MODIFY", step_id="s1", description="b")], [])
    assert plan.steps[0].status == "pending"
    assert plan.steps[0].step_output == "?"


def test_only_executed_steps_are_invalidated_and_they_stay_as_they_ran_fr028() -> None:
    plan = plan_of(
        {"id": "s1", "description": "pick a db", "status": "complete", "step_output": "MySQL"},
        {"id": "s2", "description": "schema", "dependencies": ["s1"]},
        {"id": "s3", "description": "broke", "status": "failed", "error": "boom"},
    )
    applier = DeltaApplier(ttl())
    actions = applier.apply_all(
        plan,
        [
            Delta(op="ADD", step_id="s4", description="pick PostgreSQL", replaces="s1"),
            Delta(op="MODIFY", step_id="s1", description="pick PostgreSQL"),
            Delta(op="ADD", step_id="s5", description="x", replaces="s2"),
        ],
        ["t"],
        invalidate=[
            Invalidation(step_id="s1", reason="the schema now targets PostgreSQL"),
            Invalidation(step_id="s3"),
            Invalidation(step_id="s2", reason="pending"),
            Invalidation(step_id="nope"),
        ],
    )
    assert [(a.type, a.target, a.accepted) for a in actions] == [
        ("step_mark_invalid", "s1", True),
        ("step_mark_invalid", "s3", True),
        ("step_mark_invalid", "s2", False),
        ("step_mark_invalid", "nope", False),
        ("step_add", "s4", True),
        ("step_modify", "s1", False),
        ("step_add", "s5", False),
    ]
    assert "only executed steps can be invalidated" in (actions[2].rejection or "")
    assert "invalidated after it ran" in (actions[5].rejection or "")
    assert "only those can be replaced" in (actions[6].rejection or "")
    s1, s3 = plan.get("s1"), plan.get("s3")
    assert s1 is not None and s3 is not None
    assert (s1.status, s1.description, s1.step_output) == ("invalid", "pick a db", "MySQL")
    assert s1.invalidation == "the schema now targets PostgreSQL" and s1.executed
    assert (s3.status, s3.error, s3.invalidation) == ("invalid", "boom", "(the planner gave no reason)")
    # the pending step that needed s1 now waits for its replacement; s1 never runs again
    assert plan.get("s2").dependencies == ["s4"]  # type: ignore[union-attr]
    assert plan.get("s4").replaces == "s1"  # type: ignore[union-attr]
    assert [s.id for s in plan.ready()] == ["s4"]
    assert applier.total == 1, "an invalidation rewrites nothing and costs no attempt"


def test_a_vetoed_delta_counts_and_takes_what_builds_on_it_along_fr033() -> None:
    plan = plan_of({"id": "s1", "description": "a"})
    applier = DeltaApplier(ttl(max_refinements_per_fragment=1))
    deltas = [
        Delta(op="ADD", step_id="t1", description="vague"),
        Delta(op="ADD", step_id="t2", description="uses t1", dependencies=["t1"]),
        Delta(op="MODIFY", step_id="s1", description="b"),
    ]
    actions = applier.apply_all(plan, deltas, [], vetoed={0: "refined step failed validation: vague"})
    assert [(a.target, a.accepted) for a in actions] == [("t1", False), ("t2", False), ("s1", True)]
    assert actions[0].rejection == "refined step failed validation: vague"
    assert "builds on 't1'" in (actions[1].rejection or "")
    assert plan.ids() == {"s1"} and applier.total == 2
    again = applier.apply(plan, Delta(op="ADD", step_id="t1", description="concrete"))
    assert not again.accepted and "limit of 1 for this fragment" in (again.rejection or "")


def test_terminal_steps_make_the_answer() -> None:
    plan = plan_of(
        {"id": "a", "description": "a", "status": "complete", "step_output": "A"},
        {"id": "b", "description": "b", "status": "complete", "step_output": "B", "dependencies": ["a"]},
        {"id": "c", "description": "c", "status": "complete", "step_output": "C"},
        {"id": "d", "description": "d", "status": "invalid", "step_output": "D", "invalidation": "x"},
    )
    assert [s.id for s in plan.terminal_steps()] == ["b", "c"]
    assert plan.answer() == "B\n\nC"


def test_nesting_limit_marks_the_fragment_and_keeps_the_plan() -> None:
    plan = plan_of({"id": "n1", "description": "level 1"})
    applier = DeltaApplier(ttl(max_refinements_per_fragment=10, max_refinements_total=10))
    for level in range(2, 6):
        action = applier.apply(
            plan,
            Delta(op="ADD", step_id=f"n{level}", parent_id=f"n{level - 1}", description="x"),
        )
        assert action.accepted and action.type == "subplan_create"
    assert plan.get("n5") is not None and plan.get("n5").depth == 5  # type: ignore[union-attr]
    snapshot = plan.model_dump()
    too_deep = applier.apply(plan, Delta(op="ADD", step_id="n6", parent_id="n5", description="level 6"))
    assert not too_deep.accepted
    assert "nesting depth 6 exceeds the limit of 5" in (too_deep.rejection or "")
    assert plan.model_dump() == snapshot
    assert [m.step_id for m in applier.interventions()] == ["n5"]
    # the parent waits for its sub-step, which is inserted before it
    assert "n2" in plan.get("n1").dependencies  # type: ignore[union-attr]


def test_per_fragment_limit_is_three() -> None:
    plan = plan_of({"id": "s1", "description": "a"})
    applier = DeltaApplier(ttl())
    deltas = [Delta(op="MODIFY", step_id="s1", description=f"v{n}") for n in range(4)]
    actions = applier.apply_all(plan, deltas, [])
    assert [a.accepted for a in actions] == [True, True, True, False]
    assert plan.steps[0].description == "v2"
    assert applier.interventions()[0].step_id == "s1"
    assert "limit of 3 for this fragment" in applier.interventions()[0].reason


def test_total_limit_is_ten() -> None:
    plan = plan_of(*[{"id": f"s{n}", "description": "a"} for n in range(6)])
    applier = DeltaApplier(ttl())
    deltas = [Delta(op="MODIFY", step_id=f"s{n % 6}", description=f"v{n}") for n in range(11)]
    actions = applier.apply_all(plan, deltas, [])
    assert sum(a.accepted for a in actions) == 10
    assert not actions[-1].accepted and "10 in all" in (actions[-1].rejection or "")
    assert applier.exhausted


def test_delta_creating_a_cycle_is_refused() -> None:
    plan = plan_of(
        {"id": "s1", "description": "a"},
        {"id": "s2", "description": "b", "dependencies": ["s1"]},
    )
    action = DeltaApplier(ttl()).apply(plan, Delta(op="MODIFY", step_id="s1", dependencies=["s2"]))
    assert not action.accepted and "cycle" in (action.rejection or "")
    assert plan.steps[0].dependencies == []


def test_planner_change_wins_over_a_conflicting_validator_repair() -> None:
    from akira_cli.reasoning.models import ValidationIssue

    plan = plan_of({"id": "s1", "description": "vague"})
    actions = DeltaApplier(ttl()).apply_all(
        plan, [Delta(op="MODIFY", step_id="s1", description="concrete")], []
    )
    issue = ValidationIssue(
        issue_id="v1",
        type="specificity",
        severity="medium",
        description="vague",
        location="s1",
        repair=Delta(op="REMOVE", step_id="s1"),
    )
    conflicts = repair_conflicts(actions, [issue])
    assert len(conflicts) == 1
    assert conflicts[0].validator_repair == {"op": "REMOVE"}
    assert plan.steps[0].description == "concrete"


# -- structural checks ------------------------------------------------------------------------


def test_plan_dependencies_that_name_no_step_do_not_block_the_plan() -> None:
    plan = Plan(
        goal="g",
        steps=[
            PlanStep(id="s1", description="first", dependencies=["none"]),
            PlanStep(id="s2", description="second", dependencies=["s1", "the first step"]),
        ],
    )
    assert [step.id for step in plan.ready()] == ["s1"]
    plan.steps[0].status = "complete"
    assert [step.id for step in plan.ready()] == ["s2"]


def test_structural_checks_find_tools_cycles_and_missing_dependencies() -> None:
    plan = plan_of(
        {"id": "a", "description": "x", "dependencies": ["b"]},
        {"id": "b", "description": "y", "dependencies": ["a"]},
        {"id": "c", "description": "z", "dependencies": ["ghost"]},
        {"id": "d", "description": "w", "tool_calls": [{"name": "web_search"}]},
        {"id": "e", "description": "v", "tool_calls": [{"name": "read_file"}]},
    )
    issues = structural_issues(plan, ["read_file"])
    codes = {(issue.code, issue.location) for issue in issues}
    assert codes == {("dependency_cycle", "a"), ("missing_dependency", "c"), ("unknown_tool", "d")}
    assert all(issue.source == "host" and issue.proposed_repair for issue in issues)
    assert [issue.issue_id for issue in issues] == ["host-1", "host-2", "host-3"]


# -- convergence: the host decides from the scores ------------------------------------------


def done_plan() -> Plan:
    return plan_of({"id": "s1", "description": "a", "status": "complete", "step_output": "ok"})


def test_convergence_uses_the_default_thresholds() -> None:
    settings = ReasoningSettings()
    good = assess(ConvergenceReply(completeness=0.95, coherence=0.9, consistency=0.9), settings, done_plan())
    assert good.converged
    assert good.reason_codes == ["completeness_met", "coherence_met", "consistency_met"]
    low = assess(ConvergenceReply(completeness=0.94, coherence=1, consistency=1), settings, done_plan())
    assert not low.converged and low.failed_criteria == ["completeness"]


def test_conflicting_criteria_are_not_converged_and_named() -> None:
    reply = ConvergenceReply(completeness=1.0, coherence=0.4, consistency=0.95)
    result = assess(reply, ReasoningSettings(), done_plan())
    assert not result.converged
    assert "coherence_below_threshold" in result.reason_codes
    assert "criteria_conflict" in result.reason_codes
    assert result.failed_criteria == ["coherence"]


def test_custom_criteria_are_checked_in_addition() -> None:
    settings = ReasoningSettings(custom_criteria={"cites_sources": 0.8})
    reply = ConvergenceReply(completeness=1, coherence=1, consistency=1)
    assert assess(reply, settings, done_plan()).failed_criteria == ["cites_sources"]
    reply.custom_scores = {"cites_sources": 0.85}
    assert assess(reply, settings, done_plan()).converged


def test_pending_steps_rule_out_convergence_whatever_the_scores() -> None:
    plan = plan_of({"id": "s1", "description": "a"})
    reply = ConvergenceReply(completeness=1, coherence=1, consistency=1)
    result = assess(reply, ReasoningSettings(), plan)
    assert not result.converged
    assert {"steps_pending", "no_output"} <= set(result.reason_codes)


@pytest.mark.parametrize(
    "name",
    [
        "profile",
        "profile_update",
        "plan",
        "validate_plan",
        "validate_execution",
        "converge",
        "refine",
        "step",
        "validate_fragment",
        "synthesize",
    ],
)
def test_every_prompt_template_renders(name: str) -> None:
    keys = """task context profile observations tools max_depth plan host_issues answer report
        custom triggers step_index total_steps incoming_context description handoff_to_next
        fragment outputs"""
    values = dict.fromkeys(keys.split(), "x")
    assert prompts.render(name, **values).startswith("# Reasoning: ")


def test_build_plan_nests_parents_first_and_refuses_too_deep_steps() -> None:
    from akira_cli.reasoning.drafting import build_plan
    from akira_cli.reasoning.planner import PlanDraft

    draft = PlanDraft.model_validate(
        {
            "steps": [
                {"id": "c", "description": "child", "parent_id": "p"},
                {"id": "p", "description": "parent"},
                {"id": "g", "description": "grandchild", "parent_id": "c"},
            ]
        }
    )
    plan, applier, refused, warnings = build_plan("goal", draft, ttl(max_nesting_depth=2))
    assert [(s.id, s.depth, s.step_index, s.total_steps) for s in plan.steps] == [
        ("c", 2, 1, 2),
        ("p", 1, 2, 2),
    ]
    assert plan.get("p").dependencies == ["c"]  # type: ignore[union-attr]
    assert [a.target for a in refused] == ["g"]
    assert [m.step_id for m in applier.interventions()] == ["c"]
    assert applier.total == 0
    assert warnings == []


def test_build_plan_keeps_a_step_whose_parent_or_dependency_names_no_step() -> None:
    from akira_cli.reasoning.drafting import build_plan
    from akira_cli.reasoning.planner import PlanDraft

    draft = PlanDraft.model_validate(
        {
            "steps": [
                {"id": "s1", "description": "create hello.txt", "parent_id": "root", "dependencies": ["s0"]},
                {"id": "s2", "description": "check it", "dependencies": ["s1", "none", "s2"]},
            ]
        }
    )
    plan, _, refused, warnings = build_plan("goal", draft, ttl())
    assert refused == []
    assert [(s.id, s.depth, s.dependencies) for s in plan.steps] == [("s1", 1, []), ("s2", 1, ["s1"])]
    assert [step.id for step in plan.ready()] == ["s1"]
    assert warnings == [
        "plan step 's1' names parent 'root', which is no step; kept at top level",
        "plan step 's1' depends on 's0', which is no step; dropped",
        "plan step 's2' depends on 'none', 's2', which is no step; dropped",
    ]


def test_build_plan_that_refuses_every_step_runs_the_task_itself() -> None:
    from akira_cli.reasoning.drafting import build_plan
    from akira_cli.reasoning.planner import PlanDraft

    draft = PlanDraft.model_validate({"steps": [{"id": "a", "description": ""}]})
    plan, _, refused, warnings = build_plan("Create hello.txt", draft, ttl())
    assert [a.target for a in refused] == ["a"]
    assert [(s.id, s.description, s.status) for s in plan.steps] == [("s1", "Create hello.txt", "pending")]
    assert plan.ready() == plan.steps
    assert warnings == ["the plan has no step; the task itself is its one step"]
