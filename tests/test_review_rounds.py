"""The reviewer's second round and the real CLIs as reviewers, replayed (tests/cli_replay.py):
a retry is reviewed on the step's whole diff, a reviewer's usage limit and its provider's 529
are waited out as the agent's are, what a failing reviewer said is its message (not its JSON),
a verdict counts though the CLI refused a tool, and gemini reviews in plan mode."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from cli_replay import install
from conftest import shared_section
from review_night import Night
from test_git_runs import git, trailers

from akira_cli.events import EventType

pytestmark = pytest.mark.slow

ONCE = """\
#!{python}
import os, pathlib, sys
sys.stdin.read()
step, attempt = os.environ["AKIRA_STEP_ID"], os.environ["AKIRA_ATTEMPT"]
if attempt == "1":  # a retry changes nothing: the first attempt's file is kept
    pathlib.Path(f"step_{{step}}.txt").write_text(f"attempt {{attempt}}\\n")
"""


@pytest.fixture
def night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Night:
    return Night(tmp_path, monkeypatch)


class Replayed:
    """The replaying fakes of the real CLIs first on PATH, as the reviewer."""

    def __init__(self, night: Night, monkeypatch: pytest.MonkeyPatch) -> None:
        self.night, self.log = night, night.tmp / "replayed.jsonl"
        for name, value in install(night.tmp / "replay").items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("FAKE_LOG", str(self.log))
        monkeypatch.setenv("FAKE_SCRIPT", str(night.tmp / "cases.json"))

    def setup(self, reviewer: str, *cases: str, agent: str = "") -> None:
        (self.night.tmp / "cases.json").write_text(json.dumps(list(cases)))
        section = shared_section(self.night.tmp)  # the fakes read the test data
        self.night.akira.write_config(
            f"agent:\n  kind: command\n  command: implement\n{agent}git:\n  push: origin\n"
            f"review:\n  agent: {reviewer}\n{section}"
        )
        self.night.akira.write_task("feat", "- [ ] 1. Write the greeting\n  - Exists: `step_1.txt`\n")
        git(self.night.root, "add", "-A")
        git(self.night.root, "commit", "-q", "-m", "base")

    def calls(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def warnings(self) -> list[str]:
        return [str(e.data["message"]) for e in self.night.akira.events() if e.type == EventType.WARNING]


@pytest.fixture
def replayed(night: Night, monkeypatch: pytest.MonkeyPatch) -> Replayed:
    return Replayed(night, monkeypatch)


def test_a_retry_that_changed_nothing_is_reviewed_on_the_steps_whole_diff(night: Night) -> None:
    (night.tmp / "bin" / "implement").write_text(ONCE.format(python=sys.executable))
    night.setup("  agent: claude\n")
    night.verdicts("changes", "approve")
    code, err = night.start()
    assert code == 0, err
    first, second = night.reviews()[:2]
    assert "+attempt 1" in str(first["prompt"])
    # the second round sees what the step's commit will hold, not "no change" since the retry began
    assert "+attempt 1" in str(second["prompt"]) and "(no change to any file)" not in str(second["prompt"])
    assert git(night.root, "show", "akira/feat~1:step_1.txt") == "attempt 1"


@pytest.mark.timeout(120)
def test_a_reviewers_529_and_usage_limit_are_waited_out_as_the_agents_are(replayed: Replayed) -> None:
    replayed.setup("claude", "overloaded", "limit_soon", "review_approve")
    code, err = replayed.night.start()
    assert code == 0, err
    assert [c["case"] for c in replayed.calls()] == ["overloaded", "limit_soon", "review_approve"]
    state = replayed.night.akira.state()
    assert [(s.step_id, s.attempts, s.review) for s in state.completed_steps] == [("1", 1, "approved")]
    assert trailers(replayed.night.root, "akira/feat~1")["Akira-Review"] == "approved"
    kinds = [e.type for e in replayed.night.akira.events()]
    assert kinds.count(EventType.TRANSIENT_RETRY) == 1 and kinds.count(EventType.USAGE_LIMIT) == 1
    assert state.total_failures == 0 and state.waiting_until is None
    assert state.review_usage.calls == 1 + 2  # the review, and the two runs that were waited out


@pytest.mark.parametrize(
    ("case", "agent", "said"),
    [
        (
            "plan_limit",
            "  max_limit_wait_seconds: 0\n",
            "You've hit your session limit · resets 8:02pm (UTC)",
        ),
        ("overloaded", "  max_transient_wait_seconds: 0\n", "API Error: Repeated 529 Overloaded errors."),
    ],
)
def test_a_reviewer_still_failing_is_none_with_what_the_cli_said(
    replayed: Replayed, case: str, agent: str, said: str
) -> None:
    replayed.setup("claude", case, agent=agent)
    code, err = replayed.night.start()
    assert code == 0, err
    assert replayed.night.akira.state().completed_steps[0].review == "none"
    warning = next(w for w in replayed.warnings() if "gave no verdict" in w)
    assert said in warning and "exited 1" in warning, warning
    assert '"type"' not in warning and "cache_creation" not in warning and "ephe" not in warning
    look = replayed.night.report().split("## Needs a person's look", 1)[1]
    assert said[:30] in look


def test_a_verdict_counts_though_claude_refused_a_tool_in_plan_mode(replayed: Replayed) -> None:
    replayed.setup("claude", "review_denied")
    code, err = replayed.night.start()
    assert code == 0, err
    assert replayed.calls()[0]["argv"][-2:] == ["--permission-mode", "plan"]
    state = replayed.night.akira.state()
    assert [(s.step_id, s.review) for s in state.completed_steps] == [("1", "approved")]
    assert state.completed_steps[0].review_note.startswith("I could not leave a note in the work tree")


def test_gemini_reviews_in_plan_mode_read_only_by_its_own_means(replayed: Replayed) -> None:
    replayed.setup("gemini", "review_approve")
    code, err = replayed.night.start()
    assert code == 0, err
    argv = replayed.calls()[0]["argv"]
    assert isinstance(argv, list)
    modes = [argv[i + 1] for i, word in enumerate(argv[:-1]) if word == "--approval-mode"]
    assert modes == ["plan"] and "--yolo" not in argv
    assert replayed.night.akira.state().completed_steps[0].review == "approved"


def test_a_reviewer_runs_count_as_its_calls_whatever_turns_the_cli_took(night: Night) -> None:
    night.setup("  agent: claude\n  when: last\n")
    night.verdicts("approve")
    assert night.start()[0] == 0
    state = night.akira.state()
    assert len(night.reviews()) == 1 and state.review_usage.calls == 1  # its JSON says num_turns: 2
    assert "- **Reviewer**: 840 tokens, $0.0500, 1 review\n" in night.report()


def test_no_preset_folder_is_made_for_a_reviewer_that_is_not_installed(
    night: Night, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = night.tmp / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    night.setup("  agent: codex\n")
    code, err = night.start()
    assert code == 0, err
    assert not (home / ".codex").exists(), sorted(os.listdir(home))
    assert [s.review for s in night.akira.state().completed_steps] == ["none", "none"]


def test_a_command_reviewer_gets_its_reviewer_line_in_the_report(night: Night) -> None:
    night.setup("  agent: \"bash -c 'cat >/dev/null; echo VERDICT: approve'\"\n")
    code, err = night.start()
    assert code == 0, err
    report = night.report()
    assert "- **Agent**: 0 tokens, $0.0000\n- **Reviewer**: 0 tokens, $0.0000, 2 reviews\n" in report
