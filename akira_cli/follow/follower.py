"""Following the pull request after the push (the loop's `Follower`): look at it every
`poll_seconds`, let `watch.decide` say what comes next, and carry that out.

A round turns each failed check into a step `ci-N` and each person's review comment into a step
`review-N`, worked by the loop's own engine (the agent, the sandbox, the task's checks, the
reviewer) and committed once each (`git.steps.Message`: no tick, the fix's own trailers). The
round is pushed only once all its steps passed their checks, then the threads are answered and
the watching starts again from the new head. The state records every round before its work
starts, so a resume finishes the round it was in; a stop hook pauses the watching as a step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.errors import AkiraError, LoopStop, NeedsPerson, PullRequestGreen, PullRequestNeedsPerson
from akira_cli.events import EventBus, EventType, utcnow
from akira_cli.follow.fix_prompts import FollowPrompts, summary_of
from akira_cli.follow.forge import Comment, Forge, ForgeError, Seen
from akira_cli.follow.reply import reply_text
from akira_cli.follow.signature import first_failing_line, log_tail
from akira_cli.follow.trust import asking
from akira_cli.follow.watch import Fix, GiveUp, Green, ReadLogs, Wait, decide
from akira_cli.git.step_message import Message
from akira_cli.redaction import redact
from akira_cli.sections import FollowSettings
from akira_cli.state.follow import KEEP_ROUNDS, FixItem, PullRequestWatch, Round
from akira_cli.state.models import LoopState
from akira_cli.tasks.model import Step, TaskFile

if TYPE_CHECKING:
    from akira_cli.git.steps import StepCommits
    from akira_cli.loop.conditions import Guard
    from akira_cli.loop.control import Control
    from akira_cli.loop.engine import StepEngine
    from akira_cli.loop.iteration import Iteration, Save
    from akira_cli.step_prompts import StepPrompts

FORGE_TRIES = 3
"""The forge's tool failing this many looks in a row needs a person."""
KEEP_IGNORED = 50
"""Comments not acted on kept in the state (the newest)."""
STARTS = ("completed", "task_in_done")
"""The stops after which following begins (a completed run whose pull request is open)."""


def now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Follower:
    settings: FollowSettings
    commits: StepCommits
    forge: Callable[[str], Forge]
    """The forge of the pull request at a URL."""
    state: LoopState
    bus: EventBus
    engine: StepEngine
    """The loop's engine, which works each fix step (its prompts are `fix_prompts`)."""
    iteration: Iteration
    """The engine's writer of an iteration's part of the state."""
    control: Control
    """The run around the steps: its pause, its clock."""
    guard: Guard
    """The loop's checks before a step: a stop hook, the run's limits."""
    clock: Callable[[], datetime] = now
    failures: int = field(default=0, init=False)

    @property
    def record(self) -> PullRequestWatch:
        record = self.state.pull_request
        assert record is not None
        return record

    def active(self) -> bool:
        record = self.state.pull_request
        return record is not None and record.phase != "green"

    def after(self, stop: LoopStop) -> PullRequestWatch | None:
        """A completed run whose pull request is open begins to follow it: the record of the
        watch, for the loop to keep (None: nothing to follow)."""
        state = self.state
        if stop.condition not in STARTS or state.git is None or not state.git.pr_url:
            return None
        watch = start_watch(state, self.settings.max_rounds, self.commits.run.plumb.head()[0])
        self.bus.emit(EventType.FOLLOW, action="started", url=state.git.pr_url)
        return watch

    def follow(self, save: Save) -> None:
        """Follows the pull request until it is green or needs a person (the loop's status is
        `following` meanwhile); raises that stop. `save`: the loop's save, after each change of
        the record and each fix step."""
        record, state = self.record, self.state
        if record.phase == "needs_action":  # a person resumed it: a new budget of rounds
            record.phase, record.round, record.seen, record.gave_up = "following", 0, {}, ""
        record.max_rounds = self.settings.max_rounds
        forge = self.forge(record.url)
        if not record.account:
            record.account = self.ask(forge.account)
        save()
        if (open_round := record.open_round()) is not None:
            self.finish(open_round, forge, save)
        while True:
            self.guard.check_hook(state)
            decision = self.look(forge, save)
            if isinstance(decision, Green) and (changed := record.exam_changed()):
                why = (
                    f"the pull request is green after {changed}: its checks pass with the tests or CI "
                    "a fix changed, which a person must judge (it stays a draft)"
                )
                record.phase, record.checks, record.gave_up = "needs_action", "green", why
                raise PullRequestNeedsPerson(why)
            if isinstance(decision, Green):
                record.phase, record.checks, record.waiting_for = "green", "green", 0
                self.bus.emit(EventType.FOLLOW, action="green", url=record.url, rounds=record.round)
                rounds = f"{record.round} fix round{'' if record.round == 1 else 's'}"
                raise PullRequestGreen(f"the pull request is green after {rounds}")
            if isinstance(decision, GiveUp):
                record.phase, record.gave_up, record.last_log = "needs_action", decision.why, decision.log
                raise PullRequestNeedsPerson(decision.why)
            if isinstance(decision, Fix):
                self.finish(self.begin_round(decision, save), forge, save)
                continue
            if self.control.pause(self.settings.poll_seconds):
                self.guard.check_hook(state)

    def look(self, forge: Forge, save: Save) -> Wait | Fix | Green | GiveUp:
        """One look at the pull request and the decision it leads to; a failing forge tool is
        waited out for a few looks, then needs a person."""
        record = self.record
        try:
            seen = Seen(forge.head(), forge.checks() if self.settings.checks else [])
            if self.settings.reviews:  # who may ask is weighed here, where the comments are read
                asked = asking(forge.comments(), record.account, self.settings.trusted)
                seen.comments = asked.comments
                self.not_acted_on(asked.ignored)
            decision = decide(seen, record, self.settings, self.clock())
            if isinstance(decision, ReadLogs):
                seen.logs = {check.name: log_tail(forge.log(check)) for check in decision.checks}
                decision = decide(seen, record, self.settings, self.clock())
        except ForgeError as exc:
            self.failures += 1
            if self.failures >= FORGE_TRIES:
                raise NeedsPerson(
                    f"{forge.name} failed {self.failures} times in a row following {record.url}: {exc}"
                ) from None
            self.bus.emit(EventType.WARNING, message=f"{forge.name} failed (tried again): {exc}")
            return Wait(record.waiting_for, str(exc))
        self.failures = 0
        assert not isinstance(decision, ReadLogs)
        if not isinstance(decision, Wait) and seen.head == record.head:  # the checks of akira's head ran
            ran = [check.name for check in seen.checks if check.state in ("pass", "fail")]
            record.ran = [*record.ran, *(name for name in ran if name not in record.ran)]
        before = (record.checks, record.waiting_for)
        waiting = (
            isinstance(decision, Wait) or bool(seen.pending()) or (self.settings.checks and not seen.checks)
        )
        red = bool(seen.failed()) or (isinstance(decision, GiveUp) and decision.red)
        record.checks = "red" if red else "pending" if waiting else "green"
        record.waiting_for = decision.waiting_for if isinstance(decision, Wait) else len(seen.pending())
        if (record.checks, record.waiting_for) != before:
            self.bus.emit(
                EventType.FOLLOW, action="checks", checks=record.checks, waiting_for=record.waiting_for
            )
            save()
        return decision

    def not_acted_on(self, lines: list[str]) -> None:
        record = self.record
        new = [line for line in lines if line not in record.not_acted_on]
        if new:
            record.not_acted_on = [*record.not_acted_on, *new][-KEEP_IGNORED:]
            for line in new:
                self.bus.emit(EventType.FOLLOW, action="not_acted_on", why=line)

    def ask(self, question: Callable[[], str]) -> str:
        try:
            return question()
        except ForgeError as exc:
            raise NeedsPerson(f"cannot follow {self.record.url}: {exc}") from None

    def begin_round(self, fix: Fix, save: Save) -> Round:
        """The round's items, recorded before any of its work starts."""
        record = self.record
        record.round += 1
        record.seen = dict(fix.signatures)
        items = [self.check_item(record, check.name, fix) for check in fix.checks]
        items += [review_item(record, comment) for comment in fix.comments]
        record.rounds = [*record.rounds, Round(number=len(record.rounds) + 1, items=items)][-KEEP_ROUNDS:]
        self.bus.emit(EventType.FOLLOW, action="round", round=record.round, steps=[i.step_id for i in items])
        save()
        return record.rounds[-1]

    @staticmethod
    def check_item(record: PullRequestWatch, name: str, fix: Fix) -> FixItem:
        log = fix.logs.get(name, "")
        return FixItem(
            step_id=record.next_id("ci"),
            kind="ci",
            name=name,
            what=first_failing_line(log),
            signature=fix.signatures.get(name, ""),
            context=log,
        )

    def finish(self, round_: Round, forge: Forge, save: Save) -> None:
        """Works the round's open steps, pushes once they all passed, answers the comments."""
        task = self.task()
        for item in round_.items:
            if item.step_id not in self.state.completed_ids():
                self.work(item, task, save)
        self.pushed()
        record = self.record
        record.head, record.pushed_at, round_.pushed = self.commits.run.plumb.head()[0], utcnow(), True
        self.bus.emit(EventType.FOLLOW, action="pushed", round=round_.number, head=record.head[:12])
        for item in round_.items:
            if item.kind == "review" and not item.answered:
                self.answer(item, forge)
            item.context = ""  # the log or comment was the work's; the report keeps one line
        record.checks, record.waiting_for = "pending", 0
        save()

    def work(self, item: FixItem, task: TaskFile, save: Save) -> None:
        """One fix step, attempt after attempt as the loop works a step, until it completes (a
        persistent failure or an exhausted step stops the loop as any step's would)."""
        state = self.state
        step = fix_step(item)
        self.commits.messages[step.id] = message(item)
        while True:
            self.guard.check_hook(state)
            self.guard.check_limits(state)
            self.iteration.begin(step, save, guidance=False)
            try:
                attempt = self.engine.attempt(step, task)
                self.control.account()
            except AkiraError as exc:
                raise NeedsPerson(str(exc)) from None
            if attempt.outcome == "success":
                break
        item.commit = attempt.commit
        item.exam_changed = attempt.exam.changed if attempt.exam is not None else []
        item.summary = summary_of(state.context.last_response, step.title)
        if attempt.commit:  # the reply is akira's own account: what the commit changed and what passed
            item.files = self.commits.run.git.out(
                "diff-tree", "--no-commit-id", "--name-only", "-r", attempt.commit, check=False
            ).splitlines()
        checks = attempt.evaluation.checks if attempt.evaluation else []
        item.passed = [check.name for check in checks if check.passed and check.name != "agent result"]
        self.iteration.complete(step, attempt, tally=False)
        self.bus.emit(EventType.STEP_COMPLETED, step.id, attempts=attempt.number, commit=attempt.commit)
        save()

    def pushed(self) -> None:
        """The branch is on the remote as it is here (pushed after each commit; once more now)."""
        run, record = self.commits.run, self.state.git
        remote = run.settings.push
        if record is None or not remote:
            raise NeedsPerson("following a pull request needs git.push: the remote its branch is pushed to")
        local = run.plumb.head()[0]
        for _ in range(2):
            said = run.git.out("ls-remote", remote, f"refs/heads/{record.branch}", check=False)
            if said.split()[:1] == [local]:
                return
            self.commits.push()
        push = run.shown("push", remote, f"{record.branch}:{record.branch}")
        raise NeedsPerson(f"the fixes were not pushed to {remote}; push them with '{push}', then resume")

    def answer(self, item: FixItem, forge: Forge) -> None:
        comment = Comment(item.name, item.reply_to, item.on, ())
        try:
            forge.reply(comment, reply_text(item))
        except ForgeError as exc:
            self.bus.emit(EventType.WARNING, message=f"the reply to {item.author} was not posted: {exc}")
            return
        item.answered = True
        self.record.answered = [*self.record.answered, item.name][-200:]
        self.bus.emit(EventType.FOLLOW, item.step_id, action="replied", thread=item.reply_to)

    def task(self) -> TaskFile:
        from akira_cli.tasks.parser import parse_task_text
        from akira_cli.tasks.reading import TaskFileError, read_task_bytes

        path = Path(self.state.task_path)
        try:
            return parse_task_text(read_task_bytes(path), path)
        except (OSError, TaskFileError):
            return TaskFile(path=path, steps=[])


def fix_prompts(steps: StepPrompts, state: LoopState) -> FollowPrompts:
    """The prompts of a run that may follow its pull request: a fix step's are its item's."""
    return FollowPrompts(
        steps,
        lambda step_id: item_for(state, step_id),
        lambda: state.pull_request.url if state.pull_request is not None else "",
    )


def item_for(state: LoopState, step_id: str) -> FixItem | None:
    record = state.pull_request
    for round_ in reversed(record.rounds if record else []):
        for item in round_.items:
            if item.step_id == step_id:
                return item
    return None


def start_watch(state: LoopState, max_rounds: int, head: str) -> PullRequestWatch:
    """The record of a pull request followed from now on (what an earlier follow answered and
    fixed is kept: no comment is answered twice, no step id given twice)."""
    assert state.git is not None and state.git.pr_url
    earlier = state.pull_request
    kept = (
        earlier.model_dump(include={"answered", "rounds", "numbers", "account", "not_acted_on"})
        if earlier
        else {}
    )
    return PullRequestWatch(
        url=state.git.pr_url, max_rounds=max_rounds, head=head, pushed_at=utcnow(), **kept
    )


def review_item(record: PullRequestWatch, comment: Comment) -> FixItem:
    """A trusted request, whole (`trust.asking` left only its trusted people's comments)."""
    first = redact(comment.notes[-1].body if comment.notes else "")
    return FixItem(
        step_id=record.next_id("review"),
        kind="review",
        name=comment.key,
        what=(first.strip().splitlines() or [""])[0][:160],
        context=redact(comment.text())[:8000],
        author=comment.author,
        edited=comment.edited,
        where=comment.where,
        reply_to=comment.reply_to,
        on=comment.kind,
    )


def fix_step(item: FixItem) -> Step:
    """The step the engine works: the check's name or the comment's place as its text, no
    directive (a comment's `Run:` or `Verify:` is quoted data in the prompt, never parsed)."""
    if item.kind == "ci":
        title = f"Make the check `{item.name}` pass"
    else:
        title = f"Address {item.author}'s review comment" + (f" on {item.where}" if item.where else "")
    return Step(id=item.step_id, title=title, box=" ", line=0, box_offset=0)


def message(item: FixItem) -> Message:
    if item.kind == "ci":
        return Message(f"fix(ci): {item.name}"[:72], {"Akira-Check": item.name[:200]})
    return Message(
        f"fix(review): {item.where or 'the review'}"[:72],
        {"Akira-Review-Thread": item.reply_to, "Akira-Requested-By": item.author[:200]},
    )
