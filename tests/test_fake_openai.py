"""The fake OpenAI server, exercised through the real `openai` SDK over real HTTP."""

from __future__ import annotations

import json
import threading
from typing import Any

import openai
import pytest

from akira_cli.testing import (
    FakeOpenAI,
    Reply,
    error,
    json_reply,
    malformed,
    slow,
    text,
    tool_call,
    tool_calls,
)

USER = [{"role": "user", "content": "hi"}]


def sdk(server: FakeOpenAI, *, key: str = "sk-test", timeout: float = 5) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=key, timeout=timeout, max_retries=0)


def ask(client: openai.OpenAI, model: str = "fake-model", **extra: Any) -> Any:
    return client.chat.completions.create(model=model, messages=USER, **extra)  # type: ignore[arg-type]


def test_lists_models_and_records_requests() -> None:
    with FakeOpenAI(models=["a", "b"]) as server:
        ids = [m.id for m in sdk(server).models.list()]
    assert ids == ["a", "b"]
    assert server.requests[0].method == "GET"
    assert server.requests[0].path == "/v1/models"
    assert server.requests[0].body is None


def test_text_reply_has_the_standard_shape(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(text("hello", prompt_tokens=7, completion_tokens=3))
    reply = ask(sdk(fake_openai), temperature=0)
    assert reply.id and reply.object == "chat.completion" and reply.model == "fake-model"
    assert reply.choices[0].message.content == "hello"
    assert reply.choices[0].finish_reason == "stop"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (7, 3)
    assert reply.usage.total_tokens == 10
    assert fake_openai.chat_requests == [{"model": "fake-model", "messages": USER, "temperature": 0}]


def test_json_reply_serialises_the_object(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(json_reply({"ok": True}))
    assert json.loads(ask(sdk(fake_openai)).choices[0].message.content) == {"ok": True}


def test_tool_calls(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(
        tool_call("read_file", {"path": "a.txt"}, call_id="c1"),
        tool_calls([("list_files", {"path": "."}), ("finish", {"summary": "done"})]),
    )
    client = sdk(fake_openai)
    first = ask(client).choices[0]
    assert first.finish_reason == "tool_calls"
    assert first.message.content is None
    call = first.message.tool_calls[0]
    assert (call.id, call.function.name) == ("c1", "read_file")
    assert json.loads(call.function.arguments) == {"path": "a.txt"}
    second = ask(client).choices[0].message.tool_calls
    assert [c.function.name for c in second] == ["list_files", "finish"]
    assert second[0].id != second[1].id


def test_queue_is_consumed_in_order_then_the_responder_answers(fake_openai: FakeOpenAI) -> None:
    seen: list[dict[str, Any]] = []

    def responder(body: dict[str, Any]) -> Reply:
        seen.append(body)
        return text(f"echo {body['messages'][-1]['content']}")

    fake_openai.enqueue(text("one"), text("two"))
    fake_openai.set_responder(responder)
    client = sdk(fake_openai)
    answers = [ask(client).choices[0].message.content for _ in range(3)]
    assert answers == ["one", "two", "echo hi"]
    assert len(seen) == 1


def test_unscripted_request_fails_loudly(fake_openai: FakeOpenAI) -> None:
    with pytest.raises(openai.InternalServerError, match="fake server: no scripted reply"):
        ask(sdk(fake_openai))


def test_error_with_retry_after_header(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(error(429, headers={"Retry-After": "3"}))
    with pytest.raises(openai.RateLimitError) as caught:
        ask(sdk(fake_openai))
    assert caught.value.response.headers["retry-after"] == "3"


def test_error_with_custom_body(fake_openai: FakeOpenAI) -> None:
    body = {"error": {"message": "boom", "type": "x", "param": None, "code": "c"}}
    fake_openai.enqueue(error(400, body=body))
    with pytest.raises(openai.BadRequestError) as caught:
        ask(sdk(fake_openai))
    assert caught.value.code == "c"


def test_unknown_model_is_404_model_not_found(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(text("kept for later"))
    with pytest.raises(openai.NotFoundError) as caught:
        ask(sdk(fake_openai), model="nope")
    assert caught.value.code == "model_not_found"
    assert ask(sdk(fake_openai)).choices[0].message.content == "kept for later"


def test_malformed_body_is_not_json(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(malformed())
    with pytest.raises(ValueError):
        ask(sdk(fake_openai))


def test_close_wakes_a_reply_still_sleeping() -> None:
    """The reply would sleep an hour: its handler thread ends once `close()` wakes it."""
    before = set(threading.enumerate())
    server = FakeOpenAI()
    server.enqueue(slow(3600, text("never")))
    with pytest.raises(openai.APITimeoutError):
        ask(sdk(server, timeout=0.2))
    serving = [thread for thread in set(threading.enumerate()) - before if thread.is_alive()]
    assert serving, "no thread is serving the sleeping reply"
    server.close()
    server.close()
    for thread in serving:
        thread.join(timeout=60)
        assert not thread.is_alive(), f"{thread.name} still sleeps after close()"
