"""`akira reason "TEXT"`: the multi-pass reasoning engine on free text (SPEC 9)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from akira_cli.cli.common import ConfigOption, JsonOption, RootOption, workspace_and_config
from akira_cli.events import EventBus


def reason(
    text: Annotated[str, typer.Argument(help="The task or question to reason about.")],
    json_out: JsonOption = False,
    config: ConfigOption = None,
    root: RootOption = None,
) -> int:
    """Profile, plan, validate, refine and execute TEXT in passes until it converges."""
    from akira_cli.llm.client import LLMClient
    from akira_cli.reasoning.engine import ReasoningEngine

    _, cfg = workspace_and_config(root, config)
    bus = EventBus("reason")
    client = LLMClient(cfg.llm, limits=cfg.resource_limits, budget=cfg.budget, bus=bus)
    client.ping()
    result = ReasoningEngine(client, cfg.reasoning, bus=bus).run(text)
    if json_out:
        typer.echo(json.dumps(result.to_dict(), indent=2, default=str))
        return 0
    typer.echo("\n".join(result.describe()))
    return 0
