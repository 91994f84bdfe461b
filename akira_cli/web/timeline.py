"""A run's timeline from its events: the steps in the order they started (the `[P]` waves
together), each with its attempts, their outcome, duration, cost, reflection and review
verdict; and the tokens and cost over time for the chart, from the LLM calls and from what
each attempt spent as the run recorded it (an agent CLI's own usage is in no event)."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from akira_cli.api.watch_models import AttemptSpend


@dataclass
class Attempt:
    number: int
    iteration: int
    started: str
    outcome: str = "running"
    """`running`, `passed`, `failed` or `interrupted`."""
    seconds: float | None = None
    cost_usd: float = 0.0
    tokens: int = 0
    reasons: list[str] = field(default_factory=list)
    reflection: str = ""
    review: str = ""


@dataclass
class Step:
    id: str
    title: str = ""
    wave: int = 0
    """Steps of one `[P]` wave share a number (0: no wave)."""
    done: bool = False
    attempts: list[Attempt] = field(default_factory=list)


@dataclass
class Point:
    ts: str
    tokens: int
    cost_usd: float


@dataclass
class Timeline:
    steps: dict[str, Step] = field(default_factory=dict)
    points: list[Point] = field(default_factory=list)
    """Tokens and cost so far at each LLM call (and, once `spent` added them, each attempt's end)."""
    calls: list[Point] = field(default_factory=list)
    """Each LLM call's own tokens and cost."""
    tokens: int = 0
    cost_usd: float = 0.0
    waves: int = 0
    wave_of: dict[str, int] = field(default_factory=dict)

    def step(self, step_id: str) -> Step:
        found = self.steps.get(step_id)
        if found is None:
            found = self.steps[step_id] = Step(step_id, wave=self.wave_of.get(step_id, 0))
        return found

    def last(self, step_id: str | None) -> Attempt | None:
        if step_id is None or step_id not in self.steps or not self.steps[step_id].attempts:
            return None
        return self.steps[step_id].attempts[-1]

    def add(self, event: dict[str, Any]) -> None:
        kind, step_id = event.get("type"), event.get("step_id")
        given = event.get("data")
        data: dict[str, Any] = given if isinstance(given, dict) else {}
        handler = HANDLERS.get(str(kind))
        if handler is not None:
            handler(self, str(step_id) if step_id is not None else None, data, event)


def seconds_between(start: str, end: str) -> float | None:
    try:
        return (
            datetime.fromisoformat(end.replace("Z", "+00:00"))
            - datetime.fromisoformat(start.replace("Z", "+00:00"))
        ).total_seconds()
    except ValueError:
        return None


def _wave(line: Timeline, step_id: str | None, data: dict[str, Any], event: dict[str, Any]) -> None:
    line.waves += 1
    for member in data.get("steps") or []:
        line.wave_of[str(member)] = line.waves


def _started(line: Timeline, step_id: str | None, data: dict[str, Any], event: dict[str, Any]) -> None:
    if step_id is not None:
        line.step(step_id).title = str(data.get("title") or "")


def _attempt(line: Timeline, step_id: str | None, data: dict[str, Any], event: dict[str, Any]) -> None:
    if step_id is not None:
        number = int(data.get("attempt") or len(line.step(step_id).attempts) + 1)
        line.step(step_id).attempts.append(
            Attempt(number, int(event.get("iteration") or 0), str(event.get("ts") or ""))
        )


def _evaluation(line: Timeline, step_id: str | None, data: dict[str, Any], event: dict[str, Any]) -> None:
    attempt = line.last(step_id)
    if attempt is not None:
        attempt.outcome = "passed" if data.get("complete") else "failed"
        attempt.seconds = seconds_between(attempt.started, str(event.get("ts") or ""))
        attempt.reasons = [str(reason) for reason in (data.get("reasons") or [])][:5]


def _interrupted(line: Timeline, step_id: str | None, data: dict[str, Any], event: dict[str, Any]) -> None:
    attempt = line.last(step_id)
    if attempt is not None:
        attempt.outcome = "interrupted"
        attempt.seconds = seconds_between(attempt.started, str(event.get("ts") or ""))


def _reflection(line: Timeline, step_id: str | None, data: dict[str, Any], event: dict[str, Any]) -> None:
    attempt = line.last(step_id)
    if attempt is not None:
        attempt.reflection = str(data.get("suggestion") or data.get("text") or "")


def _review(line: Timeline, step_id: str | None, data: dict[str, Any], event: dict[str, Any]) -> None:
    attempt = line.last(step_id)
    if attempt is not None:
        attempt.review = str(data.get("verdict") or "")
        if attempt.review == "changes":  # its checks passed, but the reviewer sent it back
            attempt.outcome = "failed"


def _completed(line: Timeline, step_id: str | None, data: dict[str, Any], event: dict[str, Any]) -> None:
    if step_id is not None:
        line.step(step_id).done = True


def _llm_call(line: Timeline, step_id: str | None, data: dict[str, Any], event: dict[str, Any]) -> None:
    tokens = int(data.get("prompt_tokens") or 0) + int(data.get("completion_tokens") or 0)
    cost = float(data.get("cost_usd") or 0.0)
    line.tokens += tokens
    line.cost_usd += cost
    line.points.append(Point(str(event.get("ts") or ""), line.tokens, line.cost_usd))
    line.calls.append(Point(str(event.get("ts") or ""), tokens, cost))
    attempt = line.last(step_id)
    if attempt is not None:
        attempt.tokens += tokens
        attempt.cost_usd += cost


HANDLERS = {
    "wave_started": _wave,
    "step_started": _started,
    "attempt_started": _attempt,
    "evaluation": _evaluation,
    "attempt_interrupted": _interrupted,
    "reflection_generated": _reflection,
    "review": _review,
    "step_completed": _completed,
    "llm_call": _llm_call,
}


def timeline(events: list[dict[str, Any]]) -> Timeline:
    line = Timeline()
    for event in events:
        line.add(event)
    return line


def epoch(ts: str) -> float | None:
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def spent(line: Timeline, attempts: list[AttemptSpend]) -> None:
    """Adds what each ended attempt spent: on its chip, and to the chart as a point at its end
    with what it spent beyond the LLM calls made while it ran (those are points already):
    an agent CLI's own tokens and cost."""
    calls = sorted((at, call) for call in line.calls if (at := epoch(call.ts)) is not None)
    times = [at for at, _ in calls]
    tokens, costs = [0], [0.0]  # sums of the calls before each index
    for _, call in calls:
        tokens.append(tokens[-1] + call.tokens)
        costs.append(costs[-1] + call.cost_usd)
    by_key = {
        (step.id, attempt.iteration, attempt.number): attempt
        for step in line.steps.values()
        for attempt in step.attempts
    }
    steps: list[tuple[float, Point]] = [(at, call) for at, call in calls]
    for attempt in attempts:
        chip = by_key.get((attempt.step_id, attempt.iteration, attempt.number))
        if chip is not None:
            chip.tokens, chip.cost_usd = attempt.tokens, attempt.cost_usd
        end = epoch(attempt.finished_at)
        if end is None:
            continue
        first = bisect.bisect_left(times, end - attempt.seconds)
        last = bisect.bisect_right(times, end)
        extra_tokens = attempt.tokens - (tokens[last] - tokens[first])
        extra_cost = attempt.cost_usd - (costs[last] - costs[first])
        if extra_tokens > 0 or extra_cost > 1e-9:
            steps.append((end, Point(attempt.finished_at, max(0, extra_tokens), max(0.0, extra_cost))))
    steps.sort(key=lambda item: item[0])
    line.points, line.tokens, line.cost_usd = [], 0, 0.0
    for _, step in steps:
        line.tokens += step.tokens
        line.cost_usd += step.cost_usd
        line.points.append(Point(step.ts, line.tokens, line.cost_usd))
