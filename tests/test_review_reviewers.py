"""The reviewer per step (the morning review): the reviewers (a command, codex, the llm endpoint), no git,
reading verdicts, its settings, and a reviewed commit across kill -9 and undo."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from akira_cli.events import EventType
from tests.support.git import KILL_AT_COMMIT, trailers
from tests.support.review_night import STEPS, Night


@pytest.fixture
def night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Night:
    return Night(tmp_path, monkeypatch)


@pytest.mark.slow
def test_a_command_reviewer_answering_with_a_verdict_line(night: Night) -> None:
    script = night.tmp / "review.sh"
    script.write_text(
        'cat > /dev/null\nif [ "$AKIRA_STEP_ID" = 1 ] && [ "$AKIRA_ATTEMPT" = 1 ]; then\n'
        '  printf "The farewell is missing.\\nVERDICT: changes\\n"\nelse\n'
        '  printf "Fine.\\nVERDICT: approve\\n"\nfi\n'
    )
    night.setup(f"  agent: bash {script}\n")
    assert night.start()[0] == 0
    state = night.akira.state()
    assert [(s.step_id, s.attempts, s.review) for s in state.completed_steps] == [
        ("1", 2, "approved"),
        ("2", 1, "approved"),
    ]
    assert state.steps["1"].attempts[0].error.endswith("The farewell is missing.")
    assert state.review_usage.total_tokens == 0  # a plain command reports no usage


@pytest.mark.slow
def test_a_codex_reviewer_reads_its_agent_message(night: Night) -> None:
    codex = night.tmp / "bin" / "codex"
    codex.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "sys.stdin.read()\n"
        "open(os.environ['FAKE_REVIEW_LOG'], 'a').write(json.dumps({'argv': sys.argv[1:], 'prompt': ''}) + '\\n')\n"
        "verdict = 'changes' if os.environ['AKIRA_ATTEMPT'] == '1' else 'approve'\n"
        "answer = json.dumps({'verdict': verdict, 'reasons': ['step_' + os.environ['AKIRA_STEP_ID']]})\n"
        "for event in ({'type': 'thread.started', 'thread_id': '0199-a'}, {'type': 'turn.started'},\n"
        "    {'type': 'item.completed', 'item': {'id': 'item_0', 'type': 'agent_message', 'text': answer}},\n"
        "    {'type': 'turn.completed', 'usage': {'input_tokens': 900, 'cached_input_tokens': 600,\n"
        "     'output_tokens': 60}}):\n"
        "    print(json.dumps(event))\n"
    )
    codex.chmod(0o755)
    night.setup("  agent: codex\n", extra="llm:\n  prices:\n    codex:\n      input_per_1m: 1000\n")
    assert night.start()[0] == 0
    state = night.akira.state()
    assert [(s.step_id, s.attempts, s.review) for s in state.completed_steps] == [
        ("1", 2, "approved"),
        ("2", 2, "approved"),
    ]
    assert state.review_usage.total_tokens == 4 * 960 and state.review_usage.cost_usd == pytest.approx(3.6)
    argv = night.reviews()[0]["argv"]
    assert argv[:4] == ["exec", "--json", "--sandbox", "read-only"]


@pytest.mark.slow
def test_an_llm_reviewer_through_the_configured_endpoint(night: Night) -> None:
    from tests.support.servers.fake_openai import FakeOpenAI, json_reply

    with FakeOpenAI(models=["agent-model", "review-model"]) as server:
        server.enqueue(
            json_reply(
                {"verdict": "changes", "reasons": ["step_1.txt: say which attempt"]}, prompt_tokens=500
            ),
        )
        server.set_responder(
            lambda body: json_reply({"verdict": "approve", "reasons": []}, prompt_tokens=400)
        )
        night.setup(
            "  agent: llm\n  model: review-model\n",
            extra=f"llm:\n  base_url: {server.base_url}\n  model: agent-model\n  prices:\n"
            "    review-model:\n      input_per_1m: 100\nreflection:\n  use_llm: false\n",
        )
        assert night.start()[0] == 0
        bodies = server.chat_requests
    assert [body["model"] for body in bodies] == ["review-model"] * 3
    assert "1 Write the greeting" in bodies[0]["messages"][-1]["content"]
    state = night.akira.state()
    assert [(s.step_id, s.attempts, s.review) for s in state.completed_steps] == [
        ("1", 2, "approved"),
        ("2", 1, "approved"),
    ]
    assert state.review_usage.prompt_tokens == 1300 and state.review_usage.calls == 3
    assert state.review_usage.cost_usd == pytest.approx(0.13)
    assert state.usage.cost_usd == pytest.approx(0.13)


@pytest.mark.slow
def test_without_git_the_reviewer_reads_the_files_the_attempt_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = Night(tmp_path, monkeypatch, repository=False)
    plain.akira.write_config(
        "agent:\n  kind: command\n  command: implement\nreview:\n  agent: claude\n" + plain.shared()
    )
    plain.akira.write_task("feat", STEPS)
    plain.verdicts("approve")
    assert plain.start()[0] == 0
    prompt = str(plain.reviews()[0]["prompt"])
    assert "Files the attempt changed (no git here, so no diff): step_1.txt" in prompt
    assert "attempt 1" in prompt
    assert plain.akira.state().completed_steps[0].review == "approved"


CLAUDE_FENCED = json.dumps(
    {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": 'Looked at the parser.\n\n```json\n{\n  "verdict": "changes",\n  "reasons": [\n'
        '    "parser.py: an empty line raises"\n  ]\n}\n```',
        "session_id": "s",
    }
)


@pytest.mark.parametrize(
    ("printed", "verdict", "reasons"),
    [
        (CLAUDE_FENCED, "changes", "- parser.py: an empty line raises"),
        (
            '{"response": "{\\"verdict\\": \\"approve\\", \\"reasons\\": \\"fine\\"}", "stats": {}}',
            "approve",
            "fine",
        ),
        ("Checked both files.\n**VERDICT: approve**\n\n", "approve", "Checked both files."),
        ("VERDICT: changes: the loop never ends", "changes", "the loop never ends"),
        ("It looks fine to me.", None, None),
        ("VERDICT: approve\nbut on second thought, no", None, None),
        ('{"verdict": "maybe", "reasons": []}', None, None),
    ],
)
def test_a_verdict_is_read_from_json_or_a_last_verdict_line(
    printed: str, verdict: str | None, reasons: str | None
) -> None:
    from akira_cli.review.verdict import read_verdict

    found = read_verdict(printed)
    assert (found.verdict if found else None, found.reasons if found else None) == (verdict, reasons)


def test_the_documented_example_config_loads_with_its_reviewer(tmp_path: Path) -> None:
    from akira_cli.config import load_config

    page = (Path(__file__).resolve().parent.parent / "docs" / "review-and-pull-requests.md").read_text()
    part = page.split("## A reviewer per step", 1)[1]
    (tmp_path / "config.yaml").write_text(part.split("```yaml\n", 1)[1].split("```", 1)[0])
    config = load_config(tmp_path, tmp_path / "config.yaml", environ={})
    assert config.review.enabled and config.review.agent == "claude" and config.review.max_rounds == 2


@pytest.mark.slow
def test_on_is_refused_with_what_to_write_instead(night: Night) -> None:
    night.setup("  agent: claude\n  when: on\n")
    done = night.akira.cli("loop", "start", "--task", "Specs/feat/tasks.md")
    assert done.code == 1
    assert "review.when" in done.err and "every, last, or a list of step ids" in done.err
    assert "Traceback" not in done.err


@pytest.mark.slow
def test_a_kill_9_right_after_a_reviewed_commit_keeps_its_review_on_resume(night: Night) -> None:
    night.setup("  agent: claude\n")
    night.verdicts("approve")
    args = ["loop", "start", "--task", "Specs/feat/tasks.md", "--root", str(night.root)]
    died = subprocess.run(
        [sys.executable, "-c", KILL_AT_COMMIT, "1", *args], capture_output=True, timeout=120
    )
    assert died.returncode == 137, died.stderr
    resumed = night.akira.cli("loop", "resume", "--task-id", "feat", timeout=180)
    assert resumed.code == 0, resumed.err
    assert night.subjects() == ["1 Write the greeting", "2 Write the farewell", "feat: done"]
    state = night.akira.state()
    assert [(s.step_id, s.review) for s in state.completed_steps] == [("1", "approved"), ("2", "approved")]
    assert state.reviews == {"approved": 2}
    assert len(night.reviews()) == 2  # step 1 was not reviewed (nor run) again


@pytest.mark.slow
def test_undo_takes_the_steps_reviews_with_them_and_resume_reviews_them_again(night: Night) -> None:
    night.setup("  agent: claude\n")
    night.verdicts("approve")
    assert night.start()[0] == 0
    undone = night.akira.cli("loop", "undo", "--task-id", "feat", "--step", "2")
    assert undone.code == 0, undone.err
    assert night.akira.state().reviews == {"approved": 1}
    night.verdicts("changes", "approve")
    resumed = night.akira.cli("loop", "resume", "--task-id", "feat", timeout=180)
    assert resumed.code == 0, resumed.err
    state = night.akira.state()
    assert [(s.step_id, s.review) for s in state.completed_steps] == [("1", "approved"), ("2", "approved")]
    assert state.reviews == {"approved": 2} and len(night.reviews()) == 4
    assert trailers(night.root, "akira/feat~1")["Akira-Review"] == "approved"


@pytest.mark.slow
def test_an_llm_reviewer_without_an_endpoint_is_one_line_before_any_step(night: Night) -> None:
    night.setup("  agent: llm\n")
    done = night.akira.cli("loop", "start", "--task", "Specs/feat/tasks.md")
    assert done.code == 1, done.err
    lines = [line for line in done.err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "review.agent: llm needs an LLM endpoint" in lines[0], done.err
    assert not (night.tmp / "agent.jsonl").exists()  # no step ran


@pytest.mark.slow
def test_a_reviewer_command_that_does_not_parse_is_one_line(night: Night) -> None:
    night.setup('  agent: "bash -c \'unclosed"\n')
    done = night.akira.cli("loop", "start", "--task", "Specs/feat/tasks.md")
    assert done.code == 1 and "review.agent" in done.err and "not a command line" in done.err, done.err
    assert "Traceback" not in done.err and len(done.err.strip().splitlines()) == 1


@pytest.mark.slow
def test_a_failing_reviewer_cli_still_counts_what_it_used(night: Night) -> None:
    claude = night.tmp / "bin" / "claude"
    claude.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "sys.stdin.read()\n"
        "print(json.dumps({'type': 'result', 'subtype': 'error_during_execution', 'is_error': True,\n"
        "    'result': 'API Error: 500', 'num_turns': 1, 'total_cost_usd': 0.02,\n"
        "    'usage': {'input_tokens': 300, 'output_tokens': 10}}))\n"
        "sys.exit(1)\n"
    )
    night.setup("  agent: claude\n", agent="  max_transient_wait_seconds: 1\n")
    assert night.start()[0] == 0
    state = night.akira.state()
    assert [s.review for s in state.completed_steps] == ["none", "none"]
    waits = [e for e in night.akira.events() if e.type == EventType.TRANSIENT_RETRY]
    runs = 2 + len(waits)  # each step's reviewer ran again after each wait for its provider
    assert waits and state.review_usage.cost_usd == pytest.approx(0.02 * runs)
    assert state.usage.cost_usd == pytest.approx(0.02 * runs)


@pytest.mark.slow
def test_a_rejection_on_the_last_allowed_attempt_completes_the_step_disputed(night: Night) -> None:
    night.setup("  agent: claude\n  max_rounds: 3\n", extra="reflection:\n  max_iterations: 2\n")
    night.verdicts("changes")
    code, err = night.start()
    assert code == 0, err  # never needs_action for a reviewer's opinion alone
    state = night.akira.state()
    assert [(s.step_id, s.attempts, s.review) for s in state.completed_steps] == [
        ("1", 2, "disputed"),
        ("2", 2, "disputed"),
    ]
