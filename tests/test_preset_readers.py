"""The presets read what their CLIs print leniently: a field of an unexpected type reads as if it
were absent, fields they do not know are ignored, and a line that is not JSON is passed over. The
recorded real outputs are replayed in test_cli_presets_real and test_agent_clis."""

from __future__ import annotations

import json
from pathlib import Path

from akira_cli.agents.presets.base import PRESETS

CLIS = Path(__file__).parent / "data" / "clis"


def capture(cli: str, version: str, case: str) -> tuple[str, int, str]:
    base = CLIS / cli / version / case
    stdout = base.with_suffix(".stdout").read_text()
    return stdout, int(base.with_suffix(".exit").read_text()), base.with_suffix(".stderr").read_text()


def test_claude_reads_a_result_whose_fields_changed_type() -> None:
    out, code, err = capture("claude", "2.1.197", "ok")
    data = json.loads(out)
    data.update(total_cost_usd="n/a", num_turns=True, session_id=7, permission_denials={"x": 1})
    data["usage"]["output_tokens"] = "sixty"
    data["a_field_of_tomorrow"] = {"nested": [1, 2]}
    report = PRESETS["claude"].read(f"warning: slow disk\n{json.dumps(data)}\n", code, err)
    assert not report.failed and report.answer == "Done: wrote hello.txt."
    assert report.usage.cost_usd == 0.0 and report.usage.completion_tokens == 0
    assert report.usage.prompt_tokens == 1140 and report.usage.calls == 1
    assert report.session_id is None and report.refused == []


def test_claude_names_each_refused_tool_even_among_odd_entries() -> None:
    out, code, err = capture("claude", "2.1.197", "ok")
    data = json.loads(out)
    data["permission_denials"] = [
        {"tool_name": "Write", "tool_input": {"file_path": "step_1.txt"}},
        "not an object",
        {"tool_name": "Bash", "tool_input": "rm -rf build"},
        {"tool_input": {"command": "make"}},
    ]
    report = PRESETS["claude"].read(json.dumps(data), code, err)
    assert report.failed and report.refused == ["Write(step_1.txt)", "Bash", "tool(make)"]
    assert report.error.startswith(
        "error: claude's permission mode refused Write(step_1.txt); Bash; tool(make)"
    )


def test_claude_failure_without_a_subtype_names_the_exit() -> None:
    report = PRESETS["claude"].read(json.dumps({"is_error": True}), 1, "")
    assert report.failed and report.error == "exit 1" and report.fault is None and report.limit is None


def test_gemini_reads_stats_whose_parts_changed_type() -> None:
    out, code, err = capture("gemini", "0.61.0", "ok")
    data = json.loads(out)
    models = data["stats"]["models"]
    first = next(iter(models))  # 1 request, 1500 prompt tokens; the other: 2 requests, 3000
    models[first]["tokens"] = ["not", "an", "object"]
    models[first]["api"]["totalRequests"] = None
    models["broken"] = "not an object"
    report = PRESETS["gemini"].read(json.dumps(data, indent=2), code, err)
    assert not report.failed and report.answer == "Done: wrote hello.txt."
    # the changed model counts one call and no tokens; the other as before
    assert (report.usage.calls, report.usage.prompt_tokens, report.usage.completion_tokens) == (3, 3000, 80)
    data["stats"]["models"] = [1, 2]
    assert PRESETS["gemini"].read(json.dumps(data), code, err).usage.calls == 0


def test_codex_reads_events_whose_fields_changed_type() -> None:
    out, code, err = capture("codex", "0.169.0", "ok")
    lines = out.splitlines()
    lines.insert(1, "{not json at all}")
    lines.insert(2, json.dumps({"type": "item.completed", "item": {"type": ["file_change"], "text": 3}}))
    lines.insert(3, json.dumps({"type": "turn.completed", "usage": "none"}))
    report = PRESETS["codex"].read("\n".join(lines), code, err)
    assert not report.failed and report.answer == "Done: wrote hello.txt."
    assert report.session_id == "01a213df-f707-7321-a7f8-f62f10918361"
    assert report.usage.prompt_tokens == 2400 and report.usage.cached_tokens == 1600
    assert report.usage.calls == 1 + 2  # one file write, and two turns that completed
