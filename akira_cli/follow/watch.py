"""The watching as a small state machine: from one look at the pull request (`Seen`), the
record of the rounds so far and the settings, `decide` says what happens next, as data.

- `Wait`: checks are still pending (or the forge does not show akira's push yet);
- `ReadLogs`: checks failed, and their logs are needed to go on;
- `Fix`: a round fixes the failed checks and answers the comments;
- `Green`: every check passed (each that ran on an earlier head among them) and every comment is
  answered;
- `GiveUp`: a person is needed (the same failure twice, the rounds spent, the wait too long).

It reads no clock and runs nothing: the follower looks, asks, and carries the answer out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from akira_cli.follow.forge import Check, Comment, Seen
from akira_cli.follow.signature import first_failing_line, signature
from akira_cli.sections import FollowSettings
from akira_cli.state.follow import PullRequestWatch
from akira_cli.words import counted


@dataclass(frozen=True)
class Wait:
    waiting_for: int
    why: str


@dataclass(frozen=True)
class ReadLogs:
    checks: list[Check]


@dataclass(frozen=True)
class Fix:
    checks: list[Check] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    signatures: dict[str, str] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Green:
    pass


@dataclass(frozen=True)
class GiveUp:
    why: str
    log: str = ""
    """The failing log the escalation quotes."""
    red: bool = False
    """The checks are not green though none failed (one no longer runs, or was cancelled)."""


Decision = Wait | ReadLogs | Fix | Green | GiveUp


def decide(seen: Seen, record: PullRequestWatch, settings: FollowSettings, now: datetime) -> Decision:
    comments = [c for c in seen.comments if c.key not in record.answered] if settings.reviews else []
    failed: list[Check] = []
    if settings.checks:
        waiting = waiting_for(seen, record, settings, now)
        if waiting is not None:
            return waiting
        if (gone := no_longer_passing(seen, record)) is not None:
            return gone
        failed = seen.failed()
    if not failed and not comments:
        return Green()
    missing = [check for check in failed if check.name not in seen.logs]
    if missing:
        return ReadLogs(missing)
    signatures = {check.name: signature(check.name, seen.logs[check.name]) for check in failed}
    for check in failed:
        if record.seen.get(check.name) == signatures[check.name]:
            line = first_failing_line(seen.logs[check.name])
            why = f"the check {check.name} failed the same way in two rounds: {line}"
            return GiveUp(why, seen.logs[check.name])
    if record.round >= record.max_rounds:
        still = ", ".join([check.name for check in failed] + [f"a comment by {c.author}" for c in comments])
        log = seen.logs[failed[0].name] if failed else ""
        spent = counted(record.max_rounds, "fix round")
        return GiveUp(f"{spent} spent and the pull request is not green ({still})", log)
    return Fix(failed, comments, signatures, {check.name: seen.logs[check.name] for check in failed})


def no_longer_passing(seen: Seen, record: PullRequestWatch) -> GiveUp | None:
    """Green is every check that ran before, passed on this head: one that went missing, was
    skipped or neutral, or was cancelled, is not a pass."""
    states = {check.name: check.state for check in seen.checks}
    for name in record.ran:
        state = states.get(name)
        if state not in ("pass", "fail"):
            how = (
                "no longer runs" if state is None else "was cancelled" if state == "cancel" else "was skipped"
            )
            why = f"check {name} {how} after round {record.round}: a check that does not run is not a pass"
            return GiveUp(why, red=True)
    cancelled = [name for name, state in states.items() if state == "cancel"]
    if cancelled:
        return GiveUp(
            f"check {cancelled[0]} was cancelled: a cancelled check is not a pass; run it again", red=True
        )
    return None


def waiting_for(
    seen: Seen, record: PullRequestWatch, settings: FollowSettings, now: datetime
) -> Wait | GiveUp | None:
    """A wait while checks are pending, or the give-up once `max_wait_minutes` has passed since
    the last push; None when every check of akira's head has finished."""
    pending = seen.pending()
    if record.head and seen.head != record.head:
        why = f"the forge shows {seen.head[:8] or 'no head'}, not akira's push {record.head[:8]}"
        pending_count = max(len(pending), 1)
    elif not seen.checks:
        why, pending_count = "no check reported yet", 1
    elif pending:
        why, pending_count = f"waiting for {counted(len(pending), 'check')}", len(pending)
    else:
        return None
    since = minutes_since(record.pushed_at, now)
    if since is not None and since >= settings.max_wait_minutes:
        names = ", ".join(check.name for check in pending) or "none reported"
        unit = "minute" if settings.max_wait_minutes == 1 else "minutes"
        return GiveUp(
            f"checks still pending {settings.max_wait_minutes:g} {unit} after the last push "
            f"({why}; pending: {names}); if the repository runs no CI, set follow.checks: false"
        )
    return Wait(pending_count, why)


def minutes_since(stamp: str, now: datetime) -> float | None:
    if not stamp:
        return None
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (now - then).total_seconds() / 60
