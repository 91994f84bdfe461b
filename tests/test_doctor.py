"""`akira doctor` (issue 28) against fake agent CLIs on PATH that print what the pinned real
CLIs print for `--version` and `--help` (tests/data/doctor/), real git, and a real HTTP server on
127.0.0.1 for the LLM endpoint."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import Akira

from akira_cli.agents.presets.versions import PINS
from akira_cli.doctor import CHECKS, DoctorContext, Finding, register_check

DATA = Path(__file__).parent / "data" / "doctor"
AUTH_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CONFIG_DIR",
    "CODEX_API_KEY",
    "OPENAI_API_KEY",
    "CODEX_HOME",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "AKIRA_MODEL",
)
TOOLS = ("sh", "cat", "git", "bash")
FAKE = """#!/bin/sh
# what {name} {version} prints: the file named after the arguments ("exec --help" -> exec-help.txt)
name=$(echo "$*" | sed -e 's/--//g' -e 's/ /-/g')
if [ -f "{data}/$name.txt" ]; then cat "{data}/$name.txt"; exit 0; fi
echo "error: unexpected argument '$1' found" >&2
exit 2
"""


class Machine:
    """PATH, HOME and the environment a test's `akira doctor` sees."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bin = tmp_path / "fakebin"
        self.tools = tmp_path / "tools"
        self.home = tmp_path / "home"
        for folder in (self.bin, self.tools, self.home):
            folder.mkdir()
        for tool in TOOLS:
            found = shutil.which(tool)
            assert found, f"{tool} is needed by these tests"
            (self.tools / tool).symlink_to(found)
        (self.tools / "sed").symlink_to(shutil.which("sed") or "/bin/sed")
        self.monkeypatch = monkeypatch
        for name in AUTH_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HOME", str(self.home))
        monkeypatch.setenv("PATH", f"{self.bin}:{self.tools}")

    def install(
        self, cli: str, version: str = "", data: str = "", prints: dict[str, str] | None = None
    ) -> Path:
        """A fake `cli` that prints the captured texts of `data` (default: the pinned version's),
        or `prints` (argument words -> text) for a version or help of its own."""
        folder = DATA / (data or next(p.name for p in DATA.iterdir() if p.name.startswith(f"{cli}-")))
        if prints:
            own = self.bin.parent / f"{cli}-texts"
            shutil.copytree(folder, own, dirs_exist_ok=True)
            for name, text in prints.items():
                (own / f"{name}.txt").write_text(text)
            folder = own
        path = self.bin / cli
        path.write_text(FAKE.format(name=cli, version=version or folder.name, data=folder))
        path.chmod(0o755)
        return path

    def setenv(self, name: str, value: str) -> None:
        self.monkeypatch.setenv(name, value)


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Machine:
    return Machine(tmp_path, monkeypatch)


def doctor(akira: Akira, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    result = akira.run("doctor", "--json", *args, capsys=capsys)
    report = json.loads(result.out)
    assert result.code == (0 if report["ok"] else 1), result
    return result.code, report


def rows(report: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {row["check"]: row for row in report["checks"]}


def test_ok_for_claude_with_a_key_and_the_json_shape(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    machine.install("claude")
    machine.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    code, report = doctor(akira, capsys, "--agent", "claude")
    assert code == 0 and report["ok"] is True and report["agent"] == "claude"
    assert report["workspace"] == str(akira.root)
    found = rows(report)
    assert list(found) == ["agent", "version", "flags", "auth", "git", "sandbox"]
    for row in found.values():
        assert set(row) == {"check", "status", "detail", "fix"}
    assert all(row["status"] == "ok" and row["fix"] == "" for name, row in found.items() if name != "sandbox")
    assert "claude 2.1.197" in found["version"]["detail"]
    assert "--output-format, --permission-mode" in found["flags"]["detail"]
    assert "ANTHROPIC_API_KEY is set" in found["auth"]["detail"]
    assert "sk-ant-test" not in json.dumps(report)


def rejected(row: dict[str, str]) -> list[str]:
    """The flags a `flags` row says the CLI does not list."""
    if "does not list " not in row["detail"]:
        return []
    return row["detail"].split("does not list ", 1)[1].split(":", 1)[0].split(", ")


def test_a_version_outside_the_tested_range_warns_with_the_pinned_install(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    machine.install("claude", prints={"version": "1.0.98 (Claude Code)\n"})
    machine.setenv("CLAUDE_CODE_OAUTH_TOKEN", "oauth-token-0123456789")
    code, report = doctor(akira, capsys, "--agent", "claude")
    version = rows(report)["version"]
    assert code == 0 and version["status"] == "warn"
    assert "1.0.98 is older than the tested range (tested 2.0.0 to 2.1.197)" in version["detail"]
    assert version["fix"] == "install the tested version: npm install -g @anthropic-ai/claude-code@2.1.197"
    machine.install("aider", prints={"version": "aider 0.90.1\n"})
    machine.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    _, report = doctor(akira, capsys, "--agent", "aider")
    version = rows(report)["version"]
    assert version["status"] == "warn" and "0.90.1 is newer than the tested range" in version["detail"]
    assert version["fix"] == "install the tested version: pip install aider-chat==0.86.2"


@pytest.mark.parametrize(
    ("cli", "login", "content"),
    [
        ("claude", ".claude/.credentials.json", '{"claudeAiOauth": {"accessToken": "x"}}'),
        ("claude", ".claude.json", '{"oauthAccount": {"emailAddress": "a@b.c"}}'),
        ("codex", ".codex/auth.json", '{"OPENAI_API_KEY": null, "tokens": {}}'),
        ("gemini", ".gemini/oauth_creds.json", '{"access_token": "x"}'),
    ],
)
def test_missing_auth_fails_and_a_login_file_is_auth(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str], cli: str, login: str, content: str
) -> None:
    machine.install(cli)
    code, report = doctor(akira, capsys, "--agent", cli)
    auth = rows(report)["auth"]
    assert code == 1 and report["ok"] is False and auth["status"] == "fail"
    assert auth["fix"] and str(machine.home) in auth["detail"]
    (machine.home / login).parent.mkdir(parents=True, exist_ok=True)
    (machine.home / login).write_text(content)
    _, report = doctor(akira, capsys, "--agent", cli)
    assert rows(report)["auth"]["status"] == "ok", report
    assert str(machine.home / login) in rows(report)["auth"]["detail"]


def test_codex_auth_from_the_model_provider_it_is_pointed_at(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    machine.install("codex")
    codex_home = machine.home / "codex-home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        'model_provider = "gateway"\n[model_providers.gateway]\nname = "corp"\n'
        'base_url = "http://127.0.0.1:9/v1"\nenv_key = "CORP_GATEWAY_KEY"\nwire_api = "responses"\n'
    )
    machine.setenv("CODEX_HOME", str(codex_home))
    machine.setenv("OPENAI_API_KEY", "sk-not-the-gateway-key")
    _, report = doctor(akira, capsys, "--agent", "codex")
    auth = rows(report)["auth"]
    assert (
        auth["status"] == "fail" and "reads its key from CORP_GATEWAY_KEY, which is not set" in auth["detail"]
    )
    machine.setenv("CORP_GATEWAY_KEY", "corp-key-0123456789")
    _, report = doctor(akira, capsys, "--agent", "codex")
    assert rows(report)["auth"]["status"] == "ok"


def test_a_flag_the_cli_does_not_list_fails_with_its_fix(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    """codex 0.169's `exec --help` has no --full-auto (issue 28 #4): `codex exec` exits 2 on it."""
    machine.install("codex")
    machine.setenv("CODEX_API_KEY", "sk-test-0123456789")
    akira.write_config("agent:\n  preset: codex\n  extra_args: ['--full-auto', '--skip-git-repo-check']\n")
    code, report = doctor(akira, capsys)
    flags = rows(report)["flags"]
    assert code == 1 and flags["status"] == "fail"
    assert "--full-auto" in rejected(flags) and "--skip-git-repo-check" not in rejected(flags)
    assert flags["fix"] == "remove --full-auto from agent.extra_args"
    akira.write_config('agent:\n  command: "claude -p --output-format json --yolo"\n')
    machine.install("claude")
    machine.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    code, report = doctor(akira, capsys, "--agent", "command")
    flags = rows(report)["flags"]
    assert code == 1 and "'claude --help' does not list --yolo" in flags["detail"]
    assert flags["fix"] == "change agent.command: drop or replace --yolo"


def test_every_flag_of_a_session_continue_line_is_checked_against_its_own_help(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    machine.install("codex")
    machine.setenv("CODEX_API_KEY", "sk-test-0123456789")
    akira.write_config("agent:\n  preset: codex\n  session: continue\n  extra_args: ['--last']\n")
    _, report = doctor(akira, capsys)
    found = [row for row in report["checks"] if row["check"] == "flags"]
    assert len(found) == 2
    fresh, resumed = found
    assert fresh["detail"].startswith("'codex exec --help' does not list") and "--last" in rejected(fresh)
    assert resumed["detail"].startswith("'codex exec resume --help'") and "--last" not in rejected(resumed)


def test_gemini_and_aider_help_texts_are_read(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    machine.install("gemini")
    machine.install("aider")
    machine.setenv("GEMINI_API_KEY", "gm-test-0123456789")
    machine.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    akira.write_config("agent:\n  extra_args: ['--approval-mode', 'auto_edit', '--skip-trust']\n")
    code, report = doctor(akira, capsys, "--agent", "gemini")
    assert code == 0, report
    assert "--output-format, --approval-mode, --skip-trust" in rows(report)["flags"]["detail"]
    akira.write_config("agent:\n  extra_args: ['--no-auto-commits']\n")
    code, report = doctor(akira, capsys, "--agent", "aider")
    assert code == 0, report
    assert "--yes-always, --no-pretty, --message-file, --no-auto-commits" in rows(report)["flags"]["detail"]


def test_a_missing_executable_fails_and_exits_1(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = doctor(akira, capsys, "--agent", "gemini")
    agent = rows(report)["agent"]
    assert code == 1 and agent["status"] == "fail"
    assert "'gemini' is not on PATH" in agent["detail"] and str(machine.bin) in agent["detail"]
    assert "npm install -g @google/gemini-cli@0.61.0" in agent["fix"]
    assert "version" not in rows(report) and "flags" not in rows(report)
    table = akira.run("doctor", "--agent", "gemini", capsys=capsys)
    cells = " ".join(part.strip(" │") for part in table.out.splitlines())  # the table's cells, unwrapped
    assert table.code == 1 and "fail" in table.out and "@google/gemini-cli@0.61.0" in cells.replace(" ", "")
    assert (
        f"would stop a run; fix them and run 'akira doctor --agent gemini --root {akira.root}' again"
        in table.out
    )


def test_agent_command_names_its_own_executable(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    own = akira.root / "bin" / "claude"
    own.parent.mkdir()
    own.write_text(machine.install("claude", prints={"version": "2.1.150 (Claude Code)\n"}).read_text())
    own.chmod(0o755)
    (machine.bin / "claude").unlink()
    machine.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    akira.write_config('agent:\n  command: "./bin/claude -p --output-format json --yolo"\n')
    code, report = doctor(akira, capsys, "--agent", "command")
    found = rows(report)
    assert code == 1 and str(own) in found["agent"]["detail"] and report["agent"] == "claude"
    assert "claude 2.1.150" in found["version"]["detail"] and rejected(found["flags"]) == ["--yolo"]
    launcher = akira.root / "bin" / "npx"
    launcher.write_text("#!/bin/sh\necho 10.9.2\n")
    launcher.chmod(0o755)
    akira.write_config('agent:\n  preset: claude\n  command: "./bin/npx @anthropic-ai/claude-code -p"\n')
    code, report = doctor(akira, capsys)
    found = rows(report)
    assert (
        code == 0
        and found["version"]["detail"] == "not checked: agent.command starts './bin/npx', not 'claude'"
    )
    assert found["flags"]["detail"].startswith("not checked") and found["auth"]["status"] == "ok"


def test_shell_code_in_agent_command_is_a_warning(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    akira.write_config('agent:\n  command: "cd sub && claude -p"\n')
    code, report = doctor(akira, capsys, "--agent", "command")
    agent = rows(report)["agent"]
    assert code == 0 and agent["status"] == "warn" and "is shell code" in agent["detail"]


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


CACHE = Path(os.environ.get("AKIRA_TEST_CLIS") or Path.home() / ".cache" / "akira" / "test-clis")


def real_cli(cli: str) -> Path | None:
    """The pinned real CLI in the install cache the real-CLI tests share, when it is there."""
    pin = PINS[cli]
    folder = CACHE / f"{cli}-{pin.version}"
    found = folder / ("bin" if pin.installer == "pip" else "node_modules/.bin") / cli
    return found if found.is_file() else None


@pytest.mark.slow
@pytest.mark.parametrize("cli", ["claude", "codex", "gemini", "aider"])
def test_the_pinned_real_cli_passes_its_version_and_flag_checks(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str], cli: str
) -> None:
    found = real_cli(cli)
    if found is None:
        pytest.skip(f"the pinned {cli} is not installed under {CACHE} (the real-CLI tests install it)")
    (machine.bin / cli).symlink_to(found)
    if node := shutil.which("node", path="/usr/local/bin:/usr/bin:/bin"):  # the npm CLIs' `env node`
        (machine.tools / "node").symlink_to(node)
    _, report = doctor(akira, capsys, "--agent", cli)
    found_rows = rows(report)
    assert found_rows["version"]["status"] == "ok", found_rows["version"]
    assert f"{cli} {PINS[cli].version}" in found_rows["version"]["detail"]
    flags = found_rows["flags"]
    line = found_rows["agent"]["detail"]
    if cli == "codex" and "--full-auto" in line:  # issue 28 #4, until the preset drops it
        assert flags["status"] == "fail" and rejected(flags) == ["--full-auto"], flags
    else:
        assert flags["status"] == "ok", flags


def test_a_preset_flag_the_cli_lacks_names_the_right_fix_for_its_version(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    old_help = "\n".join(
        line
        for line in (DATA / "claude-2.1.197" / "help.txt").read_text().splitlines()
        if "--permission-mode" not in line
    )
    machine.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    machine.install("claude", prints={"help": old_help, "version": "1.0.98 (Claude Code)\n"})
    code, report = doctor(akira, capsys, "--agent", "claude")
    flags = rows(report)["flags"]
    assert code == 1 and rejected(flags) == ["--permission-mode"]
    assert flags["fix"] == (
        "install the tested version (npm install -g @anthropic-ai/claude-code@2.1.197); "
        "or set agent.command to the line without --permission-mode"
    )
    machine.install("claude", prints={"help": old_help})
    _, report = doctor(akira, capsys, "--agent", "claude")
    assert rows(report)["flags"]["fix"] == "set agent.command to the line without --permission-mode"
