"""The sandbox's set-up (docs/sandbox.md): a `bwrap` that cannot make a user namespace gives the `on`
refusal (exit 1, one line, cause and fix, nothing saved) and the `auto` warning (the run goes on
unsandboxed, and the state, `status` and the report say so); the proxy's host rules; a `[P]`
step's slot cannot write the main work tree; the reviewer's read-only sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from akira_cli.config import Config
from akira_cli.errors import AkiraError
from akira_cli.runner import CommandRunner
from akira_cli.sandbox.policy import HostRule, allowed, host_rules
from akira_cli.sandbox.probe import decide, probe
from akira_cli.sandbox.session import build_sandbox
from akira_cli.sections import SandboxSettings
from tests.support.git import git
from tests.support.workspace import Akira

WORKS = probe(SandboxSettings()).ok
needs_bwrap = pytest.mark.skipif(not WORKS, reason="needs a working bwrap")

FAKE_BWRAP = "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"


@pytest.fixture
def denied_bwrap(tmp_path: Path) -> Path:
    """A bwrap that fails as it does under Ubuntu 24.04's AppArmor restriction."""
    path = tmp_path / "bin" / "bwrap"
    path.parent.mkdir()
    path.write_text(FAKE_BWRAP)
    path.chmod(0o755)
    return path


def one_step(akira: Akira, config: str) -> None:
    akira.write_config(config)
    akira.write_task("feat", "- [ ] 1. Work\n  - Run: `echo ok > out.txt`\n  - Exists: `out.txt`\n")


@pytest.mark.slow
def test_on_refuses_to_start_with_one_line_naming_cause_and_fix(akira: Akira, denied_bwrap: Path) -> None:
    one_step(akira, f"sandbox:\n  mode: on\n  bwrap: {denied_bwrap}\n")
    done = akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "script")
    assert done.code == 1
    lines = done.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.err, done.err
    assert "setting up uid map: Permission denied" in lines[0]
    assert "kernel.apparmor_restrict_unprivileged_userns=0" in lines[0] and "--no-sandbox" in lines[0]
    assert akira.state_files() == [] and not (akira.root / "out.txt").exists()


@pytest.mark.slow
def test_the_sandbox_flag_refuses_too_and_yaml_on_means_on(akira: Akira, denied_bwrap: Path) -> None:
    one_step(akira, f"sandbox:\n  bwrap: {denied_bwrap}\n")
    done = akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "script", "--sandbox")
    assert done.code == 1 and "uid map" in done.err
    one_step(akira, f"sandbox:\n  mode: on\n  bwrap: {denied_bwrap}\n".replace("mode: on", "mode: true"))
    assert akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "script").code == 1


@pytest.mark.slow
def test_auto_warns_once_runs_unsandboxed_and_says_so(akira: Akira, denied_bwrap: Path) -> None:
    one_step(akira, f"sandbox:\n  bwrap: {denied_bwrap}\n")
    done = akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "script", "--no-wait")
    assert done.code == 0, done.err
    warnings = [line for line in done.err.splitlines() if "without the sandbox" in line]
    assert len(warnings) == 1
    assert "uid map" in warnings[0] and "apparmor_restrict_unprivileged_userns=0" in warnings[0]
    assert akira.state().sandboxed is False
    report = next((akira.root / "Logs" / "completion_reports").glob("*.md")).read_text()
    assert "**Sandbox**: NOT sandboxed" in report
    rows = json.loads(akira.cli("loop", "status", "--json").out)["loops"]
    assert [row["sandboxed"] for row in rows] == [False]
    assert "sandboxed: False" in akira.cli("loop", "status", "--task-id", akira.task_id()).out


@pytest.mark.slow
def test_no_sandbox_needs_no_bwrap_and_a_bad_host_rule_is_one_line(akira: Akira, denied_bwrap: Path) -> None:
    one_step(akira, f"sandbox:\n  mode: on\n  bwrap: {denied_bwrap}\n")
    done = akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "script", "--no-sandbox")
    assert done.code == 0, done.err
    assert "sandbox" not in done.err and akira.state().sandboxed is False
    one_step(akira, 'sandbox:\n  mode: off\n  allow_hosts: ["pypi.org:https"]\n')
    (akira.root / "out.txt").unlink()
    done = akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "script")
    assert done.code == 1 and "pypi.org:https" in done.err and len(done.err.strip().splitlines()) == 1


def test_elsewhere_than_linux_auto_warns_and_on_refuses() -> None:
    sandboxed, warning = decide(SandboxSettings(), platform="darwin")
    assert not sandboxed and warning is not None and "not yet available on darwin" in warning
    with pytest.raises(AkiraError, match="--no-sandbox"):
        decide(SandboxSettings(mode="on"), platform="darwin")
    assert decide(SandboxSettings(mode="off"), platform="darwin") == (False, None)


def test_host_rules() -> None:
    rules = host_rules("claude", "http://127.0.0.1:8080/v1", ["*.pypi.org", "example.com:8443", "npmjs.org"])
    assert allowed(rules, "api.anthropic.com", 443) and not allowed(rules, "api.anthropic.com", 8443)
    assert allowed(rules, "127.0.0.1", 8080) and not allowed(rules, "127.0.0.1", 8081)
    assert allowed(rules, "files.pypi.org", 443) and not allowed(rules, "pypi.org.evil.com", 443)
    assert allowed(rules, "example.com", 8443) and not allowed(rules, "example.com", 443)
    assert allowed(rules, "NPMJS.org", 80) and not allowed(rules, "evil.npmjs.org", 443)
    assert not allowed(rules, "api.openai.com", 443)
    with pytest.raises(ValueError):
        HostRule.parse("host:port")


@pytest.mark.slow
@needs_bwrap
@pytest.mark.parametrize("shared", [False, True], ids=["nothing-shared", "parent-in-allow-write"])
def test_a_parallel_step_cannot_write_the_main_work_tree(repo: Akira, shared: bool) -> None:
    main = repo.root
    steps = "".join(
        f"- [ ] {n}. [P] Write {n}\n"
        f"  - Run: `echo x > {main}/escape{n}.txt; echo {n} > f{n}.txt`\n"
        f"  - Exists: `f{n}.txt`\n"
        for n in (1, 2)
    )
    # nothing shared: the main tree is off limits; or the main tree's parent in sandbox.allow_write
    # (a person's ~/src): a slot's sandbox keeps the main tree read-only all the same
    allow = f"  allow_write: [{str(main.parent)!r}]\n" if shared else ""
    repo.write_config(f"sandbox:\n  mode: on\n{allow}")
    repo.write_task("feat", steps)
    git(main, "add", "-A")
    git(main, "commit", "-q", "-m", "the tasks")
    done = repo.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--parallel", "2", "--agent", "script")
    assert done.code == 0, done.err
    assert repo.state().sandboxed is True
    for n in (1, 2):
        assert (main / f"f{n}.txt").read_text() == f"{n}\n"  # the step's own work landed
        assert not (main / f"escape{n}.txt").exists()


@pytest.mark.slow
@needs_bwrap
def test_the_reviewers_sandbox_is_read_only(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    config = Config()
    config.sandbox.mode, config.sandbox.network = "on", "none"
    sandbox = build_sandbox(config, tree, tree, lambda: None).looking()
    runner = CommandRunner(tree)
    runner.wrapper = sandbox
    result = runner.run("echo x > note.txt; echo y > /tmp/scratch && cat /tmp/scratch", 60)
    assert "Read-only file system" in result.output and "y" in result.output
    assert not (tree / "note.txt").exists()


@pytest.mark.slow
@needs_bwrap
def test_the_proxy_passes_connect_to_an_allowed_host_and_refuses_others(tmp_path: Path) -> None:
    """CONNECT through the run's proxy, from inside: the tunnel reaches the allowed server."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from akira_cli.sandbox.session import open_sandbox

    class Hello(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "5")
            self.end_headers()
            self.wfile.write(b"hello")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    config = Config()
    config.sandbox.mode, config.sandbox.allow_hosts = "on", [f"127.0.0.1:{port}"]
    denied: list[str] = []
    tunnel = (
        "import http.client as h, os; p = int(os.environ['HTTPS_PROXY'].rsplit(':', 1)[1]); "
        "c = h.HTTPConnection('127.0.0.1', p); c.set_tunnel('{host}', {port}); c.request('GET', '/'); "
        "print(c.getresponse().read())"
    )
    try:
        with open_sandbox(
            config, tmp_path, tmp_path, lambda: None, lambda _, r: denied.append(r.host)
        ) as sandbox:
            runner = CommandRunner(tmp_path)
            runner.wrapper = sandbox
            ok = runner.run(f'{sys.executable} -c "{tunnel.format(host="127.0.0.1", port=port)}"', 60)
            refused = runner.run(f'{sys.executable} -c "{tunnel.format(host="example.org", port=443)}"', 60)
    finally:
        server.shutdown()
        server.server_close()
    assert "b'hello'" in ok.output, ok.output
    assert "403" in refused.output and denied == ["example.org"]


@pytest.mark.slow
def test_the_probe_runs_the_real_bwrap_it_found() -> None:
    found = probe(SandboxSettings())
    assert found.bwrap is None or Path(found.bwrap).name == "bwrap"
    if found.ok:
        assert subprocess.run([found.bwrap or "", "--version"], capture_output=True).returncode == 0


@pytest.mark.slow
@needs_bwrap
def test_the_llm_agents_run_command_and_the_checks_run_in_the_sandbox(
    akira: Akira, fake_openai: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The llm agent's `run_command`, a `Verify:` and a project check: none sees a token of
    akira's environment or writes outside the work tree (the first two would on old code)."""
    from tests.support.llm_agent import HEALTH, Model, call, run_step

    token = "ghp_LLMTOKEN0123456789abcdef"
    monkeypatch.setenv("GITHUB_TOKEN", token)
    escape = "echo $GITHUB_TOKEN > {name}.leak; echo x > {tmp}/{name}.out"
    model = Model(
        [
            call("run_command", command=escape.format(name="tool", tmp=tmp_path), timeout=30),
            call("write_file", path="health.py", content=HEALTH),
            call("finish", summary="done"),
        ]
    )
    verify = escape.format(name="verify", tmp=tmp_path)
    step = f'- [ ] 1. Add a health check\n  - Verify: `{verify}; python3 -c "import health"`\n'
    check = escape.format(name="check", tmp=tmp_path)
    extra = f"sandbox:\n  mode: on\nchecks:\n  - run: '{check}; true'\n    name: project\n"
    assert run_step(akira, fake_openai, model, step, extra) == 0
    assert akira.state().sandboxed is True
    for name in ("tool", "verify", "check"):
        assert (akira.root / f"{name}.leak").read_text() == "\n", name  # ran, and saw no token
        assert not (tmp_path / f"{name}.out").exists(), name


@pytest.mark.slow
@needs_bwrap
def test_secrets_stay_hidden_under_an_allowed_path_and_the_home_is_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, tree = tmp_path / "home", tmp_path / "tree"
    for path, text in ((".ssh/id_rsa", "KEY-IN-SSH"), (".netrc", "NETRC-PW"), ("notes.txt", "readable")):
        (home / path).parent.mkdir(parents=True, exist_ok=True)
        (home / path).write_text(text)
    (home / "private").mkdir()
    (home / "private" / "deny.txt").write_text("DENIED-TEXT")
    tree.mkdir()
    monkeypatch.setenv("HOME", str(home))
    config = Config()
    config.sandbox.mode, config.sandbox.network = "on", "none"
    runner = CommandRunner(tree)
    runner.wrapper = build_sandbox(config, tree, tree, lambda: None)
    look = "cat ~/notes.txt ~/.ssh/id_rsa ~/.netrc ~/private/deny.txt; ls -a ~"
    private = runner.run(look, 60).output
    assert "readable" not in private and "KEY-IN-SSH" not in private  # a private, empty home
    config.sandbox.allow_read, config.sandbox.deny = ["~"], ["~/private/deny.txt"]
    runner.wrapper = build_sandbox(config, tree, tree, lambda: None)
    allowed = runner.run(look, 60).output
    assert "readable" in allowed  # the allowed home is there...
    assert "KEY-IN-SSH" not in allowed and "NETRC-PW" not in allowed and "DENIED-TEXT" not in allowed


@pytest.mark.slow
@needs_bwrap
def test_resume_keeps_the_starts_choice_unless_told_otherwise(akira: Akira) -> None:
    akira.write_config("autonomous_loop:\n  failure_threshold: 1\n")
    akira.write_task(
        "feat",
        "- [ ] 1. Wait for go\n  - Run: `test -f go.txt`\n- [ ] 2. Again\n  - Run: `test -f go2.txt`\n",
    )
    start = akira.cli(
        "loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "script", "--no-sandbox", "--no-wait"
    )
    assert start.code == 4 and akira.state().sandboxed is False
    (akira.root / "go.txt").write_text("")
    resumed = akira.cli("loop", "resume", "--task-id", akira.task_id(), "--no-wait", "--reset-failures")
    assert resumed.code == 4 and akira.state().sandboxed is False  # --no-sandbox was kept
    (akira.root / "go2.txt").write_text("")
    resumed = akira.cli(
        "loop", "resume", "--task-id", akira.task_id(), "--no-wait", "--reset-failures", "--sandbox"
    )
    assert resumed.code == 0, resumed.err
    assert akira.state().sandboxed is True and akira.state().sandbox_flag is True


@pytest.mark.slow
@needs_bwrap
def test_tools_in_the_hidden_tmp_are_bound_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox's /tmp is private, yet a tool on PATH under /tmp (a fresh `mktemp -d` venv, as
    the README's first command makes one, or a CI checkout) still runs inside, read-only."""
    from akira_cli.cli import main
    from akira_cli.sandbox.tools import tool_paths

    assert str(tmp_path).startswith("/tmp/")
    root = tmp_path / "ws"
    assert main(["init", str(root)]) == 0
    akira = Akira(root)  # nothing of the test's folder is shared with the steps
    tools = tmp_path / "tools" / "bin"
    tools.mkdir(parents=True)
    (tools / "maketool").write_text(
        '#!/bin/sh\necho made > made.txt\ntouch "$0.written" 2>/dev/null || true\n'
    )
    (tools / "maketool").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    assert tools.parent in tool_paths(os.environ["PATH"], Path.home(), ())  # `<prefix>/bin` brings its prefix
    akira.write_task("feat", "- [ ] 1. Use the tool\n  - Run: `maketool`\n  - Exists: `made.txt`\n")
    done = akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", "--agent", "script")
    assert done.code == 0, done.err
    assert akira.state().sandboxed is True and (root / "made.txt").read_text() == "made\n"
    assert not (tools / "maketool.written").exists()  # bound back read-only


class Reports:
    """Where a run's progress goes (the fleet's tables): kept in a list."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, object]]] = []

    def report(self, run_id: str, **values: object) -> None:
        self.seen.append((run_id, values))


@pytest.mark.slow
@needs_bwrap
def test_fleet_setup_runs_in_the_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from akira_cli.fleet.loop_run import LoopRun
    from akira_cli.fleet.runs import RunSpec

    clone = tmp_path / "clone"
    (clone / "config").mkdir(parents=True)
    setup = f"echo $GITHUB_TOKEN > token.txt; echo x > {tmp_path}/outside.txt; echo built > built.txt"
    (clone / "config" / "autonomous_loop.yaml").write_text(
        f"fleet:\n  setup: '{setup}'\nsandbox:\n  mode: on\n"
    )
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_FLEETTOKEN0123456789abcdef")
    spec = RunSpec(
        run_id="r1", repo=str(tmp_path), task="Specs/f/tasks.md", ref="main", branch="b", added_at=0.0
    )
    run = LoopRun(spec, "w", tmp_path, Reports(), threading.Event(), lambda _: False)  # type: ignore[arg-type]
    assert run.setup(clone) is None
    assert (clone / "built.txt").read_text() == "built\n"  # it ran, in the clone
    assert (clone / "token.txt").read_text() == "\n" and not (tmp_path / "outside.txt").exists()


def test_a_gateway_the_person_pointed_the_cli_at_is_let_through_with_its_key(tmp_path: Path) -> None:
    """README "Agent CLIs": codex pointed at a gateway by its model provider in config.toml, claude
    by ANTHROPIC_BASE_URL. Inside the sandbox the gateway's host:port passes the proxy and the
    provider's `env_key` variable is passed in; another port and another secret are not."""
    from akira_cli.sandbox.policy import gateway, sandbox_env

    codex = tmp_path / "codex"
    codex.mkdir()
    (codex / "config.toml").write_text(
        'model_provider = "gateway"\n[model_providers.gateway]\nname = "Gateway"\n'
        'base_url = "http://127.0.0.1:4011/v1"\nenv_key = "GATEWAY_API_KEY"\nwire_api = "responses"\n'
    )
    environ = {"CODEX_HOME": str(codex), "GATEWAY_API_KEY": "gw-1234567890", "OTHER_API_KEY": "x" * 12}
    rules = host_rules("codex", None, (), environ)
    assert allowed(rules, "127.0.0.1", 4011) and not allowed(rules, "127.0.0.1", 4012)
    keys = gateway("codex", environ, tmp_path).keys
    env = sandbox_env({**environ, "PATH": "/usr/bin"}, "codex", (), "/home/u", None, keys)
    assert env["GATEWAY_API_KEY"] == "gw-1234567890" and "OTHER_API_KEY" not in env
    assert gateway("claude", environ, tmp_path).keys == ()
    claude = host_rules("claude", None, (), {"ANTHROPIC_BASE_URL": "https://llm.corp.example:8443"})
    assert allowed(claude, "llm.corp.example", 8443) and allowed(claude, "api.anthropic.com", 443)
    assert not allowed(claude, "llm.corp.example", 443)
