"""Agent CLI presets against fake CLIs put first on PATH: real subprocesses that replay
what the real CLIs printed (tests/support/cli_replay.py: Claude Code 2.1.197's JSON result, codex 0.169's
`exec --json` events, gemini 0.61's JSON, aider 0.86's cost lines), their failures and their
usage-limit messages."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from akira_cli.agents.presets import limits
from akira_cli.events import EventType
from tests.support.cli_replay import install
from tests.support.workspace import Akira

MODES = {
    "work": "ok+write",
    "lazy": "ok",
    "error": "error+write",
    "limit": "limit_soon",
    "limit_far": "limit_far",
}
"""This file's modes, as cases of the replaying fakes (tests/support/cli_replay.py)."""


@pytest.fixture
def fake_cli(akira: Akira, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    for name, value in install(tmp_path / "bin").items():
        monkeypatch.setenv(name, value)
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("FAKE_LOG", str(log))
    modes = {case: mode for mode, case in MODES.items()}

    def script(*given: str) -> list[dict[str, object]]:
        path = tmp_path / "script.json"
        path.write_text(json.dumps([MODES[mode] for mode in given]))
        monkeypatch.setenv("FAKE_SCRIPT", str(path))
        calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        return [{**call, "mode": modes[call["case"]]} for call in calls]

    return script


def two_steps(akira: Akira) -> Path:
    return akira.write_task("cli", "- [ ] 1. First\n  - Exists: `step_1.txt`\n- [ ] 2. Second\n")


def status(akira: Akira) -> dict[str, object]:
    return json.loads(akira.cli("loop", "status", "--task-id", akira.task_id(), "--json").out)  # type: ignore[no-any-return]


def test_claude_usage_and_dollars_reach_status_and_the_report(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("work")
    result = akira.cli("loop", "start", "--agent", "claude", "--task", str(two_steps(akira)))
    assert result.code == 0, result.err
    row = status(akira)
    # the real capture: 240 in + 100 cache writes + 800 cache reads, 60 out, $0.003725 per run
    assert row["tokens"] == 2 * (1140 + 60) and row["cached_tokens"] == 1800
    assert row["cost_usd"] == round(2 * 0.003725, 4)
    report = next((akira.root / "Logs" / "completion_reports").glob("*.md")).read_text()
    assert "**Tokens**: 2400" in report and f"**Cost (USD)**: {2 * 0.003725:.4f}" in report
    calls = fake_cli("work")
    assert calls[0]["argv"] == ["-p", "--output-format", "json", "--permission-mode", "acceptEdits"]


@pytest.mark.slow
def test_claude_is_error_fails_the_attempt_even_with_exit_0(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("error", "work")
    assert akira.cli("loop", "start", "--agent", "claude", "--task", str(two_steps(akira))).code == 0
    first = akira.state().steps["1"].attempts[0]
    assert first.outcome == "failure" and "claude reported a failure: Refusing: tests are red" in first.error


@pytest.mark.slow
def test_the_cost_budget_stops_a_claude_run(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("work")
    akira.write_config("budget:\n  max_cost_usd: 0.007\n")  # two runs of $0.003725
    task = akira.write_task("cli", "".join(f"- [ ] {n}. Step {n}\n" for n in range(1, 5)))
    result = akira.cli("loop", "start", "--agent", "claude", "--task", str(task))
    # the loop and the LLM client say it in the same words, and a budget under a cent shows as it is
    said = "cost budget of $0.007 used up ($0.0075); raise budget.max_cost_usd to continue"
    assert result.code == 4 and said in result.err, result.err
    assert akira.state().status == "needs_action" and len(akira.state().completed_steps) == 2


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_usage_limit_is_waited_out_and_costs_nothing(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("limit", "work")
    told = akira.root.parent / "notified.txt"
    akira.write_config(f'notify:\n  command: echo "$AKIRA_EVENT|$AKIRA_MESSAGE" >> {told}\n')
    started = time.monotonic()
    result = akira.cli("loop", "start", "--agent", "claude", "--task", str(two_steps(akira)))
    assert result.code == 0, result.err
    assert time.monotonic() - started >= 1  # it really waited for the reset
    state = akira.state()
    assert state.total_failures == 0 and state.iteration == 2 and not state.reflections
    assert state.waiting_until is None
    [limit] = [e for e in akira.events() if e.type == EventType.USAGE_LIMIT]
    akira.wait_for(lambda: "usage_limit|" in told.read_text(), 30, "the notification")
    [line] = [row for row in told.read_text().splitlines() if row.startswith("usage_limit|")]
    assert line == f"usage_limit|waiting for a usage limit until {limit.data['waiting_until']}", line


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_usage_limit_in_a_parallel_wave_is_waited_out_once_for_the_whole_wave(
    akira: Akira,
    fake_cli,  # type: ignore[no-untyped-def]
) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=akira.root, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    task = akira.write_task(
        "cli", "- [ ] 1. [P] First\n  - Exists: `step_1.txt`\n- [ ] 2. [P] Second\n  - Exists: `step_2.txt`\n"
    )
    git("add", "-A")
    git("-c", "user.name=P", "-c", "user.email=p@e", "commit", "-q", "-m", "base")
    fake_cli("limit", "work")
    result = akira.cli("loop", "start", "--agent", "claude", "--task", str(task), "--parallel", "2")
    assert result.code == 0, result.err
    state = akira.state()
    assert state.total_failures == 0 and state.iteration == 2 and len(state.completed_steps) == 2
    assert [e.type for e in akira.events()].count(EventType.USAGE_LIMIT) == 1
    assert [call["mode"] for call in fake_cli("work")] == ["limit", "work", "work"]


@pytest.mark.slow
def test_a_usage_limit_past_the_cap_asks_a_person(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("limit")
    akira.write_config("agent:\n  max_limit_wait_seconds: 1\n")
    result = akira.cli("loop", "start", "--agent", "claude", "--task", str(two_steps(akira)))
    assert result.code == 4 and "usage limit is reached" in result.err and "resets at" in result.err
    state = akira.state()
    assert state.status == "needs_action" and state.iteration == 0 and state.total_failures == 0


@pytest.mark.slow
def test_an_agent_that_changes_nothing_stops_with_no_progress(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("lazy")
    task = akira.write_task("cli", "- [ ] 1. Prose step one\n- [ ] 2. Prose step two\n")
    result = akira.cli("loop", "start", "--agent", "claude", "--task", str(task))
    assert result.code == 4 and "no progress" in result.err
    assert akira.state().status == "needs_action" and not akira.state().completed_steps


@pytest.mark.slow
def test_codex_events_usage_and_turn_failed(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("error", "work")
    akira.write_config("llm:\n  prices:\n    codex: {input_per_1m: 1.0, output_per_1m: 10.0}\n")
    assert akira.cli("loop", "start", "--agent", "codex", "--task", str(two_steps(akira))).code == 0
    state = akira.state()
    assert "stream disconnected" in state.steps["1"].attempts[0].error
    assert state.usage.prompt_tokens == 4800 and state.usage.cached_tokens == 3200  # 2 real runs
    assert state.usage.cost_usd == pytest.approx(2 * (2400 * 1.0 + 80 * 10.0) / 1e6)


@pytest.mark.slow
def test_gemini_and_aider_usage(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("work")
    assert akira.cli("loop", "start", "--agent", "gemini", "--task", str(two_steps(akira))).code == 0
    assert (akira.state().usage.prompt_tokens, akira.state().usage.completion_tokens) == (9000, 240)
    task = akira.write_task("aid", "- [ ] 1. Edit\n  - Exists: `step_1.txt`\n")
    (akira.root / "step_1.txt").unlink()
    assert akira.cli("loop", "start", "--agent", "aider", "--task", str(task)).code == 0
    usage = akira.state().usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens) == (2400, 32, 0)
    assert usage.cost_usd == pytest.approx(0.0063)


@pytest.mark.slow
def test_auto_never_starts_a_paid_agent_nobody_configured(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("work")
    result = akira.cli("loop", "start", "--task", str(two_steps(akira)))
    assert result.code == 1
    assert (
        "claude, codex, gemini, aider" in result.err
        and "found on PATH: claude, codex, gemini, aider" in result.err
    )
    assert not fake_cli("work") and not akira.state_files()


def test_limit_messages_and_reset_times() -> None:
    from datetime import datetime, timedelta
    from zoneinfo import ZoneInfo

    now = datetime(2026, 11, 23, 18, 0, tzinfo=ZoneInfo("Europe/Berlin"))
    epoch = limits.detect("Claude AI usage limit reached|1763917200", now)
    assert epoch is not None and epoch.reset_at is not None and epoch.reset_at.timestamp() == 1763917200
    tomorrow = limits.detect("You've hit your limit · resets 5pm", now)
    assert tomorrow is not None and tomorrow.reset_at == now.replace(hour=17) + timedelta(days=1)
    zoned = limits.detect("You've hit your limit · resets 9pm (Europe/Berlin)", now)
    assert zoned is not None and zoned.reset_at == now.replace(hour=21)
    codex = limits.detect("You've hit your usage limit. Try again in 1 hour 5 minutes.", now)
    assert codex is not None and codex.reset_at == now + timedelta(hours=1, minutes=5)
    at = limits.detect("You've hit your usage limit ... try again at 7:30 PM", now)
    assert at is not None and at.reset_at == now.replace(hour=19, minute=30)
    # codex names the day when the reset is not today (CI met it at 22:55 UTC, reset two hours on)
    dated = limits.detect("You\u2019ve hit your usage limit. … or try again at Nov 24th, 2026 12:55 AM.", now)
    assert dated is not None and dated.reset_at == datetime(
        2026, 11, 24, 0, 55, tzinfo=ZoneInfo("Europe/Berlin")
    )
    past = limits.detect("You've hit your usage limit. Try again at Nov 2nd, 2026 3:05 PM.", now)
    assert past is not None and past.reset_at == datetime(
        2026, 11, 2, 15, 5, tzinfo=ZoneInfo("Europe/Berlin")
    )
    no_such_day = limits.detect("You've hit your usage limit, try again at Feb 30th, 2027 1:00 AM", now)
    assert no_such_day is not None and no_such_day.reset_at is None
    assert limits.detect("429: You exceeded your current quota", now) is not None
    assert limits.detect("All tests pass; 429 lines changed", now) is None


@pytest.mark.parametrize(
    ("cli", "resume"),
    [
        ("claude", ["--resume", "7158cb24-7bf7-4185-826d-efccd3540778"]),  # the captures' session ids
        ("codex", ["resume", "01a213df-f707-7321-a7f8-f62f10918361"]),
    ],
)
@pytest.mark.slow
def test_session_continue_resumes_the_step_and_sends_only_what_is_new(
    akira: Akira,
    fake_cli,
    cli: str,
    resume: list[str],  # type: ignore[no-untyped-def]
) -> None:
    fake_cli("lazy", "work")
    akira.write_config("agent:\n  session: continue\n")
    result = akira.cli("loop", "start", "--agent", cli, "--task", str(two_steps(akira)))
    assert result.code == 0, result.err
    first, second, third = fake_cli("work")[:3]
    assert (first["step"], second["step"], third["step"]) == ("1", "1", "2")
    assert not set(resume) & set(first["argv"]) and first["prompt"].startswith("# Task Continuation Context")
    assert resume[-1] in second["argv"] and second["prompt"].startswith("Your last attempt at step 1")
    assert not set(resume) & set(third["argv"])  # a new step starts a new conversation
    assert akira.state().steps["1"].session_id == resume[-1]


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_codex_usage_limit_try_again_in(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("limit", "work")
    assert akira.cli("loop", "start", "--agent", "codex", "--task", str(two_steps(akira))).code == 0
    state = akira.state()
    assert state.total_failures == 0 and state.iteration == 2


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_stop_hook_ends_a_long_wait_at_once_and_the_wait_is_kept(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("limit_far")
    akira.write_config("agent:\n  max_limit_wait_seconds: 90000\n")  # 3am may be most of a day away
    task = two_steps(akira)
    process = akira.spawn("loop", "start", "--agent", "claude", "--task", str(task), "--no-wait")
    akira.wait_for(lambda: akira.state().waiting_until is not None, 30, "the wait to start")
    status = json.loads(akira.cli("loop", "status", "--task-id", akira.task_id(), "--json").out)
    assert status["waiting_until"] == akira.state().waiting_until
    (akira.root / ".hooks" / "stop_autonomous_loop.md").write_text("stop\n")
    _, err = process.communicate(timeout=30)
    assert process.returncode == 3, err
    state = akira.state()
    assert state.status == "paused" and state.waiting_until is not None and state.iteration == 0


def test_a_limit_without_a_reset_time_is_waited_out_doubling_with_jitter_up_to_the_cap() -> None:
    """No reset time in the message: up to 5 minutes, then doubling, each wait in [delay/2,
    delay], so that machines that met the limit together do not all try again at once; a wait
    past `agent.max_limit_wait_seconds` asks a person instead."""
    from akira_cli.agents.base import UsageLimit
    from akira_cli.errors import NeedsPerson
    from akira_cli.events import EventBus
    from akira_cli.loop.usage_limits import LimitWaiter
    from akira_cli.state.models import LoopState

    def waiter(cap: float, held: list[float]) -> LimitWaiter:
        state = LoopState(task_id="task_20261127_120000", task_path="tasks.md")
        return LimitWaiter(
            state, EventBus(state.task_id), cap, lambda: None, lambda s: held.append(s) or False
        )

    limit = UsageLimit(message="usage limit reached")
    runs: list[list[float]] = []
    for _ in range(3):
        held: list[float] = []
        one = waiter(86400.0, held)
        for _ in range(3):
            one.wait_out("1", limit)
        runs.append(held)
    for held in runs:
        assert [150 * 2**n <= seconds <= 300 * 2**n for n, seconds in enumerate(held)] == [True] * 3, held
    assert len({held[0] for held in runs}) == 3  # apart, not in step
    with pytest.raises(NeedsPerson, match=r"later than agent.max_limit_wait_seconds \(100s\)"):
        waiter(100.0, []).wait_out("1", limit)  # even the shortest first wait is past the cap


def test_an_event_payload_missing_a_key_is_refused_where_it_is_sent() -> None:
    from pydantic import ValidationError

    from akira_cli.event_payloads.run import UsageLimitWait
    from akira_cli.events import Event, EventBus

    with pytest.raises(ValidationError):
        UsageLimitWait(message="limit", seconds=1.0)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="until"):
        EventBus("t").emit(EventType.USAGE_LIMIT, message="limit", until="later", seconds=1)
    old = Event(type=EventType.USAGE_LIMIT, data={"message": "limit", "until": "later", "seconds": 1})
    assert old.read(UsageLimitWait) is None  # the old spelling is not read as the new
