"""What `akira web`'s pages show of real runs (docs/web.md): a `[P]` wave's steps side by side,
each attempt with its outcome and reflection, the budget's line on the chart, the criteria
table, and an unknown run as the CLI's line. Real runs, the page fetched from a real server."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest

from tests.support.follow import Night, log
from tests.support.parallel import start, tasks
from tests.support.review_night import Night as ReviewNight
from tests.support.servers.github_actions import Job
from tests.support.web import request, web_server
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
