"""The npm agent CLIs (claude, codex, gemini) end to end under `akira loop start` (`e2e.py`).
Skipped as a whole, with one line saying what to install, where no npm is on PATH."""

from __future__ import annotations

from realcli.e2e import EndToEnd
from realcli.skips import skip_module_unless_installable

NAMES = ("claude", "codex", "gemini")
skip_module_unless_installable(NAMES)


class TestNpmClis(EndToEnd):
    names = NAMES
