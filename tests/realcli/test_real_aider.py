"""aider (from PyPI, in a venv of its own) end to end under `akira loop start` (`e2e.py`).
Skipped as a whole, with one line saying what to install, where Python cannot make a venv."""

from __future__ import annotations

from realcli.e2e import EndToEnd
from realcli.skips import skip_module_unless_installable

NAMES = ("aider",)
skip_module_unless_installable(NAMES)


class TestAider(EndToEnd):
    names = NAMES
