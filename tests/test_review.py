"""The reviewer per step (SPEC 16), in real git repositories with a bare `origin`: the
implementing agent is a command that writes files and logs its prompt, the reviewer a fake
`claude` first on PATH that prints what `claude -p --output-format json` prints (one result
object, the verdict inside its `result`)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from conftest import Akira
from test_git_runs import git, trailers

from akira_cli.cli import main
from akira_cli.events import EventType

REVIEWER = """\
#!{python}
import fcntl, json, os, sys, time
prompt = sys.stdin.read()
with open(os.environ["REVIEW_SCRIPT"], "r+") as held:  # one mode per call, the last one sticks
    fcntl.flock(held, fcntl.LOCK_EX)
    script = json.loads(held.read())  # a list, or a list per step (parallel steps)
    modes = script.get(os.environ["AKIRA_STEP_ID"], ["approve"]) if isinstance(script, dict) else script
    mode = modes.pop(0) if len(modes) > 1 else modes[0]
    held.seek(0)
    held.truncate()
    held.write(json.dumps(script))
with open(os.environ["REVIEW_LOG"], "a") as log:
    log.write(json.dumps({{"argv": sys.argv[1:], "mode": mode, "prompt": prompt}}) + "\\n")
if mode == "crash":
    sys.stderr.write("API Error: Connection error.\\n")
    sys.exit(1)
if mode == "hang":
    time.sleep(120)
answers = {{
    "approve": json.dumps({{"verdict": "approve", "reasons": ["the greeting is written as asked"]}}),
    "changes": json.dumps({{"verdict": "changes",
        "reasons": ["greeting.txt: it lacks the name; write 'hello, world'"]}}),
    "line": "The step writes the file the requirement asks for.\\nVERDICT: approve",
    "line_changes": "Missing the empty case.\\nVERDICT: changes - handle an empty name",
    "babble": "I had a look and it seems reasonable to me.",
}}
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "duration_ms": 2315,
    "duration_api_ms": 2210, "num_turns": 2, "result": answers[mode], "session_id": "5f1c-review",
    "total_cost_usd": 0.05, "usage": {{"input_tokens": 700, "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 100, "output_tokens": 40, "service_tier": "standard"}},
    "permission_denials": [], "uuid": "b2d4"}}))
"""
AGENT = """\
#!{python}
import json, os, pathlib, sys
prompt = sys.stdin.read()
step, attempt = os.environ["AKIRA_STEP_ID"], os.environ["AKIRA_ATTEMPT"]
with open(os.environ["AGENT_LOG"], "a") as log:
    log.write(json.dumps({{"step": step, "attempt": attempt, "prompt": prompt}}) + "\\n")
pathlib.Path(f"step_{{step}}.txt").write_text(f"attempt {{attempt}}\\n")
"""
STEPS = """\
- [ ] 1. Write the greeting
  - Exists: `step_1.txt`
  - _Requirements: 1.1_
- [ ] 2. Write the farewell
  - Exists: `step_2.txt`
"""


class Night:
    """A workspace in a git repository with a bare origin, the fake agent and reviewer on PATH."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, repository: bool = True) -> None:
        root = tmp_path / "repo"
        assert main(["init", str(root)]) == 0
        self.akira = Akira(root)
        self.root, self.tmp = root, tmp_path
        self.origin = tmp_path / "origin.git"
        if repository:
            git(tmp_path, "init", "-q", "--bare", str(self.origin))
            git(root, "init", "-q", "-b", "main")
            git(root, "config", "user.name", "Person")
            git(root, "config", "user.email", "person@example.com")
            git(root, "remote", "add", "origin", str(self.origin))
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        for name, body in (("claude", REVIEWER), ("implement", AGENT)):
            path = bin_dir / name
            path.write_text(body.format(python=sys.executable))
            path.chmod(path.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
        monkeypatch.setenv("REVIEW_LOG", str(tmp_path / "reviews.jsonl"))
        monkeypatch.setenv("AGENT_LOG", str(tmp_path / "agent.jsonl"))
        monkeypatch.setenv("REVIEW_SCRIPT", str(tmp_path / "script.json"))

    def setup(self, review: str, steps: str = STEPS, extra: str = "") -> None:
        self.akira.write_config(
            f"agent:\n  kind: command\n  command: implement\ngit:\n  push: origin\nreview:\n{review}{extra}"
        )
        self.akira.write_task("feat", steps)
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", "base")
        git(self.root, "push", "-q", "origin", "main")

    def verdicts(self, *modes: str, **by_step: list[str]) -> None:
        script = by_step or list(modes)
        (self.tmp / "script.json").write_text(json.dumps(script))

    def start(self, *args: str) -> tuple[int, str]:
        done = self.akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", *args, timeout=180)
        return done.code, done.err

    def reviews(self) -> list[dict[str, object]]:
        log = self.tmp / "reviews.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def prompts(self) -> list[dict[str, str]]:
        log = self.tmp / "agent.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()]

    def report(self) -> str:
        return (self.root / "Logs" / "completion_reports" / f"{self.akira.task_id()}.md").read_text()

    def subjects(self, where: Path | None = None) -> list[str]:
        return git(where or self.root, "log", "--reverse", "--format=%s", "main..akira/feat").splitlines()


@pytest.fixture
def night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Night:
    return Night(tmp_path, monkeypatch)


def test_a_rejection_then_an_approval_one_commit_per_step_with_its_trailer(night: Night) -> None:
    night.setup("  agent: claude\n  model: claude-sonnet-4-5\n")
    night.verdicts("changes", "approve")
    code, err = night.start()
    assert code == 0, err
    # one commit per step (the rejected attempt made none), pushed to the bare origin as well
    assert night.subjects() == ["1 Write the greeting", "2 Write the farewell", "feat: done"]
    assert night.subjects(night.origin) == night.subjects()
    assert trailers(night.origin, "akira/feat~2")["Akira-Review"] == "approved"
    assert trailers(night.root, "akira/feat~1")["Akira-Review"] == "approved"
    state = night.akira.state()
    assert [(s.step_id, s.attempts, s.review) for s in state.completed_steps] == [
        ("1", 2, "approved"),
        ("2", 1, "approved"),
    ]
    first = state.steps["1"].attempts[0]
    assert first.outcome == "failure" and first.review is not None and first.review.verdict == "changes"
    assert first.evaluation is not None and first.evaluation.complete  # its checks passed
    # the reviewer ran read-only, with the model asked for, and saw the step and its check
    reviews = night.reviews()
    assert len(reviews) == 3
    assert reviews[0]["argv"] == [
        "-p", "--output-format", "json", "--permission-mode", "plan", "--model", "claude-sonnet-4-5",
    ]  # fmt: skip
    prompt = str(reviews[0]["prompt"])
    assert "1 Write the greeting" in prompt and "Requirement 1.1" in prompt
    assert "Exists `step_1.txt`" in prompt or "step_1.txt" in prompt
    assert "+attempt 1" in prompt  # the diff of what the attempt wrote
    assert "+attempt 2" in str(reviews[1]["prompt"]) and "it lacks the name" in str(reviews[1]["prompt"])
    events = [e for e in night.akira.events() if e.type == EventType.REVIEW]
    assert [e.data["verdict"] for e in events] == ["changes", "approved", "approved"]


def test_the_reviews_reasons_reach_the_next_attempts_prompt(night: Night) -> None:
    night.setup("  agent: claude\n")
    night.verdicts("changes", "approve")
    assert night.start()[0] == 0
    prompts = [p for p in night.prompts() if p["step"] == "1"]
    assert [p["attempt"] for p in prompts] == ["1", "2"]
    assert "it lacks the name" not in prompts[0]["prompt"]
    assert "the reviewer asked for changes" in prompts[1]["prompt"]
    assert "greeting.txt: it lacks the name; write 'hello, world'" in prompts[1]["prompt"]


def test_a_step_rejected_max_rounds_times_completes_disputed_for_a_person(night: Night) -> None:
    night.setup("  agent: claude\n  max_rounds: 2\n")
    night.verdicts("changes")
    done = night.akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", timeout=180)
    code, err = done.code, done.err
    assert code == 0, err
    shown = [line for line in done.out.splitlines() if " review attempt=" in line]
    assert len(shown) == 4 and "verdict=disputed" in shown[-1], done.out
    assert night.subjects() == ["1 Write the greeting", "2 Write the farewell", "feat: done"]
    assert trailers(night.root, "akira/feat~2")["Akira-Review"] == "disputed"
    assert trailers(night.root, "akira/feat~1")["Akira-Review"] == "disputed"
    state = night.akira.state()
    assert [(s.step_id, s.attempts, s.review) for s in state.completed_steps] == [
        ("1", 2, "disputed"),
        ("2", 2, "disputed"),
    ]
    report = night.report()
    look = report.split("## Needs a person's look", 1)[1].split("##", 1)[0]
    assert "- 1: Write the greeting: disputed" in look and "- 2: Write the farewell: disputed" in look
    assert "disputed, the reviewer still asks: greeting.txt: it lacks the name" in look
    status = json.loads(night.akira.cli("loop", "status", "--task-id", state.task_id, "--json").out)
    assert status["reviews"] == {"disputed": 2}
    progress = json.loads(night.akira.cli("loop", "progress", "--task-id", state.task_id, "--json").out)
    assert [(step["id"], step["review"]) for step in progress["steps"]] == [
        ("1", "disputed"),
        ("2", "disputed"),
    ]
    shown = night.akira.cli("loop", "progress", "--task-id", state.task_id).out
    assert "1 Write the greeting (2 attempt(s))" in shown and "review: disputed" in shown


@pytest.mark.parametrize("mode", ["crash", "babble", "hang"])
def test_a_reviewer_that_fails_leaves_none_and_a_warning_never_an_approval(night: Night, mode: str) -> None:
    night.setup("  agent: claude\n  timeout_seconds: 3\n")
    night.verdicts(mode)
    code, err = night.start()
    assert code == 0, err
    assert trailers(night.root, "akira/feat~2")["Akira-Review"] == "none"
    state = night.akira.state()
    assert [(s.step_id, s.attempts, s.review) for s in state.completed_steps] == [
        ("1", 1, "none"),
        ("2", 1, "none"),
    ]
    warnings = [e.data["message"] for e in night.akira.events() if e.type == EventType.WARNING]
    assert any("gave no verdict" in str(m) and "Akira-Review: none" in str(m) for m in warnings), warnings
    assert "not reviewed" in night.report().split("## Needs a person's look", 1)[1]


def test_a_verdict_line_is_read_and_its_reasons_kept(night: Night) -> None:
    night.setup("  agent: claude\n")
    night.verdicts("line_changes", "line")
    assert night.start()[0] == 0
    state = night.akira.state()
    first = state.steps["1"].attempts[0]
    assert first.review is not None and first.review.verdict == "changes"
    assert first.review.reasons == "Missing the empty case.\nhandle an empty name"
    assert state.completed_steps[0].review_note == "The step writes the file the requirement asks for."


def test_the_reviewers_usage_counts_toward_the_budget_and_is_reported_apart(night: Night) -> None:
    three = STEPS + "- [ ] 3. Write the third\n  - Exists: `step_3.txt`\n"
    night.setup("  agent: claude\n", three, "budget:\n  max_cost_usd: 0.08\n")
    night.verdicts("approve")
    code, _ = night.start()
    assert code == 4  # two reviews at $0.05 used the budget up before the third step
    state = night.akira.state()
    assert [s.step_id for s in state.completed_steps] == ["1", "2"]
    assert state.review_usage.cost_usd == pytest.approx(0.10)
    assert state.review_usage.total_tokens == 2 * 840 and state.review_usage.calls == 4
    assert state.usage.cost_usd == pytest.approx(0.10)  # the agent (a plain command) reported none
    assert "budget" in state.stop_reason
    status = json.loads(night.akira.cli("loop", "status", "--task-id", state.task_id, "--json").out)
    assert status["review_tokens"] == 1680 and status["review_cost_usd"] == 0.1
    assert status["tokens"] == 1680


def test_the_report_shows_the_reviewers_usage_apart(night: Night) -> None:
    night.setup("  agent: claude\n")
    night.verdicts("approve")
    assert night.start()[0] == 0
    report = night.report()
    assert "- **Reviewer**: 1680 tokens, $0.1000, 4 call(s)" in report
    assert "- **Agent**: 0 tokens, $0.0000" in report
    assert "`; review: approved (the greeting is written as asked)" in report
    assert "## Needs a person's look" not in report


def test_review_when_last_reviews_only_the_last_step_on_the_whole_branch(night: Night) -> None:
    night.setup("  agent: claude\n  when: last\n")
    night.verdicts("approve")
    assert night.start()[0] == 0
    reviews = night.reviews()
    assert len(reviews) == 1
    prompt = str(reviews[0]["prompt"])
    assert "2 Write the farewell" in prompt and "whole task branch" in prompt
    assert "step_1.txt" in prompt and "step_2.txt" in prompt  # the branch's diff and the step's
    assert "Akira-Review" not in git(night.root, "log", "-1", "--format=%B", "akira/feat~2")
    assert trailers(night.root, "akira/feat~1")["Akira-Review"] == "approved"


def test_review_when_a_list_of_step_ids(night: Night) -> None:
    night.setup('  agent: claude\n  when: ["2"]\n')
    night.verdicts("changes", "approve")
    assert night.start()[0] == 0
    state = night.akira.state()
    assert [(s.step_id, s.attempts, s.review) for s in state.completed_steps] == [
        ("1", 1, None),
        ("2", 2, "approved"),
    ]
    assert len(night.reviews()) == 2


def test_no_reviewer_by_default(night: Night) -> None:
    night.setup("  max_rounds: 2\n")
    night.verdicts("changes")
    assert night.start()[0] == 0
    assert night.reviews() == []
    assert "Akira-Review" not in git(night.root, "log", "-1", "--format=%B", "akira/feat~2")


def test_parallel_steps_are_reviewed_in_their_worktrees_before_they_land(night: Night) -> None:
    steps = "".join(f"- [ ] {n}. [P] Write part {n}\n  - Exists: `step_{n}.txt`\n" for n in (1, 2, 3))
    night.setup("  agent: claude\n", steps, "autonomous_loop:\n  parallel: 3\n")
    night.verdicts(**{"1": ["changes", "approve"], "2": ["approve"], "3": ["crash"]})
    code, err = night.start()
    assert code == 0, err
    # 2 and 3 land in the wave; 1, rejected there, runs again after it and lands last
    assert night.subjects() == ["2 Write part 2", "3 Write part 3", "1 Write part 1", "feat: done"]
    assert [trailers(night.root, f"akira/feat~{n}")["Akira-Review"] for n in (3, 2, 1)] == [
        "approved",
        "none",
        "approved",
    ]
    state = night.akira.state()
    assert sorted((s.step_id, s.attempts, s.review) for s in state.completed_steps) == [
        ("1", 2, "approved"),
        ("2", 1, "approved"),
        ("3", 1, "none"),
    ]
    first = [r for r in night.reviews() if "1 Write part 1" in str(r["prompt"])]
    assert len(first) == 2 and "+attempt 1" in str(first[0]["prompt"])  # the diff in its worktree
    retried = [p for p in night.prompts() if p["step"] == "1" and p["attempt"] == "2"]
    assert "it lacks the name" in retried[0]["prompt"]


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


def test_a_codex_reviewer_reads_its_agent_message(night: Night) -> None:
    codex = night.tmp / "bin" / "codex"
    codex.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "sys.stdin.read()\n"
        "open(os.environ['REVIEW_LOG'], 'a').write(json.dumps({'argv': sys.argv[1:], 'prompt': ''}) + '\\n')\n"
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


def test_an_llm_reviewer_through_the_configured_endpoint(night: Night) -> None:
    from akira_cli.testing import FakeOpenAI
    from akira_cli.testing.fake_openai import json_reply

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


def test_without_git_the_reviewer_reads_the_files_the_attempt_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = Night(tmp_path, monkeypatch, repository=False)
    plain.akira.write_config("agent:\n  kind: command\n  command: implement\nreview:\n  agent: claude\n")
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


def test_the_readme_example_config_loads_with_its_reviewer(tmp_path: Path) -> None:
    from akira_cli.config import load_config

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    part = readme.split("## The morning review", 1)[1].split("### A reviewer per step", 1)[1]
    (tmp_path / "config.yaml").write_text(part.split("```yaml\n", 1)[1].split("```", 1)[0])
    config = load_config(tmp_path, tmp_path / "config.yaml", environ={})
    assert config.review.enabled and config.review.agent == "claude" and config.review.max_rounds == 2


def test_on_is_refused_with_what_to_write_instead(night: Night) -> None:
    night.setup("  agent: claude\n  when: on\n")
    done = night.akira.cli("loop", "start", "--task", "Specs/feat/tasks.md")
    assert done.code == 1
    assert "review.when" in done.err and "every, last, or a list of step ids" in done.err
    assert "Traceback" not in done.err


def test_review_when_last_and_the_task_ends_with_a_parallel_wave(night: Night) -> None:
    steps = (
        STEPS.replace("2. Write", "2. [P] Write") + "- [ ] 3. [P] Write the third\n  - Exists: `step_3.txt`\n"
    )
    night.setup("  agent: claude\n  when: last\n", steps, "autonomous_loop:\n  parallel: 2\n")
    night.verdicts("approve")
    assert night.start()[0] == 0
    reviewed = sorted(
        str(r["prompt"]).split("## The step\n", 1)[1].split("\n", 1)[0] for r in night.reviews()
    )
    assert reviewed == ["2 Write the farewell", "3 Write the third"]  # each last step, none skipped
    state = night.akira.state()
    assert sorted((s.step_id, s.review) for s in state.completed_steps) == [
        ("1", None),
        ("2", "approved"),
        ("3", "approved"),
    ]


def test_a_kill_9_right_after_a_reviewed_commit_keeps_its_review_on_resume(night: Night) -> None:
    import subprocess

    from test_git_runs import KILL_AT_COMMIT

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


def test_a_plan_ending_with_a_checkpoint_is_reviewed_there_on_the_whole_branch(night: Night) -> None:
    steps = STEPS + "- [ ] 3. Checkpoint - Ensure all tests pass\n"
    night.setup("  agent: claude\n", steps, "checks:\n  - run: test -f step_1.txt\n    name: greeting\n")
    night.verdicts("approve")
    assert night.start()[0] == 0
    assert len(night.reviews()) == 2  # steps 1 and 2; the checkpoint changes nothing to review
    night.akira.write_task("again", steps)
    git(night.root, "switch", "-q", "main")
    git(night.root, "add", "-A")
    git(night.root, "commit", "-q", "-m", "another feature")
    night.akira.write_config(
        "agent:\n  kind: command\n  command: implement\nreview:\n  agent: claude\n  when: last\n"
        "checks:\n  - run: test -f step_1.txt\n    name: greeting\n"
    )
    done = night.akira.cli("loop", "start", "--task", "Specs/again/tasks.md", timeout=180)
    assert done.code == 0, done.err
    last = night.reviews()[2:]
    assert len(last) == 1 and "3 Checkpoint - Ensure all tests pass" in str(last[0]["prompt"])
    assert "+attempt 1" in str(last[0]["prompt"])  # the branch's steps, though the checkpoint changed nothing


def test_an_llm_reviewer_without_an_endpoint_is_one_line_before_any_step(night: Night) -> None:
    night.setup("  agent: llm\n")
    done = night.akira.cli("loop", "start", "--task", "Specs/feat/tasks.md")
    assert done.code == 1, done.err
    lines = [line for line in done.err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "review.agent: llm needs an LLM endpoint" in lines[0], done.err
    assert not (night.tmp / "agent.jsonl").exists()  # no step ran
