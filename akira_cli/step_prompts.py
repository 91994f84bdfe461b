"""Builds an agent's prompt from the state objects: continuation context, step, retry context.

The same attempts and reflections render into the escalation file, so what the agent is told
and what the person reads never drift apart.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from akira_cli import nofollow
from akira_cli.config import Config
from akira_cli.criteria.refs import requirement_texts
from akira_cli.reflection.memory import ReflectionMemory
from akira_cli.runner import tail
from akira_cli.sections import LoopSettings
from akira_cli.state.models import LoopState
from akira_cli.state.records import Attempt, StepRecord
from akira_cli.tasks.model import Step, TaskFile
from akira_cli.templates import render
from akira_cli.words import counted
from akira_cli.workspace import Workspace


def _list(items: list[str], empty: str = "- none") -> str:
    return "\n".join(items) if items else empty


def continuation(state: LoopState, step: Step, attempt: int, next_action: str) -> str:
    """The prompt that re-sends the context: task, progress, current step, last exchange, next action."""
    return render(
        "continuation.md",
        task_path=state.task_path,
        iteration=state.iteration,
        max_iterations=state.max_iterations,
        status=state.status,
        completed=len(state.completed_steps),
        completed_ids=", ".join(s.step_id for s in state.completed_steps) or "none",
        failed=state.total_failures,
        success_rate=f"{state.success_rate:.0%}",
        step_id=step.id,
        step_title=step.title,
        attempt=attempt,
        last_prompt=recent_context(state, step),
        last_response=tail(state.context.last_response, 600) or "(none)",
        next_action=next_action,
    )


def reinjection_reason(state: LoopState, settings: LoopSettings) -> str | None:
    """Why to re-send the whole context: every N iterations, after a failure, or when it is stale."""
    context = state.context
    if context.last_reinjected_at is None:
        return "first"
    if state.iteration - context.last_reinjected_iteration >= settings.reinject_every_n_iterations:
        return "every_n_iterations"
    if settings.reinject_after_failure and state.consecutive_failures > 0:
        return "after_failure"
    since = datetime.now(UTC) - datetime.fromisoformat(context.last_reinjected_at.replace("Z", "+00:00"))
    if since.total_seconds() > settings.reinject_if_stale_seconds:
        return "stale"
    return None


def recent_context(state: LoopState, step: Step) -> str:
    """What came just before: for a retry of this step its retry section says it better; for a
    new step, the step before it in one line (never the tail of that step's prompt, whose
    retry instructions are not for this step)."""
    previous = state.steps.get(step.id)
    if previous is not None and previous.window():
        return "(this step's previous attempts are listed below)"
    if not state.completed_steps:
        return "(none)"
    last = state.completed_steps[-1]
    return f"The previous step, {last.step_id}. {last.description}, is done ({last.how})."


def failure_pattern(attempts: list[Attempt]) -> str:
    signatures = [a.error_signature for a in attempts]
    if len(signatures) > 1 and len(set(signatures)) == 1:
        return f"All {len(signatures)} attempts failed the same way; the approach itself is wrong."
    kinds = sorted({a.approach for a in attempts})
    failed = counted(len(attempts), "failed attempt")
    return f"{failed} with different errors, approaches: {', '.join(kinds)}."


def failure_lines(failed: list[Attempt], limit: int = 2000) -> list[str]:
    """Every failure message, once per distinct error (repeats are counted, not repeated): its
    telling line, then the whole of it (a check's output tail, a hint on a line of its own), its
    last `limit` characters."""
    groups: dict[str, list[Attempt]] = {}
    for attempt in failed:
        groups.setdefault(attempt.error_signature or attempt.summary(), []).append(attempt)
    lines = []
    for group in groups.values():
        first = group[0]
        line = f"- Attempt{'s' if len(group) > 1 else ''} {', '.join(str(a.number) for a in group)}: "
        line += first.summary()
        whole = first.error.strip()
        if whole and whole != first.summary():
            shown = "\n".join(f"  {part}" for part in tail(whole, limit).splitlines())
            line += f"\n  ```\n{shown}\n  ```"
        lines.append(line)
    return lines


CONTEXT_FILES = ("requirements.md", "design.md", "spec.md", "plan.md", "data-model.md", "proposal.md")
"""What Kiro, spec-kit and OpenSpec keep next to tasks.md."""
DESIGN_PART_CHARS = 1500
MAX_DESIGN_BYTES = 2_000_000


def spec_context(
    workspace: Workspace, task: TaskFile, step: Step, warn: Callable[[str], object] = lambda _: None
) -> str:
    """The spec's other files, and the part of its design that speaks of this step. A design
    that leads out of the spec's folder (a link a step put there) is left out, and `warn` says so."""
    folder = task.path.parent
    present = [folder / name for name in CONTEXT_FILES if (folder / name).is_file()]
    if not present:
        return ""
    lines = ["## The spec", *[f"- `{workspace.relative(path)}`" for path in present]]
    try:
        part = design_part(folder, step.title)
    except nofollow.Refused as exc:
        warn(f"{workspace.relative(folder / 'design.md')} is left out of the prompt: {exc.strerror}")
        part = ""
    if part:
        lines += ["", "From the design:", "", part]
    return "\n".join(lines) + "\n"


def design_part(folder: Path, title: str) -> str:
    """The section of the spec folder's design.md that shares the most words with the step's
    title. The file is read as akira reads the spec (`nofollow.read`): a regular file, whose
    links stay in the folder; anything else is `nofollow.Refused`."""
    try:
        text = nofollow.read(folder, "design.md", MAX_DESIGN_BYTES).decode("utf-8", errors="replace")
    except nofollow.Refused:
        raise
    except OSError:
        return ""
    words = {w for w in re.findall(r"[a-z][a-z0-9_]{3,}", title.lower())}
    sections = re.split(r"(?m)^(?=#{2,4} )", text)
    scored = [(len(words & set(re.findall(r"[a-z][a-z0-9_]{3,}", s.lower()))), s) for s in sections]
    best = max(scored, default=(0, ""), key=lambda item: item[0])
    return best[1].strip()[:DESIGN_PART_CHARS] if best[0] else ""


def where(task: TaskFile, step: Step) -> str:
    """The heading above the step, its parents' titles and its user story: the context a real
    tasks.md gives a step by its place in the file."""
    lines = []
    if step.heading:
        lines.append(f"- Section: {step.heading}")
    parents: list[str] = []
    parent = task.get(step.parent_id) if step.parent_id else None
    while parent is not None:
        parents.insert(0, f"{parent.id}. {parent.title}")
        parent = task.get(parent.parent_id) if parent.parent_id else None
    if parents:
        lines.append(f"- Part of: {' > '.join(parents)}")
    if step.story:
        lines.append(f"- User story: {step.story}")
    return "\n" + "\n".join(lines) + "\n" if lines else ""


@dataclass
class StepPrompts:
    workspace: Workspace
    config: Config
    warn: Callable[[str], object] = lambda _: None
    """Says what of the spec was left out, and why."""

    def build(self, state: LoopState, task: TaskFile, step: Step, record: StepRecord) -> str:
        failed = [a for a in record.window() if a.outcome == "failure"]
        attempt = record.window_count + 1
        action = "Take a different approach than before." if failed else "Carry out this step."
        wanted = [f"- {text}" for text in requirement_texts(step, task)]  # with their criteria
        return (
            render(
                "step.md",
                continuation=continuation(state, step, attempt, action),
                step_id=step.id,
                step_title=step.title,
                where=where(task, step),
                details=_list([f"- {d}" for d in step.details], ""),
                requirements="## Requirements\n" + _list(wanted) + "\n" if wanted else "",
                context=spec_context(self.workspace, task, step, self.warn),
                lessons=self.lessons(state),
                checks=_list(self.checks(step), "- the agent reports success"),
                workdir=self.config.agent.workdir or ".",
                retry=(self.retry(state, record, failed) if failed or record.guidance else "")
                + (
                    f"\n## This step ran again after its parallel wave\n{record.collision}\n"
                    if record.collision
                    else ""
                ),
            ).strip()
            + "\n"
        )

    def followup(self, state: LoopState, step: Step, record: StepRecord) -> str:
        """For a resumed conversation: only what is new since the last attempt."""
        failed = [a for a in record.window() if a.outcome == "failure"]
        head = f"Your last attempt at step {step.id} ({step.title}) did not pass its checks.\n"
        return head + self.retry(state, record, failed[-1:]).strip() + "\n"

    def checks(self, step: Step) -> list[str]:
        lines = [f"- `{cmd}` exits 0" for cmd in step.verify]
        lines += [f"- `{path}` exists" for path in step.exists]
        lines += [f"- `{path}` contains `{text}`" for path, text in step.contains]
        return lines + [f"- project check `{c.label}` passes" for c in self.config.checks]

    def lessons(self, state: LoopState) -> str:
        """Post-action reflections of the last 3 completed steps (their lessons for the next prompt)."""
        done = [state.steps[s.step_id] for s in state.completed_steps if s.step_id in state.steps]
        notes = [r for r in done if r.post_action is not None][-3:]
        lines = [
            f"- {r.step_id}: worked: {r.post_action.what_worked}; improve: "
            f"{r.post_action.what_to_improve}; lesson: {r.post_action.lesson_learned}"
            for r in reversed(notes)
            if r.post_action is not None
        ]
        return "## Lessons from recent steps\n" + "\n".join(lines) + "\n" if lines else ""

    def retry(self, state: LoopState, record: StepRecord, failed: list[Attempt]) -> str:
        limit = self.config.reflection.max_output_chars
        memory = ReflectionMemory(self.workspace.memory)
        count = self.config.reflection.max_reflections_in_prompt
        reflections = memory.recent(state.task_id, record.step_id, count) if count else []
        return render(
            "retry.md",
            count=len(failed),
            failures=_list(failure_lines(failed, limit)),
            actions=_list([a.render(full=False) for a in failed]),
            environment=self.environment(failed, limit),
            pattern=failure_pattern(failed) if failed else "",
            reflections=(
                "\n## Reflections from previous attempts\n"
                + "\n".join(r.render() for r in reflections)
                + "\n"
                if reflections
                else ""
            ),
            guidance=f"\n## Guidance from a person\n{record.guidance}\n" if record.guidance else "",
        )

    @staticmethod
    def environment(failed: list[Attempt], limit: int) -> str:
        if not failed:
            return "- none"
        last = failed[-1]
        files = ", ".join(last.files_changed) or "none recorded"
        output = tail(last.output_tail, limit) or "(no output)"
        return f"- files changed by the last attempt: {files}\n- its output (truncated):\n```\n{output}\n```"
