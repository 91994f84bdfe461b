"""The real agent CLIs for the tests (`skips.py`), the `run` fixture of the end-to-end cases
(`e2e.py`), and the summary line of what was skipped or installed."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Akira

from realcli.cases import Case
from realcli.clis import CLIS, RealCli
from realcli.e2e import Run, Runner
from realcli.install import install_seconds
from realcli.skips import INSTALLED, MISSING, install_before_the_tests, real


@pytest.fixture(scope="session")
def real_clis(request: pytest.FixtureRequest) -> None:
    """Installs the CLIs of this session's selected tests when the first of them is about to
    run, never at collection (`--collect-only` installs nothing). The tests that use it time
    their own call only (`timeout(func_only=True)`), so no test's timeout counts an install."""
    specs = [getattr(item, "callspec", None) for item in request.session.items]
    names = {str(spec.params["real_cli"]) for spec in specs if spec and "real_cli" in spec.params}
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")

    def say(line: str) -> None:
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            (reporter.write_line if reporter is not None else print)(line)

    install_before_the_tests(names, say)


@pytest.fixture
def real_cli(request: pytest.FixtureRequest, real_clis: None) -> Iterator[RealCli]:
    yield real(str(request.param))


@pytest.fixture
def run(akira: Akira, tmp_path: Path) -> Runner:
    def make(cli: RealCli, case: Case) -> Run:
        return Run(akira, cli, case, tmp_path / "home")

    return make


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """An `EndToEnd` subclass runs every case for each CLI it names."""
    if "real_cli" in metafunc.fixturenames and metafunc.cls is not None:
        metafunc.parametrize("real_cli", list(getattr(metafunc.cls, "names", ())), indirect=True)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    chars = str(terminalreporter.config.option.reportchars or "")
    if not ("s" in chars or "a" in chars or "A" in chars):  # else pytest lists the module's skip line
        for reason, names in sorted(MISSING.items()):
            terminalreporter.write_line(
                f"SKIPPED real {', '.join(sorted(names))} not tested: {reason}", yellow=True
            )
    fresh = {name: seconds for name, seconds in INSTALLED.items() if seconds is not None}
    if fresh:
        done = ", ".join(f"{name} {seconds} s" for name, seconds in fresh.items())
        terminalreporter.write_line(f"real agent CLIs installed into the cache: {done}")
    elif INSTALLED:
        kept = ", ".join(f"{n} ({install_seconds(CLIS[n])} s once)" for n in INSTALLED)
        terminalreporter.write_line(f"real agent CLIs from the cache: {kept}")
