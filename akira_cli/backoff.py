"""How long to wait before the next try, and the waits between tries.

`backoff`: capped exponential backoff with equal jitter. The delay doubles with each try
(`base * 2**attempt`) up to `cap`; the wait is half of it fixed and half random, a value in
[delay/2, delay]. The fixed half keeps the waits growing (a failing server is not hit again at
once), the random half keeps clients that failed together apart.

`Retries`: the one wait-and-retry of the loop. A transient failure, a provider fault and a usage
limit each wait through one, and differ only in what they wait for and how long: each wait is
the backoff's (or one the caller knows, a limit's reset time), counted, cut short as soon as a
stop is wanted, and summed against the most the waits in a row may take.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

_MOST_DOUBLINGS = 64
"""Past this the delay is the cap anyway; it keeps `2**attempt` a float that cannot overflow."""


def backoff(attempt: int, *, base: float, cap: float, exponential: bool = True) -> float:
    """The wait before try `attempt + 1` (`attempt` counts from 0): in [delay/2, delay], where
    delay is `base * 2**attempt` (`base` alone when not `exponential`), at most `cap`."""
    doublings = min(max(attempt, 0), _MOST_DOUBLINGS) if exponential else 0
    delay = min(cap, base * 2.0**doublings)
    return delay / 2 + random.random() * delay / 2


@dataclass
class Retries:
    pause: Callable[[float], bool]
    """Waits up to N seconds; True as soon as a stop is wanted (`loop.control.Control.pause`)."""
    base: float
    cap: float
    exponential: bool = True
    most_seconds: float = math.inf
    """The most the waits in a row may take; the caller gives up (asks a person) past it."""
    tries: int = 0
    """The waits begun."""
    waited: float = 0.0
    """The seconds waited out (a wait a stop cut short does not count)."""

    def delay(self, known: float | None = None) -> float:
        """The next wait: `known` (a reset time the caller read), else the backoff's."""
        if known is not None:
            return known
        return backoff(self.tries, base=self.base, cap=self.cap, exponential=self.exponential)

    def too_long(self, seconds: float) -> bool:
        """Whether waiting `seconds` more would take the waits past `most_seconds`."""
        return self.waited + seconds > self.most_seconds

    def count(self) -> int:
        """A wait begins: its number."""
        self.tries += 1
        return self.tries

    def wait(self, seconds: float) -> bool:
        """Waits `seconds`; True when a stop cut the wait short."""
        if self.pause(seconds):
            return True
        self.waited += seconds
        return False
