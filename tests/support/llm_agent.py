"""A scripted model for the `llm` agent: reasoning replies by prompt kind, tool turns by their
place in the chat; and a step run through `akira loop start` against it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from tests.support.reasoning import KINDS
from tests.support.servers.fake_openai import FakeOpenAI, Reply, json_reply, tool_call
from tests.support.workspace import Akira

SIMPLE = {
    "reasoning_depth": 1,
    "information_sufficiency": 0.9,
    "expected_tool_usage": "minimal",
    "output_breadth": "narrow",
    "confidence_requirement": "low",
    "raw_inference": "one file to write",
}


ANSWERS: dict[str, Any] = {
    "profile": SIMPLE,
    "plan": {
        "steps": [
            {
                "id": "s1",
                "description": "Write health.py with status() returning 200 and its test",
                "tool_calls": [{"name": "write_file", "arguments": {"path": "health.py"}}],
            }
        ]
    },
    "validate_plan": {"issues": []},
    "validate_execution": {"issues": []},
    "converge": {"completeness": 1.0, "coherence": 0.95, "consistency": 0.95, "rationale": "done"},
    "refine": {"deltas": []},
    "validate_fragment": {"issues": []},
    "profile_update": SIMPLE,
}


HEALTH = "def status() -> int:\n    return 200\n"


Turn = Callable[[list[dict[str, Any]]], Reply]


def call(name: str, **arguments: Any) -> Turn:
    return lambda messages: tool_call(name, arguments)


class Model:
    """A scripted model: reasoning replies by prompt kind, tool turns by position in the chat."""

    def __init__(self, turns: list[Turn], **answers: Any) -> None:
        self.turns = turns
        self.answers = {**ANSWERS, **answers}
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        kind = "tools" if body.get("tools") else KINDS[messages[1]["content"].splitlines()[0]]
        with self._lock:
            self.requests.append((kind, body))
        answer = self.answers.get(kind)
        if isinstance(answer, Reply):
            return answer
        if kind == "tools":
            turn = sum(1 for m in messages if m["role"] == "assistant")
            return self.turns[min(turn, len(self.turns) - 1)](messages)
        return json_reply(answer)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [body for k, body in self.requests if k == kind]

    def tool_messages(self) -> list[str]:
        """The tool results the model was sent, in the order of the last conversation's turns."""
        last = self.of("tools")[-1]["messages"]
        return [m["content"] for m in last if m["role"] == "tool"]


def config(server: FakeOpenAI, extra: str = "", mode: str = "full") -> str:
    """The engine on every attempt (`full`) unless a test asks for another `reasoning.mode`."""
    return (
        f"llm:\n  base_url: {server.base_url}\n  model: fake-model\n  max_retries: 0\n"
        "resource_limits:\n  max_api_calls_per_minute: 0\n"
        f"reasoning:\n  mode: {mode}\n"
        "reflection:\n  use_llm: false\n" + extra
    )


def run_step(
    akira: Akira, server: FakeOpenAI, model: Model, step: str, extra: str = "", mode: str = "full"
) -> int:
    server.set_responder(model)
    akira.write_config(config(server, extra, mode))
    akira.write_task("feature", step)
    return akira.run("loop", "start", "--task", "Specs/feature/tasks.md").code
