"""What `akira web`'s pages show of real runs (docs/web.md): a `[P]` wave's steps side by side,
each attempt with its outcome and reflection, the budget's line on the chart (which an agent
CLI's usage moves), the criteria table, the fleet's runs beside the workspace's, and an unknown
run as the CLI's line. Real runs, the page fetched from a real server."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest

from tests.support.fleet import Fleet, commit_task, steps
from tests.support.follow import Night, log
from tests.support.git import first_commit
from tests.support.parallel import start, tasks
from tests.support.review_night import Night as ReviewNight
from tests.support.servers.github_actions import Job
from tests.support.web import artefacts, chromium, fake_claude, request, shoot, until, web_server
from tests.support.workspace import Akira


def page(served: object, path: str) -> tuple[int, str]:
    port, token = served.port, served.token  # type: ignore[attr-defined]
    status, _, body = request(port, "GET", path, {"Host": f"127.0.0.1:{port}", "X-Akira-Token": token})
    return status, body


@pytest.mark.slow
def test_a_wave_shows_side_by_side_and_a_retried_step_its_failed_attempt_and_reflection(repo: Akira) -> None:
    tasks(
        repo,
        "- [ ] 1. [P] A\n  - Run: `echo a > a.txt`\n  - Exists: `a.txt`\n"
        "- [ ] 2. [P] B\n  - Run: `echo b > b.txt`\n  - Exists: `b.txt`\n"
        "- [ ] 3. C once it failed\n  - Run: `test -e c.txt || { touch c.txt; exit 1; }`\n",
    )
    code, err = start(repo, "--parallel", "2")
    assert code == 0, err
    task_id = repo.task_id()
    with web_server(repo.root) as served:
        status, body = page(served, f"/run/{task_id}")
    assert status == 200
    assert '<div class="wave parallel">' in body, body[:2000]
    first = body.index('<div class="wave parallel">')
    wave = body[first : body.index('<div class="wave', first + 1)]
    assert 'data-step="1"' in wave and 'data-step="2"' in wave and 'data-step="3"' not in wave
    three = body[body.index('data-step="3"') :]
    outcomes = re.findall(r'<button class="a (\w+)" data-d="([^"]*)"', three)
    assert [outcome for outcome, _ in outcomes] == ["failed", "passed"]
    assert "exited 1" in outcomes[0][1] and "reflection: " in outcomes[0][1]


def test_the_chart_has_the_budget_line_and_the_page_the_criteria_table(akira: Akira) -> None:
    akira.write_config("budget:\n  max_cost_usd: 2.5\n  max_tokens_total: 100000\n")
    akira.write_task(
        "feat",
        """
        # Tasks

        - [ ] 1. Write a
          - Run: `echo a > a.txt`
          - Exists: `a.txt`
          - _Requirements: 1.1_
        """,
    )
    (akira.root / "Specs" / "feat" / "requirements.md").write_text(
        "# Requirements\n\n### Requirement 1\n\n#### Acceptance Criteria\n\n1. WHEN run THEN it SHALL write a\n"
    )
    assert akira.run("loop", "start", "--task", "Specs/feat/tasks.md").code == 0
    task_id = akira.task_id()
    with web_server(akira.root) as served:
        status, body = page(served, f"/run/{task_id}")
        assert status == 200
        assert 'class="budget budget-cost"' in body and 'class="budget budget-tokens"' in body
        assert "budget $2.5, budget 100,000 tokens" in body
        assert '<table id="criteria">' in body and "<td>1.1</td>" in body
        status, body = page(served, "/run/task_20990101_000000")
        assert status == 404
        assert (
            "akira: error: no loop found for &#x27;task_20990101_000000&#x27; (not a task id, task file or "
            "feature name); run &#x27;akira loop status&#x27; to list loops"
        ) in body


def red_until_add_adds(night: Night, sha: str) -> list[Job]:
    if "a - b" in night.calc(sha):
        return [Job("lint"), Job("test", conclusion="failure", log=log(1))]
    return [Job("lint"), Job("test")]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_followed_pull_request_shows_its_checks_and_its_rounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Night(tmp_path, monkeypatch, red_until_add_adds) as night:
        done = night.start("--follow")
        assert done.code == 0, done.err
        task_id = night.akira.task_id()
        sha, _ = night.commit("ci-1")
        url = night.forge.url(night.forge.pulls[0])
        with web_server(night.root) as served:
            status, runs = page(served, "/")
            assert status == 200 and f">{url}</a> (green)" in runs
            status, body = page(served, f"/run/{task_id}")
    assert status == 200
    assert (
        f'<p id="pull-request"><a href="{url}" rel="noreferrer">{url}</a>: checks green, round 1/3</p>'
        in body
    )
    checks = unescape(body.split('<pre id="checks">', 1)[1].split("</pre>", 1)[0])
    assert "- Round 1:" in checks
    assert f"`test` failed: `E assert 0 == 4`; ci-1 fixed in `{sha[:8]}`" in checks


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_each_attempt_shows_its_review_verdict_and_a_disputed_step_needs_a_persons_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    night = ReviewNight(tmp_path, monkeypatch)
    night.setup("  agent: claude\n  max_rounds: 2\n")
    night.verdicts(**{"1": ["changes"], "2": ["approve"]})
    code, err = night.start()
    assert code == 0, err
    task_id = night.akira.task_id()
    with web_server(night.root) as served:
        status, body = page(served, f"/run/{task_id}")
    assert status == 200
    one = body[body.index('data-step="1"') : body.index('data-step="2"')]
    said = [
        (kind, unescape(text)) for kind, text in re.findall(r'<button class="a (\w+)" data-d="([^"]*)"', one)
    ]
    assert [kind for kind, _ in said] == ["failed", "passed"]  # sent back by the reviewer, then disputed
    assert "review: changes" in said[0][1] and "review: disputed" in said[1][1]
    two = body[body.index('data-step="2"') :]
    assert "review: approve" in unescape(re.findall(r'data-d="([^"]*)"', two)[0])
    look = body.split('<ul id="look">', 1)[1].split("</ul>", 1)[0]
    assert "step 1: the reviewer disputed it" in look and "step 2" not in look


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_fleets_runs_are_on_the_runs_page_with_the_workspaces_the_one_that_needs_a_person_first(
    akira: Akira, tmp_path: Path
) -> None:
    first_commit(akira.root)
    with web_server(akira.root) as served:
        status, body = page(served, "/")
        assert status == 200 and "fleet-" not in body and 'class="fleet"' not in body  # no fleet here
        assert not (akira.root / ".state" / "fleet.sqlite").exists()
        fleet = Fleet(f"sqlite:///{akira.root / '.state' / 'fleet.sqlite'}", tmp_path)
        try:
            done_id = fleet.add(commit_task(akira.root, "feat", steps(tmp_path / "ledger", 2)))
            worker = fleet.worker("w1")
            fleet.wait(lambda rows: rows[0]["status"] == "completed", what="the fleet run to complete")
            worker.terminate()
            assert worker.wait(timeout=60) == 0
            queued_id = fleet.add(commit_task(akira.root, "later", steps(tmp_path / "ledger", 1, prefix="l")))
        finally:
            fleet.stop()
        akira.write_task("broken", "- [ ] 1. Build\n  - Run: `echo missing fixed.txt; exit 1`\n")
        assert akira.run("loop", "start", "--task", "Specs/broken/tasks.md", "--no-git").code == 4
        stuck_id = akira.task_id()
        status, body = page(served, "/")  # the same server: the fleet found once it has a database
        with chromium(tmp_path / "profile") as driver:
            driver.get(f"{served.url}?token={served.token}")
            until(driver, "the fleet's runs", lambda d: d.find_elements("css selector", "tr.fleet-run"))
            shoot(driver, artefacts(tmp_path), "runs-fleet")
    assert status == 200
    order = re.findall(r'<tr class="run[^"]*" data-(?:task|fleet)="([^"]+)"', body)
    assert order[0] == stuck_id and sorted(order[1:]) == sorted([done_id, queued_id]), order
    done = body.split(f'data-fleet="{done_id}"', 1)[1].split("</tr>", 1)[0]
    assert f'{done_id} <span class="fleet">fleet</span>' in done
    assert ">completed</span>" in done and ">2/2</td>" in done and "branch akira/feat" in done
    assert "Specs/feat/tasks.md" in done and "worker w1" in done
    queued = body.split(f'data-fleet="{queued_id}"', 1)[1].split("</tr>", 1)[0]
    assert ">queued</span>" in queued and ">0/1</td>" in queued


def test_a_fleet_whose_database_cannot_be_read_is_its_one_line_on_the_runs_page(akira: Akira) -> None:
    akira.write_task("feat", "- [ ] 1. Write a\n  - Run: `echo a > a.txt`\n")
    assert akira.run("loop", "start", "--task", "Specs/feat/tasks.md").code == 0
    akira.write_config("fleet:\n  database_url: mysql://akira:hunter2secret@db/queue\n")
    with web_server(akira.root) as served:
        status, body = page(served, "/")
    assert status == 200 and akira.task_id() in body  # the workspace's runs are still shown
    line = unescape(body.split('<p id="fleet-refusal" class="muted">', 1)[1].split("</p>", 1)[0])
    assert line.startswith("the fleet: akira: error: mysql://akira:***@db/queue is not a database"), line
    assert "hunter2secret" not in body


def test_an_agent_clis_usage_moves_the_chart_at_each_attempts_end_under_the_budget_line(
    akira: Akira, tmp_path: Path
) -> None:
    akira.write_config(fake_claude(tmp_path / "claude.sh") + "budget:\n  max_cost_usd: 2.0\n")
    akira.write_task("feat", "- [ ] 1. One\n  - Exists: `done_1`\n- [ ] 2. Two\n  - Exists: `done_2`\n")
    done = akira.run("loop", "start", "--task", "Specs/feat/tasks.md")
    assert done.code == 0, done.err
    task_id = akira.task_id()
    with web_server(akira.root) as served:
        status, body = page(served, f"/run/{task_id}")
    assert status == 200
    svg = body.split('<svg id="usage-chart"', 1)[1].split("</svg>", 1)[0]
    assert "$0.5000, 3,000 tokens" in svg and "budget $2.0" in svg
    cost = re.search(r'<polyline class="cost"[^>]* points="([^"]+)"', svg)
    assert cost is not None
    heights = [float(point.split(",")[1]) for point in cost.group(1).split()]
    # from nothing, up at the end of each step's attempt, to now
    assert len(heights) == 4 and heights[0] > heights[1] > heights[2] == heights[3], heights
    budget = float(re.search(r'class="budget budget-cost"[^>]* y1="([\d.]+)"', svg).group(1))  # type: ignore[union-attr]
    assert abs((heights[0] - heights[1]) * 8 - (heights[0] - budget)) < 1.0  # $0.25 of the budget's $2
    one = body[body.index('data-step="1"') : body.index('data-step="2"')]
    assert "cost $0.2500, 1,500 tokens" in unescape(re.findall(r'data-d="([^"]*)"', one)[0])
