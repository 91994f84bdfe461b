"""What a sandboxed step may see (SPEC 15): the secret paths, each preset's state folders, API
hosts and variables, the environment passed in, and the proxy's host rules."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

SECRET_PATHS = (
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.config/gh",
    "~/.netrc",
    "~/.git-credentials",
    "~/.docker/config.json",
    "~/.kube",
    "~/.npmrc",
    "~/.pypirc",
)
"""Never visible inside, even under an allowed path (a folder reads as empty, a file as empty)."""

SOCKET_PATHS = ("/run/user", "/run/docker.sock", "/var/run/docker.sock", "/run/podman")
"""Sockets a read-only mount still lets a process connect to: hidden like the secrets."""

PRESET_STATE: dict[str, tuple[str, ...]] = {
    "claude": ("~/.claude", "~/.claude.json"),
    "codex": ("~/.codex",),
    "gemini": ("~/.gemini",),
    "aider": ("~/.aider*",),
}
"""Each agent CLI's own state, bound in writable from the real home."""

PRESET_STATE_ENV: dict[str, tuple[str, ...]] = {
    "claude": ("CLAUDE_CONFIG_DIR",),
    "codex": ("CODEX_HOME",),
}
"""Where a person moves an agent CLI's state folder: bound in writable as its home folder is."""

PRESET_EXECUTABLES: dict[str, tuple[str, ...]] = {
    "claude": ("claude",),
    "codex": ("codex",),
    "gemini": ("gemini",),
    "aider": ("aider",),
}

PRESET_HOSTS: dict[str, tuple[str, ...]] = {
    "claude": ("api.anthropic.com",),
    "codex": ("api.openai.com", "chatgpt.com"),
    "gemini": ("generativelanguage.googleapis.com", "oauth2.googleapis.com"),
    "aider": ("api.openai.com", "api.anthropic.com"),
}

PRESET_ENV: dict[str, tuple[str, ...]] = {
    "claude": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_*"),
    "codex": ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_*"),
    "aider": ("AIDER_*", "OPENAI_API_KEY", "OPENAI_API_BASE", "ANTHROPIC_API_KEY"),
}

PRESET_BASE_URLS: dict[str, tuple[str, ...]] = {
    "claude": ("ANTHROPIC_BASE_URL",),
    "codex": ("OPENAI_BASE_URL",),
    "gemini": ("GOOGLE_GEMINI_BASE_URL",),
    "aider": ("OPENAI_API_BASE", "ANTHROPIC_BASE_URL"),
}
"""Where a person points a preset's CLI at a gateway: that gateway is the preset's API host."""

BASE_ENV = ("PATH", "LANG", "LC_*", "TERM", "TZ", "AKIRA_*")
PROXY_NAMES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")


def sandbox_env(
    environ: Mapping[str, str], preset: str | None, extra: Iterable[str], home: str, proxy: str | None
) -> dict[str, str]:
    """Only what SPEC 15 lists: every other variable (`*_TOKEN`, `*_SECRET`, `*_KEY`) is left out."""
    patterns = (*BASE_ENV, *PRESET_ENV.get(preset or "", ()), *gateway_keys(preset, environ), *extra)
    env = {
        name: value for name, value in environ.items() if any(fnmatch.fnmatchcase(name, p) for p in patterns)
    }
    env["HOME"], env["TMPDIR"] = home, "/tmp"
    if proxy is not None:
        for name in PROXY_NAMES:
            env[name] = env[name.lower()] = proxy
        env["NO_PROXY"] = env["no_proxy"] = ""
    return env


def gateway_keys(preset: str | None, environ: Mapping[str, str]) -> tuple[str, ...]:
    """The variable a preset's gateway reads its key from: codex's model provider's `env_key`."""
    if preset != "codex":
        return ()
    from akira_cli.agents.presets.codex_config import codex_home, codex_provider

    provider = codex_provider(codex_home(environ, Path.home()) / "config.toml")
    return (provider.env_key,) if provider is not None and provider.env_key else ()


def gateway_urls(preset: str | None, environ: Mapping[str, str]) -> list[str]:
    """Where a person pointed the preset's CLI: its base-URL variables, codex's model provider."""
    urls = [url for name in PRESET_BASE_URLS.get(preset or "", ()) if (url := environ.get(name))]
    if preset == "codex":
        from akira_cli.agents.presets.codex_config import codex_home, codex_provider

        provider = codex_provider(codex_home(environ, Path.home()) / "config.toml")
        if provider is not None and provider.base_url:
            urls.append(provider.base_url)
    return urls


def expand(path: str, home: Path) -> Path:
    return home / path[2:] if path.startswith("~/") else (home if path == "~" else Path(path))


def state_paths(preset: str | None, home: Path, environ: Mapping[str, str] = os.environ) -> list[Path]:
    """The preset's state folders and files that exist in the real home (globs expanded), and
    the folders its variables move them to (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`). A missing folder
    is made only for a CLI that is installed: a person's home gets no `~/.codex` for a preset
    named in the config that nothing runs."""
    found: list[Path] = []
    search = environ.get("PATH")
    installed = any(shutil.which(name, path=search) for name in PRESET_EXECUTABLES.get(preset or "", ()))
    moved = [environ.get(name, "") for name in PRESET_STATE_ENV.get(preset or "", ())]
    moved = [m for m in moved if os.path.isabs(m) and not home.is_relative_to(m)]  # never / or ~
    for entry in (*PRESET_STATE.get(preset or "", ()), *moved):
        path = expand(entry, home)
        if "*" in path.name:
            found += sorted(p for p in path.parent.glob(path.name) if p.exists())
        elif path.exists():
            found.append(path)
        elif not path.suffix and installed:  # not made yet by its CLI: made, so what it writes is kept
            try:
                path.mkdir(parents=True, exist_ok=True)
                found.append(path)
            except OSError:
                pass
    return found


_LABEL = r"[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?"
_HOST = re.compile(rf"(?:\*\.)?{_LABEL}(?:\.{_LABEL})*")
"""A host name or IPv4 address, or `*.domain`: no scheme, path, space or bare `*`."""


@dataclass(frozen=True)
class HostRule:
    pattern: str
    """A host, or `*.domain` (the domain's subdomains)."""
    port: int | None
    """None: ports 80 and 443."""

    @classmethod
    def parse(cls, text: str) -> HostRule:
        text = text.strip().lower()
        host, _, port = text.partition(":")
        bad_port = bool(port) and not (port.isascii() and port.isdigit() and 0 < int(port) < 65536)
        if not _HOST.fullmatch(host) or bad_port:
            raise ValueError(
                f"sandbox.allow_hosts entry '{text}' is not `host`, `*.domain` or either with `:port`"
            )
        return cls(host, int(port) if port else None)

    def matches(self, host: str, port: int) -> bool:
        if self.port is None and port not in (80, 443):
            return False
        if self.port is not None and port != self.port:
            return False
        if self.pattern.startswith("*."):
            return host.endswith(self.pattern[1:])
        return host == self.pattern


def url_rule(url: str | None) -> HostRule | None:
    """The host of `llm.base_url`, with its port."""
    if not url:
        return None
    parts = urlsplit(url)
    if not parts.hostname:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return HostRule(parts.hostname.lower(), port)


def host_rules(
    preset: str | None,
    base_url: str | None,
    allow: Iterable[str],
    environ: Mapping[str, str] = os.environ,
) -> tuple[HostRule, ...]:
    """The proxy's rules: the preset's API hosts, the gateway a person pointed it at (its base-URL
    variable, codex's model provider), the host of `llm.base_url`, and `sandbox.allow_hosts`."""
    rules = [HostRule(host, 443) for host in PRESET_HOSTS.get(preset or "", ())]
    urls = [base_url, *gateway_urls(preset, environ)]
    rules += [rule for url in urls if (rule := url_rule(url)) is not None]
    rules += [HostRule.parse(entry) for entry in allow]
    return tuple(rules)


def allowed(rules: Iterable[HostRule], host: str, port: int) -> bool:
    host = host.lower()
    return any(rule.matches(host, port) for rule in rules)


def tool_paths(environ_path: str, home: Path, executables: Iterable[str]) -> list[Path]:
    """What must stay readable under the hidden home and the private /tmp for a step's tools to
    run: PATH folders there (a `<prefix>/bin` brings its prefix: `~/.pyenv/versions/3.12`,
    `~/.nvm/versions/node/v22`), this Python's own prefix (a venv in /tmp, as `mktemp -d` makes
    it), akira's forwarder, where the agent CLI's executable really lies, and git's settings."""
    import shutil
    import sys

    found: list[Path] = []
    for entry in environ_path.split(os.pathsep):
        folder = Path(entry)
        if not entry or not folder.is_absolute() or not hidden(folder, home) or not folder.is_dir():
            continue
        found.append(folder)
        prefix = folder.parent
        if folder.name == "bin" and prefix not in (home, home / ".local"):
            found.append(prefix)
        elif prefix == home / ".local":
            found.append(prefix / "lib")
    for name in executables:
        where = shutil.which(name, path=environ_path)
        if where is not None:
            found.append(Path(os.path.realpath(where)).parent)
    found += [home / ".gitconfig", home / ".config" / "git"]  # who commits (credentials stay hidden)
    found += [Path(sys.base_prefix), Path(sys.prefix), Path(os.path.realpath(sys.executable)).parent]
    found.append(Path(__file__).resolve().parent)  # forward.py, from an editable install in the home too
    kept = sorted(
        {path for path in found if hidden(path, home) and path not in (home, TMP) and path.exists()},
        key=lambda p: len(p.parts),
    )
    outer: list[Path] = []
    for path in kept:  # a folder inside one already bound needs no mount of its own
        if not any(path.is_relative_to(done) for done in outer):
            outer.append(path)
    return outer


TMP = Path("/tmp")


def hidden(path: Path, home: Path) -> bool:
    """Whether the sandbox's private `$HOME` or `/tmp` hides `path` (a tool there is bound back)."""
    return path.is_relative_to(home) or path.is_relative_to(TMP)
