"""A scripted model for the reasoning engine: it answers each request by the kind of prompt it
carries (the first line of the user turn), so parallel step calls are answered correctly
whatever order they arrive in."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from tests.support.servers.fake_openai import Reply, error, json_reply

KINDS = {
    "# Reasoning: task profile": "profile",
    "# Reasoning: profile reassessment": "profile_update",
    "# Reasoning: plan": "plan",
    "# Reasoning: validate plan": "validate_plan",
    "# Reasoning: validate execution": "validate_execution",
    "# Reasoning: convergence": "converge",
    "# Reasoning: refine plan": "refine",
    "# Reasoning: validate refinement": "validate_fragment",
    "# Reasoning: synthesize answer": "synthesize",
    "# Reasoning: execute step": "step",
}


SIMPLE = {
    "reasoning_depth": 1,
    "information_sufficiency": 0.9,
    "expected_tool_usage": "none",
    "output_breadth": "narrow",
    "confidence_requirement": "low",
    "raw_inference": "one arithmetic step, everything given",
}


NO_ISSUES: dict[str, Any] = {"issues": []}


GOOD = {"completeness": 1.0, "coherence": 0.95, "consistency": 0.95, "rationale": "done"}


LOW = {"completeness": 0.4, "coherence": 0.95, "consistency": 0.95, "detected_issues": ["parts missing"]}


Answer = dict[str, Any] | Reply | Callable[[dict[str, Any]], dict[str, Any] | Reply]


def step(sid: str, description: str, deps: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": sid, "description": description, "dependencies": deps or [], **extra}


def outcome(output: str, clarity: str = "CLEAR") -> dict[str, Any]:
    return {"step_output": output, "clarity_state": clarity}


class Script:
    """Scripted answers per prompt kind; a list is consumed in order and its last item repeats.

    Refined steps pass their validation (`validate_fragment`) unless a test says otherwise.

    Steps are answered by their description (`steps={"description": answer-or-list}`).
    """

    def __init__(self, steps: dict[str, Answer | list[Answer]] | None = None, **kinds: Any) -> None:
        kinds.setdefault("validate_fragment", NO_ISSUES)
        self.kinds = {kind: _as_list(answer) for kind, answer in kinds.items()}
        self.steps = {desc: _as_list(answer) for desc, answer in (steps or {}).items()}
        self.log: list[str] = []
        self.prompts: list[tuple[str, str]] = []
        self.unscripted: list[str] = []
        """Kinds asked for that the script has no answer for (the test then fails)."""
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        prompt = body["messages"][1]["content"]
        kind = KINDS[prompt.splitlines()[0]]
        with self._lock:
            self.log.append(kind)
            self.prompts.append((kind, prompt))
            queue = self.steps.get(_goal(prompt)) if kind == "step" else self.kinds.get(kind)
            if queue is None:
                self.unscripted.append(kind)
                return error(400)
            answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if callable(answer):
            answer = answer(body)
        if isinstance(answer, Reply):
            return answer
        content = json.dumps(answer)
        return json_reply(
            answer,
            prompt_tokens=len(json.dumps(body["messages"])) // 4,
            completion_tokens=max(1, len(content) // 4),
        )

    def prompts_of(self, kind: str) -> list[str]:
        return [prompt for k, prompt in self.prompts if k == kind]


def _as_list(answer: Any) -> list[Any]:
    return list(answer) if isinstance(answer, list) else [answer]


def _goal(prompt: str) -> str:
    line = next(line for line in prompt.splitlines() if line.startswith("Your goal for this step: "))
    return line.removeprefix("Your goal for this step: ")
