"""The model provider codex's `config.toml` selects (`$CODEX_HOME`, else `~/.codex`): where a
person points codex at a gateway, and the variable its key is read from. `akira doctor` checks
that variable; the sandbox passes it in and lets the gateway's host through its proxy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


@dataclass(frozen=True)
class Provider:
    name: str
    env_key: str
    """The variable holding the key ("" when the provider needs none)."""
    base_url: str | None


def codex_home(environ: Mapping[str, str], home: Path) -> Path:
    return Path(environ.get("CODEX_HOME") or home / ".codex")


def codex_provider(config: Path) -> Provider | None:
    """The custom provider `config.toml` selects; None for OpenAI's own, or a file that cannot
    be read (codex itself says what is wrong with it). The sandbox asks before every command it
    wraps: the file is parsed again only when its stat changes."""
    try:
        stat = config.stat()
    except OSError:
        return None
    return _parsed(config, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _parsed(config: Path, mtime_ns: int, size: int) -> Provider | None:
    import tomllib

    try:
        data = tomllib.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = data.get("model_provider")
    providers = data.get("model_providers")
    if not isinstance(name, str) or not isinstance(providers, dict):
        return None
    chosen = providers.get(name)
    if not isinstance(chosen, dict):
        return None
    key, url = chosen.get("env_key"), chosen.get("base_url")
    return Provider(name, key if isinstance(key, str) else "", url if isinstance(url, str) else None)
