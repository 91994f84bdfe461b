"""Usage limits are not failures: an agent CLI whose plan limit is reached is waited
out. No iteration, failure or reflection is spent; the state records `waiting_until` (so that
`status` shows it and a resume waits out the rest); a stop hook ends the wait at once; past
`agent.max_limit_wait_seconds` a person is asked, with the reset time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from akira_cli.agents.base import UsageLimit
from akira_cli.backoff import Retries
from akira_cli.errors import NeedsPerson, StopRequested
from akira_cli.event_payloads.run import UsageLimitWait
from akira_cli.events import EventBus
from akira_cli.state.models import LoopState

FIRST_BACKOFF = 300.0
"""Without a reset time in the message: up to 5 minutes, then doubling, with equal jitter
(`backoff`): the machines of a fleet that share an account and met the limit together do not
all try again at the same moment."""


def now() -> datetime:
    return datetime.now(UTC)


def stamp(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class LimitWaiter:
    state: LoopState
    bus: EventBus
    cap_seconds: float
    save: Callable[[], None]
    pause: Callable[[float], bool]
    """Waits up to N seconds; True as soon as a stop is wanted."""
    retries: Retries = field(init=False)
    """The run's limit waits: without a reset time each waits longer than the one before."""

    def __post_init__(self) -> None:
        cap = max(FIRST_BACKOFF, self.cap_seconds)
        self.retries = Retries(self.pause, FIRST_BACKOFF, cap, most_seconds=self.cap_seconds)

    def wait_out(self, step_id: str, limit: UsageLimit, *, record: bool = True) -> None:
        """Waits until the limit resets; raises to ask a person or to honour a stop hook.
        `record`: the wait goes into the state (`waiting_until`, saved), which only the loop's
        thread may write; a parallel step's reviewer waits without it."""
        current = now()
        reset = limit.reset_at
        wait = self.retries.delay(max(1.0, (reset - current).total_seconds()) if reset is not None else None)
        until = stamp(current + timedelta(seconds=wait))
        if self.retries.too_long(wait):
            raise NeedsPerson(
                f"the agent's usage limit is reached ({limit.message[:160]}); it resets at "
                f"{until}, later than agent.max_limit_wait_seconds ({self.cap_seconds:.0f}s) "
                "allows: resume after that time"
            )
        self.retries.count()
        if record:
            self.state.waiting_until = until
            self.save()
        self.bus.send(UsageLimitWait(message=limit.message[:300], waiting_until=until, seconds=wait), step_id)
        self.held(self.retries.wait(wait), until, record)

    def held(self, stopped: bool, until: str, record: bool = True) -> None:
        """After a wait: a stop hook ended it (`stopped`), and `waiting_until` stays recorded so
        that the resume waits out the rest (the limit has not gone away); else it is over."""
        if stopped:
            if record:
                self.save()
            raise StopRequested(
                f"a stop hook ended the wait for a usage limit (it resets at {until}; "
                "the resume waits out the rest)"
            )
        if record:
            self.state.waiting_until = None

    def resume_wait(self) -> None:
        """After a restart: wait out what is left of a recorded wait (it counts in no cap)."""
        if not self.state.waiting_until:
            return
        until = datetime.fromisoformat(self.state.waiting_until.replace("Z", "+00:00"))
        left = (until - now()).total_seconds()
        if left > 0:
            self.bus.send(
                UsageLimitWait(
                    message="waiting out the rest of a usage limit",
                    waiting_until=self.state.waiting_until,
                    seconds=left,
                )
            )
            self.held(self.pause(left), self.state.waiting_until)
        self.state.waiting_until = None
