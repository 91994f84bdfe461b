"""Agents: built-ins register themselves on import, like plug-ins would."""

from akira_cli.agents import command, llm, script  # noqa: F401
from akira_cli.agents.base import REGISTRY, Agent, AgentContext, AgentRequest, AgentResult

__all__ = ["REGISTRY", "Agent", "AgentContext", "AgentRequest", "AgentResult"]
