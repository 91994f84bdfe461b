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
    """Profile, plan, validate, refine and execute TEXT in passes until it converges.

    Prints the result (converged, or the TTL expired and it is not), the task profile, the
    passes, the scores and reason codes, then the answer. Exit 0 when there is an answer, even
    a non-converged one; 1 when the LLM endpoint cannot be used or failed during the run.
    """
    from akira_cli.llm.client import LLMClient
    from akira_cli.reasoning.engine import ReasoningEngine

    _, cfg = workspace_and_config(root, config)
    bus = EventBus("reason")
    client = LLMClient(cfg.llm, limits=cfg.resource_limits, budget=cfg.budget, bus=bus)
    client.ping()
    result = ReasoningEngine(client, cfg.reasoning, bus=bus).run(text)
    if json_out:
        typer.echo(json.dumps(result.to_dict(), indent=2, default=str))
    else:
        typer.echo(result.report())
    return 1 if result.label == "failed" else 0
