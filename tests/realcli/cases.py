"""The scripted cases each real CLI is run through, and what one run of it looks like.

A case is the server's script (faults in order, or a refused key) and what the environment
changes for it. The counts are what one run of the pinned version spends before it gives up
(measured with these scripts: claude gives up after 3 overloaded answers, codex after 6 rate
limited ones), so a fault counted that way fails exactly one run of the CLI and the next run
succeeds: what akira's transient wait needs to see.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.support.servers.scripted import Fault, http, plan_limit, usage_limit

LIMIT_RESET = 7200.0
"""Seconds until a scripted plan or usage limit resets: far enough that akira must wait."""


@dataclass(frozen=True)
class Case:
    name: str
    faults: tuple[Fault, ...] = ()
    bad_key: bool = False
    env: dict[str, str] = field(default_factory=dict)
    """Environment changes (`-NAME` drops a variable)."""
    note: str = ""


def _case(name: str, *faults: Fault, bad_key: bool = False, note: str = "", **env: str) -> Case:
    return Case(name, tuple(faults), bad_key, dict(env), note)


OAUTH = {"CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-scripted", "-ANTHROPIC_API_KEY": ""}
"""A subscription login: only then does Claude Code read a 429 as the plan's limit."""
CASES: dict[str, dict[str, Case]] = {
    "claude": {
        c.name: c
        for c in (
            _case("ok"),
            _case("recovered", http(500), note="one 500, then the CLI's own retry succeeds"),
            _case("overloaded", http(529, 3), note="529 until the CLI gives up (3 requests)"),
            _case("rate_limited", http(429, 2), CLAUDE_CODE_MAX_RETRIES="1", note="429 past 1 retry"),
            _case("server_error", http(500, 2), CLAUDE_CODE_MAX_RETRIES="1", note="500 past 1 retry"),
            _case(
                "plan_limit", plan_limit(1, LIMIT_RESET), **OAUTH, note="five_hour limit, subscription login"
            ),
            _case("bad_key", bad_key=True, CLAUDE_CODE_MAX_RETRIES="1", note="401 on every request"),
        )
    },
    "codex": {
        c.name: c
        for c in (
            _case("ok"),
            _case("recovered", http(500, 5), note="500 past the request retries: one Reconnecting 1/5"),
            _case("rate_limited", http(429, 6), note="429 until the CLI gives up (6 requests)"),
            _case("server_error", http(500, 30), note="500 until the CLI gives up"),
            _case("usage_limit", usage_limit(1, LIMIT_RESET), note="usage_limit_reached"),
            _case("bad_key", bad_key=True, note="401 on every request"),
        )
    },
    "gemini": {
        c.name: c
        for c in (
            _case("ok"),
            _case("recovered", http(500), note="one 500, then the CLI's own retry succeeds"),
            _case("rate_limited", http(429, 2), note="429 past general.maxAttempts 2"),
            _case("server_error", http(500, 2), note="500 past general.maxAttempts 2"),
            _case("usage_limit", usage_limit(1, LIMIT_RESET), note="a per-day quota exhausted"),
            _case("bad_key", bad_key=True, note="400 API_KEY_INVALID, as the Gemini API answers a bad key"),
        )
    },
    "aider": {
        c.name: c
        for c in (
            _case("ok"),
            _case("recovered", http(500), note="one 500, then the CLI's own retry succeeds"),
            _case("rate_limited", http(429, 100), note="429 on every request"),
            _case("usage_limit", usage_limit(100, LIMIT_RESET), note="insufficient_quota"),
            _case("bad_key", bad_key=True, note="401 on every request"),
        )
    },
}


def apply_env(env: dict[str, str], case: Case) -> dict[str, str]:
    out = dict(env)
    for name, value in case.env.items():
        if name.startswith("-"):
            out.pop(name[1:], None)
        else:
            out[name] = value
    return out
