"""Loop and reflection metrics derived from the state (seed 000 req. 5, seed 004 metrics)."""

from __future__ import annotations

from akira_cli.state.models import LoopState


def update_metrics(state: LoopState) -> None:
    metrics = state.metrics
    completed = state.completed_steps
    metrics.success_rate = round(state.success_rate, 4)
    durations = [step.duration_seconds for step in completed]
    metrics.average_step_duration = round(sum(durations) / len(durations), 3) if durations else 0.0
    first = sum(1 for step in completed if step.attempts == 1)
    metrics.first_attempt_success_rate = round(first / len(completed), 4) if completed else 0.0
    tried = len(state.steps)
    metrics.final_success_rate = round(len(completed) / tried, 4) if tried else 0.0
    metrics.reflections_generated = len(state.reflections)
