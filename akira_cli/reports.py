"""Completion reports, intervention requests and escalations, rendered from the state objects."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from akira_cli.errors import LoopStop
from akira_cli.events import utcnow
from akira_cli.fileio import atomic_write
from akira_cli.follow.report import checks_section
from akira_cli.reflection.memory import ReflectionMemory
from akira_cli.review.summary import needs_a_look, step_note, usage_lines
from akira_cli.state.models import CompletedStep, LoopState
from akira_cli.templates import render
from akira_cli.workspace import Workspace, command_line

GUIDANCE = re.compile(r"^##\s+Guidance\s*$(.*?)(?=^##\s|^---\s*$|\Z)", re.M | re.S | re.I)
COMMENT = re.compile(r"<!--.*?-->", re.S)


def _bullets(lines: list[str]) -> str:
    return "\n".join(lines) if lines else "- none"


def _current(state: LoopState) -> str:
    step = state.current_step
    return f"{step.step_id} - {step.description}" if step else "none"


def _recent_attempts(state: LoopState, limit: int = 5) -> str:
    attempts = [a for record in state.steps.values() for a in record.attempts]
    attempts.sort(key=lambda a: a.iteration)
    return _bullets([f"{a.render()}" for a in attempts[-limit:]])


def sandbox_line(sandboxed: bool | None) -> str:
    """SPEC 15: whether the run's steps were confined."""
    if sandboxed is None:
        return "not run yet"
    return "sandboxed (SPEC 15)" if sandboxed else "NOT sandboxed: steps ran with all of the person's rights"


def completion_report(
    workspace: Workspace, state: LoopState, open_steps: list[str], done: list[CompletedStep]
) -> Path:
    """`open_steps`: what was still open when a person moved the task to Done/ (declared done).
    `done`: every completed step, the ones only the journal holds included."""
    path = workspace.reports / f"{state.task_id}.md"
    atomic_write(path, completion_text(workspace, state, open_steps, done).encode())
    return path


def completion_text(
    workspace: Workspace,
    state: LoopState,
    open_steps: list[str],
    done: list[CompletedStep],
    stopped: str | None = None,
) -> str:
    """The completion report's text; `stopped` (why a run stopped) puts that at the top instead
    of "completed": a pull request's body for a run that needs a person (SPEC 16)."""
    completed = [
        f"- {s.step_id}: {s.description} ({s.how}; {s.duration_seconds:.1f}s, {s.attempts} attempt(s))"
        + (f" `{s.commit[:8]}`" if s.commit else "")
        + step_note(s)
        for s in done
    ]
    breakdown = state.done_breakdown()
    recovered = [
        f"- {f.step_id}: {f.description}: {f.error.splitlines()[0] if f.error else ''}"
        for f in state.failed_steps
        if f.recovered
    ]
    banner = f"> **Stopped ({state.status})**: {stopped}\n\n" if stopped else ""
    parts = [
        banner,
        render(
            "completion_report.md",
            task_id=state.task_id,
            completed_at=utcnow(),
            task_path=state.task_path,
            declared=(
                f" (declared done by a person, who moved it to Done/ with {len(open_steps)} step(s) open)"
                if open_steps
                else ""
            ),
            open_steps=(
                "\n## Steps still open (a person declared the task done)\n"
                + _bullets([f"- {s}" for s in open_steps])
                + "\n"
                if open_steps
                else ""
            ),
            duration=f"{state.metrics.total_duration_seconds:.1f}",
            iteration=state.iteration,
            total_steps=len(done),
            completed_count=len(done),
            verified=breakdown["verified"],
            unverified=breakdown["unverified"],
            by_person=breakdown["done_by_person"],
            by_claim=breakdown["done_by_claim"],
            failed_count=state.total_failures,
            success_rate=f"{state.success_rate:.0%}",
            first_attempt_rate=f"{state.metrics.first_attempt_success_rate:.0%}",
            completed_steps=_bullets(completed),
            failed_steps=_bullets(recovered),
            average_step_duration=f"{state.metrics.average_step_duration:.1f}",
            total_successes=state.total_successes,
            total_failures=state.total_failures,
            reflections=state.metrics.reflections_generated,
            tokens=state.usage.total_tokens,
            cost=f"{state.usage.cost_usd:.4f}",
            review_usage=usage_lines(state),
            needs_a_look=needs_a_look(done),
            sandbox=sandbox_line(state.sandboxed),
            done_path=workspace.relative(Path(state.task_path)),
            review=review(workspace, state),
            status="⚠️ STOPPED: needs a person" if stopped else "✅ COMPLETED",
            pull_request=f"**Pull request**: {state.git.pr_url}\n" if state.git and state.git.pr_url else "",
            criteria=criteria_section(workspace, state, done),
            closing=(
                "This run stopped before its end; its task file is"
                if stopped
                else "Task successfully completed; its task file is"
            ),
        ),
    ]
    return "".join(parts) + checks_section(state)


def criteria_section(workspace: Workspace, state: LoopState, done: list[CompletedStep]) -> str:
    """The table of the spec's acceptance criteria and their evidence (SPEC 16), or ""."""
    from akira_cli.criteria.table import render as render_table
    from akira_cli.criteria.table import table_for

    found = table_for(Path(state.task_path), state, done)
    if found is None:
        return ""
    spec, rows = found
    return "\n" + render_table(spec, rows, workspace.relative(spec.path)) + "\n"


def review(workspace: Workspace, state: LoopState) -> str:
    """How to review and merge a git-native run's branch (SPEC 12), as commands to paste."""
    record = state.git
    if record is None:
        return ""
    import shlex

    root = str(workspace.root)
    git = ["git", "-C", root]
    base, branch = record.base[:12], record.branch
    lines = [
        "## Review",
        f"The work is on the branch `{branch}`, one commit per step:",
        "```",
        shlex.join([*git, "log", "--oneline", f"{base}..{branch}"]),
        shlex.join([*git, "diff", f"{base}...{branch}"]),
    ]
    if record.created and record.started_on:
        merge = (
            shlex.join([*git, "switch", record.started_on])
            + " && "
            + shlex.join([*git, "merge", "--no-ff", branch])
        )
        lines.append(merge)
    lines += [
        "```",
        f"Undo a step and every later one with `akira loop undo --task-id {state.task_id} --step <id>`.",
        "",
    ]
    return "\n".join(lines) + "\n"


def progress_report(workspace: Workspace, state: LoopState) -> Path:
    path = workspace.root / "Logs" / "progress_reports" / f"{state.task_id}.md"
    completed = [f"- {s.step_id}: {s.description}" for s in state.completed_steps]
    atomic_write(
        path,
        render(
            "progress.md",
            task_id=state.task_id,
            created=utcnow(),
            feature=state.feature,
            task_path=workspace.relative(Path(state.task_path)),
            status=state.status + (f" ({state.stop_reason})" if state.stop_reason else ""),
            iteration=state.iteration,
            max_iterations=state.max_iterations,
            done=state.completed_total,
            success_rate=f"{state.success_rate:.0%}",
            current_step=_current(state),
            elapsed=f"{state.elapsed_seconds:.0f}",
            tokens=state.usage.total_tokens,
            completed=_bullets(completed),
            recent=_recent_attempts(state),
        ).encode(),
        durable=False,  # rewritten every few iterations; the state file is the record
    )
    return path


def intervention_request(workspace: Workspace, state: LoopState, stop: LoopStop) -> Path:
    path = workspace.needs_action / f"intervention_{state.task_id}.md"
    atomic_write(
        path,
        render(
            "intervention.md",
            task_id=state.task_id,
            created=utcnow(),
            condition=stop.condition,
            reason=stop.message,
            iteration=state.iteration,
            max_iterations=state.max_iterations,
            success_rate=f"{state.success_rate:.0%}",
            current_step=_current(state),
            tokens=state.usage.total_tokens,
            cost=f"{state.usage.cost_usd:.4f}",
            recent_attempts=_recent_attempts(state),
            state_path=f".state/autonomous_loop_{state.task_id}.json",
            fix=fix_for(workspace, state, stop.condition),
            resume=command_line(workspace, "loop", "resume", "--task-id", state.task_id),
            cancel=command_line(workspace, "loop", "cancel", "--task-id", state.task_id),
        ).encode(),
    )
    return path


def fix_for(workspace: Workspace, state: LoopState, condition: str) -> str:
    """What addresses this stop condition, with the command to paste."""
    task_id = state.task_id
    resume = command_line(workspace, "loop", "resume", "--task-id", task_id)
    more = command_line(
        workspace, "loop", "resume", "--task-id", task_id, "--max-iterations", str(state.max_iterations * 2)
    )
    logs = command_line(workspace, "loop", "logs", "--task-id", task_id)
    config = "config/autonomous_loop.yaml"
    fixes = {
        "max_iterations_reached": f"Allow more attempts and resume: `{more}`",
        "budget_exceeded": f"Raise budget.max_tokens_total or max_cost_usd in {config}, then: `{resume}`",
        "timeout_reached": f"Raise autonomous_loop.timeout_seconds in {config}, then: `{resume}`",
        "no_progress": f"Read what the agent did (`{logs}`), give it guidance below, then: `{resume}`",
    }
    return fixes.get(condition, f"Fix what the reason above names, then: `{resume}`")


def escalation(
    workspace: Workspace,
    state: LoopState,
    stop: LoopStop,
    kept: list[str] | None = None,
    others: list[str] | None = None,
) -> Path:
    """`kept`: a parallel run's worktrees and step branches, kept for inspection (SPEC 13);
    `others`: the other steps that failed in the same wave, each described after the first."""
    step = state.current_step
    record = state.steps.get(step.step_id) if step else None
    attempts = record.window() if record else []
    approaches = [f"- {a.approach}: " + ", ".join(f"`{x}`" for x in a.actions) for a in attempts]
    failures = [a.render() for a in attempts if a.outcome == "failure"]
    path = workspace.needs_action / f"escalation_{state.task_id}.md"
    atomic_write(
        path,
        render(
            "escalation.md",
            task_id=state.task_id,
            logs_cmd=command_line(workspace, "loop", "logs", "--task-id", state.task_id),
            resume_cmd=command_line(workspace, "loop", "resume", "--task-id", state.task_id),
            cancel_cmd=command_line(workspace, "loop", "cancel", "--task-id", state.task_id),
            created=utcnow(),
            condition=stop.condition,
            reason=stop.message,
            consecutive_failures=state.consecutive_failures,
            failure_threshold=state.failure_threshold,
            signature=attempts[-1].error_signature if attempts else "",
            step_id=step.step_id if step else "none",
            step_description=step.description if step else "",
            approaches=_bullets(approaches),
            failures=_bullets(failures),
            reflections=_bullets(reflection_lines(workspace, record.reflections if record else [])),
            state_path=f".state/autonomous_loop_{state.task_id}.json",
        ).encode()
        + (
            b"\n## Worktrees kept for inspection\n\n"
            + _bullets([f"- `{name}`" for name in kept]).encode()
            + b"\n"
            if kept
            else b""
        )
        + other_failures(workspace, state, others or []).encode(),
    )
    return path


def other_failures(workspace: Workspace, state: LoopState, ids: list[str]) -> str:
    """The other steps that failed in the escalated step's wave: each with what it tried, how
    it failed and what was learned, as the current step is described above."""
    blocks = []
    for step_id in ids:
        record = state.steps.get(step_id)
        if record is None:
            continue
        attempts = record.window()
        approaches = [f"- {a.approach}: " + ", ".join(f"`{x}`" for x in a.actions) for a in attempts]
        failures = [a.render() for a in attempts if a.outcome == "failure"]
        blocks.append(
            f"\n## Also failed in the same wave: step {step_id}\n**Description**: {record.description}\n\n"
            f"### Attempted Approaches\n{_bullets(approaches)}\n\n"
            f"### Recent Failures\n{_bullets(failures)}\n\n"
            f"### Reflections\n{_bullets(reflection_lines(workspace, record.reflections))}\n"
        )
    return "".join(blocks)


def reflection_lines(workspace: Workspace, ids: list[str]) -> list[str]:
    return [r.render() for r in ReflectionMemory(workspace.memory).by_ids(ids)] if ids else []


def request_files(workspace: Workspace, task_id: str) -> list[Path]:
    names = (f"escalation_{task_id}.md", f"intervention_{task_id}.md")
    return [workspace.needs_action / name for name in names if (workspace.needs_action / name).exists()]


def take_guidance(workspace: Workspace, task_id: str) -> str | None:
    """Reads `## Guidance` from the request files and files them away in .state/archive/."""
    found: list[str] = []
    for path in request_files(workspace, task_id):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            match = GUIDANCE.search(path.read_text(encoding="utf-8"))
            text = COMMENT.sub("", match.group(1)).strip() if match else ""
            if text:
                found.append(text)
        target = workspace.state_dir / "archive" / f"{path.stem}.{utcnow().replace(':', '')}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
    return "\n\n".join(found) or None
