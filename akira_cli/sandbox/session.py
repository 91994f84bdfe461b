"""The sandbox of one run: decided at start (`resolve`: `auto` warns, `on` refuses), then built
with its proxy for the run's life (`open_sandbox`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.errors import AkiraError
from akira_cli.sandbox import policy
from akira_cli.sandbox.probe import decide, probe

if TYPE_CHECKING:
    from akira_cli.config import Config
    from akira_cli.sandbox.blame import Refusal, Refusals
    from akira_cli.sandbox.bwrap import Proxied, Sandbox
    from akira_cli.sandbox.home import PrivateHome


def preset_of(config: Config, kind: str | None = None) -> str | None:
    """The agent CLI a run uses, for its state folders, API hosts and variables."""
    chosen = kind or config.agent.kind
    return chosen if chosen in policy.PRESET_EXECUTABLES else config.agent.preset


def resolve(config: Config, flag: bool | None, warn: Callable[[str], None]) -> bool:
    """Whether this run is sandboxed; writes the answer into `config.sandbox.mode` (on/off), so
    that the rest of the run does not probe again. `on` without a sandbox raises AkiraError."""
    check_allow_hosts(config)
    sandboxed, warning = decide(config.sandbox, flag)
    if warning:
        warn(warning)
    config.sandbox.mode = "on" if sandboxed else "off"
    return sandboxed


def check_allow_hosts(config: Config) -> None:
    """Every `sandbox.allow_hosts` entry is a host rule (a URL is not): AkiraError otherwise."""
    for entry in config.sandbox.allow_hosts:
        try:
            policy.HostRule.parse(entry)
        except ValueError as exc:
            raise AkiraError(
                f"{exc}, in config/autonomous_loop.yaml; write the host alone, e.g. 'pypi.org' or "
                "'127.0.0.1:8080'"
            ) from None


def build_sandbox(
    config: Config,
    workspace: Path,
    workdir: Path,
    task_path: Callable[[], Path | None],
    *,
    kind: str | None = None,
    proxied: Proxied | None = None,
    private: PrivateHome | None = None,
    refusals: Refusals | None = None,
) -> Sandbox:
    """The run's sandbox (probed already); how it reaches the proxy when `network: allow`."""
    from akira_cli.sandbox.bwrap import build

    preset = preset_of(config, kind)
    return build(
        bwrap_of(config), workspace, workdir, config.sandbox, preset, task_path, proxied, private, refusals
    )


def bwrap_of(config: Config) -> str:
    found = probe(config.sandbox)
    if not found.ok or found.bwrap is None:
        raise AkiraError(f"the sandbox is on but cannot work: {found.line()}")
    return found.bwrap


@contextlib.contextmanager
def open_sandbox(
    config: Config,
    workspace: Path,
    workdir: Path,
    task_path: Callable[[], Path | None],
    on_denied: Callable[[str | None, Refusal], None],
    *,
    kind: str | None = None,
    warn: Callable[[str], None] = lambda _: None,
) -> Iterator[Sandbox | None]:
    """None when the run is not sandboxed; else the sandbox, with its private home made and its
    proxy running meanwhile (and its rooms, `netns.py`, closed at the end).
    `on_denied(step_id, refusal)`: once per refused host and port per attempt."""
    if config.sandbox.mode == "auto":
        resolve(config, None, warn)
    if config.sandbox.mode == "off":
        yield None
        return
    from akira_cli.sandbox.blame import Refusals
    from akira_cli.sandbox.home import PrivateHome

    private, refusals = PrivateHome(Path.home(), config.sandbox.deny), Refusals(on_denied)
    try:
        if config.sandbox.network != "allow":
            yield build_sandbox(
                config, workspace, workdir, task_path, kind=kind, private=private, refusals=refusals
            )
            return
        from akira_cli.sandbox.bwrap import Proxied
        from akira_cli.sandbox.netns import Rooms
        from akira_cli.sandbox.proxy import Proxy

        preset = preset_of(config, kind)
        pointed = private.layout(preset).gateway  # read once, with the CLI's state laid out
        rules = policy.host_rules(preset, config.llm.base_url, config.sandbox.allow_hosts, pointed=pointed)
        reviewer = (config.review.agent or "").strip()
        if reviewer in policy.PRESET_HOSTS and reviewer != preset:  # the reviewer's API too
            rules += policy.host_rules(reviewer, None, (), pointed=private.layout(reviewer).gateway)
        bwrap = bwrap_of(config)
        proxy = Proxy(rules, refusals.note, warn).start()
        rooms = Rooms(bwrap, proxy.port, proxy)
        try:
            proxied = Proxied(proxy.socket, proxy.port, rooms)
            yield build_sandbox(
                config,
                workspace,
                workdir,
                task_path,
                kind=kind,
                proxied=proxied,
                private=private,
                refusals=refusals,
            )
        finally:
            proxy.close()  # it stops serving the rooms' sockets first
            rooms.close()
    finally:
        private.close()


def describe(sandboxed: bool | None) -> str:
    """How `status` and the report say it."""
    if sandboxed is None:
        return "not run yet"
    if sandboxed:
        return "sandboxed: every process a step started ran confined"
    return "NOT sandboxed: steps ran with all of the person's rights"


def baseline(config: Config, workspace: Path, workdir: Path, task: Path, kind: str | None) -> list[str]:
    """The project checks before the first step, run as the steps' checks will be: sandboxed."""
    from akira_cli.loop.evidence import red_baseline
    from akira_cli.runner import CommandRunner

    with open_sandbox(config, workspace, workdir, lambda: task, lambda *_: None, kind=kind) as sandbox:
        return red_baseline(config, CommandRunner(workdir, wrapper=sandbox))
