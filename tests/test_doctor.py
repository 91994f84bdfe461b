"""`akira doctor`: the agent CLI (on PATH, its version, auth and flags) against fake
CLIs on PATH that print what the pinned real CLIs print for `--version` and `--help`
(tests/data/doctor/), and against the pinned real CLIs themselves when they are installed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from akira_cli.agents.presets.versions import PINS
from tests.support.doctor import DATA, Machine, doctor, rejected, rows
from tests.support.workspace import Akira


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Machine:
    return Machine(tmp_path, monkeypatch)


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
    """codex 0.169's `exec --help` has no --full-auto: `codex exec` exits 2 on it."""
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
    assert (
        "--yes-always, --no-pretty, --message-file, --no-git, --no-auto-commits"
        in rows(report)["flags"]["detail"]
    )


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
    assert "\x1b[" not in table.out  # a pipe gets plain text
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
    if cli == "codex" and "--full-auto" in line:  # the flag codex 0.169 refuses, until the preset drops it
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


def test_the_reports_first_line_is_its_title_without_trailing_spaces(
    akira: Akira, machine: Machine, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = akira.run("doctor", "--agent", "script", capsys=capsys).out
    assert shown.splitlines()[0] == "akira doctor", repr(shown.splitlines()[0])
