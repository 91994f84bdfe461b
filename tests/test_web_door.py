"""The door of `akira web` (docs/web.md): the MCP server's Host and Origin check, a token
always (made and kept 0600 on loopback, printed once as the page's URL), a cookie that only
reads, and changes only from the page's own origin with the token in a header. A real server
on 127.0.0.1 and real requests with forged headers; and the event log followed from an offset."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from akira_cli import api
from akira_cli.api.watch_models import LiveLines
from tests.support.parallel import tasks
from tests.support.web import request, web_server
from tests.support.workspace import Akira

ONE_STEP = """
- [ ] 1. Write a
  - Run: `echo a > a.txt`
  - Exists: `a.txt`
"""


def finished_run(akira: Akira) -> str:
    akira.write_task("feat", ONE_STEP)
    assert akira.run("loop", "start", "--task", "Specs/feat/tasks.md").code == 0
    return akira.task_id()


def test_without_the_token_every_door_is_401_and_the_printed_url_lets_the_page_in(akira: Akira) -> None:
    task_id = finished_run(akira)
    with web_server(akira.root) as served:
        kept = akira.root / ".state" / "web_token"
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
        assert served.token == kept.read_text().strip() and len(served.token) >= 32
        assert served.line.startswith(f"akira: web page on {served.url}?token={served.token}")
        here = {"Host": f"127.0.0.1:{served.port}"}
        for path in ("/", f"/run/{task_id}", f"/run/{task_id}/events", "/assets/page.js"):
            status, headers, _ = request(served.port, "GET", path, here)
            assert status == 401, path
        status, _, _ = request(served.port, "GET", "/?token=wrong-token-of-some-length", here)
        assert status == 401
        status, _, _ = request(served.port, "POST", f"/run/{task_id}/stop", here, "{}")
        assert status == 401

        status, headers, _ = request(served.port, "GET", f"/?token={served.token}", here)
        assert status == 303 and headers["location"] == "/"
        cookie = headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        jar = {**here, "Cookie": cookie.split(";", 1)[0]}
        status, _, body = request(served.port, "GET", "/", jar)
        assert status == 200 and task_id in body
        status, _, body = request(served.port, "GET", f"/run/{task_id}", jar)
        assert status == 200 and "Timeline" in body
        status, _, body = request(served.port, "GET", "/", {**here, "X-Akira-Token": served.token})
        assert status == 200
    with web_server(akira.root) as again:  # the kept token is read again: a bookmark keeps working
        assert again.token == served.token


def test_a_forged_host_or_a_foreign_origin_is_refused_however_the_token_comes(akira: Akira) -> None:
    task_id = finished_run(akira)
    with web_server(akira.root) as served:
        token = served.token
        port = served.port
        jar = f"akira_web_{port}={token}"
        for host in (f"evil.example:{port}", f"127.0.0.1:{port + 1}", "127.0.0.1", f"localhost.evil:{port}"):
            status, _, _ = request(port, "GET", "/", {"Host": host, "Cookie": jar})
            assert status == 421, host
            status, _, _ = request(port, "GET", f"/?token={token}", {"Host": host})
            assert status == 421, host
        for host in (f"localhost:{port}", f"127.1:{port}", f"0x7f.0.0.1:{port}"):
            status, _, _ = request(port, "GET", "/", {"Host": host, "Cookie": jar})
            assert status == 200, host
        here = f"127.0.0.1:{port}"
        for origin in (
            "http://evil.example",
            f"http://evil.example:{port}",
            f"https://127.0.0.1:{port}",
            "null",
        ):
            status, _, _ = request(port, "GET", "/", {"Host": here, "Cookie": jar, "Origin": origin})
            assert status == 403, origin
            headers = {
                "Host": here,
                "X-Akira-Token": token,
                "Origin": origin,
                "Content-Type": "application/json",
            }
            status, _, _ = request(port, "POST", f"/run/{task_id}/cancel", headers, "{}")
            assert status == 403, origin
        assert akira.state(task_id).status == "completed"


def test_a_change_needs_the_token_in_a_header_and_the_page_origin_a_cross_site_form_cannot(
    akira: Akira,
) -> None:
    task_id = finished_run(akira)
    with web_server(akira.root) as served:
        port, token = served.port, served.token
        here, origin = f"127.0.0.1:{port}", f"http://127.0.0.1:{port}"
        jar = f"akira_web_{port}={token}"
        form = {"Host": here, "Cookie": jar, "Content-Type": "application/x-www-form-urlencoded"}
        # the cookie alone (what a cross-site form would carry, if SameSite let it) changes nothing
        status, _, _ = request(port, "POST", f"/run/{task_id}/undo", {**form, "Origin": origin}, "step=1")
        assert status == 401
        status, _, _ = request(
            port, "POST", f"/run/{task_id}/undo", {**form, "Origin": "http://evil.example"}
        )
        assert status == 403
        status, _, _ = request(
            port, "POST", f"/run/{task_id}/undo", {"Host": here, "X-Akira-Token": token}, '{"step": "1"}'
        )
        assert status == 403  # no Origin: not the page
        status, _, _ = request(
            port,
            "POST",
            f"/run/{task_id}/undo",
            {"Host": here, "X-Akira-Token": token, "Origin": origin, "Sec-Fetch-Site": "cross-site"},
            '{"step": "1"}',
        )
        assert status == 403
        # the page's own request is let through, and a refusal is the CLI's one line
        page = {"Host": here, "X-Akira-Token": token, "Origin": origin, "Content-Type": "application/json"}
        status, _, body = request(port, "POST", f"/run/{task_id}/stop", page, "{}")
        assert status == 409
        assert json.loads(body) == {
            "ok": False,
            "line": f"akira: error: task {task_id} is already completed; nothing to stop",
        }
        cli = akira.cli("loop", "stop", "--task-id", task_id)
        assert cli.code == 1 and cli.err.strip() == json.loads(body)["line"]
        status, _, body = request(port, "POST", "/run/..%2F..%2Fetc/stop", page, "{}")
        assert status == 404


def test_beyond_loopback_without_a_token_file_is_one_line_and_a_token_file_is_read_once(
    akira: Akira, tmp_path: Path
) -> None:
    done = akira.cli("web", "--http", "0.0.0.0:0")
    assert done.code == 1 and done.err.count("\n") == 1
    assert done.err.startswith("akira: error: --http 0.0.0.0:0 listens beyond this machine")
    short = tmp_path / "short"
    short.write_text("abc\n")
    done = akira.cli("web", "--token-file", str(short), "--http", "0")
    assert done.code == 1 and "fewer than 16" in done.err and "Traceback" not in done.err
    secret = tmp_path / "token"
    secret.write_text("a-token-from-a-file-123\n")
    with web_server(akira.root, "--token-file", str(secret)) as served:
        assert served.token == "" and "a-token-from-a-file-123" not in served.line
        assert not (akira.root / ".state" / "web_token").exists()
        status, _, _ = request(
            served.port,
            "GET",
            "/",
            {"Host": f"127.0.0.1:{served.port}", "X-Akira-Token": "a-token-from-a-file-123"},
        )
        assert status == 200
        taken = akira.cli("web", "--token-file", str(secret), "--http", f"127.0.0.1:{served.port}")
        assert taken.code == 1 and taken.err == (
            f"akira: error: --http 127.0.0.1:{served.port}: cannot listen there (Address already in use); "
            "name another port, or 0 for a free one\n"
        )


def test_the_event_log_is_followed_from_an_offset_and_a_torn_line_waits(akira: Akira) -> None:
    task_id = finished_run(akira)
    log = akira.root / ".state" / "logs" / f"{task_id}.jsonl"
    first = api.events(akira.root, task_id)
    assert first.offset == log.stat().st_size
    assert [event["type"] for event in first.events] == [event.type for event in akira.events(task_id)]
    assert api.events(akira.root, task_id, first.offset).events == []
    with log.open("a") as handle:
        handle.write('{"type": "warning", "ts": "x", "data": {}}\n{"type": "warn')
    later = api.events(akira.root, task_id, first.offset)
    assert [event["type"] for event in later.events] == ["warning"]
    assert later.offset == first.offset + len('{"type": "warning", "ts": "x", "data": {}}\n')
    with log.open("a") as handle:
        handle.write('ing", "ts": "y"}\n')
    assert [event["ts"] for event in api.events(akira.root, task_id, later.offset).events] == ["y"]


def test_the_running_commands_output_is_kept_bounded_and_read_from_its_end(akira: Akira) -> None:
    akira.write_task("big", "- [ ] 1. Print a lot\n  - Run: `seq 1 300000; echo end`\n")
    assert akira.run("loop", "start", "--task", "Specs/big/tasks.md").code == 0
    task_id = akira.task_id()
    kept = akira.root / ".state" / "logs" / f"{task_id}.live"
    assert kept.stat().st_size <= 256 * 1024 and stat.S_IMODE(kept.stat().st_mode) == 0o600
    found = api.output(akira.root, task_id, 3)
    assert found.command == "seq 1 300000; echo end" and found.ended and not found.live
    assert found.lines[:2] == ["300000", "end"] and found.lines[2].startswith("[akira] exited 0 after ")
    assert len(api.output(akira.root, task_id, 10_000).lines) == 200


def test_a_wave_steps_running_command_is_the_output_shown_with_its_slot(repo: Akira, tmp_path: Path) -> None:
    """Two `[P]` steps run at once, each slot's commands into a file of their own: the one
    still running is what the page shows, with its slot; the other (ended at once) is not."""
    gate = tmp_path / "gate"
    waiting = f"echo one-running; while [ ! -e {gate} ]; do sleep 0.05; done; echo one > one.txt"
    tasks(repo, f"- [ ] 1. [P] One\n  - Run: `{waiting}`\n- [ ] 2. [P] Two\n  - Run: `echo two > two.txt`\n")
    process = repo.spawn("loop", "start", "--task", "Specs/feat/tasks.md", "--parallel", "2")
    try:
        seen: list[LiveLines] = []

        def running_one() -> bool:
            found = api.output(repo.root, repo.task_id(), 5)
            seen.append(found)
            return "one-running" in found.lines and not found.ended

        repo.wait_for(running_one, 120, "step 1's command shown running")
        assert seen[-1].slot is not None and seen[-1].command == waiting
        assert f"(wave slot {seen[-1].slot})" in seen[-1].line()
        gate.touch()
        _, err = process.communicate(timeout=180)
        assert process.returncode == 0, err
    finally:
        gate.touch()
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    assert sorted(p.name for p in (repo.root / ".state" / "logs").glob("*.slot*.live"))


def test_a_link_planted_as_a_slots_output_file_is_never_read(akira: Akira, tmp_path: Path) -> None:
    """A step without the sandbox can write `.state/`: a link named like a wave slot's output
    file, to a file of the person's, never puts that file on the page."""
    akira.write_task("one", "- [ ] 1. Say hi\n  - Run: `echo hi`\n")
    assert akira.run("loop", "start", "--task", "Specs/one/tasks.md").code == 0
    task_id = akira.task_id()
    private = tmp_path / "private.txt"
    private.write_text("$ cat\nthe person's private line\n")
    (akira.root / ".state" / "logs" / f"{task_id}.slot9.live").symlink_to(private)
    found = api.output(akira.root, task_id, 20)
    assert found.slot is None and found.command == "echo hi"
    assert "the person's private line" not in found.lines
