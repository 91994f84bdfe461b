"""A step's command as a `bwrap` command line (SPEC 15): a read-only root, the work tree writable
but for the control plane, a private `/tmp` and `$HOME`, the secrets hidden, only the listed
variables, its own PID namespace and no network of its own but akira's proxy."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from akira_cli.sandbox import policy
from akira_cli.sections import SandboxSettings

PLANE = ("config", ".hooks", ".state", ".akira", ".akira/worktrees", "Logs", "Done", "Needs_Action")
"""The control plane inside the work tree: akira's folders at the workspace's top, made before
the first step where they are missing (`make_plane`), so that each is bound read-only over the
writable tree and a step can neither write nor make one (nor rename it: a mount point cannot
be). The whole `.git` is bound read-only too: akira makes the commits."""
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
        self, argv: Sequence[str], cwd: Path, environ: Mapping[str, str]
    ) -> tuple[list[str], dict[str, str]]:
        proxy_url = f"http://127.0.0.1:{self.proxy.port}" if self.proxy is not None else None
        env = policy.sandbox_env(environ, self.preset, self.settings.env, str(self.home), proxy_url)
        command = list(argv)
        if self.proxy is not None:
            command = [sys.executable, "-I", "-S", FORWARD, SOCKET, str(self.proxy.port), "--", *command]
        return [self.bwrap, *self.flags(), "--chdir", str(cwd), "--", *command], env

    def moved(self, tree: Path) -> Sandbox:
        """The same sandbox for a worktree slot at `tree`: the main work tree is read-only there."""
        inner = (
            tree / self.workspace.relative_to(self.tree) if self.workspace.is_relative_to(self.tree) else tree
        )
        return replace(self, tree=tree, workspace=inner, origin=self.origin or self.tree)

    def sharing(self, folder: Path, reading: Sequence[Path] = ()) -> Sandbox:
        """The same sandbox with `folder` writable and `reading` readable too (a commit's
        folder and the hooks folder, for the repository's hooks: `git/verify.py`)."""
        update = {
            "allow_write": [*self.settings.allow_write, str(folder)],
            "allow_read": [*self.settings.allow_read, *map(str, reading)],
        }
        return replace(self, settings=self.settings.model_copy(update=update))

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
        places = [self.workspace / name for name in PLANE]
        if self.git_dir is not None:  # (in a tree that is no repository, akira runs no git)
            places.append(self.tree / ".git")  # the repository, or a worktree's `gitdir:` file
            if not self.git_dir.is_relative_to(self.tree):
                places.append(self.git_dir)  # the common `.git` a worktree's file names
        places += self._task()
        out: list[str] = []
        for path in places:
            if os.path.lexists(path):
                out += ["--ro-bind", str(path), str(path)]
        return out

    def _task(self) -> list[Path]:
        """The running task file in this work tree, and its spec folder (not the tree's top)."""
        task = self.task_path()
        main = self.origin or self.tree
        if task is None or not task.is_relative_to(main):
            return []
        here = self.tree / task.relative_to(main)
        spec = here.parent
        return (
            [here]
            if spec in (self.tree, self.workspace) or not spec.is_relative_to(self.tree)
            else [spec, here]
        )

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


def make_plane(workspace: Path) -> None:
    """akira's folders, made where missing before a step runs: a read-only bind needs a place.
    A link found on the way is not followed (nothing is made through it)."""
    for name in PLANE:
        folder = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for part in name.split("/"):
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=folder)
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
                os.close(folder)
                folder = inner
        except OSError:
            pass  # a link or a file in the way: nothing is made through it
        finally:
            os.close(folder)


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
    make_plane(workspace)
    home = Path.home()
    wanted = policy.PRESET_EXECUTABLES.get(preset or "", ())
    tools = tuple(policy.tool_paths(os.environ.get("PATH", ""), home, wanted))
    return Sandbox(bwrap, tree, workspace, git_dir, settings, preset, home, task_path, proxy, tools=tools)
