"""The agent CLI's own state inside the sandbox: what a step writes there never changes what the
CLI does later, outside akira (its settings and hooks, MCP servers, commands, agents, plugins,
skills, instruction files).

The sandbox's home is a private folder of the run's (`home.PrivateHome`). Each of the preset's
state folders (`~/.claude`, `~/.codex`, `$CODEX_HOME` ...) is private too, and the real folder's
entries are laid out in it once, at the run's start:
- the CLI's session records (made in the real home when missing, so they are kept) and what else
  it keeps (refreshed credentials, logs, caches) are bound writable from the real home;
- its other files (settings, instruction files, codex's `config.toml`) are private copies: the
  CLI may rewrite them (gemini migrates its settings.json, claude renames `~/.claude.json` over
  itself), and what was written ends with the run;
- its other folders (commands, agents, plugins, skills, extensions) are bound read-only;
- whatever is new lands in the private folder.
A state file directly in the home (`~/.claude.json`, `~/.aider.conf.yml`) is a private copy.
What each CLI keeps was read off what the pinned CLIs write during a run (tests/realcli)."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from akira_cli.sandbox.policy import PRESET_EXECUTABLES, Gateway, expand, gateway

PROJECT = "{project}"
COPY_LIMIT = 64 * 1024 * 1024
"""A file or folder larger than this is bound read-only rather than copied."""


@dataclass(frozen=True)
class CliState:
    roots: tuple[str, ...]
    """Its state in the home: folders and files (`*` as a glob)."""
    moved_by: tuple[str, ...] = ()
    """Variables that move its state folder elsewhere (an absolute path, never `/` or the home)."""
    records: tuple[str, ...] = ()
    """Its session records in a state folder: made when missing, and kept. `{project}`: the
    folder it names after the work folder (claude's `projects/-home-me-repo`)."""
    kept: tuple[str, ...] = ()
    """What else it writes and keeps, where it exists (`*` as a glob): credentials, logs, caches."""
    copied: tuple[str, ...] = ()
    """Folders it rewrites as it starts, copied for the run (codex installs its own skills)."""
    scratch: tuple[str, ...] = ()
    """Folders it writes that must not outlive the run, private and empty: claude restores
    `~/.claude.json` from its backups and sources its shell snapshots."""
    guarded: tuple[str, ...] = ()
    """Inside its records, read-only all the same (claude's project memory, loaded as instructions)."""


CLI_STATE: dict[str, CliState] = {
    "claude": CliState(
        ("~/.claude", "~/.claude.json"),
        ("CLAUDE_CONFIG_DIR",),
        records=(f"projects/{PROJECT}",),
        kept=(".credentials.json", "history.jsonl", "todos", "file-history", "debug", "logs", "telemetry"),
        scratch=("projects", "backups", "sessions", "shell-snapshots", "session-env", "statsig", "plans"),
        guarded=(f"projects/{PROJECT}/memory",),
    ),
    "codex": CliState(
        ("~/.codex",),
        ("CODEX_HOME",),
        records=("sessions",),
        kept=(
            "auth.json",
            "history.jsonl",
            "archived_sessions",
            "log",
            "thread-writer-locks",
            "state_*.sqlite*",
            "logs_*.sqlite*",
            "thread_history_*.sqlite*",
        ),
        copied=("skills",),
        scratch=("tmp", ".tmp", "shell_snapshots"),
    ),
    "gemini": CliState(
        ("~/.gemini",),
        records=("tmp",),
        kept=("oauth_creds.json", "google_accounts.json", "mcp-oauth-tokens.json"),
        scratch=("history",),
    ),
    "aider": CliState(("~/.aider*",), kept=("caches",)),
}
"""Shell snapshots and session environments are sourced before the CLI's commands, plans and
feature flags steer it, and gemini runs git in its checkpoints' history: scratch, never kept."""


def project_name(folder: Path) -> str | None:
    """The name claude gives a work folder's records; None past 200 characters, where it adds a
    hash of its own (that folder's records then stay private)."""
    name = re.sub(r"[^a-zA-Z0-9]", "-", os.path.realpath(folder))
    return name if len(name) <= 200 else None


@dataclass
class Layout:
    """One preset's state, laid out in the run's private home: the binds every command gets
    (`binds`), and those of the work folders its records are named after (`project_binds`)."""

    state: CliState
    gateway: Gateway
    binds: list[str] = field(default_factory=list)
    roots: list[tuple[Path, Path]] = field(default_factory=list)
    """Each real state folder and its private layer."""
    projects: dict[Path, list[str]] = field(default_factory=dict)

    def project_binds(self, folders: Iterable[Path]) -> list[str]:
        """Made in the real home on a work folder's first command, kept for the run."""
        out: list[str] = []
        if not any(PROJECT in record for record in self.state.records):
            return out
        for folder in folders:
            if folder not in self.projects:
                self.projects[folder] = self._project(folder)
            out += self.projects[folder]
        return out

    def _project(self, folder: Path) -> list[str]:
        name = project_name(folder)
        if name is None:
            return []
        out: list[str] = []
        for real, _ in self.roots:
            for record in self.state.records:
                if PROJECT in record:
                    out += _made(real / record.replace(PROJECT, name), "--bind-try")
            for guarded in self.state.guarded:
                out += _made(real / guarded.replace(PROJECT, name), "--ro-bind-try")
        return out


def lay_out(preset: str | None, home: Path, private: Path, environ: Mapping[str, str]) -> Layout:
    """The preset's state laid out in `private` (the run's home): copies made, records made."""
    state = CLI_STATE.get(preset or "", CliState(()))
    layout = Layout(state, gateway(preset, environ, home))
    search = environ.get("PATH")
    installed = any(shutil.which(name, path=search) for name in PRESET_EXECUTABLES.get(preset or "", ()))
    roots = dict.fromkeys(_state_roots(state, home, environ))  # CODEX_HOME may be ~/.codex
    for number, real in enumerate(roots):
        inside = real.is_relative_to(home)
        layer = private / real.relative_to(home) if inside else private / ".akira-state" / str(number)
        _lay_root(layout, real, layer, inside=inside, installed=installed)
    return layout


def _state_roots(state: CliState, home: Path, environ: Mapping[str, str]) -> list[Path]:
    """Where the CLI keeps its state: its roots in `home` (a `*` matches what is there), then the
    folders its variables move it to."""
    moved = [environ.get(name, "") for name in state.moved_by]
    moved = [m for m in moved if os.path.isabs(m) and not home.is_relative_to(m)]  # never / or ~
    roots: list[Path] = []
    for entry in state.roots:
        path = expand(entry, home)
        if "*" in path.name:
            roots += sorted(p for p in path.parent.glob(path.name) if p.exists())
        else:
            roots.append(path)
    return roots + [Path(m) for m in moved]


def _lay_root(layout: Layout, real: Path, layer: Path, *, inside: bool, installed: bool) -> None:
    """One state file (copied when it lies in the home) or folder (made when the CLI is
    installed, its entries bound or copied into `layer`) laid out."""
    if real.is_file():
        if inside:
            _copy_or_bind(real, layer, real, layout.binds)
        return
    if not real.is_dir() and (real.suffix or os.path.lexists(real) or not installed):
        return  # no `~/.codex` is made in a person's home for a CLI nothing runs
    try:  # a folder the CLI has not made yet: made, so that its records are kept
        real.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    layer.mkdir(parents=True, exist_ok=True)
    if not inside:
        layout.binds += ["--bind", str(layer), str(real)]
    layout.roots.append((real, layer))
    layout.binds += _folder(layout.state, real, layer)


def _folder(state: CliState, real: Path, layer: Path) -> list[str]:
    """The binds of one state folder's entries, at their own path inside (`-try`: the CLI may
    delete one meanwhile), and the private copies made in its `layer`."""
    out: list[str] = []
    for record in state.records:
        if PROJECT not in record:
            _made(real / record, "")
    names = [record.split("/")[0] for record in state.records if PROJECT not in record]
    with os.scandir(real) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            name, path = entry.name, Path(entry.path)
            if _matches(name, state.scratch):
                continue
            if not (path.is_file() or path.is_dir()):  # a FIFO, a socket, a dangling link
                continue
            if name in names or _matches(name, state.kept):
                out += ["--bind-try", os.path.realpath(path), str(real / name)]
            else:
                _copy_or_bind(path, layer / name, real / name, out, folders=_matches(name, state.copied))
    return out


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def _made(path: Path, flag: str) -> list[str]:
    """`path` made in the real home when missing (never through a link), bound with `flag`."""
    try:
        if not os.path.lexists(path):
            path.mkdir(parents=True)
    except OSError:
        return []
    return [flag, str(path), str(path)] if flag and path.is_dir() and not path.is_symlink() else []


def _copy_or_bind(
    source: Path, target: Path, inside: Path, binds: list[str], *, folders: bool = False
) -> None:
    """A private copy of `source` at `target` (seen at `inside`); bound read-only instead when it
    is a folder (unless `folders`), too large, or cannot be copied."""
    real = os.path.realpath(source)
    try:
        if source.is_file() and source.stat().st_size <= COPY_LIMIT:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(real, target)
            return
        if folders and source.is_dir() and _size(source) <= COPY_LIMIT:
            shutil.copytree(real, target, ignore_dangling_symlinks=True, dirs_exist_ok=True)
            return
    except (OSError, shutil.Error):
        shutil.rmtree(target, ignore_errors=True)
    binds += ["--ro-bind-try", real, str(inside)]


def _size(folder: Path) -> int:
    total = 0
    for top, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.stat(os.path.join(top, name)).st_size
            except OSError:
                continue
            if total > COPY_LIMIT:
                return total
    return total
