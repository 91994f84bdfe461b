"""The model provider codex's `config.toml` selects (`$CODEX_HOME`, else `~/.codex`): where a
person points codex at a gateway, and the variable its key is read from. `akira doctor` checks
that variable; the sandbox, reading it once at the run's start from the real file, passes that
one variable in by its exact name and lets the gateway's host through its proxy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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
    be read (codex itself says what is wrong with it)."""
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
