"""The LLM paths against servers that behave like real local ones (llama-cpp-python's answers HTTP
500 to `json_schema`; small models loop until `max_tokens`), through the real SDK over HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import Akira
from pydantic import BaseModel
from test_llm_client import USER, Harness

from akira_cli.events import EventType
from akira_cli.llm.types import LLMTruncated
from akira_cli.testing import FakeOpenAI, Reply, error, json_reply, malformed


class Verdict(BaseModel):
    confidence: float
    reasons: list[str]


def llama_cpp_like(reply: Reply) -> Any:
    """Refuses `json_schema` with HTTP 500, as llama-cpp-python's server does."""

    def answer(body: dict[str, Any]) -> Reply:
        if (body.get("response_format") or {}).get("type") == "json_schema":
            return error(500, body={"error": {"message": "json_schema is not supported", "code": 500}})
        return reply

    return answer


def test_a_server_that_refuses_json_schema_falls_back_once_and_remembers(fake_openai: FakeOpenAI) -> None:
    fake_openai.set_responder(llama_cpp_like(json_reply({"confidence": 0.9, "reasons": []})))
    harness = Harness(fake_openai.base_url)
    for _ in range(3):
        assert harness.client.structured(USER, Verdict, purpose="judge").confidence == 0.9
    formats = [(body.get("response_format") or {}).get("type") for body in fake_openai.chat_requests]
    assert formats == ["json_schema", "json_object", "json_object", "json_object"]
    assert not harness.waits and not harness.of_type(EventType.TRANSIENT_RETRY)
    [warning] = harness.of_type(EventType.WARNING)
    assert "falls back to json_object" in warning["message"]


def test_every_request_carries_a_max_tokens_bound(fake_openai: FakeOpenAI) -> None:
    fake_openai.set_responder(lambda body: json_reply({"confidence": 1, "reasons": []}))
    harness = Harness(fake_openai.base_url, llm={"max_tokens": 2000})
    harness.client.chat(USER, purpose="llm.step.1")
    harness.client.structured(USER, Verdict, purpose="judge")
    harness.client.structured(USER, Verdict, purpose="reasoning.plan")
    assert [body["max_tokens"] for body in fake_openai.chat_requests] == [2000, 512, 2000]


def test_a_reply_cut_at_max_tokens_is_a_failure_of_its_own_never_retried(fake_openai: FakeOpenAI) -> None:
    looping = Reply(message={"role": "assistant", "content": '{"confidence": 0.9, "reasons": ["a", "a", "a'})
    fake_openai.set_responder(lambda body: Reply(**{**looping.__dict__, "finish_reason": "length"}))
    harness = Harness(fake_openai.base_url)
    with pytest.raises(LLMTruncated, match="cut at max_tokens"):
        harness.client.structured(USER, Verdict, purpose="judge")
    assert len(fake_openai.chat_requests) == 1


def reason_config(akira: Akira, server: FakeOpenAI, extra: str = "") -> None:
    akira.write_config(f"llm:\n  base_url: {server.base_url}\n  model: fake-model\n  max_retries: 0\n{extra}")


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--json", "text"])
def test_reason_on_garbage_says_why_on_stderr(akira: Akira, fake_openai: FakeOpenAI, flag: str) -> None:
    reason_config(akira, fake_openai)
    fake_openai.set_responder(lambda body: malformed("<html>oops</html>"))
    args = ("reason", "plan a picnic", "--json") if flag == "--json" else ("reason", "plan a picnic")
    result = akira.cli(*args)
    assert result.code == 1 and "Traceback" not in result.err
    [line] = result.err.strip().splitlines()
    assert line.startswith("akira: error:") and "garbage" in line


@pytest.mark.slow
def test_reason_over_its_token_budget_exits_4_with_one_line(akira: Akira, fake_openai: FakeOpenAI) -> None:
    reason_config(akira, fake_openai, "budget:\n  max_tokens_total: 20\n")
    profile = {
        "reasoning_depth": 1,
        "information_sufficiency": 0.9,
        "expected_tool_usage": "none",
        "output_breadth": "narrow",
        "confidence_requirement": "low",
        "raw_inference": "simple",
    }
    fake_openai.set_responder(lambda body: json_reply(profile, prompt_tokens=50, completion_tokens=50))
    result = akira.cli("reason", "plan a picnic")
    assert result.code == 4 and "Traceback" not in result.err, result.err
    [line] = result.err.strip().splitlines()
    assert "token budget of 20" in line


@pytest.mark.slow
def test_an_unreachable_judge_makes_the_step_incomplete_not_failed(akira: Akira) -> None:
    akira.write_config(
        "llm:\n  base_url: http://127.0.0.1:9/v1\n  model: m\n  max_retries: 0\n"
        "evaluation:\n  llm_judge: true\nreflection:\n  use_llm: false\n"
    )
    task = akira.write_task("judged", "- [ ] 1. x\n  - Run: `touch x`\n  - Exists: `x`\n")
    result = akira.cli("loop", "start", "--task", str(task))
    assert result.code == 4, result.err
    state = akira.state()
    assert state.status == "needs_action" and state.iteration == 2
    evaluation = state.steps["1"].attempts[0].evaluation
    assert evaluation is not None and not evaluation.complete and "unreachable" in (evaluation.error or "")
    escalation = akira.root / "Needs_Action" / f"escalation_{state.task_id}.md"
    assert "unreachable" in escalation.read_text()
    again = akira.cli("loop", "start", "--task", str(task))
    assert again.code == 1 and "akira loop resume" in again.err
    assert json.loads(akira.cli("loop", "status", "--task-id", state.task_id, "--json").out)["status"] == (
        "needs_action"
    )
