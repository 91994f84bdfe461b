"""Provider faults are not failures (no attempt is spent on them): an agent CLI whose model provider is
overloaded or failing (429, 5xx, 529) is run again after a capped exponential backoff, each
wait logged as a `transient_retry` event. No iteration, failure or reflection is spent; a stop
hook ends the wait; past `agent.max_transient_wait_seconds` in a row a person is asked. A
refused key (401, 403) is never retried: one line saying so, and `needs_action`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from akira_cli.agents.base import ProviderFault
from akira_cli.backoff import Retries
from akira_cli.errors import NeedsPerson, StopRequested
from akira_cli.events import EventBus, EventType

FIRST_WAIT = 1.0
"""The first wait, doubling each time up to `LONGEST_WAIT`."""
LONGEST_WAIT = 300.0


@dataclass
class FaultWaiter:
    """One attempt's waits: made afresh for each attempt, so the waits count one outage."""

    bus: EventBus
    cap_seconds: float
    pause: Callable[[float], bool]
    """Waits up to N seconds; True as soon as a stop is wanted."""
    retries: Retries = field(init=False)

    def __post_init__(self) -> None:
        self.retries = Retries(self.pause, FIRST_WAIT, LONGEST_WAIT, most_seconds=self.cap_seconds)

    def wait_out(self, step_id: str, fault: ProviderFault) -> None:
        """Waits before the agent runs again; raises to ask a person or to honour a stop hook."""
        if fault.auth:
            raise NeedsPerson(fault.message)
        wait = self.retries.delay()
        if self.retries.too_long(wait):
            raise NeedsPerson(
                f"the agent's model provider kept failing for {self.retries.waited:.0f}s "
                f"({fault.message[:160]}); gave up at agent.max_transient_wait_seconds "
                f"({self.cap_seconds:.0f}s): resume when the provider is back, or raise that setting"
            )
        self.bus.emit(
            EventType.TRANSIENT_RETRY,
            step_id,
            mechanism="provider_backoff",
            retry=self.retries.count(),
            wait_seconds=round(wait, 3),
            status=fault.status,
            error=fault.message[:300],
        )
        if self.retries.wait(wait):
            raise StopRequested(
                f"a stop hook ended the wait for the agent's model provider ({fault.message[:160]})"
            )
