"""Installs the pinned agent CLIs once per machine, into `~/.cache/akira/test-clis/<cli>-<version>`.

    python tests/realcli/install.py [claude|codex|gemini|aider ...]

npm CLIs go in with `npm install --prefix <folder> <package>@<version>`, aider into a venv of
its own (`python -m venv`, then `pip install aider-chat==<version>`). A file lock per CLI keeps
parallel test runs and CI jobs from installing the same one twice; a finished install leaves
`.akira-installed` (with the seconds it took), and a folder that has it is used as it is.
`AKIRA_TEST_CLIS` moves the cache.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # for tests.support
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from realcli.clis import CACHE, CLIS, RealCli

MARKER = ".akira-installed"
INSTALL_TIMEOUT = 1800.0


class InstallFailed(Exception):
    """The install ran and failed: the test that needs the CLI errors with this text."""


def missing_tool(cli: RealCli) -> str | None:
    """What this machine lacks to install `cli`, as the one line the skip prints; else None."""
    if cli.pin.installer == "npm":
        if shutil.which("npm") is None or shutil.which("node") is None:
            return "no npm on PATH: install Node.js 20+ with npm (e.g. `apt-get install nodejs npm`)"
        return None
    probe = subprocess.run([sys.executable, "-c", "import ensurepip, venv"], capture_output=True)
    if probe.returncode != 0:
        return "this Python cannot make a venv: install python3-venv (e.g. `apt-get install python3-venv`)"
    return None


def installed(cli: RealCli) -> bool:
    return (cli.home / MARKER).is_file() and cli.executable.exists()


def ensure(cli: RealCli) -> float | None:
    """Installs `cli` unless it is there; the seconds the install took, None when it was there."""
    if installed(cli):
        return None
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / f".{cli.home.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run installing it: wait, then use its install
        if installed(cli):
            return None
        if cli.home.exists():
            shutil.rmtree(cli.home)  # a half install that was cut short
        started = time.monotonic()
        for command in _commands(cli):
            done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
            if done.returncode != 0:
                tail = (done.stdout + done.stderr).strip()[-1500:]
                raise InstallFailed(f"{' '.join(command)} exited {done.returncode}:\n{tail}")
        if cli.pin.installer == "pip":  # aider's venv bin would shadow python on PATH: a bin of its own
            cli.executable.parent.mkdir(parents=True, exist_ok=True)
            cli.executable.symlink_to(cli.home / "bin" / cli.name)
        _check_version(cli)
        seconds = round(time.monotonic() - started, 1)
        (cli.home / MARKER).write_text(json.dumps({"version": cli.pin.version, "seconds": seconds}) + "\n")
        return seconds


def install_seconds(cli: RealCli) -> float | None:
    """How long the install on this machine took, as its marker says."""
    try:
        return float(json.loads((cli.home / MARKER).read_text())["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _commands(cli: RealCli) -> list[list[str]]:
    pin = cli.pin
    if pin.installer == "npm":
        npm = shutil.which("npm") or "npm"
        spec = f"{pin.package}@{pin.version}"
        return [[npm, "install", "--no-audit", "--no-fund", "--prefix", str(cli.home), spec]]
    pip = str(cli.home / "bin" / "pip")
    return [
        [sys.executable, "-m", "venv", str(cli.home)],
        [pip, "install", "-q", f"{pin.package}=={pin.version}"],
    ]


def _check_version(cli: RealCli) -> None:
    done = subprocess.run(
        [str(cli.executable), "--version"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": f"{cli.executable.parent}:/usr/bin:/bin", "HOME": str(cli.home)},
    )
    if cli.pin.version not in done.stdout + done.stderr:
        raise InstallFailed(f"{cli.executable} --version says {done.stdout.strip()!r}, not {cli.pin.version}")


def main() -> None:
    for name in sys.argv[1:] or list(CLIS):
        cli = CLIS[name]
        if reason := missing_tool(cli):
            print(f"{name} {cli.pin.version} not installed: {reason}")
            continue
        seconds = ensure(cli)
        print(
            f"{name} {cli.pin.version}: "
            + ("already installed" if seconds is None else f"installed in {seconds} s")
        )


if __name__ == "__main__":
    main()
