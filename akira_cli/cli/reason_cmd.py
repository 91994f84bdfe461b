"""`akira reason "TEXT"`: the multi-pass reasoning engine on free text, without a task file."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from akira_cli.api.lookup import workspace_and_config
from akira_cli.cli.common import ExtraConfigOption, JsonOption, RootOption
from akira_cli.errors import LoopStop


def reason(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The task or question to reason about.")],
    json_out: JsonOption = False,
    config: ExtraConfigOption = None,
    root: RootOption = None,
) -> int:
    """Profile, plan, validate, refine and execute TEXT in passes until it converges.

    Prints the result (converged, or the TTL expired and it is not), the task profile, the
    passes, the scores and reason codes, then the answer. Exit 0 when there is an answer, even
    a non-converged one; 1 when the LLM endpoint cannot be used or failed during the run.
    """
    from akira_cli.events import EventBus
    from akira_cli.llm.client import LLMClient
    from akira_cli.reasoning.engine import ReasoningEngine

    _, cfg = workspace_and_config(root, config)
    bus = EventBus("reason")
    client = LLMClient(cfg.llm, limits=cfg.resource_limits, budget=cfg.budget, bus=bus)
    client.ping()
    try:
        result = ReasoningEngine(client, cfg.reasoning, bus=bus).run(text)
    except LoopStop as stop:  # the token or cost budget ran out mid-run
        typer.echo(f"akira: {stop.message}", err=True)
        return stop.exit_code
    if json_out:
        typer.echo(json.dumps(result.to_dict(), indent=2, default=str))
    else:
        typer.echo(result.report())
    if result.label == "failed":
        typer.echo(f"akira: error: reasoning failed: {result.error or 'no usable answer'}", err=True)
        return 1
    return 0
