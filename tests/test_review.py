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
    modes = json.loads(held.read())
    mode = modes.pop(0) if len(modes) > 1 else modes[0]
    held.seek(0)
    held.truncate()
    held.write(json.dumps(modes))
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

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        root = tmp_path / "repo"
        assert main(["init", str(root)]) == 0
        self.akira = Akira(root)
        self.root, self.tmp = root, tmp_path
        origin = tmp_path / "origin.git"
        git(tmp_path, "init", "-q", "--bare", str(origin))
        git(root, "init", "-q", "-b", "main")
        git(root, "config", "user.name", "Person")
        git(root, "config", "user.email", "person@example.com")
        git(root, "remote", "add", "origin", str(origin))
        self.origin = origin
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

    def verdicts(self, *modes: str) -> None:
        (self.tmp / "script.json").write_text(json.dumps(list(modes)))

    def start(self) -> tuple[int, str]:
        done = self.akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", timeout=180)
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
    code, err = night.start()
    assert code == 0, err
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
    assert "it lacks the name" in look
    status = json.loads(night.akira.cli("loop", "status", "--task-id", state.task_id, "--json").out)
    assert status["reviews"] == {"disputed": 2}


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
    assert "review: approved" in report
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
