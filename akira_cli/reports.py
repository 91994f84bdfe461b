"""Completion reports, intervention requests and escalations, rendered from the state objects."""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from akira_cli import nofollow
from akira_cli.errors import LoopStop
from akira_cli.events import utcnow
from akira_cli.fileio import atomic_write
from akira_cli.follow.report import checks_section
from akira_cli.reflection.memory import ReflectionMemory
from akira_cli.review.summary import needs_a_look, step_note, usage_lines
from akira_cli.sandbox.session import describe
from akira_cli.state.models import CompletedStep, LoopState
from akira_cli.state.records import Attempt
from akira_cli.templates import render
from akira_cli.workspace import Workspace, command_line

GUIDANCE = re.compile(r"^##\s+Guidance\s*$(.*?)(?=^##\s|^---\s*$|\Z)", re.M | re.S | re.I)
COMMENT = re.compile(r"<!--.*?-->", re.S)
MAX_REQUEST = 1_000_000
"""How much of an intervention or escalation file is read for its guidance."""


def _bullets(lines: list[str]) -> str:
    return "\n".join(lines) if lines else "- none"


def _current(state: LoopState) -> str:
    step = state.current_step
    return f"{step.step_id} - {step.description}" if step else "none"


def _recent_attempts(state: LoopState, limit: int = 5) -> str:
    attempts = [a for record in state.steps.values() for a in record.attempts]
    attempts.sort(key=lambda a: a.iteration)
    return _bullets([f"{a.render()}" for a in attempts[-limit:]])


@dataclass(frozen=True)
class Reader:
    """Who reads a completion report: the person at the machine that ran it (the report file,
    with its front matter, absolute paths and commands to paste there), or a reader of the
    forge (the pull request's body: no front matter, paths from the repository's top, and only
    commands that run in a clone)."""

    workspace: Workspace
    forge: bool = False
    top: Path | None = None
    """The repository's top folder (the forge's paths start there)."""

    @classmethod
    def of_forge(cls, workspace: Workspace) -> Reader:
        from akira_cli.git.pinned import toplevel

        return cls(workspace, forge=True, top=toplevel(workspace.root))

    def path(self, path: Path) -> str:
        """`path` from the repository's top for the forge, else from the workspace's root."""
        if self.forge and self.top is not None:
            with contextlib.suppress(ValueError, OSError):
                return path.resolve().relative_to(self.top).as_posix()
        return self.workspace.relative(path)

    def task(self, path: Path) -> str:
        return self.path(path) if self.forge else str(path)


def completion_report(
    workspace: Workspace, state: LoopState, open_steps: list[str], done: list[CompletedStep]
) -> Path:
    """`open_steps`: what was still open when a person moved the task to Done/ (declared done).
    `done`: every completed step, the ones only the journal holds included."""
    path = workspace.reports / f"{state.task_id}.md"
    atomic_write(
        path, completion_text(Reader(workspace), state, open_steps, done).encode(), root=workspace.root
    )
    return path


def completion_text(
    reader: Reader,
    state: LoopState,
    open_steps: list[str],
    done: list[CompletedStep],
    stopped: str | None = None,
) -> str:
    """The completion report for `reader` (the report file, or a pull request's body); `stopped`
    (why a run stopped) puts that at the top instead of "completed"."""
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
    front = f"---\ntype: completion_report\ntask_id: {state.task_id}\ncompleted_at: {utcnow()}\n---\n\n"
    pr_url = state.git.pr_url if state.git and not reader.forge else None
    return (
        banner
        + render(
            "completion_report.md",
            front_matter="" if reader.forge else front,
            task_path=reader.task(Path(state.task_path)),
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
            changed_exam=breakdown["changed_exam"],
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
            sandbox=describe(state.sandboxed),
            done_path=reader.path(Path(state.task_path)),
            review=branch_section(reader, state, done),
            status="⚠️ STOPPED: needs a person" if stopped else "✅ COMPLETED",
            pull_request=f"**Pull request**: {pr_url}\n" if pr_url else "",
            criteria=criteria_section(reader, state, done),
            closing=(
                "This run stopped before its end; its task file is"
                if stopped
                else "Task successfully completed; its task file is"
            ),
        )
        + checks_section(state)
    )


def criteria_section(reader: Reader, state: LoopState, done: list[CompletedStep]) -> str:
    """The table of the spec's acceptance criteria and their evidence, or ""."""
    from akira_cli.criteria.table import render as render_table
    from akira_cli.criteria.table import table_for

    found = table_for(Path(state.task_path), state, done)
    if found is None:
        return ""
    spec, rows = found
    return "\n" + render_table(spec, rows, reader.path(spec.path)) + "\n"


def branch_section(reader: Reader, state: LoopState, done: list[CompletedStep]) -> str:
    """How to review, merge and undo a git-native run's branch: commands to paste where it ran,
    or, for the forge, the commands that undo steps in a clone."""
    record = state.git
    if record is None:
        return ""
    import shlex

    base, branch = record.base[:12], record.branch
    lines = ["## Review", f"The work is on the branch `{branch}`, one commit per step:"]
    undo = f"akira loop undo --task-id {state.task_id} --step <id>"
    if reader.forge:
        lines[-1] = f"The work is on the branch `{branch}`, one commit per step, from `{base}`."
        reverts = [
            f"- {s.step_id}: `git revert --no-edit {s.commit[:12]}^..{branch}`" for s in done if s.commit
        ]
        lines += [
            f"To undo a step and every later commit in a clone, on this branch (`git switch {branch}`), "
            "then push:",
            *reverts,
            f"Where the run's state is, `{undo}` does the same and lets `akira loop resume` do them again.",
            "",
        ]
        return "\n".join(lines) + "\n"
    git = ["git", "-C", str(reader.workspace.root)]
    lines += [
        "```",
        shlex.join([*git, "log", "--oneline", f"{base}..{branch}"]),
        shlex.join([*git, "diff", f"{base}...{branch}"]),
    ]
    if record.created and record.started_on:
        switch = shlex.join([*git, "switch", record.started_on])
        lines.append(f"{switch} && {shlex.join([*git, 'merge', '--no-ff', branch])}")
    lines += ["```", f"Undo a step and every later one with `{undo}`.", ""]
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
        root=workspace.root,
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
        root=workspace.root,
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
    """`kept`: a parallel run's worktrees and step branches, kept for inspection (parallel steps);
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
        + exam_diff(attempts).encode()
        + other_failures(workspace, state, others or []).encode(),
        root=workspace.root,
    )
    return path


def exam_diff(attempts: list[Attempt]) -> str:
    """The exam files' diff of a step that stopped passing only with its exam changed."""
    exam = attempts[-1].exam if attempts else None
    if exam is None or not exam.changed_exam:
        return ""
    return f"\n## The exam diff (what the step changed in its checks)\n\n```diff\n{exam.diff}```\n"


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
    from akira_cli.resume_requests import bounded_guidance

    found: list[str] = []
    paths = request_files(workspace, task_id)
    for path in paths:  # all read and bounded before any is filed away: a refusal loses none
        with contextlib.suppress(OSError, UnicodeDecodeError):  # a link out of the tree is not followed
            data = nofollow.read(workspace.root, path.relative_to(workspace.root), MAX_REQUEST)
            match = GUIDANCE.search(data.decode("utf-8"))
            text = COMMENT.sub("", match.group(1)).strip() if match else ""
            if text:
                found.append(bounded_guidance(text, f"the ## Guidance of {workspace.relative(path)}"))
    for path in paths:
        target = workspace.state_dir / "archive" / f"{path.stem}.{utcnow().replace(':', '')}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
    return "\n\n".join(found) or None
