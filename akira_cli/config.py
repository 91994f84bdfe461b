"""Configuration: one pydantic model per section, layered defaults < file < --config < flags < env.

Unknown keys and wrong types are refused with the key and the file named, and a near spelling
suggested. Field docstrings double as the documentation of `config/autonomous_loop.yaml`.
"""

from __future__ import annotations

import difflib
import os
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError

from akira_cli import redaction
from akira_cli.check_settings import ChecksSettings
from akira_cli.errors import AkiraError
from akira_cli.sections import (
    AgentSettings,
    BudgetSettings,
    EvaluationSettings,
    FleetSettings,
    FollowSettings,
    GitSettings,
    LLMSettings,
    LoopSettings,
    McpSettings,
    NotifySettings,
    ReasoningSettings,
    ReflectionSettings,
    ResourceLimits,
    ReviewSettings,
    SandboxSettings,
    Section,
)

CONFIG_RELPATH = Path("config/autonomous_loop.yaml")


class Config(Section):
    autonomous_loop: LoopSettings = Field(default_factory=LoopSettings)
    resource_limits: ResourceLimits = Field(default_factory=ResourceLimits)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    reflection: ReflectionSettings = Field(default_factory=ReflectionSettings)
    evaluation: EvaluationSettings = Field(default_factory=EvaluationSettings)
    reasoning: ReasoningSettings = Field(default_factory=ReasoningSettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    checks: ChecksSettings = Field(default_factory=ChecksSettings)
    notify: NotifySettings = Field(default_factory=NotifySettings)
    git: GitSettings = Field(default_factory=GitSettings)
    fleet: FleetSettings = Field(default_factory=FleetSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    review: ReviewSettings = Field(default_factory=ReviewSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    follow: FollowSettings | None = None
    """After the pull request (off while absent)."""

    def public_dict(self) -> dict[str, Any]:
        """The effective configuration with secrets masked."""
        data = self.model_dump(mode="json")
        if self.llm.api_key is not None:
            data["llm"]["api_key"] = "****"
        if self.fleet.database_url:
            from akira_cli.redaction import url_without_password

            data["fleet"]["database_url"] = url_without_password(self.fleet.database_url)
        return data


def load_config(
    root: Path,
    extra_file: Path | None = None,
    overrides: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
) -> Config:
    """Layers: defaults, the workspace file, `--config FILE`, CLI flags, then the environment."""
    merged: dict[str, Any] = {}
    sources: list[Path] = []
    workspace_file = root / CONFIG_RELPATH
    for path in (workspace_file, extra_file):
        if path is None:
            continue
        if path is extra_file and not path.is_file():
            raise AkiraError(f"{_quoted(path)}: config file not found; check the --config path")
        if path.is_file():
            data = _read_yaml(path)
            _validate_layer(data, path)
            _deep_merge(merged, data)
            sources.append(path)
    for dotted, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(merged, dotted, value)
    _apply_env(merged, os.environ if environ is None else environ)
    try:
        config = Config.model_validate(merged)
    except ValidationError as exc:
        where = _quoted(sources[-1]) if sources else "command line"
        raise AkiraError(_explain(exc, where)) from None
    if config.git.pr != "off" and not config.git.push:
        where = _quoted(sources[-1]) if sources else "command line"
        raise AkiraError(
            f"{where}: git.pr: {config.git.pr} needs git.push (the remote the pull request's branch "
            "is pushed to, such as origin); set git.push, or git.pr: off"
        )
    if config.llm.api_key is not None:
        redaction.register([config.llm.api_key.get_secret_value()])
    return config


def _quoted(path: Path) -> str:
    """A config path as the error line shows it: shell-quoted, so that it pastes as it is."""
    import shlex

    return shlex.quote(str(path))


def _read_yaml(path: Path) -> dict[str, Any]:
    from akira_cli import safeyaml

    try:
        data = safeyaml.load(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise AkiraError(f"{_quoted(path)}: cannot read config ({exc.strerror}); check permissions") from None
    except UnicodeDecodeError:
        raise AkiraError(f"{_quoted(path)}: config is not UTF-8 text; save it as YAML in UTF-8") from None
    except safeyaml.DuplicateKeyError as exc:
        raise AkiraError(
            f"{_quoted(path)}: {exc}; keep one of them (YAML would silently use the last)"
        ) from None
    except safeyaml.BoundsError as exc:
        raise AkiraError(f"{_quoted(path)}: config refused: {exc}; keep it a plain YAML mapping") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark else ""
        raise AkiraError(f"{_quoted(path)}:{line} is not valid YAML; fix the syntax there") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise AkiraError(f"{_quoted(path)}: config must be a mapping of sections, e.g. 'autonomous_loop:'")
    _refuse_nul(data, path, [])
    return data


def _refuse_nul(value: Any, path: Path, keys: list[str]) -> None:
    """A NUL byte in a value would end up in a path or a command line; refuse it by name."""
    if isinstance(value, str) and "\x00" in value:
        raise AkiraError(f"{_quoted(path)}: '{'.'.join(keys)}' holds a NUL byte; remove it")
    if isinstance(value, dict):
        for key, item in value.items():
            _refuse_nul(item, path, [*keys, str(key)])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _refuse_nul(item, path, [*keys, str(index)])


def _validate_layer(data: dict[str, Any], path: Path) -> None:
    try:
        Config.model_validate(data)
    except ValidationError as exc:
        raise AkiraError(_explain(exc, _quoted(path))) from None


def _explain(exc: ValidationError, where: object) -> str:
    """Every problem of the layer in one line, so that one run names them all."""
    found = list(dict.fromkeys(_problem(error) for error in exc.errors()))
    if len(found) == 1:
        what, fix = found[0]
        return f"{where}: {what}" + (f"; {fix}" if fix else "")
    listed = "; ".join(what for what, _ in found)
    return f"{where}: {len(found)} problems: {listed}; fix them in that file"


def _problem(error: Any) -> tuple[str, str]:
    """What is wrong with one key, and how to fix it."""
    loc = [str(part) for part in error["loc"]]
    key = ".".join(loc)
    if error["type"] == "extra_forbidden":
        hint = _suggest(loc)
        if hint:
            return f"unknown key '{key}' (did you mean '{hint}'?)", ""
        return f"unknown key '{key}'", "remove it or check the spelling"
    given = error.get("input")
    shown = "" if isinstance(given, dict | list) else f" (got {given!r})"
    return f"key '{key}': {error['msg'].lower()}{shown}", "fix the value in that file"


def _suggest(loc: list[str]) -> str | None:
    model: type[BaseModel] = Config
    for part in loc[:-1]:
        field = model.model_fields.get(part)
        annotation = field.annotation if field else None
        optional = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        annotation = optional[0] if len(optional) == 1 else annotation  # `follow: X | None`
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    close = difflib.get_close_matches(loc[-1], list(model.model_fields), n=1, cutoff=0.6)
    return ".".join([*loc[:-1], close[0]]) if close else None


def _deep_merge(into: dict[str, Any], data: dict[str, Any]) -> None:
    for key, value in data.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _deep_merge(into[key], value)
        else:
            into[key] = value


def _set_dotted(into: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for part in parents:
        into = into.setdefault(part, {})
    into[leaf] = value


def _apply_env(merged: dict[str, Any], environ: Any) -> None:
    base_url = environ.get("OPENAI_BASE_URL") or environ.get("OPENAI_API_BASE")
    pairs = {
        "llm.base_url": base_url,
        "llm.api_key": environ.get("OPENAI_API_KEY"),
        "llm.model": environ.get("AKIRA_MODEL"),
    }
    for dotted, value in pairs.items():
        if value:
            _set_dotted(merged, dotted, value)
