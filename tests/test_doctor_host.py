"""`akira doctor`: git, the sandbox slot and the LLM endpoint, with real git and a
real HTTP server on 127.0.0.1 (reached, never asked for a model)."""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from akira_cli.doctor.base import CHECKS, DoctorContext, Finding, register_check
from tests.support.doctor import Machine, doctor, rows
from tests.support.workspace import Akira

pytestmark = pytest.mark.slow


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Machine:
    return Machine(tmp_path, monkeypatch)


class Endpoint(http.server.BaseHTTPRequestHandler):
    status: ClassVar[int] = 200
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).seen.append(f"{self.path} {self.headers.get('Authorization')}")
        body = json.dumps({"object": "list", "data": [{"id": "qwen2.5-coder", "object": "model"}]}).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[tuple[str, type[Endpoint]]]:
    handler = type("Handler", (Endpoint,), {"status": 200, "seen": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler
    server.shutdown()
    server.server_close()


def test_the_llm_endpoint_is_reached_without_a_model_call(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str], endpoint: tuple[str, type[Endpoint]]
) -> None:
    url, handler = endpoint
    machine.setenv("OPENAI_BASE_URL", url)
    machine.setenv("OPENAI_API_KEY", "sk-local-0123456789")
    code, report = doctor(akira, capsys, "--agent", "llm")
    row = rows(report)["llm endpoint"]
    assert code == 0 and row["status"] == "ok" and "model qwen2.5-coder" in row["detail"]
    assert handler.seen == ["/v1/models Bearer sk-local-0123456789"]
    handler.status = 401
    code, report = doctor(akira, capsys, "--agent", "llm")
    row = rows(report)["llm endpoint"]
    assert code == 1 and "HTTP 401: the key is refused" in row["detail"] and "OPENAI_API_KEY" in row["fix"]
    assert "sk-local" not in json.dumps(report)
    machine.setenv("OPENAI_BASE_URL", url.replace("http://", "http://proxyuser:proxy-password-42@"))
    code, report = doctor(akira, capsys, "--agent", "llm")
    row = rows(report)["llm endpoint"]
    assert code == 1 and "GET http://proxyuser:***@127.0.0.1:" in row["detail"]
    assert "proxy-password-42" not in json.dumps(report)


def test_an_unreachable_endpoint_fails_and_an_unused_one_is_not_asked(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    akira.write_config(f"llm:\n  base_url: http://127.0.0.1:{port}/v1\n")
    code, report = doctor(akira, capsys)
    row = rows(report)["llm endpoint"]
    assert (
        code == 1
        and row["status"] == "fail"
        and f"GET http://127.0.0.1:{port}/v1/models failed" in row["detail"]
    )
    akira.write_config(f"llm:\n  base_url: http://127.0.0.1:{port}/v1\nreflection:\n  use_llm: false\n")
    machine.install("claude")
    machine.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    code, report = doctor(akira, capsys, "--agent", "claude")
    assert code == 0 and "llm endpoint" not in rows(report)
    akira.write_config("reflection:\n  use_llm: false\n")
    code, report = doctor(akira, capsys, "--agent", "llm")
    row = rows(report)["llm endpoint"]
    assert code == 1 and row["detail"] == "the llm agent needs an LLM endpoint, and none is set"


def test_git_a_repository_without_a_commit_and_git_missing(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    subprocess.run(["git", "init", "-q", str(akira.root)], check=True)
    code, report = doctor(akira, capsys, "--agent", "script")
    git = rows(report)["git"]
    assert code == 1 and git["status"] == "fail" and "has no commit yet" in git["detail"]
    assert "commit --allow-empty" in git["fix"]
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    subprocess.run(
        ["git", "-C", str(akira.root), "commit", "-q", "--allow-empty", "-m", "one"], check=True, env=env
    )
    code, report = doctor(akira, capsys, "--agent", "script")
    assert code == 0 and "is a repository: runs work on a task branch" in rows(report)["git"]["detail"]
    (machine.tools / "git").unlink()
    code, report = doctor(akira, capsys, "--agent", "script")
    git = rows(report)["git"]
    assert code == 1 and git["detail"].startswith("git is not on PATH; this workspace is a git repository")
    assert "--no-git" in git["fix"]


def test_the_sandbox_slot_takes_a_registered_probe(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    _, report = doctor(akira, capsys, "--agent", "script")
    assert (
        rows(report)["sandbox"]["status"] in ("ok", "warn") and "bwrap" in rows(report)["sandbox"]["detail"]
    )

    class Probe:
        name = "sandbox"

        def run(self, context: DoctorContext) -> list[Finding]:
            return [Finding("sandbox", "fail", f"user namespaces are off ({context.kind})", "sysctl ...")]

    before = CHECKS["sandbox"]
    register_check(Probe())
    try:
        code, report = doctor(akira, capsys, "--agent", "script")
    finally:
        register_check(before)
    assert code == 1 and rows(report)["sandbox"]["detail"] == "user namespaces are off (script)"
    assert list(rows(report)).index("sandbox") == list(rows(report)).index("git") + 1


def test_the_sandbox_row_is_the_probe_loop_start_runs(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The bwrap a run would use, tried as `loop start` tries it: a working one is ok; one denied
    its user namespace is a warning under `auto` (runs go on unsandboxed) and a failure under
    `on` (a run would not start), each with the fix; `off` is a warning."""
    from akira_cli.sandbox.probe import probe
    from akira_cli.sections import SandboxSettings

    denied = tmp_path / "denied" / "bwrap"
    denied.parent.mkdir()
    denied.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    denied.chmod(0o755)
    works = probe(SandboxSettings())
    akira.write_config("sandbox:\n  mode: auto\n")
    _, report = doctor(akira, capsys, "--agent", "script")
    row = rows(report)["sandbox"]
    assert row["status"] == ("ok" if works.ok else "warn"), row
    if works.ok:
        assert row["detail"] == f"bwrap at {works.bwrap}; network: allow"
    akira.write_config(f"sandbox:\n  mode: auto\n  bwrap: {denied}\n")
    code, report = doctor(akira, capsys, "--agent", "script")
    row = rows(report)["sandbox"]
    assert code == 0 and row["status"] == "warn", row
    assert "setting up uid map: Permission denied" in row["detail"] and "unsandboxed" in row["detail"]
    assert "kernel.apparmor_restrict_unprivileged_userns=0" in row["fix"]
    akira.write_config(f"sandbox:\n  mode: on\n  bwrap: {denied}\n")
    code, report = doctor(akira, capsys, "--agent", "script")
    row = rows(report)["sandbox"]
    assert code == 1 and row["status"] == "fail" and row["detail"].startswith("sandbox.mode is on"), row
    akira.write_config("sandbox:\n  mode: off\n")
    _, report = doctor(akira, capsys, "--agent", "script")
    assert (
        rows(report)["sandbox"]["status"] == "warn"
        and "all of your rights" in rows(report)["sandbox"]["detail"]
    )
