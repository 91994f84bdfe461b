"""The pinned real agent CLIs, and how each is pointed at a scripted model server.

Each CLI is pointed at its server the way a user points it at a local or corporate gateway
(README "Agent CLIs"), in a HOME of its own:
- claude: `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY` (a plan's limits need a subscription
  login, `CLAUDE_CODE_OAUTH_TOKEN`);
- codex: a `model_providers` entry in `$CODEX_HOME/config.toml` (`base_url`, `env_key`);
- gemini: `GOOGLE_GEMINI_BASE_URL` and `GEMINI_API_KEY`, with `security.auth.selectedType:
  gemini-api-key` in `~/.gemini/settings.json` (and `general.maxAttempts: 2`: its own retries
  wait 5 s, 10 s, 20 s ... ten times, minutes the suite has no use for);
- aider: `openai-api-base` and `openai-api-key` in `~/.aider.conf.yml` (what `--openai-api-base`
  sets on the command line).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from akira_cli.agents.presets.versions import PINS, Pin
from tests.support.servers.anthropic_server import Anthropic
from tests.support.servers.gemini_server import Gemini
from tests.support.servers.openai_servers import ChatCompletions, Responses
from tests.support.servers.scripted import Dialect

CACHE = Path(os.environ.get("AKIRA_TEST_CLIS") or Path.home() / ".cache" / "akira" / "test-clis")
KEY = "sk-scripted-test-key"
"""The API key every CLI gets: the scripted servers take any key unless told to refuse it."""
QUIET = {
    "NO_COLOR": "1",
    "CI": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}
"""What a user behind a gateway sets so the CLIs make no calls elsewhere (updates, telemetry)."""


@dataclass(frozen=True)
class RealCli:
    name: str
    dialect: Callable[[], Dialect]
    command: list[str]
    """The preset's default command line, `{prompt_file}` for the prompt's path."""
    binary: str
    """The executable, relative to the install folder."""

    @property
    def pin(self) -> Pin:
        return PINS[self.name]

    @property
    def home(self) -> Path:
        """Where the pinned version is installed, once per machine."""
        return CACHE / f"{self.name}-{self.pin.version}"

    @property
    def executable(self) -> Path:
        return self.home / self.binary

    def environment(self, home: Path, url: str, workdir: Path) -> dict[str, str]:
        """The whole environment of a run: PATH, a HOME of its own, the gateway settings."""
        (home / "tmp").mkdir(parents=True, exist_ok=True)
        env = {
            "PATH": f"{self.executable.parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "TMPDIR": str(home / "tmp"),
            **QUIET,
        }
        if os.environ.get("PYTHONPATH"):  # akira itself from a checkout (a run against older code)
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        SETUPS[self.name](home, url, env)
        return env

    def argv(self, prompt_file: Path | None = None) -> list[str]:
        return [str(prompt_file) if word == "{prompt_file}" else word for word in self.command]


def _claude(home: Path, url: str, env: dict[str, str]) -> None:
    env.update(ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY=KEY)


def _codex(home: Path, url: str, env: dict[str, str]) -> None:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        'model = "gpt-5.5"\n'
        'model_provider = "gateway"\n'
        "\n[model_providers.gateway]\n"
        'name = "Gateway"\n'
        f'base_url = "{url}/v1"\n'
        'env_key = "GATEWAY_API_KEY"\n'
        'wire_api = "responses"\n',
        encoding="utf-8",
    )
    env.update(CODEX_HOME=str(codex_home), GATEWAY_API_KEY=KEY)


def _gemini(home: Path, url: str, env: dict[str, str]) -> None:
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "maxAttempts": 2},
    }
    settings.write_text(json.dumps(data, indent=2), encoding="utf-8")
    env.update(GOOGLE_GEMINI_BASE_URL=url, GEMINI_API_KEY=KEY)


def _aider(home: Path, url: str, env: dict[str, str]) -> None:
    (home / ".aider.conf.yml").write_text(
        f"openai-api-base: {url}/v1\n"
        f"openai-api-key: {KEY}\n"
        "model: gpt-4o\n"
        "check-update: false\n"
        "show-release-notes: false\n"
        "analytics-disable: true\n",
        encoding="utf-8",
    )


SETUPS: dict[str, Callable[[Path, str, dict[str, str]], None]] = {
    "claude": _claude,
    "codex": _codex,
    "gemini": _gemini,
    "aider": _aider,
}
CLIS: dict[str, RealCli] = {
    "claude": RealCli(
        "claude",
        Anthropic,
        ["claude", "-p", "--output-format", "json", "--permission-mode", "acceptEdits"],
        "node_modules/.bin/claude",
    ),
    "codex": RealCli(
        "codex",
        Responses,
        ["codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", "-"],
        "node_modules/.bin/codex",
    ),
    "gemini": RealCli(
        "gemini",
        Gemini,
        ["gemini", "--output-format", "json", "--approval-mode", "auto_edit", "--skip-trust"],
        "node_modules/.bin/gemini",
    ),
    "aider": RealCli(
        "aider",
        ChatCompletions,
        ["aider", "--yes-always", "--no-pretty", "--message-file", "{prompt_file}", "--no-git"],
        "shim/aider",
    ),
}
