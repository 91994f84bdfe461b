"""A step's command as a `bwrap` command line (SPEC 15): a read-only root, the work tree writable
but for the control plane, a private `/tmp` and `$HOME`, the secrets hidden, only the listed
variables, its own PID namespace and no network of its own but akira's proxy."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from akira_cli.sandbox import policy
from akira_cli.sections import SandboxSettings

PLANE = ("config", ".hooks", ".state", ".akira", "Logs/completion_reports", "Needs_Action")
"""The control plane inside the work tree (SPEC 11), bound read-only over the writable tree."""
GIT_PLANE = ("hooks", "config", "info")
"""Inside `.git/`: what would run or steer git for akira; the rest stays writable for commits."""
SOCKET = "/tmp/.akira/proxy.sock"
"""Where the proxy's socket appears inside."""
FORWARD = str(Path(__file__).with_name("forward.py"))


def repository_of(folder: Path) -> tuple[Path, Path | None]:
    """The work tree holding `folder` (its git top level, else `folder`) and its common `.git`."""
    for candidate in (folder, *folder.parents):
        dot = candidate / ".git"
        if dot.is_dir():
            return candidate, dot
        if dot.is_file():  # a worktree: "gitdir: <common>/.git/worktrees/<name>"
            text = dot.read_text(errors="replace").strip()
            if text.startswith("gitdir:"):
                gitdir = (candidate / text[7:].strip()).resolve()
                common = gitdir.parent.parent if gitdir.parent.name == "worktrees" else gitdir
                return candidate, common
            return candidate, None
    return folder, None


@dataclass(frozen=True)
class Proxied:
    """The run's proxy as a step reaches it: its socket outside, the port of the forwarder inside."""

    socket: Path
    port: int


@dataclass(frozen=True)
class Sandbox:
    """Implements the runner's `CommandWrapper`: a command becomes a `bwrap` command line."""

    bwrap: str
    tree: Path
    """The step's work tree: the repository, or a worktree slot."""
    workspace: Path
    """Where the control plane lies: the workspace root, inside `tree` (or `tree` itself)."""
    git_dir: Path | None
    settings: SandboxSettings
    preset: str | None = None
    home: Path = field(default_factory=Path.home)
    task_path: Callable[[], Path | None] = lambda: None
    proxy: Proxied | None = None
    read_only: bool = False
    """The whole work tree read-only (a reviewer looks, it does not write)."""
    tools: tuple[Path, ...] = ()
    """Folders under the home that the step's tools need (`policy.tool_paths`), read-only."""
    origin: Path | None = None
    """The main work tree, when `tree` is a slot (the task file's place is mapped from it)."""

    def wrap(
        self, argv: Sequence[str], cwd: Path, environ: Mapping[str, str], status_fd: int | None = None
    ) -> tuple[list[str], dict[str, str]]:
        proxy_url = f"http://127.0.0.1:{self.proxy.port}" if self.proxy is not None else None
        env = policy.sandbox_env(environ, self.preset, self.settings.env, str(self.home), proxy_url)
        command = list(argv)
        if self.proxy is not None:
            command = [sys.executable, "-I", "-S", FORWARD, SOCKET, str(self.proxy.port), "--", *command]
        status = ["--json-status-fd", str(status_fd)] if status_fd is not None else []
        return [self.bwrap, *self.flags(), *status, "--chdir", str(cwd), "--", *command], env

    def moved(self, tree: Path) -> Sandbox:
        """The same sandbox for a worktree slot at `tree`: the main work tree is read-only there."""
        inner = (
            tree / self.workspace.relative_to(self.tree) if self.workspace.is_relative_to(self.tree) else tree
        )
        return replace(self, tree=tree, workspace=inner, origin=self.origin or self.tree)

    def looking(self, preset: str | None = None) -> Sandbox:
        """A read-only sandbox: the work tree and `.git` cannot be written (a reviewer's). With
        `preset`, its CLI's state folders, variables and executable are the ones let in."""
        if preset is None or preset == self.preset:
            return replace(self, read_only=True)
        wanted = policy.PRESET_EXECUTABLES.get(preset, ())
        tools = tuple(policy.tool_paths(os.environ.get("PATH", ""), self.home, wanted))
        return replace(self, read_only=True, preset=preset, tools=tools)

    def flags(self) -> list[str]:
        home = str(self.home)
        out = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        out += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"]
        if self.settings.network != "all":
            out.append("--unshare-net")
        shown: list[Path] = [self.tree]
        if home != "/":  # a private, empty $HOME at the same path (a tree inside it is bound back below)
            out += ["--tmpfs", home]
        for path in self.tools:
            out += ["--ro-bind", str(path), str(path)]
            shown.append(path)
        for path in policy.state_paths(self.preset, self.home):
            out += ["--bind", str(path), str(path)]
            shown.append(path)
        for entry in self.settings.allow_read:
            path = policy.expand(entry, self.home)
            out += ["--ro-bind-try", str(path), str(path)]
            shown.append(path)
        for entry in self.settings.allow_write:
            path = policy.expand(entry, self.home)
            out += ["--bind-try", str(path), str(path)]
            shown.append(path)
        if self.origin is not None and self.origin != self.tree:  # a slot: the main tree read-only,
            out += ["--ro-bind", str(self.origin), str(self.origin)]  # even under an allow_write
        tree = str(self.tree)
        out += ["--ro-bind" if self.read_only else "--bind", tree, tree]
        out += self._plane()
        out += self._hidden(shown)
        if self.proxy is not None:
            out += ["--ro-bind", str(self.proxy.socket), SOCKET]
        return out

    def _plane(self) -> list[str]:
        out: list[str] = []
        git = self.git_dir
        if git is not None and not git.is_relative_to(self.tree):  # a slot's: commits write the common .git
            out += ["--ro-bind" if self.read_only else "--bind", str(git), str(git)]
        places = [self.workspace / name for name in PLANE]
        if git is not None:
            places += [git / name for name in GIT_PLANE]
        if (task := self._task()) is not None:
            places.append(task)
        for path in places:
            if os.path.lexists(path):
                out += ["--ro-bind", str(path), str(path)]
        return out

    def _task(self) -> Path | None:
        task = self.task_path()
        if task is None:
            return None
        main = self.origin or self.tree
        return self.tree / task.relative_to(main) if task.is_relative_to(main) else None

    def _hidden(self, shown: list[Path]) -> list[str]:
        """Secrets and `sandbox.deny` that would be visible: an empty folder or file over each."""
        out: list[str] = []
        paths = [policy.expand(entry, self.home) for entry in (*policy.SECRET_PATHS, *self.settings.deny)]
        paths += [Path(p) for p in policy.SOCKET_PATHS]
        for path in paths:
            visible = not path.is_relative_to(self.home) or any(path.is_relative_to(p) for p in shown)
            if not visible or not os.path.lexists(path):
                continue
            if path.is_dir():
                out += ["--tmpfs", str(path), "--remount-ro", str(path)]
            else:
                out += ["--ro-bind", "/dev/null", str(path)]
        return out


def build(
    bwrap: str,
    workspace: Path,
    workdir: Path,
    settings: SandboxSettings,
    preset: str | None,
    task_path: Callable[[], Path | None],
    proxy: Proxied | None,
) -> Sandbox:
    tree, git_dir = repository_of(workdir)
    if not workspace.is_relative_to(tree):
        tree, git_dir = repository_of(workspace)
    home = Path.home()
    wanted = policy.PRESET_EXECUTABLES.get(preset or "", ())
    tools = tuple(policy.tool_paths(os.environ.get("PATH", ""), home, wanted))
    return Sandbox(bwrap, tree, workspace, git_dir, settings, preset, home, task_path, proxy, tools=tools)
