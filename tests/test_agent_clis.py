"""Agent CLI presets (SPEC 7) against fake CLIs put first on PATH: real subprocesses that print
exactly the documented formats (Claude Code headless JSON, `codex exec --json` events, Gemini
CLI JSON, aider's cost lines), their failures and their usage-limit messages."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import Akira

from akira_cli.agents.presets import limits
from akira_cli.events import EventType

FAKE = """\
#!{python}
import fcntl, json, os, pathlib, sys, time
prompt = sys.stdin.read()
script = pathlib.Path(os.environ["FAKE_SCRIPT"])
with open(script, "r+") as held:  # parallel steps call at once: one takes each mode
    fcntl.flock(held, fcntl.LOCK_EX)
    modes = json.loads(held.read())
    mode = modes.pop(0) if len(modes) > 1 else modes[0]
    held.seek(0)
    held.truncate()
    held.write(json.dumps(modes))
step = os.environ.get("AKIRA_STEP_ID", "x")
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps({{"cli": "{name}", "argv": sys.argv[1:], "mode": mode, "step": step,
        "prompt": prompt[:60]}}) + "\\n")
if mode in ("work", "error"):
    pathlib.Path(f"step_{{step}}.txt").write_text("done")
{body}
"""
CLAUDE = """\
if mode == "limit":
    print("Claude AI usage limit reached|" + str(int(time.time()) + 2)); sys.exit(1)
if mode == "limit_far":
    print("You've hit your limit · resets 3am (UTC)"); sys.exit(1)
print(json.dumps({"type": "result", "subtype": "success" if mode != "error" else "error_during_execution",
    "is_error": mode == "error", "result": "Refusing: tests are red" if mode == "error" else "Done.",
    "session_id": "sess-" + step, "num_turns": 3, "total_cost_usd": 0.3,
    "usage": {"input_tokens": 100, "output_tokens": 50, "cache_read_input_tokens": 1000,
              "cache_creation_input_tokens": 200}}))
"""
CODEX = """\
print(json.dumps({"type": "thread.started", "thread_id": "th-" + step}))
print(json.dumps({"type": "turn.started"}))
if mode == "error":
    print(json.dumps({"type": "turn.failed", "error": {"message": "stream disconnected"}})); sys.exit(0)
if mode == "limit":
    print(json.dumps({"type": "error", "message": "You've hit your usage limit. Try again in 2 seconds."}))
    sys.exit(1)
print(json.dumps({"type": "item.completed", "item": {"id": "i1", "type": "agent_message", "text": "Done."}}))
print(json.dumps({"type": "turn.completed", "usage": {"input_tokens": 2000, "cached_input_tokens": 1500,
    "output_tokens": 300}}))
"""
GEMINI = """\
out = {"response": "Done.", "stats": {"models": {"gemini-2.5-pro": {"tokens": {"prompt": 400, "candidates": 80,
    "total": 480, "cached": 100}}}}}
if mode == "error":
    out = {"error": {"type": "ApiError", "message": "quota project not set", "code": 1}}
print(json.dumps(out))
"""
AIDER = """\
print("Applied edit to step file")
print("Tokens: 2.5k sent, 1.2k cache hit, 512 received. Cost: $0.02 message, $0.05 session.")
"""
BODIES = {"claude": CLAUDE, "codex": CODEX, "gemini": GEMINI, "aider": AIDER}


@pytest.fixture
def fake_cli(akira: Akira, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in BODIES.items():
        path = bin_dir / name
        path.write_text(FAKE.format(python=sys.executable, name=name, body=body))
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "calls.jsonl"))

    def script(*modes: str) -> list[dict[str, object]]:
        path = tmp_path / "script.json"
        path.write_text(json.dumps(list(modes)))
        monkeypatch.setenv("FAKE_SCRIPT", str(path))
        log = tmp_path / "calls.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

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
    assert row["tokens"] == 2 * (1300 + 50) and row["cached_tokens"] == 2400 and row["cost_usd"] == 0.6
    report = next((akira.root / "Logs" / "completion_reports").glob("*.md")).read_text()
    assert "**Tokens**: 2700" in report and "**Cost (USD)**: 0.6000" in report
    calls = fake_cli("work")
    assert calls[0]["argv"] == ["-p", "--output-format", "json", "--permission-mode", "acceptEdits"]


def test_claude_is_error_fails_the_attempt_even_with_exit_0(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("error", "work")
    assert akira.cli("loop", "start", "--agent", "claude", "--task", str(two_steps(akira))).code == 0
    first = akira.state().steps["1"].attempts[0]
    assert first.outcome == "failure" and "claude reported a failure: Refusing: tests are red" in first.error


def test_the_cost_budget_stops_a_claude_run(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("work")
    akira.write_config("budget:\n  max_cost_usd: 0.5\n")
    task = akira.write_task("cli", "".join(f"- [ ] {n}. Step {n}\n" for n in range(1, 5)))
    result = akira.cli("loop", "start", "--agent", "claude", "--task", str(task))
    assert result.code == 4 and "cost budget of $0.50 used up" in result.err
    assert akira.state().status == "needs_action" and len(akira.state().completed_steps) == 2


@pytest.mark.timeout(60)
def test_a_usage_limit_is_waited_out_and_costs_nothing(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("limit", "work")
    started = time.monotonic()
    result = akira.cli("loop", "start", "--agent", "claude", "--task", str(two_steps(akira)))
    assert result.code == 0, result.err
    assert time.monotonic() - started >= 1  # it really waited for the reset
    state = akira.state()
    assert state.total_failures == 0 and state.iteration == 2 and not state.reflections
    assert state.waiting_until is None
    assert [e.type for e in akira.events()].count(EventType.USAGE_LIMIT) == 1


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


def test_a_usage_limit_past_the_cap_asks_a_person(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("limit")
    akira.write_config("agent:\n  max_limit_wait_seconds: 1\n")
    result = akira.cli("loop", "start", "--agent", "claude", "--task", str(two_steps(akira)))
    assert result.code == 4 and "usage limit is reached" in result.err and "resets at" in result.err
    state = akira.state()
    assert state.status == "needs_action" and state.iteration == 0 and state.total_failures == 0


def test_an_agent_that_changes_nothing_stops_with_no_progress(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("lazy")
    task = akira.write_task("cli", "- [ ] 1. Prose step one\n- [ ] 2. Prose step two\n")
    result = akira.cli("loop", "start", "--agent", "claude", "--task", str(task))
    assert result.code == 4 and "no progress" in result.err
    assert akira.state().status == "needs_action" and not akira.state().completed_steps


def test_codex_events_usage_and_turn_failed(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("error", "work")
    akira.write_config("llm:\n  prices:\n    codex: {input_per_1m: 1.0, output_per_1m: 10.0}\n")
    assert akira.cli("loop", "start", "--agent", "codex", "--task", str(two_steps(akira))).code == 0
    state = akira.state()
    assert "stream disconnected" in state.steps["1"].attempts[0].error
    assert state.usage.prompt_tokens == 4000 and state.usage.cached_tokens == 3000
    assert state.usage.cost_usd == pytest.approx(2 * (2000 * 1.0 + 300 * 10.0) / 1e6)


def test_gemini_and_aider_usage(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("work")
    assert akira.cli("loop", "start", "--agent", "gemini", "--task", str(two_steps(akira))).code == 0
    assert (akira.state().usage.prompt_tokens, akira.state().usage.completion_tokens) == (800, 160)
    task = akira.write_task("aid", "- [ ] 1. Edit\n  - Exists: `step_1.txt`\n")
    (akira.root / "step_1.txt").unlink()
    assert akira.cli("loop", "start", "--agent", "aider", "--task", str(task)).code == 0
    usage = akira.state().usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens) == (2500, 512, 1200)
    assert usage.cost_usd == pytest.approx(0.02)


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
    assert limits.detect("429: You exceeded your current quota", now) is not None
    assert limits.detect("All tests pass; 429 lines changed", now) is None


@pytest.mark.parametrize(
    ("cli", "resume"), [("claude", ["--resume", "sess-1"]), ("codex", ["resume", "th-1"])]
)
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


@pytest.mark.timeout(60)
def test_codex_usage_limit_try_again_in(akira: Akira, fake_cli) -> None:  # type: ignore[no-untyped-def]
    fake_cli("limit", "work")
    assert akira.cli("loop", "start", "--agent", "codex", "--task", str(two_steps(akira))).code == 0
    state = akira.state()
    assert state.total_failures == 0 and state.iteration == 2


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
