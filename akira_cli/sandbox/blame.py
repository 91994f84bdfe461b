"""The sandbox blames itself: what it refused a step (a host the proxy turned away, a path it
hides), each said with the exact line of configuration that allows it, so that a failure it
caused is never read as the code's fault.

The proxy is the run's, shared by every work tree: a command's requests carry the name of the
work tree they come from (`lane`), and each work tree runs one step at a time, so a refusal is
the step's that runs there (`Refusals.begin`)."""

from __future__ import annotations

import glob
import json
import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from akira_cli.sandbox.policy import TMP, hidden

HOSTS_PER_STEP = 50
"""Refused hosts reported per attempt of a step; the rest are refused unreported."""

HOST_SHOWN = 253
"""The longest host name shown (DNS's limit); a longer one is cut."""
HINTS = 5
"""At most this many hidden paths named per failure."""


def shown_host(host: str) -> str:
    """A host name as a line may show it: printable, cut to DNS's limit."""
    clean = "".join(char if char.isprintable() and not char.isspace() else "?" for char in host)
    return clean if len(clean) <= HOST_SHOWN else clean[: HOST_SHOWN - 1] + "…"


def item(text: str) -> str:
    """`text` as an item of a YAML list written on one line: bare when YAML reads it back as it
    is, else quoted."""
    return text if re.fullmatch(r"[A-Za-z0-9_~/][\w.~/:+*-]*", text) else json.dumps(text)


@dataclass(frozen=True)
class Refusal:
    host: str
    port: int

    @property
    def rule(self) -> str:
        """The `sandbox.allow_hosts` entry that lets it through (no port: 80 and 443)."""
        host = shown_host(self.host)
        return host if self.port in (80, 443) else f"{host}:{self.port}"

    def line(self) -> str:
        """What stopped a step: the failure text names the host, or a proxy's refusal."""
        return (
            f"the sandbox refused {shown_host(self.host)}:{self.port}; "
            f"to allow it: sandbox.allow_hosts: [{item(self.rule)}]"
        )

    def note(self) -> str:
        """A refusal the failure does not speak of (an agent CLI's update check, its telemetry):
        told, in other words than `line`, so that no reflection takes it for the cause."""
        return (
            f"while the step ran, the sandbox also refused {shown_host(self.host)}:{self.port} "
            f"(to allow it: sandbox.allow_hosts: [{item(self.rule)}])"
        )

    def named_by(self, said: str) -> bool:
        return self.host.lower() in said.lower() or bool(_PROXY_SAID.search(said))


_PROXY_SAID = re.compile(r"\b403\b|forbidden|tunnel|proxy|allow_hosts", re.I)
"""How a client says a proxy refused it (curl, pip, npm, git, Python's and node's own)."""


class Refusals:
    """The run's refused hosts, by work tree; `on_new(step_id, refusal)` once per host and port
    per step, on the proxy's thread."""

    def __init__(self, on_new: Callable[[str | None, Refusal], None] = lambda *_: None) -> None:
        self.on_new = on_new
        self._steps: dict[str, str | None] = {}
        self._seen: dict[str, list[Refusal]] = {}
        self._lock = threading.Lock()

    def begin(self, lane: str, step_id: str) -> None:
        with self._lock:
            self._steps[lane], self._seen[lane] = step_id, []

    def note(self, lane: str, host: str, port: int) -> None:
        """A refusal of `lane`'s; a client that named no lane (it sent no proxy credentials) is
        taken for the only work tree that ran a step, if there is one."""
        refusal = Refusal(host, port)
        with self._lock:
            if lane not in self._steps and len(self._steps) == 1:
                lane = next(iter(self._steps))
            seen = self._seen.setdefault(lane, [])
            if refusal in seen or len(seen) >= HOSTS_PER_STEP:
                return
            seen.append(refusal)
            step = self._steps.get(lane)
        self.on_new(step, refusal)

    def since_begin(self, lane: str) -> list[Refusal]:
        with self._lock:
            return list(self._seen.get(lane, []))


_MISSING = re.compile(
    r"No such file|not found|cannot access|can't open|cannot open|ENOENT|bad interpreter|does not exist",
    re.I,
)
"""A line that says a path or a command is missing: only such a line's paths are looked at."""
_PATH = re.compile(r"(?:~|/)[^\s:'\"`;,()<>|&]+")
_NOT_FOUND = re.compile(r"(?:^|[\s:])([A-Za-z0-9_][\w.+-]*): (?:command )?not found", re.M)


def hidden_paths(said: str, home: Path, shown: Iterable[Path], secrets: Iterable[Path]) -> list[str]:
    """A line for each path `said` names (or each tool it did not find) that the sandbox hides
    but that exists outside it: `~/.venvs/x/bin/python is hidden by the sandbox; to allow it:
    sandbox.allow_read: [~/.venvs/x] (or --no-sandbox)`."""
    visible, secret = tuple(shown), tuple(secrets)
    said = "\n".join(line for line in said.splitlines() if _MISSING.search(line))
    found: list[Path] = []
    for text in _PATH.findall(said):
        path = Path(os.path.normpath(home / text[2:] if text.startswith("~/") else text))
        if path.is_absolute() and path not in found:
            found.append(path)
    for name in dict.fromkeys(_NOT_FOUND.findall(said)):
        found += _under_home(name, home)
    lines: list[str] = []
    for path in found:
        if len(lines) >= HINTS:
            break
        if not hidden(path, home) or path in (home, TMP):
            continue
        if any(path.is_relative_to(v) or v.is_relative_to(path) for v in visible):
            continue
        if any(path.is_relative_to(s) for s in secret) or not os.path.lexists(path):
            continue
        line = (
            f"{_tilde(path, home)} is hidden by the sandbox; to allow it: "
            f"sandbox.allow_read: [{item(_tilde(_prefix(path, home), home))}] (or --no-sandbox)"
        )
        if line not in lines:
            lines.append(line)
    return lines


def _under_home(name: str, home: Path) -> list[Path]:
    """Where a tool of that name lies in the home's `bin` folders, one or two levels down
    (`~/.cargo/bin`, `~/.venvs/x/bin`)."""
    found: list[str] = []
    for pattern in ("*/bin", ".*/bin", "*/*/bin", ".*/*/bin", ".*/.*/bin"):
        found += glob.glob(f"{glob.escape(str(home))}/{pattern}/{glob.escape(name)}")
    return [Path(path) for path in sorted(found)[:HINTS]]


def _prefix(path: Path, home: Path) -> Path:
    """What to allow for a path: the prefix of the `bin` it lies in (a venv, a toolchain), else
    its folder."""
    parts = path.parts
    if "bin" in parts:
        prefix = Path(*parts[: len(parts) - 1 - parts[::-1].index("bin")])
        if prefix not in (home, *home.parents, TMP):  # never the whole home or /tmp
            return prefix
    return path if path.is_dir() else path.parent


def _tilde(path: Path, home: Path) -> str:
    return (
        f"~/{path.relative_to(home).as_posix()}" if path.is_relative_to(home) and path != home else str(path)
    )
