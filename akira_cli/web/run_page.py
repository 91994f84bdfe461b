"""The page of one run: where it stands, its controls, the escalation, what needs a person's
look, the timeline of steps and attempts, cost and tokens over time, the criteria table, the
pull request, and its latest events (the live stream continues them)."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from akira_cli.api.models import LoopSummary, Progress, Report
from akira_cli.api.watch_models import LiveLines
from akira_cli.web.chart import chart
from akira_cli.web.html import duration, frame, link, money
from akira_cli.web.timeline import Attempt, Point, Step, Timeline, spent, timeline

SHOWN_EVENTS = 50
OUTPUT_LINES = 20


def run_page(root: Path, task_id: str, token: str) -> str:
    from akira_cli import api
    from akira_cli.errors import AkiraError

    summary = api.status(root, task_id)
    assert isinstance(summary, LoopSummary)
    progress = api.progress(root, summary.task_id)
    events, offset = all_events(root, summary.task_id)
    line = timeline(events)
    spent(line, api.spending(root, summary.task_id).attempts)
    try:
        report: Report | None = api.report(root, summary.task_id)
    except AkiraError:
        report = None
    budget = api.budget(root, summary.task_id)
    now = Point(summary_time(events), summary.tokens, summary.cost_usd)
    body = "".join(
        [
            f'<p><a href="/">all runs</a></p><h1>{escape(summary.task_id)}</h1>',
            facts(summary, progress),
            controls(progress),
            escalation(summary, report),
            look(progress, report),
            "<h2>Timeline</h2>",
            '<div id="timeline">' + timeline_html(line, progress) + "</div>",
            '<div id="detail"></div>',
            output(api.output(root, summary.task_id, OUTPUT_LINES)),
            "<h2>Cost and tokens</h2>",
            chart(
                str(events[0].get("ts") or now.ts) if events else now.ts,
                line.points,
                now,
                budget.max_tokens_total,
                budget.max_cost_usd,
            ),
            criteria(progress),
            pull_request(summary, report),
            "<h2>Events</h2>",
            '<div id="events">' + "".join(f"<div>{escape(text)}</div>" for text in lines(events)) + "</div>",
        ]
    )
    quoted = quote(summary.task_id)
    data = {
        "task": summary.task_id,
        "token": token,
        "stream": f"/run/{quoted}/events?offset={offset}",
        "controls": f"/run/{quoted}",
    }
    return frame(f"akira: {summary.task_id}", body, data)


def all_events(root: Path, task_id: str) -> tuple[list[dict[str, Any]], int]:
    from akira_cli import api

    events: list[dict[str, Any]] = []
    offset = 0
    while True:
        page = api.events(root, task_id, offset)
        events.extend(page.events)
        if page.offset == offset:
            return events, offset
        offset = page.offset


def summary_time(events: list[dict[str, Any]]) -> str:
    from akira_cli.events import utcnow

    return utcnow() if not events else max(utcnow(), str(events[-1].get("ts") or ""))


def lines(events: list[dict[str, Any]]) -> list[str]:
    from akira_cli.events import Event

    shown = []
    for raw in events[-SHOWN_EVENTS:]:
        try:
            shown.append(Event.model_validate(raw).line())
        except ValueError:
            continue
    return shown


def facts_now(root: Path, task_id: str) -> dict[str, Any]:
    """Where the run stands now (the stream sends it again after a step's end or a stop), and
    its tokens and cost so far, the chart's newest point."""
    from akira_cli import api
    from akira_cli.events import utcnow

    summary = api.status(root, task_id)
    assert isinstance(summary, LoopSummary)
    usage = {"ts": utcnow(), "tokens": summary.tokens, "cost_usd": summary.cost_usd}
    return {"html": facts(summary, api.progress(root, summary.task_id)), "usage": usage}


def facts(summary: LoopSummary, progress: Progress) -> str:
    items = [
        f'status <span id="status" class="status status-{escape(summary.status)}">'
        f"{escape(summary.status)}</span>",
        f"task {escape(summary.feature)} <span class='muted'>{escape(summary.task_path)}</span>",
        f"steps {progress.steps_done}/{progress.steps_total}",
        f"iteration {summary.iteration}/{summary.max_iterations}",
        f"verified {summary.verified}, unverified {summary.unverified}, changed exam {summary.changed_exam}",
        f"cost {money(summary.cost_usd)}, {summary.tokens:,} tokens",
        f"time {duration(summary.duration_seconds)}",
    ]
    if summary.current_step:
        items.append(f"now step {escape(summary.current_step)}")
    why = f"<p class='muted'>{escape(summary.stop_reason)}</p>" if summary.stop_reason else ""
    listed = "".join(f"<li>{item}</li>" for item in items)
    return f'<div id="facts"><ul class="facts">{listed}</ul>{why}</div>'


def controls(progress: Progress) -> str:
    done = [step for step in progress.steps if step.done and step.commit]
    options = "".join(
        f'<option value="{escape(step.id)}">{escape(step.id)} {escape(step.title)}</option>' for step in done
    )
    undo = (
        f'<label>step <select id="undo-step">{options}</select></label>'
        '<button data-action="undo">Undo step</button>'
        if done
        else ""
    )
    return (
        '<h2>Control</h2><div class="controls">'
        '<button data-action="stop">Stop</button><button data-action="cancel">Cancel</button>'
        f"{undo}</div>"
        '<div class="controls"><textarea id="guidance" '
        'placeholder="guidance for the next attempt (optional)">'
        '</textarea><button data-action="resume">Resume</button></div>'
        '<p id="control-result"></p>'
    )


def escalation(summary: LoopSummary, report: Report | None) -> str:
    if report is None or report.kind not in ("escalation", "intervention"):
        return ""
    return (
        f'<h2>Needs a person: {escape(report.kind)}</h2><p class="muted">{escape(report.path)}</p>'
        f'<pre id="escalation">{escape(report.text)}</pre>'
    )


def look(progress: Progress, report: Report | None) -> str:
    notes = [
        f"step {escape(step.id)}: the reviewer disputed it"
        for step in progress.steps
        if step.review == "disputed"
    ]
    changed = sorted({s.step_id for row in progress.criteria for s in row.steps if s.changed_exam})
    notes += [f"step {escape(step)}: passed only with its exam changed" for step in changed]
    section = ""
    if report is not None and report.kind == "completion" and "## Needs a person's look" in report.text:
        part = report.text.split("## Needs a person's look", 1)[1].split("\n## ", 1)[0].strip()
        section = f"<pre>{escape(part)}</pre>" if part else ""
    if not notes and not section:
        return ""
    items = "".join(f"<li>{note}</li>" for note in notes)
    return f'<h2>Needs a person\'s look</h2><ul id="look">{items}</ul>{section}'


def timeline_html(line: Timeline, progress: Progress) -> str:
    steps = dict(line.steps)
    for row in progress.steps:  # the steps not started yet, in the task file's order
        steps.setdefault(row.id, Step(row.id, row.title, wave=line.wave_of.get(row.id, 0)))
        steps[row.id].title = steps[row.id].title or row.title
        steps[row.id].done = steps[row.id].done or row.done
    parts: list[str] = []
    wave, group = -1, list[Step]()
    for step in steps.values():
        if step.wave != wave or not step.wave:
            parts.append(wave_html(group, wave))
            group, wave = [], step.wave
        group.append(step)
    parts.append(wave_html(group, wave))
    return "".join(parts)


def wave_html(group: list[Step], wave: int) -> str:
    if not group:
        return ""
    kind = "wave parallel" if wave and len(group) > 1 else "wave"
    return f'<div class="{kind}">' + "".join(step_html(step) for step in group) + "</div>"


def step_html(step: Step) -> str:
    chips = "".join(chip(step.id, attempt) for attempt in step.attempts)
    done = " done" if step.done else ""
    return (
        f'<div class="step{done}" data-step="{escape(step.id)}"><div class="name">'
        f'{escape(step.id)} {escape(step.title)}</div><div class="attempts">{chips}</div></div>'
    )


def chip(step_id: str, attempt: Attempt) -> str:
    said = [f"step {step_id} attempt {attempt.number} (iteration {attempt.iteration}): {attempt.outcome}"]
    if attempt.seconds is not None:
        said.append(f"took {duration(attempt.seconds)}")
    if attempt.tokens or attempt.cost_usd:
        said.append(f"cost {money(attempt.cost_usd)}, {attempt.tokens:,} tokens")
    said += attempt.reasons
    if attempt.reflection:
        said.append(f"reflection: {attempt.reflection}")
    if attempt.review:
        said.append(f"review: {attempt.review}")
    text = escape("\n".join(said))
    return f'<button class="a {attempt.outcome}" data-d="{text}">{attempt.number}</button>'


def output(found: LiveLines) -> str:
    """The running command's last lines (the stream sends them again as they change)."""
    head = "no command ran yet" if found.command is None else f"$ {found.command}"
    state = "" if found.command is None else (" (ended)" if found.ended else " (running)")
    if found.slot is not None:
        state += f" in wave slot {found.slot}"
    text = "\n".join(found.lines)
    return (
        f'<h2>Output</h2><div id="output-head" class="muted">{escape(head)}{state}</div>'
        f'<pre id="output">{escape(text)}</pre>'
    )


def criteria(progress: Progress) -> str:
    if not progress.criteria:
        return ""
    rows = []
    for row in progress.criteria:
        steps = ", ".join(
            f"{escape(s.step_id)}"
            + ("" if s.verified else " (unverified)")
            + (" (exam changed)" if s.changed_exam else "")
            for s in row.steps
        )
        covered = "yes" if row.covered else "<strong>no</strong>"
        rows.append(
            f"<tr><td>{escape(row.id)}</td><td>{escape(row.text)}</td><td>{covered}</td><td>{steps}</td></tr>"
        )
    return (
        '<h2>Criteria</h2><div class="scroll"><table id="criteria"><thead><tr><th>criterion</th><th>text</th>'
        "<th>covered</th><th>steps</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>"
    )


def pull_request(summary: LoopSummary, report: Report | None) -> str:
    """Its checks and round; and the report's "Checks" section: each fix round, what failed or
    was asked, the commit that did it, the threads answered and those not (yet)."""
    pr = summary.pull_request
    if pr is None:
        return ""
    rounds_done = ""
    if report is not None and "\n## Checks\n" in report.text:
        part = report.text.split("\n## Checks\n", 1)[1].split("\n## ", 1)[0].strip()
        rounds_done = f'<pre id="checks">{escape(part)}</pre>'
    rounds = f", round {pr.round}/{pr.max_rounds}" if pr.round is not None else ""
    waiting = f", waiting for {pr.waiting_for} checks" if pr.waiting_for else ""
    follow = f"<p>{escape(summary.following)}</p>" if summary.following else ""
    checks = escape(pr.checks or "unknown")
    said = f"{link(pr.url)}: checks {checks}{rounds}{waiting}"
    return f'<h2>Pull request</h2><p id="pull-request">{said}</p>{follow}{rounds_done}'
