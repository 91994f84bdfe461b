"""Agent CLI presets (claude, codex, gemini, aider): the agent CLIs people already pay for, first-class.

A preset knows the CLI's default command line, how it takes the prompt, and how to read its
machine output: the answer, whether it says it failed, its token usage and cost, its session
id, and a usage-limit message. One small module per CLI; they register here by name, so adding
the next CLI is one module. The `command` agent stays generic and uses a preset when one is set.
"""

from __future__ import annotations

from akira_cli.agents.presets import aider, claude, codex, gemini  # noqa: F401  (registration)
