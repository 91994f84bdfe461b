"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned, on Node 22
from npm's `node` package) against `akira mcp --http`, behind its door: the suite sends no
header of its own, so a forwarder adds the token and keeps every Host and Origin as the suite
forged it (`tests/support/bearer_proxy.py`). Installed once per machine, like the real CLIs.

Every scenario that applies to a server of tools and resources passes. The others do not
apply, and are not asked of akira:
- `tools-call-*` (but the error one), `elicitation-*`, `resources-read-*`,
  `resources-templates-read`, `json-schema-2020-12`: they call the suite's own test tools and
  `test://` resources, which only its reference server has;
- `resources-subscribe`, `resources-unsubscribe`: akira offers no subscriptions (it does not
  advertise them);
- `prompts-*`, `completion-complete`: akira serves no prompts and no completions, and
  advertises neither.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from realcli.clis import CACHE
from tests.support.bearer_proxy import bearer_proxy
from tests.support.mcp import http_server
from tests.support.workspace import Akira

SUITE = ("@modelcontextprotocol/conformance", "0.1.16")
NODE = ("node", "22.23.3")
APPLIES = (
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "tools-call-error",
    "resources-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
)
TOKEN = "conformance-token-5e3a1c9b7d"
MARKER = ".akira-installed"


def suite() -> Path:
    """The suite's folder, installed with its Node once per machine (a lock for parallel runs)."""
    if shutil.which("npm") is None:
        pytest.skip("no npm on PATH: install Node.js 20+ with npm (e.g. `apt-get install nodejs npm`)")
    home = CACHE / f"mcp-conformance-{SUITE[1]}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / f".{home.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (home / MARKER).is_file():
            shutil.rmtree(home, ignore_errors=True)
            packages = [f"{NODE[0]}@{NODE[1]}", f"{SUITE[0]}@{SUITE[1]}"]
            done = subprocess.run(
                ["npm", "install", "--prefix", str(home), "--no-audit", "--no-fund", *packages],
                capture_output=True,
                text=True,
                timeout=900,
            )
            assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
            (home / MARKER).write_text("installed\n")
    return home


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_conformance_suite_passes_every_scenario_that_applies(akira: Akira) -> None:
    home = suite()
    bin_dir = home / "node_modules" / ".bin"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    version = subprocess.run([str(bin_dir / "node"), "--version"], capture_output=True, text=True, env=env)
    assert version.stdout.startswith("v22."), version
    with http_server(akira.root, "--token", TOKEN) as served, bearer_proxy(served.port, TOKEN) as port:
        done = subprocess.run(
            [str(bin_dir / "conformance"), "server", "--url", f"http://127.0.0.1:{port}/mcp"],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
        )
    found = {name: mark for mark, name in re.findall(r"^([✓✗]) ([\w-]+):", done.stdout, re.MULTILINE)}
    assert found, done.stdout[-3000:] + done.stderr[-2000:]
    failed = [name for name in APPLIES if found.get(name) != "✓"]
    assert not failed, (failed, done.stdout[-5000:])
