"""The reviewer is the real Claude Code CLI (the pinned version, installed under
~/.cache/akira/test-clis), answering from a scripted Anthropic Messages server on 127.0.0.1:
its JSON result, its plan mode and `--model` as akira passes them, and the verdict read out of
its `result`."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from review_night import Night
from test_git_runs import git, trailers

from akira_cli.agents.presets.versions import PINS
from akira_cli.events import EventType

CLAUDE = (
    Path.home()
    / ".cache"
    / "akira"
    / "test-clis"
    / f"claude-{PINS['claude'].version}"
    / "node_modules"
    / ".bin"
    / "claude"
)


class Messages(BaseHTTPRequestHandler):
    """POST /v1/messages, streamed as the Anthropic API streams: the verdict a review of the
    first attempt of step 1 gets is `changes`, every other one `approve`."""

    seen: list[dict[str, Any]]

    def log_message(self, format: str, *args: object) -> None:
        return None

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        self.seen.append(body)
        asked = json.dumps(body.get("messages", []))
        first = "1 Write the greeting" in asked and "+attempt 1" in asked
        verdict = (
            {"verdict": "changes", "reasons": ["step_1.txt: say hello"]} if first else {"verdict": "approve"}
        )
        text = json.dumps(verdict)
        usage = {"input_tokens": 700, "output_tokens": 1, "cache_read_input_tokens": 100}
        message = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": [],
        }
        events = [
            ("message_start", {"type": "message_start", "message": {**message, "usage": usage}}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 40}}),
            ("message_stop", {"type": "message_stop"}),
        ]  # fmt: skip
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for name, event in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(event)}\n\n".encode())


@pytest.fixture
def anthropic() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []
    handler = type("Scripted", (Messages,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


@pytest.mark.slow
@pytest.mark.skipif(not CLAUDE.exists(), reason=f"the pinned claude CLI is not installed at {CLAUDE}")
def test_the_real_claude_cli_reviews_in_plan_mode_and_its_verdict_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, anthropic: tuple[str, list[dict[str, Any]]]
) -> None:
    url, seen = anthropic
    night = Night(tmp_path, monkeypatch)
    (tmp_path / "bin" / "claude").unlink()
    (tmp_path / "bin" / "claude").symlink_to(CLAUDE)
    (tmp_path / "home").mkdir()
    for name, value in {
        "HOME": str(tmp_path / "home"),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-ant-test-key",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }.items():
        monkeypatch.setenv(name, value)
    night.setup("  agent: claude\n  model: claude-sonnet-4-5\n")
    code, err = night.start()
    assert code == 0, err
    state = night.akira.state()
    assert [(s.step_id, s.attempts, s.review) for s in state.completed_steps] == [
        ("1", 2, "approved"),
        ("2", 1, "approved"),
    ]
    assert trailers(night.root, "akira/feat~2")["Akira-Review"] == "approved"
    first = state.steps["1"].attempts[0]
    assert first.review is not None and first.review.reasons == "- step_1.txt: say hello"
    assert {body.get("model") for body in seen} == {"claude-sonnet-4-5"}
    assert len(seen) == 3  # one model call per review
    # what the real CLI reported: 700 input + 100 cached, 40 out per review; its own cost
    assert state.review_usage.total_tokens == 3 * 840 and state.review_usage.cost_usd > 0


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["claude", "gemini"])
def test_a_real_reviewer_cli_writes_nothing_where_the_sandbox_is_off_and_its_verdict_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The fallback case (`sandbox.mode: off`, as `auto` is where bwrap cannot work): the model
    asks the reviewer CLI to write a file; its own read-only mode (claude's plan mode, gemini's
    `--approval-mode plan`) refuses, and the verdict of its final answer is read all the same."""
    from realcli.clis import CLIS

    from akira_cli.testing.scripted import Script, ScriptedServer

    cli = CLIS[name]
    if not cli.executable.exists():
        pytest.skip(f"the pinned {name} CLI is not installed at {cli.executable}")
    night = Night(tmp_path, monkeypatch)
    (tmp_path / "bin" / "claude").unlink()  # Night's fake reviewer: the real CLI reviews here
    script = Script(night.root, file="REVIEWED.md", content="the reviewer wrote this\n")
    script.answer = "The step writes the file it names.\nVERDICT: approve"
    with ScriptedServer(cli.dialect(), script) as server:
        for key, value in cli.environment(tmp_path / "home", server.url, night.root).items():
            monkeypatch.setenv(key, f"{tmp_path / 'bin'}:{value}" if key == "PATH" else value)
        night.akira.write_config(
            "agent:\n  kind: command\n  command: implement\n"
            f"review:\n  agent: {name}\nsandbox:\n  mode: off\n"
        )
        night.akira.write_task("feat", "- [ ] 1. Write the greeting\n  - Exists: `step_1.txt`\n")
        git(night.root, "add", "-A")
        git(night.root, "commit", "-q", "-m", "base")
        done = night.akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", timeout=240)
        asked = [request for request in server.requests if request.main]
    assert done.code == 0, done.err
    assert asked, "the reviewer never asked the model"
    assert not (night.root / "REVIEWED.md").exists()  # its read-only mode refused the write
    state = night.akira.state()
    assert [(s.step_id, s.review) for s in state.completed_steps] == [("1", "approved")], [
        e.data for e in night.akira.events() if e.type in (EventType.WARNING, EventType.REVIEW)
    ]
    assert trailers(night.root, "akira/feat~1")["Akira-Review"] == "approved"
