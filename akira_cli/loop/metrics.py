"""Loop and reflection metrics derived from the state (success rate, iterations per step, failures, lessons).

The state's lists are bounded (schema 2): what was trimmed off is summed in `state.history`, so
every figure covers the whole run and costs the same at iteration 10,000 as at iteration 10.
"""

from __future__ import annotations

from akira_cli.state.models import LoopState


def update_metrics(state: LoopState) -> None:
    metrics, history = state.metrics, state.history
    completed = state.completed_steps
    total = state.completed_total
    metrics.success_rate = round(state.success_rate, 4)
    seconds = history.sealed_seconds + sum(step.duration_seconds for step in completed)
    metrics.average_step_duration = round(seconds / total, 3) if total else 0.0
    first = history.sealed_first_attempt + sum(1 for step in completed if step.attempts == 1)
    metrics.first_attempt_success_rate = round(first / total, 4) if total else 0.0
    done = state.completed_ids()
    tried = len(done) + sum(1 for step_id in state.steps if step_id not in done)
    metrics.final_success_rate = round(total / tried, 4) if tried else 0.0
    metrics.reflections_generated = history.reflections_dropped + len(state.reflections)
