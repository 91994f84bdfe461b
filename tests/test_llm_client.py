"""LLMClient against the fake server: real HTTP through the real `openai` SDK, nothing patched.

Waits go through an injected `sleep` that records them and really sleeps a little."""

from __future__ import annotations

import socket
import time
import traceback
from email.utils import formatdate
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr

from akira_cli.errors import BudgetExceeded
from akira_cli.events import EventType
from akira_cli.llm.client import LLMClient
from akira_cli.llm.types import ChatResult, LLMError, LLMSchemaError, LLMTransientError, configured
from akira_cli.sections import BudgetSettings, LLMSettings, ModelPrice, ResourceLimits
from akira_cli.usage import Usage
from tests.support.llm_client import USER, Harness
from tests.support.servers.fake_openai import (
    FakeOpenAI,
    Reply,
    error,
    json_reply,
    malformed,
    slow,
    text,
    tool_call,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]
SECRET = "sk-SECRET-4f9a7c2e-do-not-leak"


class Plan(BaseModel):
    steps: list[str]
    done: bool


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def one_line(exc: BaseException) -> str:
    message = str(exc)
    assert "\n" not in message
    return message


# -- endpoint, model, key -----------------------------------------------------------------------


def test_model_is_discovered_once() -> None:
    with FakeOpenAI(models=["first", "second"]) as server:
        server.enqueue(text("a"), text("b"))
        h = Harness(server.base_url, llm={"model": None})
        assert h.client.model == "first"
        h.client.chat(USER)
        h.client.chat(USER)
    assert [r.path for r in server.requests].count("/v1/models") == 1
    assert [body["model"] for body in server.chat_requests] == ["first", "first"]


def test_no_base_url_is_a_clear_error() -> None:
    assert not configured(LLMSettings())
    assert configured(LLMSettings(base_url="http://127.0.0.1:1/v1"))
    with pytest.raises(LLMError, match=r"set llm\.base_url or OPENAI_BASE_URL"):
        LLMClient(LLMSettings())


def test_unknown_model_lists_the_available_ones() -> None:
    with FakeOpenAI(models=["a", "b"]) as server:
        h = Harness(server.base_url, llm={"model": "nope"})
        with pytest.raises(LLMError) as caught:
            h.client.chat(USER)
    assert one_line(caught.value) == (
        f"LLM model 'nope' not found at {server.base_url}; set llm.model or AKIRA_MODEL to one of: a, b"
    )
    assert h.waits == []


def test_ping_checks_the_configured_model_in_one_request() -> None:
    with FakeOpenAI(models=["a", "b"]) as server:
        Harness(server.base_url, llm={"model": "b"}).client.ping()
        h = Harness(server.base_url, llm={"model": "nope"})
        with pytest.raises(LLMError) as caught:
            h.client.ping()
        Harness(server.base_url, llm={"model": None}).client.ping()
    assert not isinstance(caught.value, LLMTransientError)
    assert one_line(caught.value) == (
        f"LLM model 'nope' not found at {server.base_url}; set llm.model or AKIRA_MODEL to one of: a, b"
    )
    assert [r.path for r in server.requests] == ["/v1/models"] * 3 and h.waits == []
    with FakeOpenAI(models=[]) as empty:
        Harness(empty.base_url, llm={"model": "anything"}).client.ping()


def test_bad_key_fails_at_once_without_showing_it() -> None:
    with FakeOpenAI(api_key="sk-right") as server:
        h = Harness(server.base_url, llm={"api_key": SECRET})
        with pytest.raises(LLMError) as caught:
            h.client.chat(USER)
        with pytest.raises(LLMError) as pinged:
            h.client.ping()
    assert not isinstance(caught.value, LLMTransientError)
    assert one_line(caught.value) == ("LLM rejected the API key (401); set OPENAI_API_KEY or llm.api_key")
    assert str(pinged.value) == str(caught.value)
    assert len(server.requests) == 2 and h.waits == []
    for exc in (caught.value, pinged.value):
        assert SECRET not in "".join(traceback.format_exception(exc)) + repr(exc)


def test_configured_key_is_sent_and_dummy_key_otherwise() -> None:
    with FakeOpenAI(api_key=SECRET) as server:
        server.enqueue(text("ok"))
        Harness(server.base_url, llm={"api_key": SECRET}).client.chat(USER)
    assert server.requests[-1].headers["authorization"] == f"Bearer {SECRET}"
    with FakeOpenAI() as server:
        server.enqueue(text("ok"))
        Harness(server.base_url).client.chat(USER)
    assert server.requests[-1].headers["authorization"] == "Bearer sk-no-key-required"


def test_wrong_path_is_not_mistaken_for_a_missing_model(fake_openai: FakeOpenAI) -> None:
    url = fake_openai.base_url.removesuffix("/v1")
    h = Harness(url, llm={"model": None})
    with pytest.raises(LLMError) as caught:
        h.client.ping()
    assert one_line(caught.value).startswith(f"LLM endpoint {url} refused the request (HTTP 404)")
    assert str(caught.value).endswith("check llm.base_url (it usually ends in /v1)")
    with pytest.raises(LLMError, match="HTTP 404"):
        h.client.chat(USER)


def test_unreachable_endpoint_is_one_line() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    h = Harness(url, llm={"max_retries": 1})
    with pytest.raises(LLMTransientError) as caught:
        h.client.chat(USER)
    assert one_line(caught.value).startswith(
        f"LLM endpoint {url} is unreachable (connection refused); start the server or fix llm.base_url"
    )
    assert len(h.waits) == 1
    with pytest.raises(LLMError, match="unreachable"):
        h.client.ping()
    assert len(h.waits) == 1, "ping reports a refused connection at once"


# -- chat -----------------------------------------------------------------------------------------


def test_chat_without_tools(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(text("hello", prompt_tokens=12, completion_tokens=4))
    result = Harness(fake_openai.base_url).client.chat(USER, purpose="greet")
    assert result.content == "hello" and result.tool_calls == []
    assert result.finish_reason == "stop"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (12, 4)
    (body,) = fake_openai.chat_requests
    assert body == {
        "model": "fake-model",
        "messages": USER,
        "temperature": 0.0,
        "max_tokens": 4096,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert result.as_message() == {"role": "assistant", "content": "hello"}


def test_chat_with_tools_round_trip(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(tool_call("read_file", {"path": "a.txt"}, call_id="c1"), text("done"))
    client = Harness(fake_openai.base_url).client
    first = client.chat(USER, tools=TOOLS)
    assert first.finish_reason == "tool_calls" and first.content is None
    (call,) = first.tool_calls
    assert (call.id, call.name, call.arguments) == ("c1", "read_file", '{"path": "a.txt"}')
    conversation = [
        *USER,
        first.as_message(),
        {"role": "tool", "tool_call_id": "c1", "content": "file text"},
    ]
    assert client.chat(conversation, tools=TOOLS).content == "done"
    bodies = fake_openai.chat_requests
    assert bodies[0]["tools"] == TOOLS
    assert bodies[1]["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
            }
        ],
    }
    assert bodies[1]["messages"][2]["tool_call_id"] == "c1"


# -- transient failures -------------------------------------------------------------------------


def test_retry_after_is_honoured(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(error(429, headers={"Retry-After": "0.2"}), text("ok"))
    h = Harness(fake_openai.base_url)
    assert h.client.chat(USER, purpose="plan").content == "ok"
    assert h.waits == [0.2]
    (retry,) = h.of_type(EventType.TRANSIENT_RETRY)
    assert retry["mechanism"] == "retry_after"
    assert (retry["status"], retry["wait_seconds"], retry["attempt"]) == (429, 0.2, 1)
    assert retry["purpose"] == "plan"


def test_long_retry_after_beyond_sdk_limit_is_capped_by_config(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(
        error(429, headers={"Retry-After": "600"}),
        error(503, headers={"retry-after-ms": "250"}),
        text("ok"),
    )
    h = Harness(fake_openai.base_url, llm={"retry_after_cap_seconds": 300})
    h.client.chat(USER)
    assert h.waits == [300, 0.25]


def test_retry_after_as_http_date(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(
        error(429, headers={"Retry-After": formatdate(time.time() + 30, usegmt=True)}),
        text("ok"),
    )
    h = Harness(fake_openai.base_url)
    h.client.chat(USER)
    assert 27 <= h.waits[0] <= 30


def test_server_error_is_retried_with_backoff(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(error(500), error(502), text("ok"))
    h = Harness(fake_openai.base_url)
    assert h.client.chat(USER).content == "ok"
    assert 0.5 <= h.waits[0] <= 1.0 and 1.0 <= h.waits[1] <= 2.0
    retries = h.of_type(EventType.TRANSIENT_RETRY)
    assert [(r["mechanism"], r["status"], r["attempt"]) for r in retries] == [
        ("backoff", 500, 1),
        ("backoff", 502, 2),
    ]


def test_slow_reply_times_out_and_is_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(slow(2, text("late")), text("on time"))
    h = Harness(fake_openai.base_url, llm={"timeout": 0.3})
    assert h.client.chat(USER).content == "on time"
    (retry,) = h.of_type(EventType.TRANSIENT_RETRY)
    assert retry["status"] is None and "sent nothing for 0.3s (llm.timeout" in retry["error"]


def test_retries_exhausted(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(error(503), error(503), error(503), text("too late"))
    h = Harness(fake_openai.base_url, llm={"max_retries": 2})
    with pytest.raises(LLMTransientError) as caught:
        h.client.chat(USER)
    assert one_line(caught.value) == (
        f"LLM endpoint {fake_openai.base_url} answered HTTP 503 (fake server: HTTP 503) (after 3 attempts)"
    )
    assert len(fake_openai.chat_requests) == 3 and len(h.waits) == 2


def test_garbage_body_ends_as_a_clear_error(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(malformed(), malformed("<html>proxy</html>"))
    h = Harness(fake_openai.base_url, llm={"max_retries": 1})
    with pytest.raises(LLMError) as caught:
        h.client.chat(USER)
    assert not isinstance(caught.value, LLMTransientError)
    assert one_line(caught.value).startswith("LLM returned garbage (not a JSON chat completion)")
    assert len(h.waits) == 1


# -- structured output ----------------------------------------------------------------------------


def test_structured_valid(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(json_reply({"steps": ["a", "b"], "done": False}))
    plan = Harness(fake_openai.base_url).client.structured(USER, Plan, purpose="plan")
    assert plan == Plan(steps=["a", "b"], done=False)
    (body,) = fake_openai.chat_requests
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Plan", "schema": Plan.model_json_schema(), "strict": False},
    }
    assert body["messages"][0]["role"] == "system"
    assert '"steps"' in body["messages"][0]["content"]
    assert body["messages"][1:] == USER


def test_structured_extends_an_existing_system_message(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(text('```json\n{"steps": [], "done": true}\n```'))
    messages = [{"role": "system", "content": "You plan."}, *USER]
    plan = Harness(fake_openai.base_url).client.structured(messages, Plan)
    assert plan.done is True
    system = fake_openai.chat_requests[0]["messages"][0]["content"]
    assert system.startswith("You plan.") and "JSON schema" in system
    assert messages[0] == {"role": "system", "content": "You plan."}, "caller's list untouched"


def test_structured_repaired_once(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(json_reply({"steps": ["a"]}), json_reply({"steps": ["a"], "done": True}))
    plan = Harness(fake_openai.base_url).client.structured(USER, Plan)
    assert plan.done is True
    first, second = fake_openai.chat_requests
    assert second["messages"][: len(first["messages"])] == first["messages"]
    assistant, repair = second["messages"][-2:]
    assert assistant == {"role": "assistant", "content": '{"steps": ["a"]}'}
    assert repair["role"] == "user"
    assert repair["content"] == (
        "Your reply did not match the schema: done: Field required. Reply again with only valid JSON."
    )


def test_structured_fails_after_two_repairs(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(text("not json"), json_reply({"steps": 3}), json_reply({}))
    with pytest.raises(LLMSchemaError) as caught:
        Harness(fake_openai.base_url).client.structured(USER, Plan, purpose="plan")
    assert len(fake_openai.chat_requests) == 3
    message = one_line(caught.value)
    assert message.startswith("LLM output for plan broke the Plan schema after 2 repairs:")
    assert "Invalid JSON" in fake_openai.chat_requests[1]["messages"][-1]["content"]


def test_structured_falls_back_when_response_format_is_refused(fake_openai: FakeOpenAI) -> None:
    def server(body: dict[str, Any]) -> Reply:
        if body.get("response_format", {}).get("type") == "json_schema":
            message = "response_format type json_schema is not supported"
            return error(400, body={"error": {"message": message, "type": "invalid_request"}})
        return json_reply({"steps": [], "done": True})

    fake_openai.set_responder(server)
    client = Harness(fake_openai.base_url).client
    client.structured(USER, Plan)
    client.structured(USER, Plan)
    kinds = [b.get("response_format", {}).get("type") for b in fake_openai.chat_requests]
    assert kinds == ["json_schema", "json_object", "json_object"]


# -- usage, budget, rate limit ------------------------------------------------------------------


def test_usage_and_cost_accumulate(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(
        text("a", prompt_tokens=1000, completion_tokens=500),
        text("b", prompt_tokens=2000, completion_tokens=1000),
    )
    shared = Usage(calls=1, prompt_tokens=1)
    prices = {"fake-model": ModelPrice(input_per_1m=1.0, output_per_1m=2.0)}
    h = Harness(fake_openai.base_url, llm={"prices": prices}, usage=shared)
    first = h.client.chat(USER, purpose="one")
    h.client.chat(USER, purpose="two")
    assert h.client.usage is shared
    assert (shared.prompt_tokens, shared.completion_tokens, shared.calls) == (3001, 1500, 3)
    assert shared.total_tokens == 4501
    assert shared.cost_usd == pytest.approx(0.006)
    assert first.usage.cost_usd == pytest.approx(0.002)
    calls = h.of_type(EventType.LLM_CALL)
    assert [(c["purpose"], c["model"], c["prompt_tokens"]) for c in calls] == [
        ("one", "fake-model", 1000),
        ("two", "fake-model", 2000),
    ]
    assert all(c["duration_seconds"] >= 0 for c in calls)


def test_token_budget_stops_before_the_next_call(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(text("a"), text("b"), text("never"))
    h = Harness(fake_openai.base_url, budget=BudgetSettings(max_tokens_total=20))
    h.client.chat(USER)
    h.client.chat(USER)
    with pytest.raises(BudgetExceeded) as caught:
        h.client.chat(USER)
    assert caught.value.message == (
        "token budget of 20 used up (30 tokens); raise budget.max_tokens_total to continue"
    )
    assert len(fake_openai.chat_requests) == 2


def test_cost_budget_stops(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(text("a", prompt_tokens=1_000_000))
    prices = {"fake-model": ModelPrice(input_per_1m=2.0)}
    budget = BudgetSettings(max_cost_usd=1.5)
    h = Harness(fake_openai.base_url, llm={"prices": prices}, budget=budget)
    h.client.chat(USER)
    with pytest.raises(BudgetExceeded) as caught:
        h.client.structured(USER, Plan)
    assert (
        caught.value.message == "cost budget of $1.5 used up ($2.0000); raise budget.max_cost_usd to continue"
    )


def test_rate_limit_makes_the_third_call_wait(fake_openai: FakeOpenAI) -> None:
    fake_openai.set_responder(lambda body: text("ok"))
    limits = ResourceLimits(max_api_calls_per_minute=2)
    h = Harness(fake_openai.base_url, limits=limits)
    h.client.chat(USER)
    h.client.chat(USER)
    assert h.waits == []
    h.client.chat(USER)
    (wait,) = h.waits
    assert 55 < wait <= 60


# -- secrets --------------------------------------------------------------------------------------


def test_secret_never_leaks(fake_openai: FakeOpenAI) -> None:
    echo = {"error": {"message": f"upstream rejected {SECRET}", "type": "server_error"}}
    fake_openai.enqueue(error(503, body=echo), text("ok"))
    fake_openai.enqueue(error(400, body=echo), error(503, body=echo), error(503, body=echo))
    h = Harness(fake_openai.base_url, llm={"api_key": SECRET, "max_retries": 1})
    assert isinstance(h.client.chat(USER), ChatResult)
    failures: list[BaseException] = []
    for _ in range(2):
        with pytest.raises(LLMError) as caught:
            h.client.chat(USER)
        failures.append(caught.value)
    with FakeOpenAI(api_key="sk-other") as locked:
        other = Harness(locked.base_url, llm={"api_key": SECRET}).client
        with pytest.raises(LLMError) as caught:
            other.ping()
        failures.append(caught.value)
    seen = [e.model_dump_json() for e in h.events]
    seen += ["".join(traceback.format_exception(exc)) + repr(exc) for exc in failures]
    seen += [repr(h.client), repr(other), repr(h.client.settings), str(h.client.__dict__)]
    assert len(h.of_type(EventType.TRANSIENT_RETRY)) == 2
    assert any("****" in text_ for text_ in seen), "the echoed key was masked, not dropped"
    for text_ in seen:
        assert SECRET not in text_
    assert isinstance(failures[1], LLMTransientError) and not isinstance(failures[0], LLMTransientError)


def test_settings_repr_masks_the_key() -> None:
    settings = LLMSettings(base_url="http://127.0.0.1:1/v1", api_key=SecretStr(SECRET))
    assert SECRET not in repr(LLMClient(settings)) + repr(settings)
