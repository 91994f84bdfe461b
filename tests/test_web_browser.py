"""`akira web` in a real headless Chromium (Selenium; docs/web.md): a run completes while its
page is open and the timeline gains each step live; a stop and a resume with guidance from the
page; the run that needs a person first with its escalation; a step undone from the page is
reverted in git. Screenshots at desktop and phone widths are kept (tests/support/web.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from akira_cli import api
from tests.support.git import commits, git, git_workspace
from tests.support.web import artefacts, chromium, confirm, fake_claude, shoot, until, web_server
from tests.support.workspace import Akira

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

GATED = """
- [ ] 1. Write a once gate 1 opens
  - Run: `while [ ! -e {tmp}/gate1 ]; do sleep 0.05; done; echo a > a.txt`
  - Exists: `a.txt`
- [ ] 2. Write b once gate 2 opens
  - Run: `while [ ! -e {tmp}/gate2 ]; do sleep 0.05; done; echo b > b.txt`
  - Exists: `b.txt`
- [ ] 3. Write c
  - Run: `echo c > c.txt`
  - Exists: `c.txt`
"""


def chips(driver: Any, step: str) -> list[str]:
    """The outcome of each attempt chip of `step` on the page, in order."""
    found = driver.find_elements("css selector", f'[data-step="{step}"] .a')
    return [chip.get_attribute("class").split()[-1] for chip in found]


def status(driver: Any) -> str:
    """Read in one script: the facts around it are replaced as the run moves."""
    return str(driver.execute_script("return document.getElementById('status').textContent"))


def test_a_run_completes_while_its_page_is_open_and_the_timeline_gains_each_step_live(
    tmp_path: Path,
) -> None:
    repo = git_workspace(tmp_path, GATED.format(tmp=tmp_path))
    started = api.start(repo.root, "Specs/feat/tasks.md")
    task_id = started.task_id
    with web_server(repo.root) as served, chromium(tmp_path / "profile") as driver:
        driver.get(f"{served.url}?token={served.token}")
        until(
            driver, "the runs page", lambda d: d.find_elements("css selector", f'tr[data-task="{task_id}"]')
        )
        shoot(driver, artefacts(tmp_path), "runs")
        driver.find_element("link text", task_id).click()
        until(driver, "the run page", lambda d: d.find_elements("id", "timeline"))
        driver.execute_script("window.sameDocument = 'yes'")
        until(driver, "step 1 running", lambda d: chips(d, "1") == ["running"])
        (tmp_path / "gate1").touch()
        until(
            driver,
            "step 1 passed, step 2 running",
            lambda d: (chips(d, "1"), chips(d, "2")) == (["passed"], ["running"]),
        )
        (tmp_path / "gate2").touch()
        until(driver, "step 3 passed", lambda d: chips(d, "3") == ["passed"])
        until(driver, "the status completed", lambda d: status(d) == "completed")
        assert driver.execute_script("return window.sameDocument") == "yes"  # never reloaded
        assert driver.find_elements("css selector", '[data-step="3"].done')
        lines = driver.find_element("id", "events").text
        assert "step 2 step_completed" in lines and "loop_completed" in lines
        driver.find_element("css selector", '[data-step="2"] .a').click()
        assert "step 2 attempt 1 (iteration 2): passed" in driver.find_element("id", "detail").text
        shoot(driver, artefacts(tmp_path), "run")
    made = commits(repo.root)
    assert len(made) == 4 and made[-1] == "feat: done" and "Write c" in made[2]  # a commit per step


def test_stop_then_resume_with_guidance_from_the_page(akira: Akira, tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    agent = tmp_path / "agent.sh"
    agent.write_text(
        f'n=$(ls {prompts} | wc -l); cp "$1" {prompts}/$n.md\n'
        f"while [ ! -e {tmp_path}/gate ]; do sleep 0.05; done\n"
        "touch done_$((n+1))\n"
    )
    akira.write_config(f"agent:\n  kind: command\n  command: sh {agent} {{prompt_file}}\n")
    akira.write_task("guided", "- [ ] 1. One\n  - Exists: `done_1`\n- [ ] 2. Two\n  - Exists: `done_2`\n")
    task_id = api.start(akira.root, "Specs/guided/tasks.md").task_id
    with web_server(akira.root) as served, chromium(tmp_path / "profile") as driver:
        driver.get(f"{served.url}run/{task_id}?token={served.token}")
        until(driver, "step 1 running", lambda d: chips(d, "1") == ["running"])
        driver.find_element("css selector", '[data-action="stop"]').click()
        confirm(driver)
        result = lambda d: d.find_element("id", "control-result").text  # noqa: E731
        until(driver, "the stop's line", lambda d: "pauses once its running command finishes" in result(d))
        (tmp_path / "gate").touch()
        until(driver, "the pause", lambda d: status(d) == "paused")
        assert chips(driver, "2") == []
        driver.find_element("id", "guidance").send_keys("Mind the lock.")
        driver.find_element("css selector", '[data-action="resume"]').click()
        confirm(driver)
        until(
            driver,
            "the resume's line",
            lambda d: d.find_element("id", "control-result").text.startswith(("resumed", task_id)),
        )
        until(driver, "the status completed", lambda d: status(d) == "completed")
        assert chips(driver, "2") == ["passed"]
    second = (prompts / "1.md").read_text()
    assert "## Guidance from a person\nMind the lock." in second
    assert "Mind the lock." not in (prompts / "0.md").read_text()


def test_the_run_that_needs_a_person_comes_first_and_a_step_undone_from_the_page_is_reverted(
    repo: Akira, tmp_path: Path
) -> None:
    assert repo.run("loop", "start", "--task", "Specs/feat/tasks.md").code == 0
    done_id = repo.task_id()
    assert (repo.root / "b.txt").exists()
    repo.write_task(
        "broken", "- [ ] 1. Build\n  - Run: `test -f fixed.txt || { echo missing fixed.txt; exit 1; }`\n"
    )
    assert repo.run("loop", "start", "--task", "Specs/broken/tasks.md", "--no-git").code == 4
    stuck_id = repo.task_id()
    assert stuck_id != done_id and repo.state(stuck_id).status == "needs_action"
    with web_server(repo.root) as served, chromium(tmp_path / "profile") as driver:
        driver.get(f"{served.url}?token={served.token}")
        rows = until(driver, "the runs", lambda d: d.find_elements("css selector", "tr.run"))
        assert [row.get_attribute("data-task") for row in rows] == [stuck_id, done_id]
        assert "needs_action" in rows[0].text
        driver.find_element("link text", stuck_id).click()
        escalation = until(driver, "the escalation", lambda d: d.find_element("id", "escalation"))
        assert "missing fixed.txt" in escalation.text
        shoot(driver, artefacts(tmp_path), "needs-action")

        driver.get(f"{served.url}run/{done_id}")
        until(driver, "the run page", lambda d: status(d) == "completed")
        head = git(repo.root, "rev-parse", "HEAD")
        driver.find_element("css selector", '#undo-step option[value="3"]').click()
        driver.find_element("css selector", '[data-action="undo"]').click()
        confirm(driver)
        until(
            driver,
            "the undo's line",
            lambda d: "reverted step(s) 3 on akira/feat" in d.find_element("id", "control-result").text,
        )
    assert not (repo.root / "b.txt").exists() and (repo.root / "a.txt").exists()
    assert commits(repo.root, f"{head}..HEAD") == ['Revert "feat: done"', 'Revert "3 Write b"']
    assert git(repo.root, "status", "--porcelain") == "?? Specs/broken/"  # the other task's file
    assert repo.state(done_id).status == "paused"


def test_a_wave_of_p_steps_is_drawn_side_by_side_as_it_starts(tmp_path: Path) -> None:
    wave = "".join(
        f"- [ ] {n}. [P] Write {n}\n"
        f"  - Run: `while [ ! -e {tmp_path}/gate ]; do sleep 0.05; done; echo {n} > f{n}.txt`\n"
        f"  - Exists: `f{n}.txt`\n"
        for n in (1, 2)
    )
    repo = git_workspace(tmp_path, wave + "- [ ] 3. Write 3\n  - Run: `echo 3 > f3.txt`\n")
    with web_server(repo.root) as served, chromium(tmp_path / "profile") as driver:
        task_id = api.start(repo.root, "Specs/feat/tasks.md", parallel=2).task_id
        driver.get(f"{served.url}run/{task_id}?token={served.token}")

        def side_by_side(d: Any) -> bool:
            return bool(
                d.execute_script(
                    "const w = document.querySelector('.wave.parallel');"
                    "return !!w && !!w.querySelector('[data-step=\"1\"]') && !!w.querySelector('[data-step=\"2\"]')"
                    " && !w.querySelector('[data-step=\"3\"]');"
                )
            )

        until(
            driver,
            "steps 1 and 2 in one wave, both running",
            lambda d: side_by_side(d) and chips(d, "1") == chips(d, "2") == ["running"],
        )
        (tmp_path / "gate").touch()
        until(driver, "the status completed", lambda d: status(d) == "completed")
        assert side_by_side(driver) and chips(driver, "3") == ["passed"]


def test_a_resume_beyond_max_running_is_refused_on_the_page_with_the_clis_line(
    akira: Akira, tmp_path: Path
) -> None:
    """The MCP server's bound (`mcp.max_running`) on the runs the page resumed."""
    akira.write_config("mcp:\n  max_running: 1\n")
    held = f"if [ -e {tmp_path}/hold ]; then while [ ! -e {tmp_path}/gate ]; do sleep 0.05; done; fi"
    stuck = []
    for name in ("one", "two"):
        akira.write_task(name, f"- [ ] 1. Build\n  - Run: `{held}; test -f fixed.txt`\n")
        assert akira.run("loop", "start", "--task", f"Specs/{name}/tasks.md").code == 4
        stuck.append(akira.task_id())
    (tmp_path / "hold").touch()
    result = lambda d: d.find_element("id", "control-result").text  # noqa: E731
    try:
        with web_server(akira.root) as served, chromium(tmp_path / "profile") as driver:
            driver.get(f"{served.url}run/{stuck[0]}?token={served.token}")
            until(driver, "the run page", lambda d: status(d) == "needs_action")
            driver.find_element("css selector", '[data-action="resume"]').click()
            confirm(driver)
            until(driver, "the resume's line", lambda d: result(d).startswith(("resumed", stuck[0])))
            until(driver, "the run running", lambda d: akira.state(stuck[0]).status == "running")
            driver.get(f"{served.url}run/{stuck[1]}")
            until(driver, "the other run's page", lambda d: status(d) == "needs_action")
            driver.find_element("css selector", '[data-action="resume"]').click()
            confirm(driver)
            until(driver, "the refusal", lambda d: result(d).startswith("akira: error:"))
            assert result(driver) == (
                f"akira: error: mcp.max_running is 1, and 1 runs this server started are running ({stuck[0]}); "
                "wait for one to end, or stop one from its page"
            )
            assert akira.state(stuck[1]).status == "needs_action"  # never resumed
    finally:
        (tmp_path / "gate").touch()  # no run of this test waits on after it
    akira.wait_for(lambda: akira.state(stuck[0]).status == "needs_action", 60, "the first run to stop again")


def test_the_running_commands_last_lines_show_live_masked_of_secrets(
    akira: Akira, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-live-0123456789abcdefXYZ"
    monkeypatch.setenv("FAKE_API_KEY", secret)  # a secret by its name; steps get FAKE_* variables
    agent = tmp_path / "agent.sh"
    agent.write_text(
        'cat > /dev/null; echo "warming up"; echo "calling with key $FAKE_API_KEY"\n'
        f"while [ ! -e {tmp_path}/gate ]; do sleep 0.05; done\n"
        'echo "all done"; touch done_1\n'
    )
    akira.write_config(f"agent:\n  kind: command\n  command: sh {agent}\n")
    akira.write_task("live", "- [ ] 1. One\n  - Exists: `done_1`\n")
    task_id = api.start(akira.root, "Specs/live/tasks.md").task_id
    output = lambda d: d.execute_script("return document.getElementById('output').textContent")  # noqa: E731
    head = lambda d: d.find_element("id", "output-head").text  # noqa: E731
    try:
        with web_server(akira.root) as served, chromium(tmp_path / "profile") as driver:
            driver.get(f"{served.url}run/{task_id}?token={served.token}")
            until(driver, "the agent's line", lambda d: "calling with key" in output(d))
            driver.execute_script("window.sameDocument = 'yes'")
            assert output(driver).splitlines() == ["warming up", "calling with key ***"]
            assert head(driver) == f"$ sh {agent} (running)"
            live = akira.root / ".state" / "logs" / f"{task_id}.live"
            assert secret not in live.read_text() and "calling with key ***" in live.read_text()
            (tmp_path / "gate").touch()
            until(driver, "the status completed", lambda d: status(d) == "completed")
            until(driver, "the agent's last lines", lambda d: "all done" in output(d))
            assert driver.execute_script("return window.sameDocument") == "yes"  # never reloaded
            assert secret not in driver.page_source
            assert [log for log in driver.get_log("browser") if log["source"] == "javascript"] == []
            shoot(driver, artefacts(tmp_path), "output")
    finally:
        (tmp_path / "gate").touch()  # no run of this test waits on after it


def test_the_chart_rises_live_as_each_step_of_an_agent_cli_ends(akira: Akira, tmp_path: Path) -> None:
    """An agent CLI's usage is in no event: the chart moves with the run's totals after each step."""
    akira.write_config(fake_claude(tmp_path / "claude.sh", gates=tmp_path) + "budget:\n  max_cost_usd: 2.0\n")
    akira.write_task("spend", "- [ ] 1. One\n  - Exists: `done_1`\n- [ ] 2. Two\n  - Exists: `done_2`\n")
    task_id = api.start(akira.root, "Specs/spend/tasks.md").task_id
    label = lambda d: d.find_element("css selector", "#usage-chart .usage-label").text  # noqa: E731
    cost = lambda d: d.find_element("css selector", "#usage-chart polyline.cost").get_attribute("points")  # noqa: E731
    try:
        with web_server(akira.root) as served, chromium(tmp_path / "profile") as driver:
            driver.get(f"{served.url}run/{task_id}?token={served.token}")
            until(driver, "step 1 running", lambda d: chips(d, "1") == ["running"])
            driver.execute_script("window.sameDocument = 'yes'")
            assert label(driver) == "$0.0000, 0 tokens"
            flat = {point.split(",")[1] for point in cost(driver).split()}
            (tmp_path / "gate_1").touch()
            until(driver, "step 1's spending", lambda d: label(d) == "$0.2500, 1,500 tokens")
            heights = [float(point.split(",")[1]) for point in cost(driver).split()]
            assert len(flat) == 1 and heights[0] > heights[-1], heights  # it rose from flat
            (tmp_path / "gate_2").touch()
            until(driver, "both steps' spending", lambda d: label(d) == "$0.5000, 3,000 tokens")
            until(driver, "the status completed", lambda d: status(d) == "completed")
            assert driver.execute_script("return window.sameDocument") == "yes"  # never reloaded
            assert [log for log in driver.get_log("browser") if log["source"] == "javascript"] == []
    finally:
        for step in ("1", "2"):
            (tmp_path / f"gate_{step}").touch()  # no run of this test waits on after it
