"""The real agent CLIs for the tests: installed once per machine (`install.py`), skipped with one
visible line when this machine lacks npm or a Python venv."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from realcli.clis import CLIS, RealCli
from realcli.install import ensure, install_seconds, missing_tool

MISSING: set[str] = set()
"""The skip lines of this session, printed again in the terminal summary."""
INSTALLED: dict[str, float | None] = {}


def real(name: str) -> RealCli:
    """The pinned CLI, installed (once per machine), or a skip that says what to install."""
    cli = CLIS[name]
    if reason := missing_tool(cli):
        MISSING.add(reason)
        pytest.skip(reason)
    if name not in INSTALLED:
        INSTALLED[name] = ensure(cli)
    return cli


@pytest.fixture
def real_cli(request: pytest.FixtureRequest) -> Iterator[RealCli]:
    yield real(str(request.param))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for reason in sorted(MISSING):
        terminalreporter.write_line(f"SKIPPED {reason}", yellow=True)
    fresh = {name: seconds for name, seconds in INSTALLED.items() if seconds is not None}
    if fresh:
        done = ", ".join(f"{name} {seconds} s" for name, seconds in fresh.items())
        terminalreporter.write_line(f"real agent CLIs installed into the cache: {done}")
    elif INSTALLED:
        kept = ", ".join(f"{n} ({install_seconds(CLIS[n])} s once)" for n in INSTALLED)
        terminalreporter.write_line(f"real agent CLIs from the cache: {kept}")
