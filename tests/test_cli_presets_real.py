"""The agent CLI presets against what the real CLIs print (every preset's reader, aider, and
provider faults waited out): `akira loop start` end to end with fakes that replay the captures
of claude 2.1.197, codex 0.169.0, gemini 0.61.0 and aider 0.86.2 (tests/support/cli_replay.py), and
the presets' readers on the same captures."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from akira_cli.agents.presets import limits
from akira_cli.agents.presets.base import PRESETS
from akira_cli.events import EventType
from akira_cli.sections import AgentSettings, ModelPrice
from tests.support.cli_replay import install, replay
from tests.support.workspace import Akira


@pytest.fixture
def fake(akira: Akira, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    for name, value in install(tmp_path / "bin").items():
        monkeypatch.setenv(name, value)
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("FAKE_LOG", str(log))

    def script(*cases: str) -> None:
        path = tmp_path / "script.json"
        path.write_text(json.dumps(list(cases)))
        monkeypatch.setenv("FAKE_SCRIPT", str(path))

    def calls() -> list[dict[str, object]]:
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    script.calls = calls  # type: ignore[attr-defined]
    return script


CODEX_0_169 = "codex exec --json --sandbox workspace-write --skip-git-repo-check -"
"""The command line 0.169 takes, given as `agent.command`: a test of how codex's output is read
then fails on the old code for that reason alone."""


def two_steps(akira: Akira) -> Path:
    return akira.write_task(
        "cli", "- [ ] 1. First\n  - Exists: `step_1.txt`\n- [ ] 2. Second\n  - Exists: `step_2.txt`\n"
    )


def start(akira: Akira, cli: str, task: Path | None = None, timeout: float = 90):  # type: ignore[no-untyped-def]
    return akira.cli(
        "loop", "start", "--agent", cli, "--task", str(task or two_steps(akira)), timeout=timeout
    )


def provider_waits(akira: Akira) -> list[dict[str, object]]:
    return [
        e.data
        for e in akira.events()
        if e.type == EventType.TRANSIENT_RETRY and e.data.get("mechanism") == "provider_backoff"
    ]


# -- claude --------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_claude_plan_limit_inside_the_json_result_is_a_usage_limit_wait(akira: Akira, fake) -> None:  # type: ignore[no-untyped-def]
    """`You've hit your session limit · resets 8:02pm (UTC)`, is_error, exit 1 (and
    `api_error_status: 429`, which the limit outranks)."""
    fake("plan_limit")
    akira.write_config("agent:\n  max_limit_wait_seconds: 1\n")
    result = start(akira, "claude")
    assert result.code == 4, result.err
    assert "usage limit is reached" in result.err and "T20:02:00Z" in result.err
    assert "You've hit your session limit" in result.err
    state = akira.state()
    assert state.status == "needs_action" and state.total_failures == 0 and state.iteration == 0


def test_claude_plan_limit_wordings_and_their_reset_times() -> None:
    now = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)
    claude = PRESETS["claude"]
    for case in ("plan_limit", "session_limit", "weekly_limit", "opus_limit"):
        out, err, code = replay("claude", case)
        report = claude.read(out, code, err)
        assert report.limit is not None, case
    session = limits.detect("You've hit your session limit · resets 12:42pm (UTC)", now)
    assert session is not None and session.reset_at == now.replace(hour=12, minute=42)
    opus = limits.detect("You’ve hit your Opus limit · resets 3pm (Europe/Berlin)", now)
    assert opus is not None and opus.reset_at == now.replace(hour=14)  # 15:00 in Berlin, winter


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("case", "status"), [("overloaded", 529), ("rate_limited", 429), ("server_error", 500)]
)
@pytest.mark.slow
def test_claude_api_errors_are_waited_out_costing_no_attempt(
    akira: Akira, fake, case: str, status: int
) -> None:  # type: ignore[no-untyped-def]
    """A 529/429/5xx after the CLI's own retries is waited out."""
    fake(case, "ok+write")
    result = start(akira, "claude")
    assert result.code == 0, result.err
    state = akira.state()
    assert state.total_failures == 0 and state.iteration == 2 and not state.reflections
    assert [a.outcome for a in state.steps["1"].attempts] == ["success"]
    waits = provider_waits(akira)
    assert len(waits) == 1 and waits[0]["status"] == status and "API Error" in str(waits[0]["error"])
    assert [c["case"] for c in fake.calls()] == [case, "ok+write", "ok+write"]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_claude_bad_key_is_one_clear_line_and_needs_action(akira: Akira, fake) -> None:  # type: ignore[no-untyped-def]
    fake("bad_key")
    result = start(akira, "claude")
    assert result.code == 4
    assert "the API key is wrong or missing" in result.err and "ANTHROPIC_API_KEY" in result.err
    assert "Traceback" not in result.err
    state = akira.state()
    assert state.status == "needs_action" and state.total_failures == 0
    assert len(fake.calls()) == 1  # never retried


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_claude_permission_denials_are_the_failure_text_and_reach_the_next_prompt(akira: Akira, fake) -> None:  # type: ignore[no-untyped-def]
    """`subtype: success`, the refused write only in `permission_denials`."""
    fake("denied", "ok+write")
    result = start(akira, "claude")
    assert result.code == 0, result.err
    first = akira.state().steps["1"].attempts[0]
    assert first.outcome == "failure" and "Write(step_1.txt)" in first.error and "permission" in first.error
    retry_prompt = str(fake.calls()[1]["prompt"])
    went_wrong = [line for line in retry_prompt.splitlines() if "What went wrong" in line]  # the reflection
    assert went_wrong and "Write(step_1.txt)" in went_wrong[0]


# -- codex ---------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_codex_runs_with_the_flags_0_169_takes(akira: Akira, fake) -> None:  # type: ignore[no-untyped-def]
    """No `--full-auto` (exit 2 on 0.169); `--sandbox workspace-write` instead."""
    fake("ok+write")
    result = start(akira, "codex")
    assert result.code == 0, result.err
    argv = fake.calls()[0]["argv"]
    assert "--full-auto" not in argv and argv[argv.index("--sandbox") + 1] == "workspace-write"
    assert akira.state().total_failures == 0


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_codex_resume_takes_its_sandbox_as_a_config_override(akira: Akira, fake) -> None:  # type: ignore[no-untyped-def]
    """`exec resume` rejects `--sandbox` too."""
    fake("lazy", "resume_ok+write", "ok+write")
    akira.write_config("agent:\n  session: continue\n")
    result = start(akira, "codex")
    assert result.code == 0, result.err
    resumed = fake.calls()[1]["argv"]
    assert resumed[:2] == ["exec", "resume"] and "--sandbox" not in resumed
    assert 'sandbox_mode="workspace-write"' in resumed


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_codex_runs_outside_a_git_repository(akira: Akira, fake) -> None:  # type: ignore[no-untyped-def]
    """A fresh `akira init` workspace is no repository."""
    assert not (akira.root / ".git").exists()
    fake("ok+write")
    assert start(akira, "codex").code == 0
    assert all("--skip-git-repo-check" in call["argv"] for call in fake.calls())  # type: ignore[operator]


def test_codex_exit_code_counts() -> None:
    """The refusals above, with no event on stdout, read as failures."""
    codex = PRESETS["codex"]
    for case in ("full_auto", "not_git"):
        out, err, code = replay("codex", case)
        report = codex.read(out + err, code)  # merged, as the old runner gave it
        assert report.failed and report.error, case
    out, err, code = replay("codex", "full_auto")
    assert "unexpected argument '--full-auto'" in codex.read(out, code, err).error


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_codex_resume_counts_only_what_the_turn_added(akira: Akira, fake) -> None:  # type: ignore[no-untyped-def]
    """`turn.completed.usage` on `exec resume` is the thread's running total."""
    fake("lazy", "resume_ok+write", "ok+write")
    akira.write_config("agent:\n  session: continue\n")
    assert start(akira, "codex").code == 0
    usage = akira.state().usage
    # lazy: 2000 in (0 cached) / 300 out; the resume's total 5000/3500/700 adds 3000/3500/400;
    # step 2's fresh thread (the real capture): 2400/1600/80.
    assert (usage.prompt_tokens, usage.completion_tokens) == (2000 + 3000 + 2400, 300 + 400 + 80)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_codex_usage_limit_with_a_curly_apostrophe_is_a_wait(akira: Akira, fake) -> None:  # type: ignore[no-untyped-def]
    """`You’ve hit your usage limit … try again at 8:03 PM.` (U+2019)."""
    fake("usage_limit")
    akira.write_config("agent:\n  max_limit_wait_seconds: 1\n")
    result = start(akira, "codex")
    assert result.code == 4 and "usage limit is reached" in result.err, result.err
    state = akira.state()
    assert state.total_failures == 0 and state.iteration == 0
    now = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)
    found = limits.detect(replay("codex", "usage_limit")[0], now)
    assert found is not None and found.reset_at == now.replace(hour=20, minute=3)


def test_codex_reader_on_the_captures() -> None:
    """The usage limit, a reconnect and the request count at the reader, with stdout and stderr merged as the old runner gave them."""
    codex = PRESETS["codex"]
    out, err, code = replay("codex", "recovered")
    assert not codex.read(out + err, code).failed  # a reconnect is no failure
    out, err, code = replay("codex", "ok")
    assert codex.read(out + err, code).usage.calls == 2  # a file write, then the answer
    out, err, code = replay("codex", "usage_limit")
    assert limits.detect(out) is not None  # the limit's U+2019 apostrophe
    assert "\u2019" in out


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_codex_recovered_reconnect_is_a_success(akira: Akira, fake) -> None:  # type: ignore[no-untyped-def]
    """`Reconnecting... 1/5`, then `turn.completed` and exit 0: one attempt, paid once."""
    fake("recovered+write")
    akira.write_config(f"agent:\n  command: {CODEX_0_169}\n")
    assert start(akira, "codex").code == 0
    state = akira.state()
    assert state.total_failures == 0 and [a.outcome for a in state.steps["1"].attempts] == ["success"]
    assert len(fake.calls()) == 2


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_codex_calls_per_model_request_and_cached_input_priced_as_cached(akira: Akira, fake) -> None:  # type: ignore[no-untyped-def]
    """A file write and a final answer are 2 model requests; cached input is cheaper."""
    fake("ok+write")
    akira.write_config(
        f"agent:\n  command: {CODEX_0_169}\n"
        "llm:\n  prices:\n    codex: {input_per_1m: 1.0, cached_input_per_1m: 0.1, output_per_1m: 10.0}\n"
    )
    assert start(akira, "codex").code == 0
    usage = akira.state().usage
    assert usage.calls == 4 and usage.cached_tokens == 3200
    assert usage.cost_usd == pytest.approx(2 * (800 * 1.0 + 1600 * 0.1 + 80 * 10.0) / 1e6)


def test_a_cached_price_prices_the_cached_part_of_the_input() -> None:
    price = ModelPrice(input_per_1m=2.0, output_per_1m=8.0, cached_input_per_1m=0.5)
    assert price.cost(1_000_000, 0, 600_000) == pytest.approx(0.4 * 2.0 + 0.6 * 0.5)
    assert ModelPrice(input_per_1m=2.0).cost(1_000_000, 0, 600_000) == pytest.approx(2.0)


# -- gemini --------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize(("mode", "flag"), [(None, "auto_edit"), ("bypass", "yolo")])
def test_gemini_gets_write_tools(
    akira: Akira,
    fake,  # type: ignore[no-untyped-def]
    mode: str | None,
    flag: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Headless gemini offers no write tools without an approval mode."""
    monkeypatch.setenv("GEMINI_CLI_TRUST_WORKSPACE", "true")  # the untrusted folder apart
    fake("ok+write")
    if mode:
        akira.write_config(f"agent:\n  permission_mode: {mode}\n")
    result = start(akira, "gemini")
    assert result.code == 0, result.err
    argv = fake.calls()[0]["argv"]
    assert argv[argv.index("--approval-mode") + 1] == flag  # type: ignore[union-attr]
    assert akira.state().total_failures == 0


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_gemini_trusts_the_workspace_folder(akira: Akira, fake) -> None:  # type: ignore[no-untyped-def]
    """In a folder it does not trust gemini exits 55."""
    fake("ok+write")
    akira.write_config("agent:\n  extra_args: [--approval-mode, auto_edit]\n")  # no write tools apart
    result = start(akira, "gemini")
    assert result.code == 0, result.err
    assert "--skip-trust" in fake.calls()[0]["argv"]  # type: ignore[operator]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_gemini_stdout_and_stderr_are_read_apart(akira: Akira, fake) -> None:  # type: ignore[no-untyped-def]
    """A run that recovered from a 500 has stack traces and the error's JSON on
    stderr and its answer on stdout; the session id is read; calls from `api.totalRequests`."""
    fake("recovered+write")
    akira.write_config("agent:\n  extra_args: [--approval-mode, auto_edit, --skip-trust]\n")  # 11, 12 apart
    assert start(akira, "gemini").code == 0
    state = akira.state()
    assert state.total_failures == 0
    # two models (a router and the main one): 1500 + 3000 in, 40 + 80 out, 600 + 1200 cached
    usage = state.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens) == (9000, 240, 3600)
    assert usage.calls == 8  # 1 + 3 requests (one of them failed with a 500) per run
    assert state.steps["1"].session_id == "1c085cd7-0bf5-4da0-b0b2-a39e46df1aa3"
    assert state.context.last_response.strip() == "Done: wrote hello.txt."


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_gemini_exit_code_is_the_http_status_mod_256(akira: Akira, fake) -> None:  # type: ignore[no-untyped-def]
    """529 exits 17 with the error on stderr after stack traces: waited out; a 401 (exit
    145) asks a person."""
    out, err, code = replay("gemini", "api_529")
    assert code == 17 and PRESETS["gemini"].read(out, code, err).fault is not None
    fake("api_529", "ok+write")  # no real 529 capture of gemini yet
    assert start(akira, "gemini").code == 0
    assert akira.state().total_failures == 0 and provider_waits(akira)[0]["status"] == 529
    fake("bad_key")  # the Gemini API answers a bad key with 400 API_KEY_INVALID: exit 144
    task = akira.write_task("again", "- [ ] 1. Third\n  - Exists: `step_3.txt`\n")
    result = start(akira, "gemini", task)
    assert (
        result.code == 4
        and "the API key is wrong or missing" in result.err
        and "GEMINI_API_KEY" in result.err
    )


# -- aider ---------------------------------------------------------------------------------------


def test_aider_reads_its_lines() -> None:
    aider = PRESETS["aider"]
    out, err, code = replay("aider", "ok")  # diff edit format, a Tokens line, exit 0
    report = aider.read(out, code, err)
    assert not report.failed and report.usage.calls == 1 and report.usage.cost_usd == pytest.approx(0.0063)
    assert (report.usage.prompt_tokens, report.usage.completion_tokens) == (2400, 32)
    out, err, code = replay("aider", "cache_hit")
    usage = aider.read(out, code, err).usage
    assert (usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens) == (2500, 1200, 512)
    out, err, code = replay("aider", "edit_format")
    report = aider.read(out, code, err)
    assert report.failed and "edit format" in report.error and report.usage.prompt_tokens == 1100
    out, err, code = replay("aider", "bad_key")
    report = aider.read(out, code, err)  # aider exits 0 after an API error
    assert code == 0 and report.failed and report.fault is not None and report.fault.auth
    out, err, code = replay("aider", "usage_limit")  # `You exceeded your \ncurrent quota`, wrapped
    report = aider.read(out, code, err)
    assert code == 0 and report.failed and report.limit is not None and report.fault is None
    out, err, code = replay("aider", "rate_limited")
    report = aider.read(out, code, err)
    assert report.failed and report.limit is None and report.fault is not None and not report.fault.auth


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_aider_rate_limit_it_gave_up_on_is_waited_out(akira: Akira, fake) -> None:  # type: ignore[no-untyped-def]
    fake("rate_limited", "ok+write")
    task = akira.write_task("aid", "- [ ] 1. Edit\n  - Exists: `step_1.txt`\n")
    assert start(akira, "aider", task).code == 0
    state = akira.state()
    assert state.total_failures == 0 and len(provider_waits(akira)) == 1
    assert state.usage.prompt_tokens == 2400


# -- provider faults: every preset, the cap, the stop hook --------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("cli", "case"),
    [
        ("codex", "server_error"),
        ("codex", "rate_limited"),
        ("gemini", "server_error"),
        ("gemini", "rate_limited"),
    ],
)
@pytest.mark.slow
def test_every_preset_waits_out_a_failing_provider(akira: Akira, fake, cli: str, case: str) -> None:  # type: ignore[no-untyped-def]
    fake(case, "ok+write")
    assert start(akira, cli).code == 0
    state = akira.state()
    assert state.total_failures == 0 and state.iteration == 2 and not state.reflections
    assert len(provider_waits(akira)) == 1


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_provider_that_stays_down_asks_a_person_after_the_cap(akira: Akira, fake) -> None:  # type: ignore[no-untyped-def]
    fake("overloaded")
    akira.write_config("agent:\n  max_transient_wait_seconds: 2\n")
    result = start(akira, "claude")
    assert result.code == 4 and "agent.max_transient_wait_seconds" in result.err, result.err
    state = akira.state()
    assert state.status == "needs_action" and state.total_failures == 0 and state.iteration == 0
    assert len(fake.calls()) == len(provider_waits(akira)) + 1 >= 2


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_stop_hook_ends_the_provider_wait(akira: Akira, fake) -> None:  # type: ignore[no-untyped-def]
    fake("overloaded")
    process = akira.spawn("loop", "start", "--agent", "claude", "--task", str(two_steps(akira)), "--no-wait")
    akira.wait_for(lambda: len(provider_waits(akira)) >= 3, 60, "the provider waits")
    (akira.root / ".hooks" / "stop_autonomous_loop.md").write_text("stop\n")
    _, err = process.communicate(timeout=60)
    assert process.returncode == 3, err
    state = akira.state()
    assert state.status == "paused" and state.total_failures == 0 and state.iteration == 0


def test_the_presets_say_which_cli_version_they_follow() -> None:
    import sys

    from akira_cli.agents.presets.versions import PINS

    for name, preset in PRESETS.items():
        assert PINS[name].version in (sys.modules[type(preset).__module__].__doc__ or ""), name
    settings = AgentSettings()
    assert "--full-auto" not in PRESETS["codex"].command(settings, "th-1")


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_provider_fault_in_a_parallel_wave_is_waited_out_on_its_step(akira: Akira, fake) -> None:  # type: ignore[no-untyped-def]
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=akira.root, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    task = akira.write_task(
        "cli", "- [ ] 1. [P] First\n  - Exists: `step_1.txt`\n- [ ] 2. [P] Second\n  - Exists: `step_2.txt`\n"
    )
    git("add", "-A")
    git("-c", "user.name=P", "-c", "user.email=p@e", "commit", "-q", "-m", "base")
    fake("overloaded", "ok+write")
    result = akira.cli(
        "loop", "start", "--agent", "claude", "--task", str(task), "--parallel", "2", timeout=90
    )
    assert result.code == 0, result.err
    state = akira.state()
    assert state.total_failures == 0 and len(state.completed_steps) == 2 and not state.reflections
    assert len(provider_waits(akira)) == 1


def test_gemini_tells_a_daily_quota_from_a_rate_limit() -> None:
    """Both are 429 (exit 173) with RESOURCE_EXHAUSTED in their stack traces: the error's own
    message says which (`exhausted your daily quota` waits for the reset, `Resource has been
    exhausted` is a provider fault)."""
    gemini = PRESETS["gemini"]
    out, err, code = replay("gemini", "usage_limit")
    quota = gemini.read(out, code, err)
    assert code == 173 and quota.limit is not None and quota.fault is None
    out, err, code = replay("gemini", "rate_limited")
    rate = gemini.read(out, code, err)
    assert code == 173 and rate.limit is None and rate.fault is not None and rate.fault.status == 429


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("cli", "hint"), [("codex", "OPENAI_API_KEY"), ("gemini", "GEMINI_API_KEY"), ("aider", "OPENAI_API_KEY")]
)
@pytest.mark.slow
def test_every_preset_says_the_key_is_wrong_once(akira: Akira, fake, cli: str, hint: str) -> None:  # type: ignore[no-untyped-def]
    """codex's 401 after its five reconnects, gemini's 400 API_KEY_INVALID (exit 144), aider's
    AuthenticationError with exit 0: one line, needs_action, the CLI run once."""
    fake("bad_key")
    result = start(akira, cli)
    assert result.code == 4 and "the API key is wrong or missing" in result.err and hint in result.err
    assert akira.state().status == "needs_action" and akira.state().total_failures == 0
    assert len(fake.calls()) == 1
