"""A step's command as a `bwrap` command line (docs/sandbox.md): a read-only root, the work tree writable
but for the control plane, a private `/tmp` and `$HOME`, the secrets hidden, only the listed
variables, its own PID namespace and no network of its own but akira's proxy."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Protocol

from akira_cli.sandbox import policy
from akira_cli.sandbox.blame import Refusals, hidden_paths
from akira_cli.sandbox.home import PrivateHome
from akira_cli.sections import SandboxSettings
from akira_cli.workspace import SPEC_FOLDERS

ISOLATION = (
    "--unshare-user", "--cap-drop", "ALL",
    "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session",
)  # fmt: skip
"""Every command's namespaces: a user namespace of its own with no capability, as root too (a
step cannot mount, remount or unmount), its own PIDs and IPC, and death with akira."""
ROOT_UID = "65534"
"""Who root's steps are inside (`nobody`, mapped to root outside): a user namespace that maps
root in its parent needs CAP_SETFCAP to make one of its own, which an agent CLI's own sandbox
(codex's) does; any other user may."""


def isolation() -> list[str]:
    """`ISOLATION`, and as root the user a step runs as: what every command and the probe get."""
    root = ["--uid", ROOT_UID, "--gid", ROOT_UID] if os.geteuid() == 0 else []
    return [*ISOLATION, *root]


PLANE = (
    "config", ".hooks", ".state", ".akira", ".akira/worktrees", "Logs", "Done", "Needs_Action", *SPEC_FOLDERS
)  # fmt: skip
"""The control plane inside the work tree: akira's folders at the workspace's top and the spec
folders, made before the first step where they are missing (`make_plane`), so that each is
bound read-only over the writable tree and a step can neither write nor make one (nor rename
it: a mount point cannot be). The whole `.git` is bound read-only too: akira makes the commits."""
DOOR_TOKENS = (".state/mcp_token", ".state/web_token")
"""The tokens akira's servers keep for their clients: a secret, read as empty inside."""
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


class Rooms(Protocol):
    """The run's private network namespaces (`netns.Rooms`), where the proxy listens."""

    def enter(self, tree: Path) -> list[str] | None:
        """The command line prefix that starts a command in `tree`'s; None: none here."""
        ...


@dataclass(frozen=True)
class Proxied:
    """The run's proxy as a step reaches it: on 127.0.0.1:`port` inside, in the room `rooms`
    has for the work tree, else through a forwarder started in front of each command that
    listens there and hands each connection to `socket`."""

    socket: Path
    port: int
    rooms: Rooms | None = None


TIMED_OUT = re.compile(r"` timed out after \d+s")
"""The runner's line for a command that ran into its step's timeout."""


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
    """Folders under the home that the step's tools need (`tools.tool_paths`), read-only."""
    origin: Path | None = None
    """The main work tree, when `tree` is a slot (the task file's place is mapped from it)."""
    private: PrivateHome | None = None
    """The run's private home: the agent CLI's state laid out in it, bound at `$HOME`."""
    keys: tuple[str, ...] = ()
    """Variables named by the CLI's own configuration (codex's `env_key`), read at the start."""
    refusals: Refusals = field(default_factory=Refusals)
    """What the run's proxy refused, by work tree (`lane`)."""

    @cached_property
    def lane(self) -> str:
        """The name a work tree's requests carry to the proxy, so that a refusal is its step's."""
        return hashlib.sha256(str(self.tree).encode()).hexdigest()[:12]

    def wrap(
        self, argv: Sequence[str], cwd: Path, environ: Mapping[str, str], status_fd: int | None = None
    ) -> tuple[list[str], dict[str, str]]:
        proxy_url = (
            f"http://akira:{self.lane}@127.0.0.1:{self.proxy.port}" if self.proxy is not None else None
        )
        env = policy.sandbox_env(
            environ, self.preset, self.settings.env, str(self.home), proxy_url, self.keys
        )
        command, room = list(argv), None
        if self.proxy is not None and self.proxy.rooms is not None:
            room = self.proxy.rooms.enter(self.tree)
        if self.proxy is not None and room is None:
            command = [sys.executable, "-I", "-S", FORWARD, SOCKET, str(self.proxy.port), "--", *command]
        start = [*room, "--", self.bwrap] if room is not None else [self.bwrap]
        status = ["--json-status-fd", str(status_fd)] if status_fd is not None else []
        flags = self.flags(cwd, room is not None)
        return [*start, *flags, *status, "--chdir", str(cwd), "--", *command], env

    def begin(self, step_id: str) -> None:
        """An attempt starts: what is refused from now on is its step's, and its commands share
        a `/tmp` of their own (a command outside any attempt gets an empty one)."""
        self.refusals.begin(self.lane, step_id)
        if self.private is not None:
            self.private.fresh_tmp(self.lane)

    def blame(self, said: str) -> tuple[list[str], list[str]]:
        refused = self.refusals.since_begin(self.lane)
        secrets = self.private.secrets if self.private is not None else ()
        waited = TIMED_OUT.search(said) is not None  # a client that retries a refused host runs out of time
        named = [refusal for refusal in refused if waited or refusal.named_by(said)]
        stopped = [refusal.line() for refusal in named]
        stopped += hidden_paths(said, self.home, self._shown, secrets)
        return stopped, [refusal.note() for refusal in refused if refusal not in named]

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
        if self.private is None:
            return replace(self, read_only=True, preset=preset)
        keys = self.private.layout(preset).gateway.keys
        return replace(self, read_only=True, preset=preset, tools=self.private.tools(preset), keys=keys)

    def flags(self, cwd: Path | None = None, in_room: bool = False) -> list[str]:
        """`in_room`: the command starts in its room's network namespace (it makes none)."""
        shared = self.private.tmp_of(self.lane) if self.private is not None else None
        tmp = ["--bind", str(shared), "/tmp"] if shared is not None else ["--tmpfs", "/tmp"]
        out = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *tmp, *isolation()]
        if self.settings.network != "all" and not in_room:
            out.append("--unshare-net")
        out += self._home
        if self.private is not None:  # the CLI's records named after the work folder (claude's)
            out += self.private.layout(self.preset).project_binds(
                dict.fromkeys((self.tree, cwd or self.tree))
            )
        out += self._tools
        if self.origin is not None and self.origin != self.tree:  # a slot: the main tree read-only,
            out += ["--ro-bind", str(self.origin), str(self.origin)]  # even under an allow_write
        tree = str(self.tree)
        out += ["--ro-bind" if self.read_only else "--bind", tree, tree]
        out += self._plane()
        out += self._hidden
        if self.proxy is not None and not in_room:
            out += ["--ro-bind", str(self.proxy.socket), SOCKET]
        return out

    @cached_property
    def _home(self) -> list[str]:
        """The private home at `$HOME` (a tree inside it is bound back later), with the agent
        CLI's state laid out in it: worked out once per sandbox, not once per command."""
        home = str(self.home)
        if home == "/":
            return []
        if self.private is None:
            return ["--tmpfs", home]
        return ["--bind", str(self.private.folder), home, *self.private.layout(self.preset).binds]

    @cached_property
    def _tools(self) -> list[str]:
        """The tools, read-only (after the CLI's state: a CLI installed in its state folder stays
        read-only), then `sandbox.allow_read` and `allow_write`."""
        out: list[str] = []
        for path in self.tools:
            out += ["--ro-bind", str(path), str(path)]
        for entry in self.settings.allow_read:
            path = policy.expand(entry, self.home)
            out += ["--ro-bind-try", str(path), str(path)]
        for entry in self.settings.allow_write:
            path = policy.expand(entry, self.home)
            out += ["--bind-try", str(path), str(path)]
        return out

    @cached_property
    def _shown(self) -> tuple[Path, ...]:
        """What of the hidden home and /tmp is bound in."""
        allowed = (*self.settings.allow_read, *self.settings.allow_write)
        roots = [real for real, _ in self.private.layout(self.preset).roots] if self.private else []
        return (self.tree, *self.tools, *roots, *(policy.expand(entry, self.home) for entry in allowed))

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
        empty = str(self.private.empty if self.private else os.devnull)
        for name in DOOR_TOKENS:  # asked each command: a server started after the run makes one
            if os.path.lexists(token := self.workspace / name):
                out += ["--ro-bind", empty, str(token)]
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

    @cached_property
    def _hidden(self) -> list[str]:
        """Secrets and `sandbox.deny` that would be visible (those that existed at the run's
        start, globs expanded), and the sockets: an empty folder or file over each."""
        out: list[str] = []
        paths = list(self.private.secrets) if self.private is not None else []
        paths += [Path(p) for p in policy.SOCKET_PATHS if os.path.lexists(p)]
        for path in paths:
            visible = not path.is_relative_to(self.home) or any(path.is_relative_to(p) for p in self._shown)
            if not visible:
                continue
            if path.is_dir():
                out += ["--tmpfs", str(path), "--remount-ro", str(path)]
            else:  # an empty file of akira's: /dev/null in a user namespace cannot be opened
                out += ["--ro-bind", str(self.private.empty if self.private else os.devnull), str(path)]
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
    private: PrivateHome | None = None,
    refusals: Refusals | None = None,
) -> Sandbox:
    tree, git_dir = repository_of(workdir)
    if not workspace.is_relative_to(tree):
        tree, git_dir = repository_of(workspace)
    make_plane(workspace)
    home = Path.home()
    private = PrivateHome(home, settings.deny) if private is None else private
    return Sandbox(
        bwrap,
        tree,
        workspace,
        git_dir,
        settings,
        preset,
        home,
        task_path,
        proxy,
        tools=private.tools(preset),
        private=private,
        keys=private.layout(preset).gateway.keys,
        refusals=refusals or Refusals(),
    )
