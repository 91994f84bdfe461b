"""Agents: built-ins register themselves on import, like plug-ins would."""

from akira_cli.agents import command, llm, script  # noqa: F401  (registration)
