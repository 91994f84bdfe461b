"""Following a pull request, part by part: the failure signature (noise out, the failure in),
the job log as akira keeps it, the watching's decisions, the `follow:` section, and GitLab's side
through a fake `glab` that replays GitLab's answers (written from GitLab's API documentation:
no glab to capture from here), checked for the argv it is given."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from akira_cli import redaction
from akira_cli.config import load_config
from akira_cli.errors import AkiraError
from akira_cli.follow.forge import Check, Comment, Note, Seen
from akira_cli.follow.glab import Glab
from akira_cli.follow.signature import LOG_LINES, first_failing_line, log_tail, signature
from akira_cli.follow.trust import asking
from akira_cli.follow.watch import Fix, GiveUp, Green, ReadLogs, Wait, decide
from akira_cli.sections import FollowSettings
from akira_cli.state.follow import PullRequestWatch
from tests.support.follow import log

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
HEAD = "1f2e3d4c5b6a79881726354453627180a9b8c7d6"


def test_the_same_failure_with_other_timestamps_durations_ids_and_lines_has_one_signature() -> None:
    assert signature("test", log(1)) == signature("test", log(2)) == signature("test", log(7))
    assert signature("test", log(1)) != signature("lint", log(1))  # the check's name counts
    other = log(1).replace("assert 0 == 4", "assert 1 == 4")
    assert signature("test", other) != signature("test", log(1))  # the failing lines count
    quiet = log(1) + "2030-01-01T00:00:00Z collected 12 items\n"
    assert signature("test", quiet) == signature("test", log(1))  # a line that tells no failure does not


@pytest.mark.parametrize(
    "summary", ["Found 1 error.", "1 failed in 0.2s", "Error: Process completed with exit code 1."]
)
def test_a_summary_line_alone_never_makes_two_failures_the_same(summary: str) -> None:
    first = f"2030-01-01T00:00:00Z calc.py:3:1: W999 the first finding\n2030-01-01T00:00:00Z {summary}\n"
    second = f"2030-01-02T00:00:00Z calc.py:3:1: W998 another finding\n2030-01-02T00:00:00Z {summary}\n"
    assert signature("lint", first) != signature("lint", second)
    assert first_failing_line(second) == "calc.py:3:1: W998 another finding"
    quiet = [f"building\nstep {n} printed this\n{summary}\n" for n in ("one", "two")]
    assert signature("lint", quiet[0]) != signature("lint", quiet[1])  # what came before it counts


def test_the_kept_log_is_its_last_lines_redacted_without_colours() -> None:
    redaction.register(["ghp_0123456789abcdefSECRET"])
    lines = [f"\x1b[31mline {n}\x1b[0m" for n in range(500)] + ["token ghp_0123456789abcdefSECRET leaked"]
    kept = log_tail("\n".join(lines))
    assert len(kept.splitlines()) == LOG_LINES
    assert kept.splitlines()[0] == "line 301" and "\x1b" not in kept
    assert "ghp_0123456789abcdefSECRET" not in kept and "token *** leaked" in kept
    assert first_failing_line(log(3)) == "E       assert 0 == 4"


def watch(**given: object) -> PullRequestWatch:
    pushed = (NOW - timedelta(minutes=1)).isoformat()
    return PullRequestWatch.model_validate({"url": "u", "head": HEAD, "pushed_at": pushed, **given})


SETTINGS = FollowSettings(max_wait_minutes=10)


def test_pending_checks_are_waited_for_until_max_wait_minutes_after_the_last_push() -> None:
    seen = Seen(HEAD, [Check("test", "pending"), Check("lint", "pending"), Check("docs", "pass")])
    assert decide(seen, watch(), SETTINGS, NOW) == Wait(2, "waiting for 2 checks")
    late = watch(pushed_at=(NOW - timedelta(minutes=11)).isoformat())
    gave_up = decide(seen, late, SETTINGS, NOW)
    assert isinstance(gave_up, GiveUp) and "pending: test, lint" in gave_up.why
    assert isinstance(decide(Seen(HEAD), watch(), SETTINGS, NOW), Wait)  # none reported yet
    stale = decide(Seen("0" * 40, [Check("test", "fail")]), watch(), SETTINGS, NOW)
    assert isinstance(stale, Wait) and "not akira's push" in stale.why  # the forge is behind


def test_failed_checks_need_their_logs_then_make_a_round_unless_they_fail_the_same_way_again() -> None:
    seen = Seen(HEAD, [Check("test", "fail"), Check("lint", "pass")])
    assert decide(seen, watch(), SETTINGS, NOW) == ReadLogs([Check("test", "fail")])
    seen.logs = {"test": log(1)}
    fix = decide(seen, watch(), SETTINGS, NOW)
    assert isinstance(fix, Fix) and [c.name for c in fix.checks] == ["test"]
    assert fix.signatures == {"test": signature("test", log(1))} and fix.logs == {"test": log(1)}
    again = Seen(HEAD, [Check("test", "fail")], logs={"test": log(2)})
    same = decide(again, watch(round=1, seen=fix.signatures), SETTINGS, NOW)
    assert isinstance(same, GiveUp) and "failed the same way in two rounds: E       assert 0 == 4" in same.why
    assert same.log == log(2)
    spent = decide(seen, watch(round=3, max_rounds=3), SETTINGS, NOW)
    assert isinstance(spent, GiveUp) and spent.why.startswith("3 fix rounds spent")


def test_comments_by_people_are_work_until_answered_and_green_needs_both() -> None:
    comment = Comment("t1", "t1", "thread", (Note("c1", "octo", "rename it", "OWNER"),), "calc.py", 1)
    seen = Seen(HEAD, [Check("test", "pass")], [comment])
    assert decide(seen, watch(), SETTINGS, NOW) == Fix([], [comment], {}, {})
    assert decide(seen, watch(answered=[comment.key]), SETTINGS, NOW) == Green()
    edited = Comment("t1", "t1", "thread", (Note("c1", "octo", "rename it to sum", "OWNER", "", "2030"),))
    assert decide(
        Seen(HEAD, [Check("test", "pass")], [edited]), watch(answered=[comment.key]), SETTINGS, NOW
    ) == Fix([], [edited], {}, {})  # an edit is a new version: work again
    reviews_off = FollowSettings(reviews=False)
    assert decide(seen, watch(), reviews_off, NOW) == Green()
    checks_off = FollowSettings(checks=False, reviews=False)
    assert decide(Seen(HEAD, [Check("test", "fail")]), watch(), checks_off, NOW) == Green()


def test_the_follow_section_is_off_by_default_and_refuses_unknown_keys(tmp_path: Path) -> None:
    assert load_config(tmp_path, environ={}).follow is None
    config = tmp_path / "config" / "autonomous_loop.yaml"
    config.parent.mkdir()
    config.write_text("follow:\n  max_wait_minutes: 0.5\n")
    follow = load_config(tmp_path, environ={}).follow
    assert follow == FollowSettings(max_wait_minutes=0.5) and follow.max_rounds == 3 and follow.checks
    config.write_text("follow:\n  max_round: 2\n")
    with pytest.raises(
        AkiraError, match=r"unknown key 'follow.max_round' \(did you mean 'follow.max_rounds'\?\)"
    ):
        load_config(tmp_path, environ={})


FAKE_GLAB = r"""#!PYTHON
import json, os, pathlib, sys
args = sys.argv[1:]
with open(os.environ["GLAB_LOG"], "a") as log:
    log.write(json.dumps(args) + "\n")
assert args[:3] == ["api", "--hostname", "gitlab.example.com"], args
path = args[-1]
cases = {
    "user": "user",
    "projects/acme%2Fcalc/merge_requests/4": "merge_request",
    "projects/acme%2Fcalc/merge_requests/4/pipelines": "pipelines",
    "projects/acme%2Fcalc/pipelines/55/jobs": "jobs",
    "projects/acme%2Fcalc/jobs/901/trace": "trace",
    "projects/acme%2Fcalc/merge_requests/4/discussions": "discussions",
    "projects/acme%2Fcalc/members/all/3": "member_developer",
    "projects/acme%2Fcalc/members/all/7": "member_maintainer",
    "projects/acme%2Fcalc/members/all/9": "member_missing",
}
case = cases.get(path)
if path.endswith("/notes") and "--method" in args and "POST" in args:
    case = "note"
if case is None:
    sys.stderr.write(f"glab: 404 Not Found: {path}\n")
    sys.exit(1)
base = pathlib.Path(os.environ["GLAB_CAPTURES"]) / case
sys.stdout.write(base.with_suffix(".stdout").read_text())
sys.stderr.write(base.with_suffix(".stderr").read_text())
sys.exit(int(base.with_suffix(".exit").read_text()))
"""


def test_gitlab_through_glab_reads_the_pipeline_the_trace_and_the_threads_and_replies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = folder / "glab"
    fake.write_text(FAKE_GLAB.replace("PYTHON", sys.executable))
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GLAB_LOG", str(tmp_path / "glab.jsonl"))
    monkeypatch.setenv("GLAB_CAPTURES", str(Path(__file__).parent / "data" / "cli_fakes" / "glab"))
    forge = Glab("https://gitlab.example.com/acme/calc/-/merge_requests/4", tmp_path)
    assert forge.account() == "akira-bot" and forge.head() == HEAD
    checks = forge.checks()
    assert [(c.name, c.state) for c in checks] == [
        ("test", "fail"),
        ("lint", "pass"),
        ("docs", "skip"),  # allowed to fail
        ("deploy", "pending"),
    ]
    trace = log_tail(forge.log(checks[0]))
    assert "E       assert 0 == 4" in trace and "\x1b" not in trace
    stamp = "2030-01-01T00:00:00.000Z"
    comments = forge.comments()
    rename = Comment(
        "6a9c1750b37d513a43987b574953fceb50b03ce7", "6a9c1750b37d513a43987b574953fceb50b03ce7", "thread",
        (Note("1126", "octo-reviewer", "Please rename `add` to `plus`.", "DEVELOPER", stamp),), "calc.py", 1,
    )  # fmt: skip
    assert comments[0] == rename and len(comments) == 3  # the resolved thread is not work
    assert [note.access for note in comments[1].notes] == ["DEVELOPER", "MAINTAINER"]
    assert comments[2].notes[0].author == "mallory" and comments[2].notes[0].access == "NONE"
    # who may ask: the developer's thread; akira's reply answers the second; mallory is not acted on
    asked = asking(comments, "akira-bot", [])
    assert asked.comments == [rename]
    assert asked.ignored == ["not acted on: mallory has no write access (comment on calc.py:1)"]
    assert asking(comments, "akira-bot", ["Mallory"]).comments[-1].notes[0].author == "mallory"
    bot = Comment("t9", "t9", "thread", (Note("n9", "renovate[bot]", "bump it", "MEMBER"),))
    ignored = asking([bot], "akira-bot", [])
    assert ignored.comments == []  # a bot asks only when named in follow.trusted
    assert ignored.ignored == [
        "not acted on: renovate[bot] is a bot not named in follow.trusted (comment on the pull request)"
    ]
    assert asking([bot], "akira-bot", ["renovate[bot]"]).comments == [bot]
    forge.reply(comments[0], "Addressed in 9f8e7d6: renamed add to plus")
    calls = [json.loads(line) for line in (tmp_path / "glab.jsonl").read_text().splitlines()]
    assert calls[-1] == [
        "api", "--hostname", "gitlab.example.com", "--method", "POST",
        "-f", "body=Addressed in 9f8e7d6: renamed add to plus",
        "projects/acme%2Fcalc/merge_requests/4/discussions/6a9c1750b37d513a43987b574953fceb50b03ce7/notes",
    ]  # fmt: skip


def test_the_pull_requests_escalation_is_never_written_through_a_planted_link(tmp_path: Path) -> None:
    from akira_cli import nofollow
    from akira_cli.errors import PullRequestNeedsPerson
    from akira_cli.follow.report import escalation
    from akira_cli.state.models import LoopState
    from akira_cli.workspace import Workspace

    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "Needs_Action").symlink_to(outside)  # what a step without the sandbox could plant
    state = LoopState(
        task_id="task_20261127_120000", task_path=str(root / "tasks.md"), pull_request=watch(last_log="boom")
    )
    with pytest.raises(nofollow.Refused):
        escalation(Workspace.resolve(root), state, PullRequestNeedsPerson("the same failure twice"))
    assert list(outside.iterdir()) == []
