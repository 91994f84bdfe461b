"""Whole reasoning runs against the fake OpenAI server, through real HTTP.

`Script` answers each request by the kind of prompt it carries (the first line of the user
turn), so parallel step calls are answered correctly whatever order they arrive in. Each run
test asserts the phase order A -> B -> C (-> D) from the recorded events (SC-013).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

from akira_cli.events import Event, EventBus
from akira_cli.llm.client import LLMClient
from akira_cli.reasoning.engine import ReasoningEngine
from akira_cli.reasoning.executor import StepOutcome
from akira_cli.reasoning.models import PlanStep, ReasoningResult, ToolCallRecord
from akira_cli.sections import LLMSettings, ReasoningSettings
from tests.support.reasoning import GOOD, LOW, NO_ISSUES, SIMPLE, Script, outcome, step
from tests.support.servers.fake_openai import FakeOpenAI, error, text

COMPLEX = {
    "reasoning_depth": 4,
    "information_sufficiency": 0.4,
    "expected_tool_usage": "minimal",
    "output_breadth": "broad",
    "confidence_requirement": "high",
    "raw_inference": "several dependent parts; requirements underspecified",
}
NO_DELTAS: dict[str, Any] = {"deltas": []}


class Harness:
    def __init__(self, server: FakeOpenAI, **settings: Any) -> None:
        self.server = server
        self.events: list[Event] = []
        self.bus = EventBus()
        self.bus.subscribe(self.events.append)
        self.sleeps: list[float] = []
        self.client = LLMClient(
            LLMSettings(base_url=server.base_url, model="fake-model", max_retries=3),
            bus=self.bus,
            sleep=self.sleeps.append,
        )
        self.settings = ReasoningSettings(**settings)

    def engine(self, **kwargs: Any) -> ReasoningEngine:
        return ReasoningEngine(self.client, self.settings, bus=self.bus, **kwargs)

    def run(self, script: Script, task: str = "task", **kwargs: Any) -> ReasoningResult:
        self.server.set_responder(script)
        result = self.engine(**kwargs).run(task)
        assert script.unscripted == [], f"no scripted answer for {script.unscripted}"
        assert_phase_order(self.events)
        json.dumps(result.to_dict())
        return result

    def of(self, type_: str) -> list[Event]:
        return [event for event in self.events if event.type == type_]


def phases(events: list[Event]) -> list[str]:
    seen = [e.data["phase"] for e in events if e.type == "reasoning_phase"]
    return [p for i, p in enumerate(seen) if i == 0 or p != seen[i - 1]]


def assert_phase_order(events: list[Event]) -> None:
    """SC-013: A, then B, then passes (C) with adaptive depth (D) only between passes."""
    order = phases(events)
    assert order[:2] == ["A", "B"], order
    assert order[-1] == "end", order
    body = order[2:-1]
    assert all(p in {"C", "D"} for p in body), order
    assert not body or body[0] == "C", order
    assert all(body[i - 1] == "C" for i, p in enumerate(body) if p == "D"), order
    first_step = next((i for i, e in enumerate(events) if e.data.get("stage") == "step_started"), None)
    last_b = max(i for i, e in enumerate(events) if e.data.get("phase") == "B")
    assert first_step is None or first_step > last_b


@pytest.fixture
def harness(fake_openai: FakeOpenAI) -> Harness:
    return Harness(fake_openai)


def record(name: str, result: ReasoningResult) -> None:
    print(f"\n[{name}] calls={result.calls} tokens={result.total_tokens} passes={len(result.passes)}")


# -- the two reference runs ---------------------------------------------------------------------


def test_simple_task_converges_in_one_pass(harness: Harness) -> None:
    script = Script(
        profile=SIMPLE,
        plan={"steps": [step("s1", "Add 2 and 3", handoff_to_next="the sum")]},
        validate_plan=NO_ISSUES,
        validate_execution=NO_ISSUES,
        converge=GOOD,
        steps={"Add 2 and 3": outcome("2 + 3 = 5")},
    )
    result = harness.run(script, "add two numbers: 2 and 3")
    record("simple", result)
    assert result.label == "converged" and result.converged
    assert result.answer == "2 + 3 = 5"
    assert len(result.passes) == 1 and result.passes[0].executed_step_ids == ["s1"]
    assert script.log == ["profile", "plan", "validate_plan", "step", "validate_execution", "converge"]
    assert result.calls == 6 and result.total_tokens > 0
    assert result.ttl.passes == 2 and result.profile_source == "inferred"
    assert result.reason_codes == ["completeness_met", "coherence_met", "consistency_met"]
    prompt = script.prompts_of("step")[0]
    assert "You are executing step 1 of 1." in prompt
    assert "You should prepare handoff for the next step as: the sum" in prompt
    assert harness.of("convergence")[0].data["converged"] is True
    lines = result.describe()
    assert lines[0] == "result: converged after 1 pass (TTL 2)"
    assert "scores: completeness 1.00, coherence 0.95, consistency 0.95" in lines
    assert lines[-1] == f"LLM calls: 6, tokens: {result.total_tokens}"


def test_complex_task_takes_several_passes_with_parallel_steps(harness: Harness) -> None:
    barrier = threading.Barrier(2, timeout=3)

    def together(answer: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
        def wait(_body: dict[str, Any]) -> dict[str, Any]:
            barrier.wait()  # both requests are in flight at once, or this times out
            return answer

        return wait

    script = Script(
        profile=COMPLEX,
        plan={
            "steps": [
                step("s1", "List the services", provides=["services"]),
                step("s2", "Design authentication", ["s1"]),
                step("s3", "Design storage", ["s1"]),
                step("s4", "Write it up", ["s2", "s3"]),
            ],
            "follow_up_questions": ["Which cloud provider?"],
        },
        validate_plan={
            "issues": [
                {
                    "type": "specificity",
                    "severity": "medium",
                    "description": "'Write it up' is vague",
                    "location": "s4",
                    "proposed_repair": "say what the write-up contains",
                }
            ]
        },
        refine=[
            {
                "deltas": [
                    {
                        "op": "MODIFY",
                        "step_id": "s4",
                        "description": "Write the architecture summary",
                        "reason": "specific",
                    }
                ]
            },
            NO_DELTAS,
        ],
        validate_execution=NO_ISSUES,
        converge=[LOW, LOW, GOOD],
        steps={
            "List the services": outcome("api, auth, db"),
            "Design authentication": together(outcome("OAuth2 with sessions")),
            "Design storage": together(outcome("PostgreSQL")),
            "Write the architecture summary": outcome("api+OAuth2+PostgreSQL"),
        },
    )
    result = harness.run(script, "design a web application architecture")
    record("complex", result)
    assert result.label == "converged"
    assert [p.executed_step_ids for p in result.passes] == [["s1"], ["s2", "s3"], ["s4"]]
    assert result.answer == "api+OAuth2+PostgreSQL"
    assert result.calls == 17  # 16 + the check of the refined s4 before it was accepted
    assert result.ttl.passes == 6 and "passes: 8 capped to 6" in result.ttl.cap_hits
    assert any("cap applied" in e.data["message"] for e in harness.of("warning"))
    assert result.follow_up_questions == ["Which cloud provider?"]
    assert [a.type for a in result.plan_refinements] == ["step_modify"]
    # Phase B refined the plan before anything ran
    assert script.log[:5] == ["profile", "plan", "validate_plan", "refine", "validate_fragment"]
    assert script.log[5] == "step"
    assert "Write the architecture summary" in script.prompts_of("validate_fragment")[0]
    assert result.plan_refinement_validation is not None
    steps = script.prompts_of("step")
    auth = next(p for p in steps if "Design authentication" in p)
    assert "You are executing step 2 of 4." in auth
    assert "[s1] List the services\napi, auth, db" in auth
    summary = next(p for p in steps if "Write the architecture summary" in p)
    assert "OAuth2 with sessions" in summary and "PostgreSQL" in summary
    assert phases(harness.events) == ["A", "B", "C", "end"]
    passes = [e for e in harness.of("reasoning_pass") if e.data["stage"] == "end"]
    assert [e.data["pass_number"] for e in passes] == [1, 2, 3]


# -- Phase C refinement and Phase D ------------------------------------------------------------


def test_blocked_step_triggers_refinement_and_a_profile_update(harness: Harness) -> None:
    script = Script(
        profile=SIMPLE,
        plan={"steps": [step("s1", "Summarise the file"), step("s2", "Answer", ["s1"])]},
        validate_plan=NO_ISSUES,
        validate_execution=[
            {
                "issues": [
                    {
                        "type": "specificity",
                        "severity": "high",
                        "description": "which file?",
                        "location": "s1",
                    }
                ]
            },
            NO_ISSUES,
        ],
        converge=[LOW, GOOD],
        refine={"deltas": [{"op": "MODIFY", "step_id": "s1", "description": "Summarise README.md"}]},
        profile_update={**COMPLEX, "raw_inference": "the task names no file"},
        steps={
            "Summarise the file": outcome("no file given", "BLOCKED"),
            "Summarise README.md": outcome("README: a CLI"),
            "Answer": outcome("It is a CLI."),
        },
    )
    result = harness.run(script)
    first = result.passes[0]
    assert first.blocked_step_ids == ["s1"]
    assert first.refinements[0].type == "step_modify" and first.refinements[0].accepted
    assert "s1" in first.refinements[0].triggered_by
    refine_prompt = script.prompts_of("refine")[0]
    assert '"blocked_steps"' in refine_prompt and "no file given" in refine_prompt
    assert len(result.profile_updates) == 1
    update = result.profile_updates[0]
    assert "BLOCKED step(s): s1" in update.reason and "validation issue" in update.reason
    assert (update.ttl_before, update.ttl_after) == (2, 6)
    assert "passes: 8 capped to 6" in update.cap_hits
    assert phases(harness.events) == ["A", "B", "C", "D", "C", "end"]
    assert harness.of("profile_updated")[-1].data["stage"] == "adaptive"
    assert result.label == "converged" and result.answer == "It is a CLI."
    assert script.log.count("profile") == 1


def test_no_profile_update_without_a_blocked_step(harness: Harness) -> None:
    script = Script(
        profile=SIMPLE,
        plan={"steps": [step("s1", "Do it")]},
        validate_plan=NO_ISSUES,
        validate_execution={"issues": [{"type": "relevance", "description": "off topic", "location": "s1"}]},
        converge=LOW,
        refine=NO_DELTAS,
        steps={"Do it": outcome("something")},
    )
    result = harness.run(script)
    assert result.profile_updates == [] and "D" not in phases(harness.events)
    assert result.label == "non_converged"
    assert "no_runnable_steps" in result.reason_codes
    assert "completeness_below_threshold" in result.reason_codes
    assert result.answer == "something"


def test_refinement_of_an_executed_step_is_rejected_and_logged_sc014(harness: Harness) -> None:
    script = Script(
        profile=SIMPLE,
        plan={"steps": [step("s1", "Compute x"), step("s2", "Report x", ["s1"])]},
        validate_plan=NO_ISSUES,
        validate_execution=NO_ISSUES,
        converge=[LOW, GOOD],
        refine={
            "deltas": [
                {"op": "MODIFY", "step_id": "s1", "description": "Compute y"},
                {"op": "REMOVE", "step_id": "s1"},
                {"op": "MODIFY", "step_id": "s2", "description": "Report x clearly"},
            ]
        },
        steps={"Compute x": outcome("x = 7"), "Report x clearly": outcome("x is 7")},
    )
    result = harness.run(script)
    actions = result.passes[0].refinements
    assert [(a.target, a.accepted) for a in actions] == [("s1", False), ("s1", False), ("s2", True)]
    assert all("immutable" in (a.rejection or "") for a in actions[:2])
    logged = [e for e in harness.of("refinement") if e.data.get("accepted") is False]
    assert [e.step_id for e in logged] == ["s1", "s1"]
    s1 = result.plan.get("s1") if result.plan else None
    assert s1 is not None
    assert (s1.description, s1.status, s1.step_output) == ("Compute x", "complete", "x = 7")
    assert result.label == "converged"


def test_limits_mark_fragments_for_manual_intervention_and_keep_work(harness: Harness) -> None:
    nested = [
        {
            "op": "ADD",
            "step_id": f"n{i}",
            "parent_id": "s2" if i == 2 else f"n{i - 1}",
            "description": f"part {i}",
        }
        for i in range(2, 5)
    ]
    script = Script(
        profile=SIMPLE,  # nesting cap 2 for a simple profile
        plan={"steps": [step("s1", "Start"), step("s2", "Finish", ["s1"])]},
        validate_plan=NO_ISSUES,
        validate_execution=NO_ISSUES,
        converge=LOW,
        refine={
            "deltas": [
                *nested,
                *[{"op": "MODIFY", "step_id": "s1", "description": f"again {i}"} for i in range(2)],
            ]
        },
        steps={"Start": outcome("started"), "part 2": outcome("p2"), "Finish": outcome("finished")},
        synthesize={"answer": "started; part 2 done"},
    )
    result = harness.run(script)
    assert result.answer == "started; part 2 done" and result.synthesized  # TTL ran out on two ends
    manual = {m.step_id: m.reason for m in result.manual_intervention}
    assert manual == {"n2": "nesting depth 3 exceeds the limit of 2"}
    actions = result.passes[0].refinements
    assert [a.accepted for a in actions] == [True, False, False, False, False]
    assert result.plan is not None and result.plan.get("s1").step_output == "started"  # type: ignore[union-attr]
    assert result.label == "ttl_expired" and not result.converged


# -- TTL ------------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_ttl_expiry_mid_pass_returns_a_labelled_partial_result(fake_openai: FakeOpenAI) -> None:
    harness = Harness(fake_openai, max_parallel_steps=1)
    clock = Clock()

    def slow_step(_body: dict[str, Any]) -> dict[str, Any]:
        clock.now = 100.0  # the step took longer than the whole budget
        return outcome("first half")

    script = Script(
        profile=SIMPLE,
        plan={"steps": [step("s1", "First half"), step("s2", "Second half")]},
        validate_plan=NO_ISSUES,
        steps={"First half": slow_step, "Second half": outcome("never")},
    )
    result = harness.run(script, clock=clock, time_budget_s=10.0)
    assert result.label == "ttl_expired" and not result.converged
    assert result.answer == "first half"
    assert {"ttl_expired", "time_budget_spent", "partial_result"} <= set(result.reason_codes)
    only = result.passes[0]
    assert (only.completed, only.executed_step_ids, only.abandoned_step_ids) == (False, ["s1"], ["s2"])
    assert result.plan is not None and result.plan.get("s2").status == "incomplete"  # type: ignore[union-attr]
    assert "Second half" not in " ".join(script.prompts_of("step"))
    assert "converge" not in script.log


def test_ttl_expiry_returns_the_last_completed_pass(fake_openai: FakeOpenAI) -> None:
    harness = Harness(fake_openai)
    clock = Clock()

    def slow_step(_body: dict[str, Any]) -> dict[str, Any]:
        clock.now = 100.0
        return outcome("more")

    script = Script(
        profile=SIMPLE,
        plan={"steps": [step("s1", "Begin")]},
        validate_plan=NO_ISSUES,
        validate_execution=NO_ISSUES,
        converge=LOW,
        refine={
            "deltas": [{"op": "ADD", "step_id": "s2", "description": "Continue", "dependencies": ["s1"]}]
        },
        steps={"Begin": outcome("pass one answer"), "Continue": slow_step},
    )
    result = harness.run(script, clock=clock, time_budget_s=10.0)
    assert result.label == "ttl_expired"
    assert result.answer == "pass one answer"
    assert result.scores["completeness"] == 0.4
    assert [p.completed for p in result.passes] == [True, False]
    assert "partial_result" not in result.reason_codes


def test_pass_ttl_from_the_profile_ends_the_run(harness: Harness) -> None:
    counter = iter(range(100))
    script = Script(
        profile=SIMPLE,
        plan={"steps": [step("s1", "Try")]},
        validate_plan=NO_ISSUES,
        validate_execution=NO_ISSUES,
        converge=LOW,
        refine=lambda _b: {"deltas": [{"op": "ADD", "step_id": f"t{next(counter)}", "description": "Try"}]},
        steps={"Try": outcome("attempt")},
        synthesize={"answer": "attempted twice"},
    )
    result = harness.run(script)
    assert result.label == "ttl_expired" and len(result.passes) == result.ttl.passes == 2
    assert result.answer == "attempted twice" and result.passes[-1].answer == "attempt\n\nattempt"
    assert result.passes[-1].completed and result.passes[-1].refinements == []


# -- robustness -----------------------------------------------------------------------------------


def test_garbage_profile_falls_back_to_the_default_once(harness: Harness) -> None:
    script = Script(
        profile=text("I think this is medium hard"),
        plan={"steps": [step("s1", "Do it")]},
        validate_plan=NO_ISSUES,
        validate_execution=NO_ISSUES,
        converge=GOOD,
        steps={"Do it": outcome("done")},
    )
    result = harness.run(script)
    assert script.log.count("profile") == 3  # the call and two structured repairs, never again
    assert result.profile_source == "default"
    assert result.profile.reasoning_depth == 3 and result.ttl.passes == 4
    assert result.label == "converged"
    assert any("default profile" in e.data["message"] for e in harness.of("warning"))


def test_garbage_plan_is_repaired_by_the_structured_retry(harness: Harness) -> None:
    script = Script(
        profile=SIMPLE,
        plan=[{"steps": "first do things"}, {"steps": [step("s1", "Do it")]}],
        validate_plan=NO_ISSUES,
        validate_execution=NO_ISSUES,
        converge=GOOD,
        steps={"Do it": outcome("done")},
    )
    result = harness.run(script)
    assert result.label == "converged" and script.log.count("plan") == 2
    repair = fake_messages(harness.server, "# Reasoning: plan")[-1]
    assert "did not match the schema" in repair[-1]["content"]


def test_garbage_plan_that_stays_garbage_fails_gracefully(harness: Harness) -> None:
    script = Script(profile=SIMPLE, plan=text("no plan today"))
    result = harness.run(script)
    assert result.label == "failed" and not result.converged
    assert "plan_unusable" in result.reason_codes and "schema" in (result.error or "")
    assert result.passes == [] and "step" not in script.log
    assert phases(harness.events) == ["A", "B", "end"]


def test_llm_api_failure_is_retried_then_the_pass_fails_gracefully(harness: Harness) -> None:
    script = Script(
        profile=SIMPLE,
        plan={"steps": [step("s1", "Do it")]},
        validate_plan=NO_ISSUES,
        steps={"Do it": error(503)},
    )
    result = harness.run(script)
    assert script.log.count("step") == 4  # one call and three retries
    assert len(harness.sleeps) == 3 and harness.sleeps[0] < harness.sleeps[2]  # backoff grows
    assert result.label == "failed" and "llm_failure" in result.reason_codes
    assert "HTTP 503" in (result.error or "")
    assert result.passes[0].error and not result.passes[0].completed


def fake_messages(server: FakeOpenAI, first_line: str) -> list[list[dict[str, Any]]]:
    return [
        body["messages"]
        for body in server.chat_requests
        if body["messages"][1]["content"].startswith(first_line)
    ]


# -- validation: host checks, conflicts, tools ------------------------------------------------


def test_host_checks_precede_the_llm_and_planner_wins_conflicts(harness: Harness) -> None:
    script = Script(
        profile=SIMPLE,
        plan={
            "steps": [
                step("s1", "Search the web", tool_calls=[{"name": "web_search", "arguments": {"q": "x"}}]),
                step("s2", "Read notes", tool_calls=[{"name": "read_file", "arguments": {"path": "n.md"}}]),
            ]
        },
        validate_plan={
            "issues": [
                {
                    "type": "relevance",
                    "severity": "low",
                    "description": "notes are not needed",
                    "location": "s2",
                    "proposed_repair": "drop the step",
                    "repair": {"op": "REMOVE", "step_id": "s2"},
                }
            ]
        },
        refine={
            "deltas": [
                {
                    "op": "MODIFY",
                    "step_id": "s1",
                    "description": "Read the docs",
                    "tool_calls": [{"name": "read_file", "arguments": {"path": "docs.md"}}],
                },
                {"op": "MODIFY", "step_id": "s2", "description": "Read notes.md"},
            ]
        },
        validate_execution=NO_ISSUES,
        converge=GOOD,
        steps={"Read the docs": outcome("docs"), "Read notes.md": outcome("notes")},
        synthesize={"answer": "docs and notes"},
    )
    result = harness.run(script, tools=["read_file"])
    report = result.plan_validation
    assert report is not None
    assert [(i.source, i.code, i.location) for i in report.issues] == [
        ("host", "unknown_tool", "s1"),
        ("llm", "", "s2"),
    ]
    assert report.overall_severity == "high"
    assert "web_search" in script.prompts_of("validate_plan")[0]
    assert [c.target for c in result.conflicts] == ["s2"]
    assert result.plan is not None and result.plan.get("s2") is not None
    assert any("conflict" in e.data for e in harness.of("refinement"))
    assert result.label == "converged"


class ToolStepExecutor:
    """A stand-in for the tool-using agent: it reports the tool calls it made."""

    def __init__(self, engine_ref: list[ReasoningEngine]) -> None:
        self.engine_ref = engine_ref
        self.checked: list[bool] = []

    def execute(self, step: PlanStep, prompt: str) -> StepOutcome:
        self.checked.append(self.engine_ref[0].ttl_expired())  # a safe boundary
        return StepOutcome(
            step_output=f"did {step.id}",
            tool_calls=[
                ToolCallRecord(name="read_file", arguments={"path": "a"}),
                ToolCallRecord(name="rm_rf"),
            ],
        )


def test_custom_executor_and_hallucinated_tools_in_execution(harness: Harness) -> None:
    script = Script(
        profile=SIMPLE,
        plan={"steps": [step("s1", "Inspect")]},
        validate_plan=NO_ISSUES,
        validate_execution=NO_ISSUES,
        converge=GOOD,
    )
    ref: list[ReasoningEngine] = []
    executor = ToolStepExecutor(ref)
    harness.server.set_responder(script)
    engine = harness.engine(tools=["read_file"], executor=executor)
    ref.append(engine)
    result = engine.run("inspect")
    assert_phase_order(harness.events)
    assert executor.checked == [False]
    assert "step" not in script.log
    s1 = result.plan.get("s1") if result.plan else None
    assert s1 is not None and [c.name for c in s1.executed_tool_calls] == ["read_file", "rm_rf"]
    issues = result.passes[0].validation.issues if result.passes[0].validation else []
    assert [(i.code, i.location) for i in issues] == [("unknown_tool", "s1")]


def test_total_refinement_limit_stops_refining_and_marks_fragments(fake_openai: FakeOpenAI) -> None:
    harness = Harness(fake_openai, max_refinements_total=2)
    script = Script(
        profile=COMPLEX,
        plan={"steps": [step("s1", "Start")]},
        validate_plan=NO_ISSUES,
        validate_execution=[
            NO_ISSUES,
            {"issues": [{"type": "consistency", "description": "t1 contradicts s1", "location": "t1"}]},
        ],
        converge=LOW,
        refine={
            "deltas": [
                {"op": "ADD", "step_id": "t1", "description": "Extend", "dependencies": ["s1"]},
                {"op": "ADD", "step_id": "t2", "description": "Check", "dependencies": ["s1"]},
            ]
        },
        steps={"Start": outcome("s"), "Extend": outcome("e"), "Check": outcome("c")},
    )
    result = harness.run(script)
    assert script.log.count("refine") == 1
    assert [m.step_id for m in result.manual_intervention] == ["t1"]
    assert "limit of 2 in all" in result.manual_intervention[0].reason
    assert "refinement_limit_reached" in result.reason_codes
    assert result.label == "non_converged" and len(result.passes) == 2
    assert result.plan is not None and result.plan.get("t1").step_output == "e"  # type: ignore[union-attr]


# -- FR-028: invalidating executed steps, FR-033: validating refined fragments --------------------


def test_a_rewrite_that_contradicts_an_executed_step_invalidates_it_fr028(harness: Harness) -> None:
    script = Script(
        profile=COMPLEX,
        plan={"steps": [step("s1", "Pick a database"), step("s2", "Design the schema", ["s1"])]},
        validate_plan=NO_ISSUES,
        validate_execution=NO_ISSUES,
        converge=[LOW, LOW, GOOD],
        refine=[
            {
                "deltas": [
                    {"op": "MODIFY", "step_id": "s2", "description": "Design a PostgreSQL schema"},
                    {"op": "ADD", "step_id": "s3", "description": "Confirm PostgreSQL", "replaces": "s1"},
                ],
                "invalidate": [
                    {"step_id": "s1", "reason": "the schema now targets PostgreSQL; s1 chose MySQL"},
                    {"step_id": "s2", "reason": "not executed yet"},
                ],
            },
            {"deltas": [{"op": "MODIFY", "step_id": "s1", "description": "Pick PostgreSQL"}]},
            NO_DELTAS,
        ],
        steps={
            "Pick a database": outcome("MySQL"),
            "Confirm PostgreSQL": outcome("PostgreSQL 16"),
            "Design a PostgreSQL schema": outcome("users(id uuid primary key)"),
        },
    )
    result = harness.run(script, "design storage")
    assert result.label == "converged" and result.answer == "users(id uuid primary key)"
    assert [p.executed_step_ids for p in result.passes] == [["s1"], ["s3"], ["s2"]]
    first = result.passes[0]
    assert first.invalidated_step_ids == ["s1"]
    marks = [(a.target, a.accepted) for a in first.refinements if a.type == "step_mark_invalid"]
    assert marks == [("s1", True), ("s2", False)]
    assert result.plan is not None
    s1, s2 = result.plan.get("s1"), result.plan.get("s2")
    assert s1 is not None and s2 is not None
    # invalid, with its reason, but as it ran: description and output untouched, never re-run
    assert (s1.status, s1.description, s1.step_output) == ("invalid", "Pick a database", "MySQL")
    assert s1.invalidation == "the schema now targets PostgreSQL; s1 chose MySQL"
    assert script.prompts_of("step").count(script.prompts_of("step")[0]) == 1
    assert s2.dependencies == ["s3"]
    later = result.passes[1].refinements[0]
    assert not later.accepted and "invalidated after it ran" in (later.rejection or "")
    logged = [e for e in harness.of("refinement") if e.data.get("action") == "step_mark_invalid"]
    assert [(e.step_id, e.data["accepted"]) for e in logged] == [("s1", True), ("s2", False)]
    assert logged[0].data["reason"] == s1.invalidation
    assert f"invalidated: s1: {s1.invalidation}" in result.describe()
    # the second refinement saw s1 as replaced, so it is not listed as still needing one
    assert '"invalidated_steps_not_replaced": []' in script.prompts_of("refine")[1]


def test_refined_fragments_are_validated_before_acceptance_fr033(fake_openai: FakeOpenAI) -> None:
    harness = Harness(fake_openai, max_refinements_per_fragment=1)
    high = {"type": "specificity", "severity": "high", "description": "what is 'stuff'?", "location": "t2"}
    low = {"type": "relevance", "severity": "low", "description": "could be shorter", "location": "t1"}
    script = Script(
        profile=COMPLEX,
        plan={"steps": [step("s1", "Start")]},
        validate_plan=NO_ISSUES,
        validate_execution=NO_ISSUES,
        converge=LOW,
        refine=[
            {
                "deltas": [
                    {"op": "ADD", "step_id": "t1", "description": "Measure", "dependencies": ["s1"]},
                    {"op": "ADD", "step_id": "t2", "description": "Do stuff", "dependencies": ["s1"]},
                    {"op": "ADD", "step_id": "t3", "description": "Report stuff", "dependencies": ["t2"]},
                ]
            },
            {"deltas": [{"op": "ADD", "step_id": "t2", "description": "Do stuff", "dependencies": ["s1"]}]},
        ],
        validate_fragment={"issues": [high, low]},
        steps={"Start": outcome("started"), "Measure": outcome("3 ms")},
    )
    result = harness.run(script)
    first = result.passes[0]
    assert [(a.target, a.accepted) for a in first.refinements] == [
        ("t1", True),
        ("t2", False),
        ("t3", False),
    ]
    assert first.refinements[1].rejection == "refined step failed validation: what is 'stuff'?"
    assert "builds on 't2'" in (first.refinements[2].rejection or "")
    report = first.refinement_validation
    assert report is not None and report.artifact_type == "fragment"
    assert [i.location for i in report.issues] == ["t2", "t1"]
    assert result.plan is not None and result.plan.ids() == {"s1", "t1"}
    # one validation call for the three changed steps, judging only them
    assert script.log.count("validate_fragment") == 1
    fragment_prompt = script.prompts_of("validate_fragment")[0]
    changed = fragment_prompt.split("## Changed steps")[1].split("## Plan")[0]
    assert all(f'"id": "{sid}"' in changed for sid in ("t1", "t2", "t3")) and '"id": "s1"' not in changed
    assert any("refinement of t2 rejected" in e.data["message"] for e in harness.of("warning"))
    # the rejected attempt counted: the fragment's limit (1) stops the second try without a call
    second = result.passes[1].refinements
    assert not second[0].accepted and "limit of 1 for this fragment" in (second[0].rejection or "")
    assert any(m.step_id == "t2" for m in result.manual_intervention)
    assert script.log.count("validate_fragment") == 1
    assert result.label == "non_converged" and result.answer == "3 ms"


# -- the final answer and API failure classes ------------------------------------------------------


def test_several_terminal_steps_are_merged_into_one_answer(harness: Harness) -> None:
    script = Script(
        profile=SIMPLE,
        plan={"steps": [step("s1", "Design authentication"), step("s2", "Design storage")]},
        validate_plan=NO_ISSUES,
        validate_execution=NO_ISSUES,
        converge=GOOD,
        steps={"Design authentication": outcome("OAuth2"), "Design storage": outcome("PostgreSQL")},
        synthesize={"answer": "Use OAuth2 for sign-in and PostgreSQL for data."},
    )
    result = harness.run(script, "design the backend")
    assert result.answer == "Use OAuth2 for sign-in and PostgreSQL for data." and result.synthesized
    assert result.passes[0].answer == "OAuth2\n\nPostgreSQL"
    assert result.passes[0].answer_step_ids == ["s1", "s2"]
    assert script.log[-1] == "synthesize" and result.calls == 8
    prompt = script.prompts_of("synthesize")[0]
    assert "[s1] Design authentication\nOAuth2" in prompt and "[s2] Design storage\nPostgreSQL" in prompt
    assert result.report().endswith("answer (synthesized from the final steps):\n" + result.answer)


def test_a_failed_synthesis_keeps_the_step_outputs(harness: Harness) -> None:
    script = Script(
        profile=SIMPLE,
        plan={"steps": [step("s1", "A"), step("s2", "B")]},
        validate_plan=NO_ISSUES,
        validate_execution=NO_ISSUES,
        converge=GOOD,
        steps={"A": outcome("a"), "B": outcome("b")},
        synthesize=text("no json here"),
    )
    result = harness.run(script)
    assert result.label == "converged" and result.answer == "a\n\nb" and not result.synthesized
    assert "synthesis_unavailable" in result.reason_codes
    no_merge = Script(**{**script.kinds, "steps": script.steps})  # type: ignore[arg-type]
    harness.server.set_responder(no_merge)
    assert harness.engine(synthesize=False).run("t").answer == "a\n\nb"
    assert "synthesize" not in no_merge.log


@pytest.mark.parametrize(("status", "transient"), [(503, True), (400, False)])
def test_the_result_says_whether_an_api_failure_was_transient(
    harness: Harness, status: int, transient: bool
) -> None:
    script = Script(profile=SIMPLE, plan=error(status))
    result = harness.run(script)
    assert result.label == "failed" and "llm_failure" in result.reason_codes
    assert result.error_transient is transient
