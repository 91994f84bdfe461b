"""The one backoff, the one wait-and-retry of the loop, the one set of transient failures and the
one budget check that the loop, the agent CLI presets and the LLM client share."""

from __future__ import annotations

import pytest

from akira_cli.agents.presets import faults
from akira_cli.backoff import Retries, backoff
from akira_cli.errors import BudgetExceeded
from akira_cli.failures import is_transient_output
from akira_cli.sections import BudgetSettings
from akira_cli.transient import is_transient, is_transient_status
from akira_cli.usage import Usage, check_budget

SAMPLES = 400


def waits(attempt: int, base: float, cap: float, exponential: bool = True) -> list[float]:
    return [backoff(attempt, base=base, cap=cap, exponential=exponential) for _ in range(SAMPLES)]


@pytest.mark.parametrize(("base", "cap"), [(0.5, 30.0), (1.0, 300.0), (1.0, 30.0)])
def test_each_wait_lies_within_half_the_delay_and_the_delay(base: float, cap: float) -> None:
    for attempt in range(40):
        delay = min(cap, base * 2**attempt)
        got = waits(attempt, base, cap)
        assert all(delay / 2 <= wait <= delay <= cap for wait in got), (attempt, min(got), max(got))
        assert len(set(got)) > 1  # jittered: clients that failed together do not retry together


def test_waits_grow_with_each_attempt_until_the_cap() -> None:
    for attempt in range(5):  # 0.5 s doubles to 16 s: still under the cap of 30 s
        assert max(waits(attempt, 0.5, 30.0)) <= min(waits(attempt + 1, 0.5, 30.0))
    assert min(waits(9, 0.5, 30.0)) >= 15.0  # at the cap, half of it is fixed


def test_a_long_outage_never_overflows_the_wait() -> None:
    assert all(15.0 <= wait <= 30.0 for wait in waits(5000, 0.5, 30.0))


def test_without_doubling_every_wait_is_about_the_base() -> None:
    assert all(0.25 <= wait <= 0.5 for attempt in (0, 3, 60) for wait in waits(attempt, 0.5, 30.0, False))


def test_the_loops_waits_count_each_try_and_sum_only_what_was_waited_out() -> None:
    """A transient failure, a provider fault and a usage limit wait through one `Retries`: each
    wait is counted, a stop cuts it short (and it is not counted as waited), and past
    `most_seconds` of waits in a row the caller gives up; a known wait (a reset time) is used as
    it is."""
    paused: list[float] = []
    stop = False

    def pause(seconds: float) -> bool:
        paused.append(seconds)
        return stop

    retries = Retries(pause, 1.0, 300.0, most_seconds=10.0)
    first = retries.delay()
    assert 0.5 <= first <= 1.0 and retries.count() == 1 and retries.wait(first) is False
    assert retries.waited == first and 1.0 <= retries.delay() <= 2.0  # the next doubles
    assert retries.delay(7.5) == 7.5 and not retries.too_long(9.0 - first) and retries.too_long(10.0)
    stop = True
    assert retries.count() == 2 and retries.wait(3.0) is True
    assert retries.waited == first and paused == [first, 3.0]  # the cut wait is not counted


# every example each of the three former sets matched: the script step's output patterns, the
# agent CLIs' provider faults, the LLM client's HTTP statuses
TRANSIENT_TEXTS = [
    "fcntl: Resource temporarily unavailable",
    "sqlite3.OperationalError: database is locked",
    "E: Could not get lock /var/lib/dpkg/lock-frontend",
    "error: unable to acquire the ref lock",
    "lockfile /tmp/x.lock is busy",
    "lock file held by pid 42",
    "fatal: Unable to create '/repo/.git/index.lock': File exists.",
    "bash: ./run: Text file busy",
    "curl: (7) Failed to connect: Connection refused",
    "read: connection reset by peer",
    "connection timed out after 30s",
    "Temporary failure in name resolution",
    "HTTP error: Too Many Requests",
    "got 429 from upstream",
    "Service Unavailable",
    "502 Bad Gateway",
    "503 service temporarily unavailable",
    "504 gateway timeout",
    "API Error: Repeated 529 Overloaded errors. Please try again.",
    "API Error: Request rejected (429) · Rate limited",
    "rate_limit_error",
    "exceeded retry limit, last status: 429 Too Many Requests",
    "We\u2019re currently experiencing high demand, which may cause temporary errors.",
    "Resource has been exhausted (e.g. check quota).",
    "litellm.RateLimitError: RateLimitError: OpenAIException",
    "litellm.InternalServerError: boom",
    "litellm.ServiceUnavailableError: down",
    "openai.APIConnectionError: Connection error.",
    "500 Internal Server Error",
    "upstream answered with a gateway time-out",
    '{"error": {"code": 500, "message": "boom"}}',
    "status code: 503",
    "HTTP/1.1 502",
]
NOT_TRANSIENT = [
    "SyntaxError: invalid syntax",
    "AssertionError: expected 3, got 4",
    "HTTP 404 Not Found",
    "API Error: 400 invalid_request_error",
    "",
]


@pytest.mark.parametrize("text", TRANSIENT_TEXTS)
def test_every_formerly_matched_failure_is_transient_for_every_reader(text: str) -> None:
    assert is_transient(text)
    assert is_transient_output(f"step output\n{text}\n", 1, [])  # a script step, retried
    fault = faults.classify(text)  # an agent CLI's failed answer, waited out
    assert fault is not None and not fault.auth


@pytest.mark.parametrize("text", NOT_TRANSIENT)
def test_a_plain_failure_is_not_transient(text: str) -> None:
    assert not is_transient(text)
    assert not is_transient_output(text, 1, [])
    assert faults.classify(text) is None


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529, 599])
def test_transient_statuses(status: int) -> None:
    assert is_transient_status(status) and is_transient(f"HTTP {status}")
    assert faults.classify("the request failed", status) is not None


@pytest.mark.parametrize("status", [None, 200, 400, 401, 403, 404, 422])
def test_other_statuses_are_not_transient(status: int | None) -> None:
    assert not is_transient_status(status)


def test_a_refused_key_stays_a_refused_key() -> None:
    fault = faults.classify("Invalid API key · Fix external API key", 401)
    assert fault is not None and fault.auth


def test_the_budget_check_names_the_budget_the_use_and_the_setting() -> None:
    tokens = BudgetSettings(max_tokens_total=20)
    check_budget(tokens, Usage(prompt_tokens=10, completion_tokens=9))
    with pytest.raises(BudgetExceeded) as caught:
        check_budget(tokens, Usage(prompt_tokens=10, completion_tokens=10))
    assert (
        caught.value.message
        == "token budget of 20 used up (20 tokens); raise budget.max_tokens_total to continue"
    )
    cost = BudgetSettings(max_cost_usd=0.004)
    check_budget(cost, Usage(cost_usd=0.0039))
    with pytest.raises(BudgetExceeded) as caught:
        check_budget(cost, Usage(cost_usd=0.00412))
    assert (
        caught.value.message
        == "cost budget of $0.004 used up ($0.0041); raise budget.max_cost_usd to continue"
    )
    assert caught.value.condition == "budget_exceeded"
    check_budget(BudgetSettings(), Usage(prompt_tokens=10**9, cost_usd=10**6))  # no budget, no stop
