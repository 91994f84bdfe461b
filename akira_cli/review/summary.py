"""The reviews as the report, `status` and `progress` show them (the morning review): each step's verdict,
the steps that need a person's look, and the reviewer's usage apart from the agent's."""

from __future__ import annotations

from typing import Any

from akira_cli.state.models import CompletedStep, LoopState
from akira_cli.words import counted

SHOWN = {
    "approved": "review: approved",
    "disputed": "review: DISPUTED",
    "none": "review: none (reviewer failed)",
}


def step_note(step: CompletedStep) -> str:
    """What the completed-steps list adds to a step's line: what it did to its exam, the
    verdict, and an approving reviewer's summary ('' when there is nothing to add)."""
    return exam_note(step) + review_note(step)


def exam_note(step: CompletedStep) -> str:
    exam = step.exam
    if exam is None:
        return ""
    said = ""
    if exam.changed and not exam.changed_exam:
        said += f"; exam files also changed, passed held out: {', '.join(exam.changed)}"
    if exam.own_tests:
        checks = ", ".join(step.checks) or "its checks"
        said += f"; {checks} ran tests the step wrote: {', '.join(exam.own_tests)}"
    return said


def review_note(step: CompletedStep) -> str:
    if not step.review:
        return ""
    summary = first_line(step.review_note, 160)
    return f"; {SHOWN[step.review]}" + (f" ({summary})" if summary and step.review == "approved" else "")


def first_line(text: str, limit: int) -> str:
    lines = text.strip().splitlines()
    return lines[0].lstrip("- ").strip()[:limit] if lines else ""


def needs_a_look(done: list[CompletedStep]) -> str:
    """The report's "Needs a person's look": disputed steps, and steps the reviewer could not
    review. '' when there are none."""
    lines = []
    for step in done:
        if step.exam is not None and step.changed_exam:
            lines.append(changed_exam_entry(step))
        first = first_line(step.review_note, 200)
        if step.review == "disputed":
            lines.append(f"- {step.step_id}: {step.description}: disputed, the reviewer still asks: {first}")
        elif step.review == "none":
            lines.append(
                f"- {step.step_id}: {step.description}: not reviewed ({first or 'the reviewer failed'})"
            )
    return "\n## Needs a person's look\n" + "\n".join(lines) + "\n" if lines else ""


def changed_exam_entry(step: CompletedStep) -> str:
    """A step that completed with its exam changed: who allowed it, the files, the diff."""
    exam = step.exam
    assert exam is not None
    who = "a person accepted it" if exam.allowed == "person" else "its text asked for it"
    failing = first_line(exam.failing, 300)
    return (
        f"- {step.step_id}: {step.description}: CHANGED ITS EXAM ({who}): its checks pass only with "
        f"{', '.join(exam.changed)} changed; as they were, {failing}\n\n"
        + "  ```diff\n"
        + "".join(f"  {line}\n" for line in exam.diff.splitlines())
        + "  ```"
    )


def usage_lines(state: LoopState) -> str:
    """The reviewer's tokens and dollars apart from the implementing agent's ('' without reviews)."""
    review = state.review_usage
    if not (review.calls or review.total_tokens or review.cost_usd):
        return ""
    agent_tokens = state.usage.total_tokens - review.total_tokens
    agent_cost = state.usage.cost_usd - review.cost_usd
    reviews = counted(review.calls, "review")
    return (
        f"- **Agent**: {agent_tokens} tokens, ${agent_cost:.4f}\n"
        f"- **Reviewer**: {review.total_tokens} tokens, ${review.cost_usd:.4f}, {reviews}\n"
    )


def status_fields(state: LoopState) -> dict[str, Any]:
    """`status`'s review fields (None without a reviewer, so that the text view leaves them out)."""
    review = state.review_usage
    if not state.reviews and not (review.calls or review.total_tokens):
        return {"reviews": None, "review_tokens": None, "review_cost_usd": None}
    return {
        "reviews": dict(sorted(state.reviews.items())),
        "review_tokens": review.total_tokens,
        "review_cost_usd": round(review.cost_usd, 4),
    }
