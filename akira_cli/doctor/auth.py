"""The agent CLI's credentials: its key variable, or the file its login leaves. Only names and
paths are reported, never a value."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from akira_cli.doctor.base import DoctorContext, Finding, Status, register_check

KEY_LINE_RE = re.compile(r"^\s*(?:export\s+)?(GEMINI_API_KEY|GOOGLE_API_KEY)\s*=\s*\S", re.M)
AIDER_VARIABLES = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
    "AIDER_OPENAI_API_KEY",
    "AIDER_ANTHROPIC_API_KEY",
    "AIDER_API_KEY",
    "OLLAMA_API_BASE",
)


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def non_empty(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size > 0
    except OSError:
        return False


def set_variables(context: DoctorContext, names: tuple[str, ...]) -> list[str]:
    return [name for name in names if context.env.get(name, "").strip() not in ("", "0")]


def claude(context: DoctorContext) -> tuple[str | None, str]:
    found = set_variables(
        context,
        (
            "ANTHROPIC_API_KEY",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_USE_BEDROCK",
            "CLAUDE_CODE_USE_VERTEX",
        ),
    )
    if found:
        return f"{found[0]} is set", ""
    config_dir = Path(context.env.get("CLAUDE_CONFIG_DIR") or context.home / ".claude")
    credentials = config_dir / ".credentials.json"
    if non_empty(credentials):
        return f"logged in ({credentials})", ""
    state = context.home / ".claude.json"
    account = read_json(state)
    if account.get("oauthAccount") or account.get("primaryApiKey"):
        return f"logged in ({state})", ""
    if read_json(config_dir / "settings.json").get("apiKeyHelper"):
        return f"apiKeyHelper in {config_dir / 'settings.json'}", ""
    return None, (
        f"no ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN or ANTHROPIC_AUTH_TOKEN, and no login "
        f"({credentials} or an oauthAccount in {state})"
    )


def codex(context: DoctorContext) -> tuple[str | None, str]:
    from akira_cli.agents.presets.codex_config import codex_home, codex_provider

    home = codex_home(context.env, context.home)
    provider = codex_provider(home / "config.toml")
    if provider is not None:
        name, key = provider.name, provider.env_key
        if not key:
            return f"model provider {name!r} in {home / 'config.toml'} needs no key", ""
        if set_variables(context, (key,)):
            return f"{key} is set (model provider {name!r})", ""
        where = home / "config.toml"
        return None, f"model provider {name!r} in {where} reads its key from {key}, which is not set"
    found = set_variables(context, ("CODEX_API_KEY", "OPENAI_API_KEY"))
    if found:
        return f"{found[0]} is set", ""
    if non_empty(home / "auth.json"):
        return f"logged in ({home / 'auth.json'})", ""
    return None, f"no CODEX_API_KEY or OPENAI_API_KEY, and no login ({home / 'auth.json'})"


def gemini(context: DoctorContext) -> tuple[str | None, str]:
    found = set_variables(context, ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"))
    if found:
        return f"{found[0]} is set", ""
    folder = context.home / ".gemini"
    for env_file in (context.workdir / ".gemini" / ".env", context.workdir / ".env", folder / ".env"):
        try:
            text = env_file.read_text(encoding="utf-8", errors="replace") if env_file.is_file() else ""
            if KEY_LINE_RE.search(text):
                return f"a key in {env_file}", ""
        except OSError:
            continue
    if non_empty(folder / "oauth_creds.json"):
        return f"logged in ({folder / 'oauth_creds.json'})", ""
    return None, f"no GEMINI_API_KEY or GOOGLE_API_KEY, and no login ({folder / 'oauth_creds.json'})"


def aider(context: DoctorContext) -> tuple[str | None, str]:
    found = set_variables(context, AIDER_VARIABLES)
    if found:
        return f"{found[0]} is set", ""
    words = context.agent.words if context.agent is not None else []
    if any(w.split("=", 1)[0] in ("--api-key", "--openai-api-key", "--anthropic-api-key") for w in words):
        return "a key flag in the command line", ""
    places = (context.workdir / ".env", context.workdir / ".aider.conf.yml", context.home / ".aider.conf.yml")
    for place in places:
        if non_empty(place):
            return f"{place} (may hold the key)", ""
    return None, "no provider key variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, …), .env or .aider.conf.yml"


Reader = Callable[[DoctorContext], tuple[str | None, str]]
READERS: dict[str, tuple[Reader, str]] = {
    "claude": (
        claude,
        "set ANTHROPIC_API_KEY; or run 'claude setup-token' and set CLAUDE_CODE_OAUTH_TOKEN; or log "
        "in once with 'claude' (/login)",
    ),
    "codex": (
        codex,
        "set CODEX_API_KEY (or OPENAI_API_KEY); or log in once: 'codex login' "
        "('printenv OPENAI_API_KEY | codex login --with-api-key' for a key)",
    ),
    "gemini": (
        gemini,
        "set GEMINI_API_KEY (headless runs need a key or Vertex AI); or log in once with 'gemini' "
        "(Sign in with Google)",
    ),
    "aider": (aider, "set your model provider's key (e.g. OPENAI_API_KEY), or put it in .env"),
}
WARN_ONLY = {"aider"}
"""aider's key may come from places not read here (its own config files and flags)."""


class AgentAuth:
    name = "auth"

    def run(self, context: DoctorContext) -> list[Finding]:
        command = context.agent
        if command is None or command.name not in READERS:
            return []
        reader, fix = READERS[command.name]
        found, missing = reader(context)
        if found is not None:
            return [Finding("auth", "ok", f"{command.name}: {found}")]
        status: Status = "warn" if command.name in WARN_ONLY else "fail"
        return [Finding("auth", status, f"{command.name}: {missing}", fix)]


register_check(AgentAuth())
