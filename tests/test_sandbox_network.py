"""The sandbox's network under `network: allow`, for real: real `bwrap`, `nsenter`, the
real proxy and HTTP servers on 127.0.0.1.

Each work tree's commands start in a private network namespace that akira keeps for the run (a
room, `sandbox/netns.py`), where the proxy itself listens: no forwarder process runs in front of
a command, a parallel step's slot has a room of its own, nothing inside can see or signal akira,
and nothing of it is left when the run ends. As root and as an ordinary user. Without `nsenter`,
the forwarder comes back and the step still gets out through the proxy.

A hostile step floods the proxy: thousands of idle connections leave akira working (no
traceback, one warning) and a later step reaches the allowed server; hundreds of refused hosts
with 60 kB names and terminal escapes leave a bounded log, each host once, and `loop logs` and
the console print no control character raw."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from akira_cli.config import Config
from akira_cli.runner import CommandRunner
from akira_cli.sandbox.probe import probe
from akira_cli.sandbox.session import open_sandbox
from akira_cli.sections import SandboxSettings
from tests.support.users import SETPRIV, nobody_python
from tests.support.workspace import Akira

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not probe(SandboxSettings()).ok, reason="needs a working bwrap"),
]

LOOK = """readlink /proc/self/ns/net
echo "forwarders: $(cat /proc/[0-9]*/cmdline | tr '\\0' ' ' | grep -o '[f]orward[.]py' | wc -l)"
{py} -c 'import urllib.request as u; print("allowed:", u.urlopen("http://127.0.0.1:{port}/ok", timeout=30).read())'
kill -0 {akira} 2> /dev/null; echo "signal akira: $?"
setsid sleep {mark} > /dev/null 2>&1 &
until pgrep -x sleep > /dev/null; do :; done
"""


class Hits(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        assert isinstance(self.server, Server)
        self.server.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", "7")
        self.end_headers()
        self.wfile.write(b"reached")

    def log_message(self, *args: object) -> None:
        pass


class Server(ThreadingHTTPServer):
    hits: list[str]


@pytest.fixture
def server() -> Iterator[Server]:
    """The allowed server, on 127.0.0.1."""
    started = Server(("127.0.0.1", 0), Hits)
    started.hits = []
    threading.Thread(target=started.serve_forever, daemon=True).start()
    yield started
    started.shutdown()
    started.server_close()


def namespaces_held() -> list[str]:
    """The network namespaces this process holds a descriptor of."""
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        held += [target] if target.startswith("net:[") else []
    return held


def look(tree: Path, slot: Path, port: int) -> dict[str, object]:
    """Two commands in `tree` and one in the slot `slot`, in one sandboxed run that may reach
    127.0.0.1:`port`; what they saw, and what akira holds once the run has ended."""
    config = Config()
    config.sandbox.mode, config.sandbox.allow_hosts = "on", [f"127.0.0.1:{port}"]
    with open_sandbox(config, tree, tree, lambda: None, lambda _: None) as sandbox:
        assert sandbox is not None
        runner, other = CommandRunner(tree), CommandRunner(slot)
        runner.wrapper, other.wrapper = sandbox, sandbox.moved(slot)
        mark = f"2718{os.getpid()}"
        first = runner.run(LOOK.format(py=sys.executable, port=port, akira=os.getpid(), mark=mark), 60).output
        left = lived(f"sleep\0{mark}".encode())
        again = runner.run("readlink /proc/self/ns/net", 60).output.strip()
        beside = other.run("readlink /proc/self/ns/net", 60).output.strip()
        argv = sandbox.wrap(["true"], tree, {})[0]
    return {
        "first": first,
        "again": again,
        "slot": beside,
        "host": os.readlink("/proc/self/ns/net"),
        "starts": Path(argv[0]).name,
        "held_after": namespaces_held(),
        "left": left,
    }


def lived(mark: bytes, within: float = 60) -> bool:
    """Whether a process whose command line holds `mark` is still alive after `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = False
        for entry in Path("/proc").iterdir():
            try:
                alive = alive or (entry.name.isdigit() and mark in (entry / "cmdline").read_bytes())
            except OSError:
                continue
        if not alive:
            return False
        time.sleep(0.05)
    return True


def check(seen: dict[str, object]) -> None:
    first = str(seen["first"])
    room = first.splitlines()[0]
    assert room.startswith("net:[") and room != seen["host"], first  # a network of its own
    assert "forwarders: 0" in first, first  # no forwarder process in front of the command
    assert "allowed: b'reached'" in first, first  # the proxy is reached, in the room
    assert "signal akira: 1" in first, first  # akira is neither seen nor signalled
    assert seen["starts"] == "nsenter"
    assert seen["again"] == room  # the tree's room is kept for the run
    assert str(seen["slot"]).startswith("net:[") and seen["slot"] not in (room, seen["host"])
    assert seen["held_after"] == []  # the rooms end with the run
    assert seen["left"] is False  # the command's leftover died with it


def test_a_trees_commands_share_a_room_of_their_own_with_the_proxy_in_it(
    tmp_path: Path, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the user the suite runs as (root in CI). Then without `nsenter` on PATH: the
    forwarder runs in front of each command, in a network of the command's own."""
    tree, slot = tmp_path / "tree", tmp_path / "slot"
    tree.mkdir()
    slot.mkdir()
    check(look(tree, slot, server.server_address[1]))
    assert server.hits == ["/ok"]
    tools = tmp_path / "bin"  # what LOOK runs, and no nsenter
    tools.mkdir()
    for name in ("bash", "readlink", "cat", "tr", "grep", "wc", "setsid", "sleep", "pgrep"):
        (tools / name).symlink_to(shutil.which(name) or name)
    monkeypatch.setenv("PATH", str(tools))
    seen = look(tree, slot, server.server_address[1])
    assert seen["starts"] == "bwrap" and "allowed: b'reached'" in str(seen["first"])
    assert "forwarders: 0" not in str(seen["first"]) and seen["held_after"] == []
    assert server.hits == ["/ok", "/ok"]


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="root switches to uid 65534 here (as an ordinary user, the test above is this one)",
)
def test_the_rooms_work_for_an_ordinary_user(server: Server) -> None:
    """As uid 65534 (`setpriv`): the room is joined through its own user namespace."""
    import akira_cli

    folder = Path(tempfile.mkdtemp(prefix="akira-nobody-"))
    try:
        for name in ("tree", "slot", "home"):
            (folder / name).mkdir()
        for path in (folder, *folder.iterdir()):
            os.chown(path, 65534, 65534)
        paths = [str(Path(akira_cli.__file__).parents[1]), str(Path(__file__).parent)]
        paths += [path for path in sys.path if path.endswith("site-packages")]
        env = {"PATH": os.environ["PATH"], "HOME": str(folder / "home"), "PYTHONPATH": os.pathsep.join(paths)}
        found = nobody_python()
        if found is None:
            pytest.skip("no Python here that uid 65534 can run with akira's packages")
        python = [*SETPRIV, found[0]]
        code = (
            "import json, sys; from pathlib import Path; from test_sandbox_network import look; "
            "print(json.dumps(look(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))))"
        )
        args = [str(folder / "tree"), str(folder / "slot"), str(server.server_address[1])]
        done = subprocess.run(
            [*python, "-c", code, *args], env=env, capture_output=True, text=True, timeout=300, cwd=folder
        )
        assert done.returncode == 0, done.stderr
        check(json.loads(done.stdout.splitlines()[-1]))
        assert server.hits == ["/ok"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


FLOOD = r"""
import os, socket, sys, time
port = int(os.environ["HTTPS_PROXY"].rsplit(":", 1)[1])
children = []
for _ in range(4):  # 4 x 800 connections: each process under the usual limit of 1024 files
    pid = os.fork()
    if pid == 0:
        held = []
        for _ in range(800):
            try:
                held.append(socket.create_connection(("127.0.0.1", port), timeout=20))
            except OSError:
                pass
        print("held", len(held), flush=True)
        time.sleep(2)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
"""

REACH = (
    "import urllib.request as u; "
    "print('reached:', u.urlopen('http://127.0.0.1:{port}/after', timeout=30).read())"
)


def test_thousands_of_idle_connections_leave_akira_and_the_next_step_working(
    akira: Akira, server: Server
) -> None:
    """akira with 1024 open files at most, as a login shell gives it: the flood neither fills
    them nor prints a traceback; one warning says the proxy refused; the next step gets out."""
    port = server.server_address[1]
    (akira.root / "flood.py").write_text(FLOOD)
    (akira.root / "reach.py").write_text(REACH.format(port=port))
    akira.write_config(f'sandbox:\n  mode: on\n  allow_hosts: ["127.0.0.1:{port}"]\n')
    task = akira.write_task(
        "feat",
        f"- [ ] 1. Flood the proxy\n  - Run: `{sys.executable} flood.py`\n"
        f"- [ ] 2. Then reach the server\n  - Run: `{sys.executable} reach.py`\n",
    )
    command = [sys.executable, "-m", "akira_cli", "loop", "start", "--task", str(task), "--agent", "script"]
    done = subprocess.run(
        ["bash", "-c", 'ulimit -Sn 1024 && exec "$@"', "bash", *command, "--root", str(akira.root)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=akira.root,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-3000:]
    assert "Traceback" not in said and "Too many open files" not in said, said[-3000:]
    assert server.hits == ["/after"]
    warnings = [e.data["message"] for e in akira.events() if e.type == "warning" and "proxy" in str(e.data)]
    assert len(warnings) == 1 and "refuses connections past" in warnings[0], warnings


HOSTS = r"""
import os, socket
port = int(os.environ["HTTPS_PROXY"].rsplit(":", 1)[1])

def ask(host):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"CONNECT " + host + b":443 HTTP/1.1\r\n\r\n")
        return s.recv(100)

answers = [ask(b"same.example") for _ in range(20)]
answers.append(ask(b"evil\x1b]0;pwned\x07\x1b[2J.example"))
answers += [ask(str(n).encode() + b"a" * 60_000 + b".example") for n in range(300)]
print(sum(b" 403 " in a for a in answers), "refused")
"""


def test_refused_hosts_are_logged_once_a_step_cut_and_escaped(akira: Akira) -> None:
    (akira.root / "hosts.py").write_text(HOSTS)
    akira.write_config("sandbox:\n  mode: on\n")
    task = akira.write_task("feat", f"- [ ] 1. Ask for hosts\n  - Run: `{sys.executable} hosts.py`\n")
    done = akira.cli("loop", "start", "--task", str(task), "--agent", "script", timeout=300)
    assert done.code == 0, done.err
    assert "\x1b" not in done.out + done.err and "\x07" not in done.out + done.err  # the console
    log = akira.root / ".state" / "logs" / f"{akira.task_id()}.jsonl"
    assert log.stat().st_size < 100_000  # 300 hosts of 60 kB: 18 MB, were each logged whole
    hosts = [str(e.data["host"]) for e in akira.events() if e.type == "sandbox_denied"]
    assert hosts.count("same.example") == 1  # once per host per step
    assert hosts and all(len(host) <= 253 for host in hosts if "evil" not in host)
    shown = akira.cli("loop", "logs", "--task-id", akira.task_id())
    assert shown.code == 0 and "\x1b" not in shown.out and "\x07" not in shown.out
    assert "sandbox_denied host=evil\\x1b]0;pwned\\x07\\x1b[2j.example" in shown.out  # hosts: lower case


def test_idle_connections_time_out(tmp_path: Path) -> None:
    """A connection that never sends its request, and a tunnel that moves no byte, are closed
    after the proxy's idle time (here a fraction of a second; ten minutes in a run)."""
    import socket

    from akira_cli.sandbox.policy import HostRule
    from akira_cli.sandbox.proxy import Proxy

    silent = socket.create_server(("127.0.0.1", 0))  # accepts, and never says a word
    port = silent.getsockname()[1]
    proxy = Proxy([HostRule.parse(f"127.0.0.1:{port}")], lambda *_: None, idle=0.3).start()
    try:
        mute = socket.socket(socket.AF_UNIX)
        mute.connect(str(proxy.socket))
        tunnel = socket.socket(socket.AF_UNIX)
        tunnel.connect(str(proxy.socket))
        tunnel.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
        for client in (mute, tunnel):
            client.settimeout(120)  # the deadline of a loaded machine; it ends long before
        assert tunnel.recv(100).startswith(b"HTTP/1.1 200")
        assert mute.recv(100) == b""  # closed by the proxy
        assert tunnel.recv(100) == b""
    finally:
        proxy.close()
        silent.close()
