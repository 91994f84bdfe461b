"""`akira loop start` end to end with the REAL agent CLIs, the tests themselves:
`test_real_clis.py` runs them for the npm CLIs and `test_real_aider.py` for aider, each module
skipped as a whole (one line) when this machine cannot install its CLIs.

claude, codex, gemini and aider at their pinned versions, each pointed at a scripted model server on 127.0.0.1, with the
default preset config (`agent.preset: <cli>`, and for aider the `sandbox:` keys of `GATEWAY`),
in the sandbox (on by default).

For every preset: ok, recovered (the CLI's own retry gets past one failure), transient (the
provider fails past the CLI's retries: akira waits and runs it again, no failed attempt), a
plan or usage limit (the loop's usage-limit wait, ended by a stop hook), and a refused key
(`needs_action` with one clear line)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from akira_cli.events import EventType
from realcli.cases import CASES, LIMIT_RESET, Case, apply_env
from realcli.clis import RealCli
from tests.support.servers.scripted import Script, ScriptedServer, http, usage_limit
from tests.support.workspace import Akira

TASK = "- [ ] 1. Create hello.txt with a short greeting\n  - Exists: `hello.txt`\n"
AIDER_GIVES_UP = 27
"""Requests aider 0.86.2 makes against a 429 before it gives up (about a minute of retries)."""
TRANSIENT = {
    "claude": CASES["claude"]["overloaded"],
    "codex": CASES["codex"]["rate_limited"],
    "gemini": CASES["gemini"]["rate_limited"],
    "aider": Case("rate_limited", (http(429, AIDER_GIVES_UP),)),
}
SAYS_WHEN = ("claude", "codex")
"""The CLIs whose limit message gives the reset time (`resets 8:02pm (UTC)`, `try again at 7:53 PM`)."""
LIMIT = {
    "claude": CASES["claude"]["plan_limit"],
    "codex": CASES["codex"]["usage_limit"],
    "gemini": CASES["gemini"]["usage_limit"],
    "aider": Case("usage_limit", (usage_limit(AIDER_GIVES_UP, LIMIT_RESET),)),
}
GATEWAY = {
    "aider": 'sandbox:\n  allow_hosts: ["127.0.0.1:{port}"]\n  env: [LITELLM_LOCAL_MODEL_COST_MAP]\n',
}
"""What a person adds for the sandbox (on by default) when the gateway is named in the
CLI's own file (aider's .aider.conf.yml). claude's and gemini's base-URL variables and codex's
model provider in its config.toml (its `base_url`, its `env_key`) let theirs in by themselves."""


class Run:
    """One `akira loop start` against a scripted server, as a real subprocess."""

    def __init__(self, akira: Akira, cli: RealCli, case: Case, home: Path) -> None:
        self.akira, self.cli = akira, cli
        self.task = akira.write_task("hello", TASK)
        self.server = ScriptedServer(
            cli.dialect(), Script(akira.root, faults=list(case.faults), bad_key=case.bad_key)
        )
        gateway = GATEWAY.get(cli.name, "").format(port=self.server.port)
        akira.write_config(f"agent:\n  preset: {cli.name}\n{gateway}")
        self.server.__enter__()
        self.env = apply_env(cli.environment(home, self.server.url, akira.root), case)

    def start(self, *flags: str) -> subprocess.Popen[str]:
        argv = [sys.executable, "-m", "akira_cli", "loop", "start", "--task", str(self.task), *flags]
        return subprocess.Popen(
            [*argv, "--root", str(self.akira.root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=self.akira.root,
            env=self.env,
        )

    def finish(self, process: subprocess.Popen[str], timeout: float = 240) -> tuple[int, str, str]:
        try:
            out, err = process.communicate(timeout=timeout)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
            self.server.__exit__(None, None, None)
        return process.returncode, out, err

    def __call__(self) -> tuple[int, str, str]:
        return self.finish(self.start())


Runner = Callable[[RealCli, Case], Run]


def done_once(akira: Akira, code: int, out: str, err: str) -> None:
    assert code == 0, f"exit {code}\n{out[-2000:]}\n{err[-2000:]}"
    assert (akira.root / "hello.txt").read_text().startswith("hello from the scripted model")
    state = akira.state()
    assert state.status == "completed" and state.total_failures == 0
    assert [a.outcome for a in state.steps["1"].attempts] == ["success"]
    assert state.usage.prompt_tokens > 0 and state.usage.completion_tokens > 0


@pytest.mark.slow
@pytest.mark.timeout(300, func_only=True)  # the install before the first test is no part of it
class EndToEnd:
    """The cases; a `Test...` subclass names its CLIs in `names` (see `pytest_generate_tests`)."""

    names: tuple[str, ...] = ()

    def test_ok(self, real_cli: RealCli, run: Runner, akira: Akira) -> None:
        done_once(akira, *run(real_cli, CASES[real_cli.name]["ok"])())

    def test_recovered_by_the_cli_is_no_failure(self, real_cli: RealCli, run: Runner, akira: Akira) -> None:
        """One failure the CLI's own retry got past (codex prints `Reconnecting... 1/5` as an
        `error` event and still ends `turn.completed`): one successful attempt, paid once."""
        loop = run(real_cli, CASES[real_cli.name]["recovered"])
        done_once(akira, *loop())
        assert loop.server.requests[-1].status == 200 and any(r.status == 500 for r in loop.server.requests)

    def test_transient_provider_fault_is_waited_out(
        self, real_cli: RealCli, run: Runner, akira: Akira
    ) -> None:
        """The provider fails past the CLI's own retries (claude: 529 three times, codex: 429 six
        times, gemini: 429 past its attempts, aider: 429 for a minute): akira waits and runs the
        CLI again; the step succeeds with no failed attempt."""
        done_once(akira, *run(real_cli, TRANSIENT[real_cli.name])())
        retries = [e for e in akira.events() if e.type == EventType.TRANSIENT_RETRY]
        assert retries, "no transient_retry event: the fault was not waited out"

    def test_plan_or_usage_limit_is_the_loops_wait(
        self, real_cli: RealCli, run: Runner, akira: Akira
    ) -> None:
        """claude's `You've hit your session limit · resets 8:02pm (UTC)` (a subscription login),
        codex's `You’ve hit your usage limit … try again at 7:53 PM.`, gemini's exhausted daily
        quota, aider's `insufficient_quota`: the loop waits (state `waiting_until`, a `usage_limit`
        event), spends no iteration and no failure, and a stop hook ends the wait."""
        loop = run(real_cli, LIMIT[real_cli.name])
        started = datetime.now(UTC)
        # --no-wait: paused by the hook, the process ends (a usage limit is waited all the same)
        process = loop.start("--no-wait")
        try:
            akira.wait_for(
                lambda: akira.state().waiting_until is not None, timeout=200, what="the usage-limit wait"
            )
            stop = akira.cli("loop", "stop", "--task-id", akira.task_id())
            assert stop.code == 0, stop.err
        finally:
            code, _, err = loop.finish(process, timeout=120)
        state = akira.state()
        assert state.total_failures == 0 and not state.reflections, err
        waiting = [e for e in akira.events() if e.type == EventType.USAGE_LIMIT]
        assert waiting, "no usage_limit event"
        until = datetime.fromisoformat(str(waiting[0].data["waiting_until"]).replace("Z", "+00:00"))
        if real_cli.name in SAYS_WHEN:  # the reset the CLI printed (to the minute), not a backoff
            assert abs((until - started).total_seconds() - LIMIT_RESET) < 180, waiting[0].data
        assert code == 3 and state.status == "paused", f"exit {code}: {err[-1500:]}"
        assert not (akira.root / "hello.txt").exists()

    def test_a_refused_key_needs_a_person_with_one_line(
        self, real_cli: RealCli, run: Runner, akira: Akira
    ) -> None:
        code, _, err = run(real_cli, CASES[real_cli.name]["bad_key"])()
        state = akira.state()
        assert code == 4 and state.status == "needs_action", f"exit {code}: {err[-1500:]}"
        assert state.total_failures == 0 and "Traceback" not in err
        lines = [line for line in err.splitlines() if "key" in line.lower()]
        assert len(lines) == 1, err
