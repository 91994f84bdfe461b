"""The reviewer per step (the morning review), in real git repositories with a bare `origin`: rounds of
review, disputed steps, failing reviewers, the reasons in the next prompt, one commit per step
with its `Akira-Review` trailer, the reviewer's usage apart, `review.when` and parallel waves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from akira_cli.events import EventType
from tests.support.git import git, trailers
from tests.support.review_night import STEPS, Night


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


@pytest.mark.slow
def test_the_reviews_reasons_reach_the_next_attempts_prompt(night: Night) -> None:
    night.setup("  agent: claude\n")
    night.verdicts("changes", "approve")
    assert night.start()[0] == 0
    prompts = [p for p in night.prompts() if p["step"] == "1"]
    assert [p["attempt"] for p in prompts] == ["1", "2"]
    assert "it lacks the name" not in prompts[0]["prompt"]
    assert "the reviewer asked for changes" in prompts[1]["prompt"]
    assert "greeting.txt: it lacks the name; write 'hello, world'" in prompts[1]["prompt"]


@pytest.mark.slow
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
    assert "1 Write the greeting (2 attempts)" in shown and "review: disputed" in shown


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_verdict_line_is_read_and_its_reasons_kept(night: Night) -> None:
    night.setup("  agent: claude\n")
    night.verdicts("line_changes", "line")
    assert night.start()[0] == 0
    state = night.akira.state()
    first = state.steps["1"].attempts[0]
    assert first.review is not None and first.review.verdict == "changes"
    assert first.review.reasons == "Missing the empty case.\nhandle an empty name"
    assert state.completed_steps[0].review_note == "The step writes the file the requirement asks for."


@pytest.mark.slow
def test_the_reviewers_usage_counts_toward_the_budget_and_is_reported_apart(night: Night) -> None:
    three = STEPS + "- [ ] 3. Write the third\n  - Exists: `step_3.txt`\n"
    night.setup("  agent: claude\n", three, "budget:\n  max_cost_usd: 0.08\n")
    night.verdicts("approve")
    code, _ = night.start()
    assert code == 4  # two reviews at $0.05 used the budget up before the third step
    state = night.akira.state()
    assert [s.step_id for s in state.completed_steps] == ["1", "2"]
    assert state.review_usage.cost_usd == pytest.approx(0.10)
    assert state.review_usage.total_tokens == 2 * 840 and state.review_usage.calls == 2
    assert state.usage.cost_usd == pytest.approx(0.10)  # the agent (a plain command) reported none
    assert "budget" in state.stop_reason
    status = json.loads(night.akira.cli("loop", "status", "--task-id", state.task_id, "--json").out)
    assert status["review_tokens"] == 1680 and status["review_cost_usd"] == 0.1
    assert status["tokens"] == 1680


@pytest.mark.slow
def test_the_report_shows_the_reviewers_usage_apart(night: Night) -> None:
    night.setup("  agent: claude\n")
    night.verdicts("approve")
    assert night.start()[0] == 0
    report = night.report()
    assert "- **Reviewer**: 1680 tokens, $0.1000, 2 reviews" in report
    assert "- **Agent**: 0 tokens, $0.0000" in report
    assert "`; review: approved (the greeting is written as asked)" in report
    assert "## Needs a person's look" not in report


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_no_reviewer_by_default(night: Night) -> None:
    night.setup("  max_rounds: 2\n")
    night.verdicts("changes")
    assert night.start()[0] == 0
    assert night.reviews() == []
    assert "Akira-Review" not in git(night.root, "log", "-1", "--format=%B", "akira/feat~2")


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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
        "checks:\n  - run: test -f step_1.txt\n    name: greeting\n" + night.shared()
    )
    done = night.akira.cli("loop", "start", "--task", "Specs/again/tasks.md", timeout=180)
    assert done.code == 0, done.err
    last = night.reviews()[2:]
    assert len(last) == 1 and "3 Checkpoint - Ensure all tests pass" in str(last[0]["prompt"])
    assert "+attempt 1" in str(last[0]["prompt"])  # the branch's steps, though the checkpoint changed nothing
