"""What the real-CLI tests need of this machine: the pinned CLI, installed once (`install.py`),
or a skip that says in one line what to install."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from realcli.clis import CLIS, RealCli
from realcli.install import InstallFailed, ensure, installed, missing_tool

MISSING: dict[str, set[str]] = {}
"""What this machine lacks, and the CLIs skipped for it: one summary line each."""
INSTALLED: dict[str, float | None] = {}
"""The CLIs this session used: the seconds their install took now, None when it was there."""
FAILED: dict[str, str] = {}
"""CLIs whose install failed this session, with what the installer said."""


def install_before_the_tests(names: set[str], say: Callable[[str], None]) -> None:
    """Installs what the selected tests need (`real_clis`, when the first of them is about to
    run); a failed install errors the tests that need it, with its output."""
    for name in sorted(names):
        cli = CLIS[name]
        if missing_tool(cli) or installed(cli):
            continue
        say(f"installing {name} {cli.pin.version} into {cli.home} (once per machine)")
        try:
            INSTALLED[name] = ensure(cli)
        except (InstallFailed, OSError, subprocess.SubprocessError) as exc:
            FAILED[name] = str(exc)


def real(name: str) -> RealCli:
    """The pinned CLI, installed (once per machine), or a skip that says what to install."""
    cli = CLIS[name]
    if reason := missing_tool(cli):
        MISSING.setdefault(reason, set()).add(f"{name} {cli.pin.version}")
        pytest.skip(f"real {name} {cli.pin.version} not tested: {reason}")
    if name in FAILED:
        pytest.fail(f"installing {name} {cli.pin.version} failed: {FAILED[name]}")
    if name not in INSTALLED:
        INSTALLED[name] = ensure(cli)
    return cli


def skip_module_unless_installable(names: tuple[str, ...]) -> None:
    """Skips the calling test module as a whole (one line) when this machine lacks what
    installing these CLIs needs."""
    reason = missing_tool(CLIS[names[0]])
    if reason:
        pinned = [f"{n} {CLIS[n].pin.version}" for n in names]
        MISSING.setdefault(reason, set()).update(pinned)
        pytest.skip(f"real {', '.join(pinned)} not tested: {reason}", allow_module_level=True)
