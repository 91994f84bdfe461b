"""The reflection engine in the loop: a fake agent CLI (real subprocess) and the fake OpenAI server
(real HTTP through the openai SDK)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from akira_cli.events import EventType
from akira_cli.reflection.heuristic import HeuristicGenerator
from akira_cli.reflection.memory import ReflectionMemory
from akira_cli.reflection.models import FailureContext
from tests.support.servers.fake_openai import FakeOpenAI, Reply, error, json_reply, slow
from tests.support.workspace import Akira, Result

SECRET = "sk-akira-SECRET-4242-do-not-leak"

# A stand-in for `claude -p`: it logs every prompt, and succeeds only when told what failed.
AGENT = """
import os, pathlib, sys
prompt = sys.stdin.read()
log = pathlib.Path("agent_calls")
log.mkdir(exist_ok=True)
n = len(list(log.glob("*.md"))) + 1
(log / f"{n}.md").write_text(prompt)
(log / f"{n}.env").write_text(" ".join(os.environ[k] for k in ("AKIRA_TASK_ID", "AKIRA_STEP_ID", "AKIRA_ATTEMPT")))
assert pathlib.Path(sys.argv[1]).read_text() == prompt, "prompt file differs from stdin"
MODE = "{mode}"
if MODE == "always-fail" or (MODE == "learns" and "No module named 'leftpad'" not in prompt):
    print("Traceback (most recent call last):")
    print("ModuleNotFoundError: No module named 'leftpad'")
    sys.exit(1)
if MODE == "learns":
    assert "Reflections from previous attempts" in prompt and "Take a different approach" in prompt
pathlib.Path("done_" + os.environ["AKIRA_STEP_ID"]).write_text("ok")
"""


def agent_workspace(akira: Akira, mode: str, config: str = "", steps: str = "") -> None:
    script = akira.root / "fake_agent.py"
    script.write_text(AGENT.replace("{mode}", mode))
    akira.write_config(
        f"agent:\n  kind: command\n  command: {sys.executable} {script} {{prompt_file}}\n{config}"
    )
    akira.write_task(
        "agent",
        steps
        or """
        - [ ] 1. Pad the strings
          - Use the leftpad module
          - Exists: `done_1`
    """,
    )


def prompts(akira: Akira) -> list[str]:
    calls = akira.root / "agent_calls"
    return [(calls / f"{n}.md").read_text() for n in range(1, len(list(calls.glob("*.md"))) + 1)]


def test_second_attempt_is_told_what_failed_and_why(akira: Akira) -> None:
    agent_workspace(akira, "learns")
    assert akira.run("loop", "start", "--task", "Specs/agent/tasks.md").code == 0
    first, second = prompts(akira)
    assert "# Task Continuation Context" in first and "Previous attempts" not in first
    for part in (
        "No module named 'leftpad'",
        "Reflections from previous attempts",
        "environment",
        "Attempted actions",
        "Failure pattern",
        "Take a different approach",
    ):
        assert part in second, part
    state = akira.state()
    assert (akira.root / "agent_calls" / "2.env").read_text() == f"{state.task_id} 1 2"
    assert state.metrics.first_attempt_success_rate == 0 and state.metrics.final_success_rate == 1
    assert state.metrics.iterations_per_step == {"1": 2} and state.metrics.reflections_generated == 1
    assert state.steps["1"].post_action is not None


@pytest.mark.slow
def test_same_failure_twice_escalates_with_approaches_failures_and_reflections(akira: Akira) -> None:
    agent_workspace(akira, "always-fail")
    assert akira.run("loop", "start", "--task", "Specs/agent/tasks.md").code == 4
    state = akira.state()
    assert state.stop_conditions.persistent_failure and len(state.steps["1"].attempts) == 2
    text = (akira.root / "Needs_Action" / f"escalation_{state.task_id}.md").read_text()
    assert "command agent" in text and "No module named 'leftpad'" in text
    assert text.count("What went wrong") == 2 and "(environment, heuristic)" in text


@pytest.mark.slow
def test_lessons_of_completed_steps_reach_the_next_step(akira: Akira) -> None:
    agent_workspace(
        akira,
        "ok",
        steps="""
        - [ ] 1. First
          - Exists: `done_1`
        - [ ] 2. Second
          - Exists: `done_2`
    """,
    )
    assert akira.run("loop", "start", "--task", "Specs/agent/tasks.md").code == 0
    first, second = prompts(akira)
    assert "Lessons from recent steps" not in first
    assert "## Lessons from recent steps\n- 1: worked:" in second


@pytest.mark.slow
def test_reflection_disabled_means_single_attempts(akira: Akira) -> None:
    akira.write_config("reflection:\n  enabled: false\n")
    akira.write_task("once", "- [ ] 1. x\n  - Run: `echo nope; exit 1`\n  - Fallback: `true`\n")
    assert akira.run("loop", "start", "--task", "Specs/once/tasks.md").code == 4
    state = akira.state()
    assert len(state.steps["1"].attempts) == 1 and not state.reflections


def test_heuristic_categories() -> None:
    def category(error: str) -> str:
        failure = FailureContext(
            task_id="t", step_id="1", step_description="d", attempt=1, approach="Run", error_output=error
        )
        return HeuristicGenerator().generate(failure).category

    assert category("ModuleNotFoundError: No module named 'x'") == "environment"
    assert category("bash: foo: command not found") == "environment"
    assert category("E   AssertionError: assert 1 == 2\nFAILED tests/test_a.py") == "verification"
    assert category("`sleep 9` timed out after 1s") == "approach_error"
    assert category("TypeError: unsupported operand") == "root_cause"


@pytest.mark.slow
def test_a_signature_recurring_across_tasks_is_a_systemic_issue(akira: Akira) -> None:
    for name in ("one", "two"):
        akira.write_task(
            name, "- [ ] 1. x\n  - Run: `echo 'cannot reach registry at 10.0.0.1:5000'; exit 1`\n"
        )
        assert akira.run("loop", "start", "--task", f"Specs/{name}/tasks.md").code == 4
    second = akira.state()
    assert second.systemic_issues
    assert EventType.SYSTEMIC_ISSUE in [e.type for e in akira.events()]
    status = akira.cli("loop", "status", "--json")
    assert second.systemic_issues[0] in status.out


# --- through the fake OpenAI server -------------------------------------------------------------


def llm_config(server: FakeOpenAI, extra: str = "") -> str:
    return f"llm:\n  base_url: {server.base_url}\n  max_retries: 3\n  timeout: 2\n{extra}"


def route(reflection: dict[str, Any] | None = None, verdict: dict[str, Any] | None = None) -> Any:
    def answer(body: dict[str, Any]) -> Reply:
        text = json.dumps(body["messages"])
        if "analysing a failed attempt" in text and reflection is not None:
            return json_reply(reflection)
        if "Post-Action Reflection" in text:
            return json_reply(
                {
                    "outcome": "success",
                    "what_worked": "installing first",
                    "what_to_improve": "check deps",
                    "lesson_learned": "deps first",
                }
            )
        if "You judge whether" in text and verdict is not None:
            return json_reply(verdict)
        return error(500)

    return answer


LLM_REFLECTION = {
    "category": "environment",
    "analysis": "The leftpad module is not installed here.",
    "suggestion": "Vendor leftpad before using it.",
    "action_items": ["vendor it"],
    "confidence": 0.9,
}


@pytest.mark.slow
def test_llm_reflection_goes_into_the_retry_prompt(akira: Akira, fake_openai: FakeOpenAI) -> None:
    agent_workspace(akira, "learns", llm_config(fake_openai))
    fake_openai.set_responder(route(reflection=LLM_REFLECTION))
    assert akira.run("loop", "start", "--task", "Specs/agent/tasks.md").code == 0
    assert "The leftpad module is not installed here." in prompts(akira)[1]
    [reflection] = list(ReflectionMemory(akira.root / ".state" / "memory"))
    assert reflection.source == "llm" and reflection.tokens > 0
    state = akira.state()
    assert state.usage.calls == 2 and state.usage.total_tokens == 30
    assert state.metrics.reflection_tokens == reflection.tokens
    assert state.steps["1"].post_action is not None
    assert state.steps["1"].post_action.lesson_learned == "deps first"


@pytest.mark.slow
def test_llm_reflection_failure_falls_back_to_the_heuristic(akira: Akira, fake_openai: FakeOpenAI) -> None:
    agent_workspace(akira, "learns", llm_config(fake_openai).replace("max_retries: 3", "max_retries: 0"))
    fake_openai.set_responder(route())
    assert akira.run("loop", "start", "--task", "Specs/agent/tasks.md").code == 0
    [reflection] = list(ReflectionMemory(akira.root / ".state" / "memory"))
    assert reflection.source == "heuristic"
    assert any(e.type == EventType.WARNING for e in akira.events())


def judged_task(akira: Akira, server: FakeOpenAI, extra: str = "") -> None:
    akira.write_config(llm_config(server, extra) + "evaluation:\n  llm_judge: true\n")
    akira.write_task("judged", "- [ ] 1. x\n  - Run: `touch x`\n  - Exists: `x`\n")


@pytest.mark.slow
def test_transient_llm_faults_cost_no_iteration_and_no_reflection(
    akira: Akira, fake_openai: FakeOpenAI
) -> None:
    judged_task(akira, fake_openai)
    verdict = {"confidence": 0.95, "reasons": []}
    fake_openai.enqueue(
        error(429, headers={"Retry-After": "0.2"}),
        error(503),
        slow(3.0, json_reply(verdict)),
        json_reply(verdict),
    )
    fake_openai.set_responder(route(verdict=verdict))
    assert akira.run("loop", "start", "--task", "Specs/judged/tasks.md").code == 0
    state = akira.state()
    assert state.iteration == 1 and state.total_failures == 0 and not state.reflections
    retries = [e.data for e in akira.events() if e.type == EventType.TRANSIENT_RETRY]
    assert [r["mechanism"] for r in retries] == ["retry_after", "backoff", "backoff"]
    assert retries[0]["wait_seconds"] == pytest.approx(0.2)


@pytest.mark.slow
def test_a_low_judge_confidence_means_incomplete_with_its_reasons(
    akira: Akira, fake_openai: FakeOpenAI
) -> None:
    judged_task(akira, fake_openai)
    fake_openai.enqueue(json_reply({"confidence": 0.3, "reasons": ["no tests were written"]}))
    fake_openai.set_responder(route(verdict={"confidence": 0.9, "reasons": []}))
    assert akira.run("loop", "start", "--task", "Specs/judged/tasks.md").code == 0
    first = akira.state().steps["1"].attempts[0]
    assert first.evaluation is not None and first.evaluation.confidence == pytest.approx(0.3)
    assert "judge: no tests were written" in first.evaluation.reasons


@pytest.mark.slow
def test_token_budget_stops_the_loop_with_an_intervention(akira: Akira, fake_openai: FakeOpenAI) -> None:
    judged_task(akira, fake_openai, "budget:\n  max_tokens_total: 20\n")
    akira.write_task("judged", "- [ ] 1. x\n  - Run: `touch x`\n- [ ] 2. y\n  - Run: `touch y`\n")
    akira.write_config(
        llm_config(fake_openai) + "evaluation:\n  llm_judge: true\nbudget:\n  max_tokens_total: 20\n"
    )
    fake_openai.set_responder(route(verdict={"confidence": 0.9, "reasons": []}))
    assert akira.run("loop", "start", "--task", "Specs/judged/tasks.md").code == 4
    state = akira.state()
    assert state.stop_conditions.budget_exceeded and state.status == "needs_action"
    assert [s.step_id for s in state.completed_steps] == ["1"]
    assert (
        "token budget of 20" in (akira.root / "Needs_Action" / f"intervention_{state.task_id}.md").read_text()
    )


def scan_for_secret(root: Path, *results: Result) -> list[str]:
    leaks = [str(p) for p in root.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    return leaks + [f"output {i}" for i, r in enumerate(results) if SECRET in r.out + r.err]


@pytest.mark.slow
@pytest.mark.parametrize("server_key", [SECRET, "sk-the-other-key"])
def test_the_api_key_never_leaks(akira: Akira, server_key: str) -> None:
    with FakeOpenAI(api_key=server_key) as server:
        judged_task(akira, server)
        server.set_responder(route(verdict={"confidence": 0.9, "reasons": []}))
        os.environ["OPENAI_API_KEY"] = SECRET
        try:
            results = [akira.cli("loop", "start", "--task", "Specs/judged/tasks.md")]
            results += [akira.cli("config", "show"), akira.cli("loop", "logs", "--task-id", "judged")]
            results += [akira.cli("loop", "state", "--task-id", "judged")]
        finally:
            del os.environ["OPENAI_API_KEY"]
    assert results[0].code == (0 if server_key == SECRET else 4)
    if server_key != SECRET:  # the judge's error makes the evaluation incomplete, never `failed`
        assert "rejected the API key" in results[0].err and akira.state().status == "needs_action"
    assert scan_for_secret(akira.root, *results) == []


@pytest.mark.slow
def test_transient_exit_codes_of_the_agent_cost_no_iteration(akira: Akira) -> None:
    agent = akira.root / "flaky_agent.sh"
    agent.write_text("test -f tried || { touch tried; exit 75; }\ntouch done_1\n")
    akira.write_config(f"agent:\n  kind: command\n  command: bash {agent}\n  transient_exit_codes: [75]\n")
    akira.write_task("flaky", "- [ ] 1. Do it\n  - Exists: `done_1`\n")
    assert akira.run("loop", "start", "--task", "Specs/flaky/tasks.md").code == 0
    state = akira.state()
    assert state.iteration == 1 and state.total_failures == 0 and not state.reflections
    assert state.steps["1"].attempts[0].transient_retries == 1


def test_an_error_inside_the_evaluation_means_incomplete() -> None:
    from akira_cli.checks import evaluate
    from akira_cli.state.records import CheckResult

    class Broken:
        name = "broken"

        def run(self) -> CheckResult:
            raise RuntimeError("disk on fire")

    evaluation = evaluate([Broken()], 0.8)
    assert not evaluation.complete and evaluation.confidence == 0
    assert evaluation.error == "evaluation error: RuntimeError: disk on fire"


@pytest.mark.slow
def test_a_retry_never_leaks_into_the_next_steps_prompt(akira: Akira) -> None:
    steps = """
        - [ ] 1. Pad the strings
          - Exists: `done_1`
        - [ ] 2. Write the docs
          - Exists: `done_2`
    """
    agent_workspace(akira, "learns", steps=steps)
    assert akira.run("loop", "start", "--task", "Specs/agent/tasks.md").code == 0
    _, retry, second_step = prompts(akira)[:3]
    assert "Take a different approach" in retry
    assert "# Your step: 2. Write the docs" in second_step
    assert "Take a different approach" not in second_step and "Previous attempts" not in second_step
    assert "The previous step, 1. Pad the strings, is done" in second_step


def test_the_heuristic_quotes_the_failing_pytest_assertion() -> None:
    from akira_cli.reflection.heuristic import HeuristicGenerator
    from akira_cli.reflection.models import FailureContext

    output = (
        "check `tests` failed: `python -m pytest -q` exited 1\n"
        "F.                                                   [100%]\n"
        "____________________ test_total ____________________\n\n"
        "    def test_total():\n"
        ">       assert total([1, 2]) == 4\n"
        "E       assert 3 == 4\n"
        "E        +  where 3 = total([1, 2])\n\n"
        "tests/test_cart.py:4: AssertionError\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/test_cart.py::test_total - assert 3 == 4\n"
        "1 failed, 1 passed in 0.02s\n"
    )
    context = FailureContext(
        task_id="t", step_id="1", step_description="d", attempt=1, approach="Run", error_output=output
    )
    reflection = HeuristicGenerator().generate(context)
    assert reflection.category == "verification"
    assert "tests/test_cart.py::test_total failed: assert 3 == 4" in reflection.analysis
