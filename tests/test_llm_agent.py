"""The `llm` agent and its tools, against the fake OpenAI server through real HTTP.

`Model` answers the reasoning engine's structured calls by the first line of their prompt
(`# Reasoning: <name>`) and the tool conversations (requests that carry `tools`) from a script of
tool calls, one per model turn. The loop tests run the real CLI in a real workspace.
"""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from akira_cli.agents.llm import ToolStepExecutor
from akira_cli.agents.tools import Toolbox
from akira_cli.events import Event, EventBus, EventType
from akira_cli.llm.client import LLMClient
from akira_cli.reasoning.models import PlanStep
from akira_cli.runner import CommandRunner
from akira_cli.sections import LLMSettings
from tests.support.llm_agent import HEALTH, Model, call, run_step
from tests.support.servers.fake_openai import (
    FakeOpenAI,
    Reply,
    error,
    text,
    tool_call,
    tool_calls,
)
from tests.support.workspace import Akira

TEST_HEALTH = "import health\n\n\ndef test_status() -> None:\n    assert health.status() == 200\n"
VERIFY_ONLY = (
    '- [ ] 1. Add a health check\n  - Verify: `python3 -c "import health; assert health.status() == 200"`\n'
)
HEALTH_STEP = """
    - [ ] 1. Add a /health endpoint that returns 200 and a test for it
      - Verify: `python3 -c "import health; assert health.status() == 200"`
      - Exists: `test_health.py`
      - Contains: `test_health.py` `def test_status`
"""


def of_type(events: list[Event], type_: str) -> list[Event]:
    return [event for event in events if event.type == type_]


def phases(events: list[Event]) -> list[str]:
    seen = [e.data["phase"] for e in events if e.type == EventType.REASONING_PHASE]
    return [p for i, p in enumerate(seen) if i == 0 or p != seen[i - 1]]


# -- the loop, end to end --------------------------------------------------------------------------


def test_natural_language_step_is_planned_executed_with_tools_and_verified(
    akira: Akira, fake_openai: FakeOpenAI
) -> None:
    model = Model(
        [
            call("list_files", path="."),
            call("write_file", path="health.py", content=HEALTH),
            call("write_file", path="test_health.py", content=TEST_HEALTH),
            call("finish", summary="health.status() returns 200; test_health.py tests it"),
        ]
    )
    assert run_step(akira, fake_openai, model, HEALTH_STEP) == 0  # agent.kind auto picks llm

    assert (akira.root / "Done/feature/tasks.md").is_file()
    assert not (akira.root / "Specs/feature").exists()
    assert (akira.root / "health.py").read_text() == HEALTH
    assert (akira.root / "test_health.py").read_text() == TEST_HEALTH
    state = akira.state()
    assert state.status == "completed"
    (attempt,) = state.steps["1"].attempts
    assert attempt.outcome == "success" and attempt.approach == "llm (reasoning)"
    assert attempt.actions == [
        "list_files .",
        "write_file health.py",
        "write_file test_health.py",
        "finish",
    ]
    assert attempt.usage.calls == 7 and attempt.usage.total_tokens > 0

    events = akira.events()
    assert phases(events) == ["A", "B", "C", "end"]
    assert [
        e.data["stage"] for e in of_type(events, EventType.REASONING_PHASE) if e.data["phase"] == "B"
    ] == [
        "plan",
        "validate",
    ]
    assert [k for k, _ in model.requests] == [
        "profile",
        "plan",
        "validate_plan",
        "tools",
        "tools",
        "tools",
        "tools",
    ]  # the step's checks pass after the pass: converged, with no validation or convergence call
    (convergence,) = of_type(events, EventType.CONVERGENCE)
    assert convergence.data["converged"] is True and convergence.data["reason_codes"] == ["checks_passed"]
    tool_events = of_type(events, EventType.TOOL_CALL)
    assert [(e.data["name"], e.data["error"], e.step_id) for e in tool_events] == [
        ("list_files", False, "1"),
        ("write_file", False, "1"),
        ("write_file", False, "1"),
        ("finish", False, "1"),
    ]
    order = [e.type for e in events]
    first = order.index
    assert first("attempt_started") < first("reasoning_phase") < first("tool_call") < first("evaluation")
    assert first("evaluation") < first("step_completed") < first("loop_completed")

    # What the model saw: the tool specs, the step prompt, the akira step and its checks.
    request = model.of("tools")[0]
    assert [t["function"]["name"] for t in request["tools"]] == [
        "read_file",
        "write_file",
        "list_files",
        "run_command",
        "finish",
    ]
    assert request["messages"][0]["content"].startswith("You are akira's coding agent.")
    user = request["messages"][1]["content"]
    assert "You are executing step 1 of 1." in user
    assert "## The akira step this plan serves\n" in user and "$context" not in user
    assert "Add a /health endpoint that returns 200" in user and "import health" in user
    listing = model.tool_messages()[0].splitlines()
    assert "Specs/feature/tasks.md" in listing and "health.py" not in listing
    assert model.tool_messages()[1] == f"wrote {len(HEALTH)} characters to health.py"


HELLO_STEP = """
    - [ ] 1. Create the file hello.txt containing exactly: hi
      - Verify: `grep -qx hi hello.txt`
"""


@pytest.mark.slow
def test_a_sloppy_plan_with_an_unknown_parent_still_runs_the_step(
    akira: Akira, fake_openai: FakeOpenAI
) -> None:
    """Small models name parents and dependencies that are no step: the step is kept, at top level."""
    sloppy = {
        "steps": [
            {
                "id": "1",
                "description": "Create hello.txt containing hi",
                "parent_id": "0",
                "dependencies": ["create hello.txt first"],
            }
        ]
    }
    model = Model(
        [call("write_file", path="hello.txt", content="hi\n"), call("finish", summary="hello.txt says hi")],
        plan=sloppy,
    )
    assert run_step(akira, fake_openai, model, HELLO_STEP) == 0
    assert (akira.root / "hello.txt").read_text() == "hi\n"
    assert akira.state().status == "completed"
    warnings = [e.data["message"] for e in of_type(akira.events(), EventType.WARNING)]
    assert "plan step '1' names parent '0', which is no step; kept at top level" in warnings


# -- depth is earned (reasoning.mode) --------------------------------------------------------------


def test_adaptive_a_first_attempt_with_checks_is_one_tool_conversation(
    akira: Akira, fake_openai: FakeOpenAI
) -> None:
    model = Model([call("write_file", path="hello.txt", content="hi\n"), call("finish", summary="wrote it")])
    assert run_step(akira, fake_openai, model, HELLO_STEP, mode="adaptive") == 0
    (attempt,) = akira.state().steps["1"].attempts
    assert attempt.outcome == "success" and attempt.approach == "llm (direct)" and attempt.verified
    assert [kind for kind, _ in model.requests] == ["tools", "tools"]  # no profile, plan or judge
    assert attempt.usage.calls == 2 <= 4
    user = model.of("tools")[0]["messages"][1]["content"]
    assert "Create the file hello.txt" in user and "grep -qx hi hello.txt" in user
    assert "they decide whether it is done" in user


@pytest.mark.slow
def test_adaptive_the_engine_runs_only_on_the_retry_with_the_failure_in_its_context(
    akira: Akira, fake_openai: FakeOpenAI
) -> None:
    def write(messages: list[dict[str, Any]]) -> Reply:
        retry = "Take a different approach" in messages[1]["content"]
        return tool_call("write_file", {"path": "hello.txt", "content": "hi\n" if retry else "hello\n"})

    model = Model([write, call("finish", summary="wrote it")])
    assert run_step(akira, fake_openai, model, HELLO_STEP, mode="adaptive") == 0
    first, second = akira.state().steps["1"].attempts
    assert (first.outcome, first.approach) == ("failure", "llm (direct)")
    assert (second.outcome, second.approach) == ("success", "llm (reasoning)")
    kinds = [kind for kind, _ in model.requests]
    assert kinds[:2] == ["tools", "tools"] and kinds[2:4] == ["profile", "plan"]
    assert "converge" not in kinds  # the step's check passed after the engine's pass
    plan = model.of("plan")[0]["messages"][1]["content"]
    assert "grep -qx hi hello.txt" in plan and "Take a different approach" in plan


@pytest.mark.slow
def test_adaptive_a_step_without_checks_runs_the_engine_at_once(
    akira: Akira, fake_openai: FakeOpenAI
) -> None:
    model = Model([call("write_file", path="notes.md", content="# Notes\n"), call("finish", summary="done")])
    assert (
        run_step(akira, fake_openai, model, "- [ ] 1. Write some notes in notes.md\n", mode="adaptive") == 0
    )
    assert [kind for kind, _ in model.requests][:2] == ["profile", "plan"]
    assert akira.state().steps["1"].attempts[0].approach == "llm (reasoning)"


@pytest.mark.slow
def test_direct_mode_never_runs_the_engine(akira: Akira, fake_openai: FakeOpenAI) -> None:
    model = Model([call("write_file", path="notes.md", content="# Notes\n"), call("finish", summary="done")])
    assert run_step(akira, fake_openai, model, "- [ ] 1. Write some notes in notes.md\n", mode="direct") == 0
    assert {kind for kind, _ in model.requests} == {"tools"}


@pytest.mark.slow
def test_explicit_llm_kind_and_a_failed_attempt_reaches_the_retry_prompt(
    akira: Akira, fake_openai: FakeOpenAI
) -> None:
    def write(messages: list[dict[str, Any]]) -> Reply:
        retry = "Previous attempts of this step" in messages[1]["content"]
        # Not HEALTH's size: Python would take a .pyc written within the same second as current.
        content = HEALTH if retry else "def status() -> int:\n    return 5000\n"
        return tool_call("write_file", {"path": "health.py", "content": content})

    model = Model([write, call("finish", summary="wrote health.py")])
    assert run_step(akira, fake_openai, model, VERIFY_ONLY, "agent:\n  kind: llm\n") == 0

    first, second = akira.state().steps["1"].attempts
    assert first.outcome == "failure" and "AssertionError" in first.error
    assert second.outcome == "success"
    profile_requests = [json.dumps(body["messages"]) for body in model.of("profile")]
    assert len(profile_requests) == 2
    # The second attempt's first model request carries the first attempt's failure.
    assert "AssertionError" not in profile_requests[0]
    assert "AssertionError" in profile_requests[1] and "Previous attempts of this step" in profile_requests[1]
    assert (akira.root / "health.py").read_text() == HEALTH
    assert phases(akira.events()) == ["A", "B", "C", "end", "A", "B", "C", "end"]


@pytest.mark.slow
def test_unreachable_endpoint_is_one_line_and_needs_a_person(
    akira: Akira, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    akira.write_config(f"llm:\n  base_url: http://127.0.0.1:{port}/v1\n  model: m\n  max_retries: 2\n")
    akira.write_task("feature", "- [ ] 1. Add a health check\n")
    result = akira.run("loop", "start", "--task", "Specs/feature/tasks.md", capsys=capsys)
    assert result.code == 4  # a person can fix it: needs_action with a file saying why, never failed
    retries = [e.data for e in akira.events() if e.type == "transient_retry"]
    assert [r["mechanism"] for r in retries] == ["backoff", "backoff"]  # it backed off first
    started, failed = result.err.strip().splitlines()  # the start notice, then one line: why
    assert started.startswith("akira: started ")
    assert "unreachable (connection refused)" in failed and "llm.base_url" in failed
    state = akira.state()
    assert state.status == "needs_action"
    assert "unreachable" in (akira.root / "Needs_Action" / f"intervention_{state.task_id}.md").read_text()


def test_a_rejected_key_is_one_line_without_the_key(akira: Akira, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAI(api_key="right-key") as server:
        akira.write_config(f"llm:\n  base_url: {server.base_url}\n  api_key: wrong-key-123\n")
        akira.write_task("feature", "- [ ] 1. Add a health check\n")
        result = akira.run("loop", "start", "--task", "Specs/feature/tasks.md", capsys=capsys)
    assert result.code == 4 and akira.state().status == "needs_action"
    assert "OPENAI_API_KEY" in result.err and "wrong-key-123" not in result.err + result.out


def test_llm_kind_without_an_endpoint_says_how_to_set_one(
    akira: Akira, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    akira.write_config("agent:\n  kind: llm\n")
    akira.write_task("feature", "- [ ] 1. Add a health check\n")
    result = akira.run("loop", "start", "--task", "Specs/feature/tasks.md", capsys=capsys)
    assert result.code == 1 and "set llm.base_url or OPENAI_BASE_URL" in result.err


@pytest.mark.slow
def test_the_token_budget_stops_the_loop_mid_run(akira: Akira, fake_openai: FakeOpenAI) -> None:
    model = Model([call("finish", summary="done")])
    code = run_step(akira, fake_openai, model, HEALTH_STEP, "budget:\n  max_tokens_total: 20\n")
    assert code == 4
    state = akira.state()
    assert state.status == "needs_action" and state.stop_conditions.budget_exceeded
    assert len(fake_openai.chat_requests) == 2


def test_a_stop_hook_stops_between_tool_calls_never_inside_one(akira: Akira, fake_openai: FakeOpenAI) -> None:
    commands: list[str] = []

    def hook_then_write(messages: list[dict[str, Any]]) -> Reply:
        hook = f".hooks/stop_autonomous_loop_{akira.task_id()}.md"
        commands.append(f"sleep 0.3 && touch {hook} && touch slept")
        return tool_calls(
            [
                ("run_command", {"command": commands[-1]}),
                ("write_file", {"path": "health.py", "content": HEALTH}),
            ]
        )

    model = Model([hook_then_write, call("finish", summary="done")])
    # The command stands in for a person making the hook: unsandboxed, since in the sandbox
    # .hooks/ is read-only to a step (docs/sandbox.md).
    assert run_step(akira, fake_openai, model, VERIFY_ONLY, "sandbox:\n  mode: off\n") == 3
    assert (akira.root / "slept").exists() and not (akira.root / "health.py").exists()
    (attempt,) = akira.state().steps["1"].attempts
    assert attempt.outcome == "interrupted" and attempt.actions == [f"run_command {commands[0]}"]
    assert len(model.of("tools")) == 1 and akira.state().status == "paused"


@pytest.mark.parametrize(
    ("failing", "status", "transient"),
    [("tools", 500, True), ("tools", 400, False), ("plan", 503, True), ("plan", 400, False)],
)
@pytest.mark.slow
def test_api_failures_fail_the_attempt_transient_or_not(
    akira: Akira, fake_openai: FakeOpenAI, failing: str, status: int, transient: bool
) -> None:
    model = Model([call("finish", summary="done")], **{failing: error(status)})
    extra = "autonomous_loop:\n  max_step_retries: 0\n"
    assert run_step(akira, fake_openai, model, VERIFY_ONLY, extra) == 4  # the same error twice
    first = akira.state().steps["1"].attempts[0]
    assert first.outcome == "failure" and f"HTTP {status}" in first.error
    assert first.output_tail.startswith("result: failed")
    exhausted = [e for e in akira.events() if e.data.get("reason") == "transient retries exhausted"]
    assert bool(exhausted) is transient


# -- tools through the model ----------------------------------------------------------------------


@pytest.mark.slow
def test_escaping_paths_are_tool_errors_the_model_sees(
    akira: Akira, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (akira.root / "escape").symlink_to(outside)
    model = Model(
        [
            call("write_file", path="../outside/dots.txt", content="x"),
            call("write_file", path=str(outside / "absolute.txt"), content="x"),
            call("write_file", path="escape/link.txt", content="x"),
            call("read_file", path="/etc/passwd"),
            call("delete_everything", path="."),
            lambda messages: _bad_json("write_file"),
            call("write_file", path="health.py", content=HEALTH),
            call("finish", summary="wrote health.py"),
        ]
    )
    assert run_step(akira, fake_openai, model, VERIFY_ONLY) == 0
    assert list(outside.iterdir()) == []
    results = model.tool_messages()
    assert all(message.startswith("error: ") for message in results[:6]), results
    assert "outside the workspace" in results[0] and "outside the workspace" in results[2]
    assert "outside the workspace" in results[3] and "root:" not in results[3]
    assert "unknown tool 'delete_everything'" in results[4]
    assert "not valid JSON" in results[5]
    errors = [e.data["error"] for e in of_type(akira.events(), EventType.TOOL_CALL)]
    assert errors == [True] * 6 + [False, False]


def test_what_the_tools_send_back_to_the_model_carries_no_secret(
    akira: Akira, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The llm agent's tools run in akira's process: a file it reads and a command's output go
    to the model's provider masked, like every prompt (a value akira knows, a token by shape)."""
    value, shaped = "deploy-value-long-enough-42", "ghp_" + "a1B2c3D4e5" * 3 + "abcdef"
    monkeypatch.setenv("DEPLOY_TOKEN", value)
    (akira.root / "notes.txt").write_text(f"deploy with {value}\nor {shaped}\n")
    model = Model(
        [
            call("read_file", path="notes.txt"),
            call("run_command", command="cat notes.txt"),
            call("write_file", path="health.py", content=HEALTH),
            call("finish", summary="wrote health.py"),
        ]
    )
    assert run_step(akira, fake_openai, model, VERIFY_ONLY) == 0
    sent = json.dumps([body for _, body in model.requests])
    assert value not in sent and shaped not in sent
    assert all("deploy with ***" in message for message in model.tool_messages()[:2]), model.tool_messages()


@pytest.mark.slow
def test_run_command_can_be_switched_off(akira: Akira, fake_openai: FakeOpenAI) -> None:
    model = Model(
        [
            call("run_command", command="touch ran.txt", timeout=5),
            call("write_file", path="health.py", content=HEALTH),
            call("finish", summary="wrote health.py"),
        ]
    )
    assert run_step(akira, fake_openai, model, VERIFY_ONLY, "agent:\n  allow_run_command: false\n") == 0
    assert not (akira.root / "ran.txt").exists()
    tools = {t["function"]["name"] for body in model.of("tools") for t in body["tools"]}
    assert tools == {"read_file", "write_file", "list_files", "finish"}
    assert "run_command is switched off" in model.tool_messages()[0]
    plan_prompt = model.of("plan")[0]["messages"][1]["content"]
    (listed,) = [line for line in plan_prompt.splitlines() if line.startswith("Available tools:")]
    assert "run_command" not in listed and "write_file" in listed


@pytest.mark.slow
def test_run_command_output_is_truncated_and_runs_in_the_workspace(
    akira: Akira, fake_openai: FakeOpenAI
) -> None:
    model = Model(
        [
            call("run_command", command="python3 -c \"print('x' * 5000)\"; pwd", timeout=30),
            call("write_file", path="health.py", content=HEALTH),
            call("finish", summary="PARTIALLY_CLEAR: wrote health.py only"),
        ]
    )
    assert run_step(akira, fake_openai, model, VERIFY_ONLY, "agent:\n  max_tool_output_chars: 300\n") == 0
    output = model.tool_messages()[0]
    assert len(output) <= 300
    assert output.startswith("exit code 0\n[… truncated") and output.endswith(str(akira.root))


def _bad_json(name: str) -> Reply:
    reply = tool_call(name, {})
    assert reply.message is not None
    reply.message["tool_calls"][0]["function"]["arguments"] = "{not json"
    return reply


# -- the toolbox on its own ----------------------------------------------------------------------


@pytest.fixture
def box(tmp_path: Path) -> tuple[Toolbox, list[Event]]:
    root = tmp_path / "root"
    root.mkdir()
    events: list[Event] = []
    bus = EventBus("t")
    bus.subscribe(events.append)
    toolbox = Toolbox(
        root,
        CommandRunner(root),
        allow_run_command=True,
        max_output_chars=256,
        bus=bus,
        step_id="2",
        command_timeout=1,
    )
    return toolbox, events


def test_tool_specs_have_the_exact_names_and_parameters(box: tuple[Toolbox, list[Event]]) -> None:
    toolbox, _ = box
    params = {
        spec["function"]["name"]: sorted(spec["function"]["parameters"]["properties"])
        for spec in toolbox.specs()
    }
    assert params == {
        "read_file": ["path"],
        "write_file": ["content", "path"],
        "list_files": ["path"],
        "run_command": ["command", "timeout"],
        "finish": ["summary"],
    }


def test_toolbox_confines_reads_writes_and_listings(box: tuple[Toolbox, list[Event]], tmp_path: Path) -> None:
    toolbox, events = box
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    (toolbox.root / "up").symlink_to(tmp_path)
    (toolbox.root / "dangling").symlink_to(tmp_path / "new.txt")
    for name, args in [
        ("read_file", {"path": "../secret.txt"}),
        ("read_file", {"path": "up/secret.txt"}),
        ("read_file", {"path": str(secret)}),
        ("write_file", {"path": "dangling", "content": "x"}),
        ("write_file", {"path": "sub/../../new.txt", "content": "x"}),
        ("list_files", {"path": "up"}),
        ("write_file", {"path": "~/akira-test-escape.txt", "content": "x"}),
    ]:
        result = toolbox.call(name, json.dumps(args))
        assert result.error and "outside the workspace" in result.output, (name, args, result)
    assert not (tmp_path / "new.txt").exists() and secret.read_text() == "secret"
    assert len(events) == 7 and all(e.data["error"] and e.type == "tool_call" for e in events)

    assert not toolbox.call("write_file", '{"path": "a/b/c.txt", "content": "hi"}').error
    assert toolbox.call("read_file", '{"path": "./a/../a/b/c.txt"}').output == "hi"
    listing = toolbox.call("list_files", '{"path": "."}').output.splitlines()
    assert listing == ["a/", "a/b/", "a/b/c.txt", "dangling", "up/"]
    assert toolbox.call("read_file", '{"path": "missing.txt"}').error
    assert toolbox.call("write_file", '{"path": "a"}').error  # content missing
    assert toolbox.call("list_files", "[1]").error
    state_write = toolbox.call("write_file", '{"path": ".state/autonomous_loop_x.json", "content": "{}"}')
    assert state_write.error and "akira's control plane" in state_write.output
    assert not (toolbox.root / ".state").exists()


def test_toolbox_truncates_outputs_and_logs_truncated_arguments(box: tuple[Toolbox, list[Event]]) -> None:
    toolbox, events = box
    big = "".join(f"line {n}\n" for n in range(1000))
    assert not toolbox.call("write_file", json.dumps({"path": "big.txt", "content": big})).error
    read = toolbox.call("read_file", '{"path": "big.txt"}').output
    assert len(read) <= 256 and read.startswith("line 0\n") and "truncated: 8890 characters" in read
    ran = toolbox.call("run_command", json.dumps({"command": "cat big.txt", "timeout": 5})).output
    assert len(ran) <= 256 and ran.endswith("line 999")
    logged = events[0].data["arguments"]
    assert len(logged) <= 200 and logged.startswith('{"path": "big.txt"')


def test_run_command_timeout_is_capped_by_the_step(box: tuple[Toolbox, list[Event]]) -> None:
    toolbox, events = box
    result = toolbox.call("run_command", json.dumps({"command": "sleep 20", "timeout": 600}))
    assert result.error and "timed out after 1s" in result.output
    failed = toolbox.call("run_command", '{"command": "echo oops; exit 3"}')
    assert failed.error and failed.output == "`echo oops; exit 3` exited 3\noops"
    assert toolbox.call("run_command", '{"command": "true", "timeout": "soon"}').error
    assert [e.data["name"] for e in events] == ["run_command"] * 3


def test_finish_ends_the_step_and_is_logged(box: tuple[Toolbox, list[Event]]) -> None:
    toolbox, events = box
    result = toolbox.call("finish", '{"summary": "all done"}')
    assert result.finished and result.output == "all done" and not result.error
    assert events[-1].data == {"name": "finish", "arguments": '{"summary": "all done"}', "error": False}


@pytest.mark.slow
def test_a_model_that_only_talks_is_nudged_once(akira: Akira, fake_openai: FakeOpenAI) -> None:
    model = Model(
        [lambda messages: text("I would write health.py."), lambda messages: text("Done, I think.")]
    )
    step = "- [ ] 1. Add a health check\n  - Exists: `health.py`\n"
    assert run_step(akira, fake_openai, model, step) == 4  # the same failure twice: persistent
    first, second = model.of("tools")[:2]
    nudge = {"role": "user", "content": "Use the tools to do the step, then call finish(summary)."}
    assert nudge not in first["messages"] and second["messages"][-1] == nudge
    attempt = akira.state().steps["1"].attempts[0]
    assert attempt.outcome == "failure" and attempt.actions == []


# -- the executor on its own -----------------------------------------------------------------------


def test_the_time_budget_is_checked_between_tool_calls(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    expired = threading.Event()

    def slow_then_expire(body: dict[str, Any]) -> Reply:
        expired.set()  # the budget runs out while the command below runs: it still completes
        return tool_call("run_command", {"command": "sleep 0.2 && touch done.txt"})

    fake_openai.set_responder(slow_then_expire)
    runner, bus = CommandRunner(tmp_path), EventBus()
    toolbox = Toolbox(tmp_path, runner, allow_run_command=True, max_output_chars=1000, bus=bus, step_id="1")
    client = LLMClient(LLMSettings(base_url=fake_openai.base_url, model="fake-model"))
    executor = ToolStepExecutor(
        client, toolbox, "the akira step", should_stop=lambda: False, ttl_expired=expired.is_set
    )
    outcome = executor.execute(PlanStep(id="s1", description="sleep"), "You are executing step 1 of 1.")
    assert (tmp_path / "done.txt").exists() and len(fake_openai.chat_requests) == 1
    assert outcome.clarity_state == "PARTIALLY_CLEAR" and outcome.step_output.startswith("time budget spent")
    assert [call.name for call in outcome.tool_calls] == ["run_command"] and "s1" not in executor.finished


def test_finish_summaries_announce_their_clarity(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.enqueue(
        tool_call("finish", {"summary": "BLOCKED: there is no web framework to add a route to"}),
    )
    bus = EventBus()
    toolbox = Toolbox(
        tmp_path, CommandRunner(tmp_path), allow_run_command=True, max_output_chars=1000, bus=bus, step_id="1"
    )
    client = LLMClient(LLMSettings(base_url=fake_openai.base_url, model="fake-model"))
    executor = ToolStepExecutor(client, toolbox, "", should_stop=lambda: False, ttl_expired=lambda: False)
    outcome = executor.execute(PlanStep(id="s1", description="route"), "step")
    assert outcome.clarity_state == "BLOCKED" and "no web framework" in outcome.step_output
    assert executor.actions == ["finish"] and executor.finished == {"s1"}
