"""How long to wait before the next try: capped exponential backoff with equal jitter.

The delay doubles with each try (`base * 2**attempt`) up to `cap`; the wait is half of it fixed
and half random, a value in [delay/2, delay]. The fixed half keeps the waits growing (a failing
server is not hit again at once), the random half keeps clients that failed together apart.
"""

from __future__ import annotations

import random

_MOST_DOUBLINGS = 64
"""Past this the delay is the cap anyway; it keeps `2**attempt` a float that cannot overflow."""


def backoff(attempt: int, *, base: float, cap: float, exponential: bool = True) -> float:
    """The wait before try `attempt + 1` (`attempt` counts from 0): in [delay/2, delay], where
    delay is `base * 2**attempt` (`base` alone when not `exponential`), at most `cap`."""
    doublings = min(max(attempt, 0), _MOST_DOUBLINGS) if exponential else 0
    delay = min(cap, base * 2.0**doublings)
    return delay / 2 + random.random() * delay / 2
