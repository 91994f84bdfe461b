"""A loop's status row: what `loop status --json` prints for it, and the dashboard groups."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from akira_cli.state.models import LoopState
    from akira_cli.state.store import StateStore


def effective_status(store: StateStore, state: LoopState) -> str:
    """`running` with no live lock holder is shown as `interrupted`."""
    if state.status in ("running", "following") and not store.lock(state.task_id).is_held():
        return "interrupted"
    return state.status


def group_of(status: str) -> str:
    return {
        "running": "Active",
        "following": "Active",
        "paused": "Paused",
        "interrupted": "Paused",
        "needs_action": "Needs action",
        "completed": "Completed",
        "failed": "Failed",
        "cancelled": "Cancelled",
    }[status]


def pull_request(state: LoopState) -> dict[str, Any] | None:
    """`{url, checks, round, max_rounds, waiting_for}`; the last four null while no one follows it."""
    if state.pull_request is not None:
        return state.pull_request.public()
    if state.git is None or not state.git.pr_url:
        return None
    return {"url": state.git.pr_url, "checks": None, "round": None, "max_rounds": None, "waiting_for": None}


def summary(store: StateStore, state: LoopState) -> dict[str, Any]:
    from akira_cli.review.summary import status_fields

    status = effective_status(store, state)
    step = state.current_step
    return {
        "task_id": state.task_id,
        "status": status,
        "group": group_of(status),
        "feature": state.feature,
        "task_path": state.task_path,
        "iteration": state.iteration,
        "max_iterations": state.max_iterations,
        "success_rate": round(state.success_rate, 4),
        "current_step": f"{step.step_id} {step.description}" if step else None,
        "current_steps": [
            {"step": f"{running.step_id} {running.description}", "worktree": running.worktree}
            for running in state.current_steps
        ],
        "consecutive_failures": state.consecutive_failures,
        "pull_request": pull_request(state),
        "following": (
            state.pull_request.line(step.step_id if step else None)
            if state.pull_request is not None and status == "following"
            else None
        ),
        "not_acted_on": state.pull_request.not_acted_on if state.pull_request is not None else [],
        **state.done_breakdown(),
        "tokens": state.usage.total_tokens,
        "cached_tokens": state.usage.cached_tokens,
        "cost_usd": round(state.usage.cost_usd, 4),
        **status_fields(state),
        "waiting_until": state.waiting_until,
        "duration_seconds": round(state.elapsed_seconds, 3),
        "stop_reason": state.stop_reason,
        "systemic_issues": state.systemic_issues,
        "sandboxed": state.sandboxed,
        "pid": store.lock(state.task_id).holder() if status in ("running", "following") else None,
    }
