"""Calls on slow servers (the `llm` agent's calls): every call streams, `llm.timeout` is the longest wait for the
next chunk, a reply akira gives up on has its connection closed, a timed-out call is sent again
at most once, usage comes from the usage chunk or is estimated, and a server that does not stream
is used without it. And the host mends what it can of a sloppy structured reply.

All against the fake server through real HTTP and the real `openai` SDK.
"""

from __future__ import annotations

import time

import pytest

from akira_cli.events import EventType
from akira_cli.llm.types import LLMTransientError
from akira_cli.reasoning.models import TaskProfile
from tests.support.llm_client import USER, Harness
from tests.support.servers.fake_openai import FakeOpenAI, json_reply, stalling, text, tool_calls, trickling


def test_a_streamed_reply_is_put_together_with_its_tool_calls_and_usage(fake_openai: FakeOpenAI) -> None:
    args = {"path": "hello.txt", "content": "hi there, this is longer than one chunk\n"}
    reply = tool_calls(
        [("write_file", args), ("finish", {"summary": "done"})], prompt_tokens=31, completion_tokens=17
    )
    fake_openai.enqueue(reply)
    h = Harness(fake_openai.base_url)
    result = h.client.chat(USER, tools=[{"type": "function", "function": {"name": "write_file"}}])
    assert [(call.name, call.arguments) for call in result.tool_calls] == [
        ("write_file", '{"path": "hello.txt", "content": "hi there, this is longer than one chunk\\n"}'),
        ("finish", '{"summary": "done"}'),
    ]
    assert result.tool_calls[0].id != result.tool_calls[1].id
    assert (result.usage.prompt_tokens, result.usage.completion_tokens, result.usage.estimated_calls) == (
        31,
        17,
        0,
    )
    assert result.finish_reason == "tool_calls"
    (body,) = fake_openai.chat_requests
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    (call,) = h.of_type(EventType.LLM_CALL)
    assert call["streamed"] is True and "usage_estimated" not in call


def test_a_reply_that_keeps_coming_is_never_cut_by_the_timeout(fake_openai: FakeOpenAI) -> None:
    content = "a slow model, a few tokens a second " * 3  # 14 chunks
    fake_openai.enqueue(trickling(0.1, text(content)))  # 1.4 s in all: longer than llm.timeout
    h = Harness(fake_openai.base_url, llm={"timeout": 0.6})
    assert h.client.chat(USER).content == content
    assert h.of_type(EventType.TRANSIENT_RETRY) == [] and len(fake_openai.chat_requests) == 1


def test_a_stalled_reply_is_given_up_with_its_connection_closed_and_sent_again_once(
    fake_openai: FakeOpenAI,
) -> None:
    """The server watches the connection while it stalls, as llama.cpp's does between tokens:
    it sees the client go at once, and is free for the next request."""
    hour = 3600.0  # a client that waited out a stall would never get past `chat` below
    fake_openai.enqueue(
        stalling(hour, text("never finished")), stalling(hour, text("nor this")), text("third")
    )
    h = Harness(fake_openai.base_url, llm={"timeout": 0.5, "max_retries": 4})
    with pytest.raises(LLMTransientError, match=r"sent nothing for 0.5s .* \(after 2 attempts\)"):
        h.client.chat(USER)
    assert len(fake_openai.chat_requests) == 2  # sent again once, not max_retries times
    deadline = time.monotonic() + 60
    while len(fake_openai.abandoned) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(fake_openai.abandoned) == 2  # both connections were closed by akira, not waited out
    assert h.client.chat(USER).content == "third"


def test_usage_is_estimated_and_marked_when_the_server_sends_none(fake_openai: FakeOpenAI) -> None:
    from dataclasses import replace

    fake_openai.enqueue(replace(text("x" * 40), usage=False))
    h = Harness(fake_openai.base_url)
    result = h.client.chat(USER)
    assert result.usage.completion_tokens == 10 and result.usage.prompt_tokens > 0
    assert result.usage.estimated_calls == 1 and h.client.usage.estimated_calls == 1
    (call,) = h.of_type(EventType.LLM_CALL)
    assert call["usage_estimated"] is True


@pytest.mark.parametrize("streams", ["refuse", "ignore"])
def test_a_server_that_does_not_stream_is_used_without_it_with_one_warning(streams: str) -> None:
    with FakeOpenAI(streams=streams) as server:
        server.enqueue(text("one"), text("two"), text("three"))
        h = Harness(server.base_url)
        assert [h.client.chat(USER).content for _ in range(3)] == ["one", "two", "three"]
        bodies = server.chat_requests
    (warning,) = h.of_type(EventType.WARNING)
    assert (
        "does not stream" in warning["message"] and "read whole for the rest of the run" in warning["message"]
    )
    streamed = [body.get("stream") is True for body in bodies]
    assert streamed == ([True, False, False, False] if streams == "refuse" else [True, False, False])


# -- the host mends what it can ---------------------------------------------------------------


def test_a_sloppy_profile_is_mended_by_the_host_in_one_call(fake_openai: FakeOpenAI) -> None:
    sloppy = {
        "reasoning_depth": 9,
        "information_sufficiency": 1.5,
        "expected_tool_usage": " Minimal",
        "output_breadth": "NARROW",
        "confidence_requirement": "low",
        "raw_inference": "one file",
        "notes": "a key nobody asked for",
    }
    fake_openai.enqueue(json_reply(sloppy))
    h = Harness(fake_openai.base_url)
    profile = h.client.structured(USER, TaskProfile, purpose="reasoning.profile")
    assert (profile.reasoning_depth, profile.information_sufficiency) == (5, 1.0)
    assert (profile.expected_tool_usage, profile.output_breadth) == ("minimal", "narrow")
    assert len(fake_openai.chat_requests) == 1
    (warning,) = h.of_type(EventType.WARNING)
    for field in (
        "reasoning_depth",
        "information_sufficiency",
        "expected_tool_usage",
        "output_breadth",
        "notes",
    ):
        assert field in warning["message"], field


def test_the_model_is_asked_again_only_about_what_the_host_cannot_mend(fake_openai: FakeOpenAI) -> None:
    sloppy = {"reasoning_depth": 0, "information_sufficiency": -2, "output_breadth": "narrow"}
    good = {
        "reasoning_depth": 2,
        "information_sufficiency": 0.5,
        "expected_tool_usage": "none",
        "output_breadth": "narrow",
        "confidence_requirement": "high",
    }
    fake_openai.enqueue(json_reply(sloppy), json_reply(good))
    h = Harness(fake_openai.base_url)
    assert h.client.structured(USER, TaskProfile).confidence_requirement == "high"
    repair = fake_openai.chat_requests[1]["messages"][-1]["content"]
    assert "expected_tool_usage: Field required" in repair and "confidence_requirement" in repair
    assert "reasoning_depth" not in repair and "information_sufficiency" not in repair
