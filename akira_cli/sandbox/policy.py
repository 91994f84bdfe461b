"""What a sandboxed step may see (docs/sandbox.md): the secret paths, each preset's state folders, API
hosts and variables, the environment passed in, and the proxy's host rules."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
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
    "~/.cargo/credentials*",
    "~/.gem/credentials",
    "~/.m2/settings*.xml",
    "~/.gradle/gradle.properties",
    "~/.terraform.d/credentials*",
    "~/.vault-token",
    "~/.pgpass",
    "~/.my.cnf",
    "~/.s3cfg",
    "~/.boto",
    "~/.config/hub",
    "~/.config/op",
    "~/.config/rclone",
    "~/.local/share/keyrings",
    "~/.password-store",
    "~/.cache/huggingface/token",
    "~/.huggingface",
    "~/.*_history",
    "~/.mozilla",
    "~/.config/google-chrome",
    "~/.config/chromium",
)
"""Never visible inside, even under an allowed path or a tool's folder (a folder reads as empty,
a file as empty); a `*` in the last part matches as a shell glob."""

SOCKET_PATHS = ("/run/user", "/run/docker.sock", "/var/run/docker.sock", "/run/podman")
"""Sockets a read-only mount still lets a process connect to: hidden like the secrets."""

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

STEP_VARIABLES = (
    "AKIRA_TASK_ID", "AKIRA_STEP_ID", "AKIRA_ATTEMPT", "AKIRA_PROMPT_FILE",
    "AKIRA_WORKSPACE", "AKIRA_WORKTREE", "AKIRA_REVIEW",
)  # fmt: skip
"""The `AKIRA_*` variables akira sets for a step, by name: no other (a server's token, the fleet's
database URL) reaches one."""
BASE_ENV = ("PATH", "LANG", "LC_*", "TERM", "TZ", *STEP_VARIABLES)
PROXY_NAMES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")


def sandbox_env(
    environ: Mapping[str, str],
    preset: str | None,
    extra: Iterable[str],
    home: str,
    proxy: str | None,
    exact: Iterable[str] = (),
) -> dict[str, str]:
    """Only the listed variables: every other variable (`*_TOKEN`, `*_SECRET`, `*_KEY`) is left out.
    `exact`: names taken from the agent CLI's own configuration (codex's `env_key`), each passed
    by its exact name, never as a pattern."""
    passed = _passed((*BASE_ENV, *PRESET_ENV.get(preset or "", ()), *extra))
    names = set(exact)
    env = {name: value for name, value in environ.items() if name in names or passed.match(name)}
    env["HOME"], env["TMPDIR"] = home, "/tmp"
    if proxy is not None:
        for name in PROXY_NAMES:
            env[name] = env[name.lower()] = proxy
        env["NO_PROXY"] = env["no_proxy"] = ""
    return env


@functools.lru_cache(maxsize=16)
def _passed(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """The variable-name patterns as one expression: asked for every variable of every command."""
    return re.compile("|".join(fnmatch.translate(pattern) for pattern in patterns))


_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Gateway:
    """Where a person pointed the preset's CLI, read once at the run's start from the real home
    (the step sees a private copy of the CLI's configuration, never the file read here)."""

    urls: tuple[str, ...] = ()
    """Its base-URL variables, and codex's model provider's `base_url`."""
    keys: tuple[str, ...] = ()
    """The variable the provider reads its key from (codex's `env_key`): a name, never a glob."""


def gateway(preset: str | None, environ: Mapping[str, str], home: Path) -> Gateway:
    urls = [url for name in PRESET_BASE_URLS.get(preset or "", ()) if (url := environ.get(name))]
    keys: list[str] = []
    if preset == "codex":
        from akira_cli.agents.presets.codex_config import codex_home, codex_provider

        provider = codex_provider(codex_home(environ, home) / "config.toml")
        if provider is not None and provider.base_url:
            urls.append(provider.base_url)
        if provider is not None and _VARIABLE.fullmatch(provider.env_key):
            keys.append(provider.env_key)
    return Gateway(tuple(urls), tuple(keys))


def expand(path: str, home: Path) -> Path:
    return home / path[2:] if path.startswith("~/") else (home if path == "~" else Path(path))


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
    pointed: Gateway | None = None,
) -> tuple[HostRule, ...]:
    """The proxy's rules: the preset's API hosts, the gateway a person pointed it at (`pointed`,
    read at the run's start; else read now), the host of `llm.base_url`, and `sandbox.allow_hosts`."""
    rules = [HostRule(host, 443) for host in PRESET_HOSTS.get(preset or "", ())]
    pointed = pointed or gateway(preset, environ, Path.home())
    urls = [base_url, *pointed.urls]
    rules += [rule for url in urls if (rule := url_rule(url)) is not None]
    rules += [HostRule.parse(entry) for entry in allow]
    return tuple(rules)


def allowed(rules: Iterable[HostRule], host: str, port: int) -> bool:
    host = host.lower()
    return any(rule.matches(host, port) for rule in rules)


TMP = Path("/tmp")


def hidden(path: Path, home: Path) -> bool:
    """Whether the sandbox's private `$HOME` or `/tmp` hides `path` (a tool there is bound back)."""
    return path.is_relative_to(home) or path.is_relative_to(TMP)
